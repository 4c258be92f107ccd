package a2a_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/agentcards/agentcards/authz"
	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/a2a/a2atest"
	"github.com/agentcards/agentcards/tenants"
)

// The refreshes that answer an error (docs/lifecycle.md, Refresh from the source: "these answers
// record nothing"), through a2a.Service.Refresh: the fault kind of each, and that the card stays
// as it was, at its revision, with no refresh in its source.

// unrefreshed fails the test unless agentID's card is still as imported: at revision rev, with
// no refresh recorded.
func (f *fixture) unrefreshed(name, agentID string, rev int64) {
	f.t.Helper()
	c := f.card(agentID)
	if c.Revision != rev || c.Source == nil || c.Source.Refresh != nil || c.Source.RefreshedAt != nil {
		f.t.Errorf("%s: the card is at revision %d (want %d), source %s", name, c.Revision, rev, jsonOf(f.t, c.Source))
	}
}

// denyAll is a policy that allows nothing.
type denyAll struct{}

func (denyAll) Check(context.Context, string, string, string) error { return authz.ErrForbidden }

// TestA2ARefreshFetchFailures: a source that cannot be reached or fails (5xx) is
// fault.FetchFailed; one that answers, but not with an A2A card that maps to a valid card (a 4xx,
// a card the schema refuses or nested too deep, skills that repeat an id, which the registry
// refuses as capabilities), is fault.Invalid. None of them writes anything. How each answer of a
// server is classified is TestA2AImportFetchFailures's: imports and refreshes fetch alike.
func TestA2ARefreshFetchFailures(t *testing.T) {
	f := newFixture(t, "sqlite")
	f.allowLoopback()
	src := newCardSource(t)
	sample := a2atest.SampleV1(t)
	src.serve(t, sample)
	f.mustImport(map[string]any{"agentId": "geo", "url": src.cardURL()})
	twice := a2atest.SampleV1(t)
	skills := twice["skills"].([]any)
	twice["skills"] = []any{skills[0], skills[0]}
	noSkills := a2atest.SampleV1(t)
	delete(noSkills, "skills")
	for _, tc := range []struct {
		name   string
		answer http.HandlerFunc
		kind   fault.Kind
		says   string // a part of the message, where the kind alone does not tell the cause
	}{
		{"connection closed", func(w http.ResponseWriter, _ *http.Request) {
			if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
				_ = conn.Close()
			}
		}, fault.FetchFailed, ""},
		{"answers 500", func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "broken", http.StatusInternalServerError) }, fault.FetchFailed, "answered 500"},
		{"answers 404", http.NotFound, fault.Invalid, "answered 404"},
		{"no skills", serveJSON(t, noSkills), fault.Invalid, "/skills"},
		{"a skill id twice", serveJSON(t, twice), fault.Invalid, "maps to an invalid registry card"},
	} {
		src.answer(tc.answer)
		_, err := f.refresh("geo", nil)
		wantKind(t, tc.name, err, tc.kind)
		if msg := fault.MessageOf(err); !strings.Contains(msg, tc.says) {
			t.Errorf("%s: %q, want a message saying %q", tc.name, msg, tc.says)
		}
		f.unrefreshed(tc.name, "geo", 1)
	}

	// The sample nests 5 deep (securityRequirements[0].schemes.google.list): within 4, not.
	src.serve(t, sample)
	f.cards.MaxJSONDepth = 4
	_, err := f.refresh("geo", nil)
	wantKind(t, "nested too deep", err, fault.Invalid)
	if msg := fault.MessageOf(err); !strings.Contains(msg, "card.securityRequirements") {
		t.Errorf("nested too deep: %q does not name the member", msg)
	}
	f.unrefreshed("nested too deep", "geo", 1)
	f.cards.MaxJSONDepth = 0

	src.Close()
	_, err = f.refresh("geo", nil)
	wantKind(t, "source gone", err, fault.FetchFailed)
	f.unrefreshed("source gone", "geo", 1)
}

// serveJSON answers v as JSON.
func serveJSON(t *testing.T, v any) http.HandlerFunc {
	body := jsonOf(t, v)
	return func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(body) }
}

