package a2a_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/a2a"
	"github.com/agentcards/agentcards/cards/a2a/a2atest"
)

// A refresh from the source (docs/lifecycle.md, Refresh from the source), through
// a2a.Service.Refresh: what each outcome does to the stored card, its source and its import
// record. That these reach an HTTP client, and the scheduled refresh, are web's
// (TestCardRefresh, TestScheduledRefresh).

// cardSource is the URL a card is imported from: it answers with the handler set last, counts
// the requests it is sent, and runs the function whileFetching set, once, before it answers.
type cardSource struct {
	*httptest.Server
	mu      sync.Mutex
	handler http.HandlerFunc
	during  func()
	fetches int
}

// newCardSource starts a source that answers 404 until told otherwise.
func newCardSource(t *testing.T) *cardSource {
	t.Helper()
	s := &cardSource{handler: http.NotFound}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.fetches++
		h, during := s.handler, s.during
		s.during = nil
		s.mu.Unlock()
		if during != nil {
			during()
		}
		h(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

// cardURL is the URL cards are imported from.
func (s *cardSource) cardURL() string { return s.URL + "/.well-known/agent-card.json" }

// answer makes the source answer every request with h.
func (s *cardSource) answer(h http.HandlerFunc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handler = h
}

// serve makes the source answer card, as JSON, with 200.
func (s *cardSource) serve(t testing.TB, card any) {
	t.Helper()
	body := jsonOf(t, card)
	s.answer(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	})
}

// whileFetching makes the source run f while it answers the next request.
func (s *cardSource) whileFetching(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.during = f
}

// count is the number of requests the source was sent.
func (s *cardSource) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fetches
}

// refresh refreshes agentID of acme as alice, with body as the request's (nil: no body).
func (f *fixture) refresh(agentID string, body map[string]any) (a2a.Refreshed, error) {
	f.t.Helper()
	var b []byte
	if body != nil {
		b = jsonOf(f.t, body)
	}
	return f.a2a.Refresh(alice, acme, agentID, b)
}

// mustRefresh is refresh for a refresh that must answer.
func (f *fixture) mustRefresh(agentID string, body map[string]any) a2a.Refreshed {
	f.t.Helper()
	r, err := f.refresh(agentID, body)
	if err != nil {
		f.t.Fatalf("refresh %s: %v", agentID, err)
	}
	return r
}

// card is agentID's card as the store holds it.
func (f *fixture) card(agentID string) cards.Card {
	f.t.Helper()
	c, err := f.a2a.Store.Get(alice, acme, agentID)
	if err != nil {
		f.t.Fatalf("store: get %s: %v", agentID, err)
	}
	return c
}

// at makes the registry write its cards at t.
func (f *fixture) at(t time.Time) { f.cards.Now = func() time.Time { return t } }

// edKey is an Ed25519 key, k1, and the JWKS that holds its public half, as a refresh body
// carries it.
func edKey(t *testing.T) (ed25519.PrivateKey, jose.JSONWebKeySet) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return priv, jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: pub, KeyID: "k1", Algorithm: "EdDSA"}}}
}

// wantSource fails the test unless c's source is want. A want Refresh.Reason is a part of the
// reason ("" for none).
func wantSource(t *testing.T, name string, c cards.Card, want cards.Source) {
	t.Helper()
	got := c.Source
	if got == nil || got.URL != want.URL || got.Verified != want.Verified ||
		(got.RefreshedAt == nil) != (want.RefreshedAt == nil) || (got.RefreshedAt != nil && !got.RefreshedAt.Equal(*want.RefreshedAt)) ||
		(got.Refresh == nil) != (want.Refresh == nil) || (got.Refresh != nil && !sameOutcome(*got.Refresh, *want.Refresh)) {
		t.Errorf("%s: source %s, want %s", name, jsonOf(t, got), jsonOf(t, want))
	}
}

// sameOutcome tells whether got is want, want.Reason being a part of got's ("" for none).
func sameOutcome(got, want cards.RefreshOutcome) bool {
	return got.Outcome == want.Outcome && (got.Reason == "") == (want.Reason == "") && strings.Contains(got.Reason, want.Reason)
}

// wantImport fails the test unless c's import record is want, but for the signature's reason, of
// which want's is a part ("" for none), and for its trust and signed content (trust_test.go).
func wantImport(t *testing.T, name string, c cards.Card, want cards.ImportRecord) {
	t.Helper()
	if c.A2A == nil || c.A2A.Import == nil {
		t.Errorf("%s: no import record", name)
		return
	}
	got := *c.A2A.Import
	got.Trust, got.Signed = nil, nil
	reason, wantReason := got.Signature.Reason, want.Signature.Reason
	got.Signature.Reason, want.Signature.Reason = "", ""
	if got != want || (reason == "") != (wantReason == "") || !strings.Contains(reason, wantReason) {
		t.Errorf("%s: import record %s, want %s", name, jsonOf(t, c.A2A.Import), jsonOf(t, want))
	}
}

// sameAsStored fails the test unless the card a refresh answered is the one stored.
func (f *fixture) sameAsStored(name string, answered cards.Card) {
	f.t.Helper()
	if got, want := jsonOf(f.t, f.card(answered.AgentID)), jsonOf(f.t, answered); string(got) != string(want) {
		f.t.Errorf("%s: stored\n%s\nanswered\n%s", name, got, want)
	}
}