// TestA2ARefreshRedirects: a source may redirect within its host, and the card is applied with
// its source and import record still naming the URL it was imported from. A source that now
// redirects to another host, or that the outbound guard refuses, is fault.URLBlocked, and the
// other host is never asked; without a fetch client, refresh is fault.Invalid (not configured).
// None of these writes anything.
func TestA2ARefreshRedirects(t *testing.T) {
	f := newFixture(t, "sqlite")
	f.allowLoopback()
	src := newCardSource(t)
	src.serve(t, a2atest.SampleV1(t))
	f.mustImport(map[string]any{"agentId": "geo", "url": src.cardURL()})
	var mu sync.Mutex
	otherHits := 0
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		otherHits++
		mu.Unlock()
		_, _ = w.Write(a2atest.ReadSample(t, "a2a-samples__adk_currency_agent__agent_card.json"))
	}))
	defer other.Close()

	src.answer(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/card.json", http.StatusFound)
	})
	_, err := f.refresh("geo", nil)
	wantKind(t, "to another host", err, fault.URLBlocked)
	f.unrefreshed("to another host", "geo", 1)
	mu.Lock()
	if otherHits != 0 {
		t.Errorf("the other host was asked %d times", otherHits)
	}
	mu.Unlock()

	before := src.count()
	f.guardAsDefault()
	_, err = f.refresh("geo", nil)
	wantKind(t, "guarded", err, fault.URLBlocked)
	f.a2a.Fetch = nil
	_, err = f.refresh("geo", nil)
	wantKind(t, "no fetch client", err, fault.Invalid)
	if n := src.count(); n != before {
		t.Errorf("the source was asked %d times past the guard", n-before)
	}
	f.unrefreshed("guarded", "geo", 1)

	f.allowLoopback()
	moved := a2atest.SampleV1(t)
	moved["description"] = "Moved."
	src.answer(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v2/card.json" {
			serveJSON(t, moved)(w, r)
			return
		}
		http.Redirect(w, r, "/v2/card.json", http.StatusMovedPermanently)
	})
	got := f.mustRefresh("geo", nil)
	if got.Outcome != "updated" || got.Card.Description != "Moved." || got.Card.Revision != 2 {
		t.Errorf("within the host: %+v %q at revision %d", got.RefreshOutcome, got.Card.Description, got.Card.Revision)
	}
	wantSource(t, "within the host", got.Card, cards.Source{URL: src.cardURL(), RefreshedAt: got.Card.Source.RefreshedAt,
		Refresh: &cards.RefreshOutcome{Outcome: "updated"}})
	wantImport(t, "within the host", got.Card, cards.ImportRecord{Format: "1.0", URL: src.cardURL(),
		Signature: cards.SignatureCheck{Status: "unverified", Reason: "jku"}})

}