// TestA2ARefreshUnchanged: a card imported by URL without the keys of its signature is
// unverified. Refreshed with them, the same card is "unchanged": its content stays, and the
// refresh is recorded as a new revision whose import record and source are this check's:
// verified, with the key that verified it.
func TestA2ARefreshUnchanged(t *testing.T) {
	forEachDialect(t, func(t *testing.T, f *fixture) {
		f.allowLoopback()
		src := newCardSource(t)
		priv, keys := edKey(t)
		src.serve(t, a2atest.SignEd25519(t, priv, "k1", "", a2atest.SampleV1(t)))
		imported := time.Date(2031, 1, 2, 3, 4, 5, 6000, time.UTC)
		f.at(imported)
		c := f.mustImport(map[string]any{"agentId": "geo", "url": src.cardURL()})
		if c.Revision != 1 {
			t.Fatalf("imported at revision %d", c.Revision)
		}
		wantSource(t, "imported", c, cards.Source{URL: src.cardURL()})
		wantImport(t, "imported", c, cards.ImportRecord{Format: "1.0", URL: src.cardURL(),
			Signature: cards.SignatureCheck{Status: "unverified", Reason: `no key given for kid "k1"`}})

		refreshed := imported.Add(time.Hour)
		f.at(refreshed)
		got := f.mustRefresh("geo", map[string]any{"keys": keys})
		if got.Outcome != "unchanged" || got.Reason != "" {
			t.Errorf("outcome %+v, want unchanged", got.RefreshOutcome)
		}
		c = got.Card
		if c.Revision != 2 || !c.CreatedAt.Equal(imported) || !c.UpdatedAt.Equal(refreshed) || c.Name != "GeoSpatial Route Planner Agent" ||
			len(c.Capabilities) != 2 || c.Endpoint != "https://georoute-agent.example.com/a2a/v1" {
			t.Errorf("refreshed card %s", jsonOf(t, c))
		}
		wantSource(t, "refreshed", c, cards.Source{URL: src.cardURL(), Verified: true, RefreshedAt: &refreshed,
			Refresh: &cards.RefreshOutcome{Outcome: "unchanged"}})
		wantImport(t, "refreshed", c, cards.ImportRecord{Format: "1.0", URL: src.cardURL(),
			Signature: cards.SignatureCheck{Status: "verified", KeyID: "k1", KeySource: "request"}})
		f.sameAsStored("unchanged", c)
		if n := src.count(); n != 2 {
			t.Errorf("the source was fetched %d times, want 2 (the import, the refresh)", n)
		}
	})
}

// TestA2ARefreshUpdated: a card whose source now says something else is "updated": replaced by
// the card fetched, as a new revision with its import record, the registry's own fields
// (status, deprecation, visibility, metadata) kept. The source may move to another A2A version:
// the record then names that format.
func TestA2ARefreshUpdated(t *testing.T) {
	forEachDialect(t, func(t *testing.T, f *fixture) {
		f.allowLoopback()
		src := newCardSource(t)
		sample := a2atest.SampleV1(t)
		delete(sample, "signatures")
		src.serve(t, sample)
		f.mustImport(map[string]any{"agentId": "geo", "url": src.cardURL()})
		patch := `{"status": "deprecated", "deprecation": {"message": "Use geo2.", "successor": "geo2"},
			"visibility": "public", "metadata": {"team": "maps"}}`
		if _, err := f.cards.Patch(alice, acme, "geo", []byte(patch), cards.Precondition{}); err != nil {
			t.Fatal(err)
		}
		kept := func(name string, c cards.Card) {
			t.Helper()
			if !reflect.DeepEqual(metadataOf(t, c), map[string]any{"team": "maps"}) || c.Status != cards.StatusDeprecated || c.Deprecation == nil || *c.Deprecation != (cards.Deprecation{Message: "Use geo2.", Successor: "geo2"}) ||
				c.Visibility != cards.VisibilityPublic {
				t.Errorf("%s: the registry's own fields are not kept: %s", name, jsonOf(t, c))
			}
		}

		changed := a2atest.SampleV1(t)
		delete(changed, "signatures")
		changed["description"] = "Plans routes, now with ferries."
		changed["skills"] = changed["skills"].([]any)[:1]
		src.serve(t, changed)
		got := f.mustRefresh("geo", nil)
		c := got.Card
		if got.Outcome != "updated" || got.Reason != "" || c.Revision != 3 || c.Description != "Plans routes, now with ferries." ||
			len(c.Capabilities) != 1 || c.Capabilities[0].Name != "route-optimizer-traffic" {
			t.Errorf("1.0 changed: %+v %s", got.RefreshOutcome, jsonOf(t, c))
		}
		kept("1.0 changed", c)
		wantSource(t, "1.0 changed", c, cards.Source{URL: src.cardURL(), RefreshedAt: c.Source.RefreshedAt,
			Refresh: &cards.RefreshOutcome{Outcome: "updated"}})
		if c.Source.RefreshedAt == nil {
			t.Error("1.0 changed: no refreshedAt")
		}
		wantImport(t, "1.0 changed", c, cards.ImportRecord{Format: "1.0", URL: src.cardURL(),
			Signature: cards.SignatureCheck{Status: "unverified", Reason: "no signatures"}})
		f.sameAsStored("1.0 changed", c)

		src.answer(func(w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write(a2atest.ReadSample(t, "a2a-samples__adk_currency_agent__agent_card.json"))
		})
		got = f.mustRefresh("geo", nil)
		c = got.Card
		if got.Outcome != "updated" || c.Revision != 4 || c.Name != "Currency Conversion Agent" || c.Endpoint != "http://localhost:10999" ||
			len(c.Capabilities) != 1 || c.Capabilities[0].Name != "currency_conversion" {
			t.Errorf("now 0.3: %+v %s", got.RefreshOutcome, jsonOf(t, c))
		}
		kept("now 0.3", c)
		wantImport(t, "now 0.3", c, cards.ImportRecord{Format: "0.3", URL: src.cardURL(),
			Signature: cards.SignatureCheck{Status: "unverified", Reason: "no signatures"}})
		f.sameAsStored("now 0.3", c)
	})
}