// TestA2ARefreshNothingToRefresh: a refresh that cannot start is an error before anything is
// fetched: no such card, or an agent ID no card can have, is fault.NotFound; a card not imported
// from a URL (written by PUT, even with a source of the client's, or imported from a body) is
// fault.Conflict; no caller is fault.Unauthenticated, a caller who may not write the card fault.Forbidden; a body that is not a
// refresh request is fault.Invalid or fault.Malformed.
func TestA2ARefreshNothingToRefresh(t *testing.T) {
	f := newFixture(t, "sqlite")
	f.allowLoopback()
	src := newCardSource(t)
	src.serve(t, a2atest.SampleV1(t))
	f.mustImport(map[string]any{"agentId": "geo", "url": src.cardURL()})
	f.mustImport(map[string]any{"agentId": "inline", "card": a2atest.SampleV1(t)})
	plain := map[string]any{"name": "Plain", "endpoint": "https://plain.example/a2a"}
	f.put("plain", plain)
	f.put("forged", patched(plain, map[string]any{"source": map[string]any{"url": src.cardURL(), "verified": true}}))
	fetched := src.count()
	delegated := authz.WithPrincipal(context.Background(), authz.Principal{Subject: "agent", Tenant: string(acme), Delegated: true})

	for _, tc := range []struct {
		name    string
		ctx     context.Context
		tenant  tenants.ID
		agentID string
		body    string
		kind    fault.Kind
	}{
		{"no such card", alice, acme, "nobody", "", fault.NotFound},
		{"not an agent ID", alice, acme, "geo/../geo", "", fault.NotFound},
		{"written by PUT", alice, acme, "plain", "", fault.Conflict},
		{"a source of the client's", alice, acme, "forged", "", fault.Conflict},
		{"imported from a body", alice, acme, "inline", "", fault.Conflict},
		{"no caller", context.Background(), acme, "geo", "", fault.Unauthenticated},
		{"a delegated caller", delegated, acme, "geo", "", fault.Unauthenticated},
		{"unknown member", alice, acme, "geo", `{"url": "https://elsewhere.example/card.json"}`, fault.Invalid},
		{"keys not a key set", alice, acme, "geo", `{"keys": "k1"}`, fault.Invalid},
		{"not JSON", alice, acme, "geo", `{"keys":`, fault.Malformed},
	} {
		var body []byte
		if tc.body != "" {
			body = []byte(tc.body)
		}
		_, err := f.a2a.Refresh(tc.ctx, tc.tenant, tc.agentID, body)
		wantKind(t, tc.name, err, tc.kind)
	}
	f.a2a.Authz = denyAll{}
	_, err := f.a2a.Refresh(alice, acme, "geo", nil)
	wantKind(t, "may not write", err, fault.Forbidden)

	if n := src.count(); n != fetched {
		t.Errorf("the source was fetched %d times by refreshes that could not start", n-fetched)
	}
	f.unrefreshed("after all", "geo", 1)
	for _, id := range []string{"plain", "forged", "inline"} {
		if c := f.card(id); c.Revision != 1 || c.Source != nil {
			t.Errorf("%s: revision %d, source %s", id, c.Revision, jsonOf(t, c.Source))
		}
	}
}

// TestA2ARefreshOtherTenants: a card of another tenant is refreshed by none of acme's callers,
// and looks as missing as a card of a tenant that does not exist (fault.NotFound); the cards of a
// suspended tenant are refreshed by no one (fault.Suspended). None of these fetches the source.
func TestA2ARefreshOtherTenants(t *testing.T) {
	f := newFixture(t, "sqlite")
	f.allowLoopback()
	src := newCardSource(t)
	src.serve(t, a2atest.SampleV1(t))
	admin := authz.WithPrincipal(context.Background(), authz.Principal{Subject: "root", PlatformAdmin: true})
	bob := authz.WithPrincipal(context.Background(), authz.Principal{Subject: "bob", Tenant: "globex"})
	gate := f.cards.Gate.(*tenants.Service)
	if _, err := gate.Create(admin, tenants.Input{ID: "globex", Name: "Globex", Admins: []string{"bob"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.a2a.Import(bob, "globex", jsonOf(t, map[string]any{"agentId": "geo", "url": src.cardURL()})); err != nil {
		t.Fatal(err)
	}
	fetched := src.count()

	_, err := f.a2a.Refresh(alice, "globex", "geo", nil)
	wantKind(t, "another tenant's card", err, fault.NotFound)
	_, err = f.a2a.Refresh(admin, "initech", "geo", nil)
	wantKind(t, "no such tenant", err, fault.NotFound)
	suspended := tenants.StatusSuspended
	if _, err := gate.Update(admin, "globex", tenants.Patch{Status: &suspended}); err != nil {
		t.Fatal(err)
	}
	for name, ctx := range map[string]context.Context{"its own caller": bob, "a platform admin": admin} {
		_, err = f.a2a.Refresh(ctx, "globex", "geo", nil)
		wantKind(t, "suspended, "+name, err, fault.Suspended)
	}
	if n := src.count(); n != fetched {
		t.Errorf("the source was fetched %d times", n-fetched)
	}
	if c, err := f.a2a.Store.Get(admin, "globex", "geo"); err != nil || c.Revision != 1 || c.Source == nil || c.Source.Refresh != nil {
		t.Errorf("globex's card: %v %s", err, jsonOf(t, c))
	}
}
