package web_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/go-jose/go-jose/v4"

	"github.com/agentcards/agentcards/cards/a2a/a2atest"
	"github.com/agentcards/agentcards/cards/agenttest"
)

// TestCardRefresh: a card imported by URL is fetched again from there. Unchanged content leaves
// it (the refresh is still recorded); changed content is a new revision, with the registry's own
// fields (status, visibility) kept; a card whose signature fails where the one before verified
// is refused and left as it was; a card not imported from a URL is a conflict, and a source that
// fails answers fetch_failed and records nothing. On every database.
func TestCardRefresh(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		e.allowLoopback()
		e.mkTenant("acme", "alice")
		alice, bob := e.token("alice", "acme", false), e.token("bob", "acme", false)
		expect(t, e.do("POST", "/v1/tenants/acme/roles", alice, map[string]string{"subject": "bob", "role": "reader"}), http.StatusCreated)
		pub, priv, _ := ed25519.GenerateKey(rand.Reader)
		src := agenttest.New(t, nil)
		r := &refreshEnv{e: e, alice: alice, src: src, url: src.URL + agenttest.CardPath, priv: priv,
			keys: jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: pub, KeyID: "k1", Algorithm: "EdDSA"}}}}

		r.unchanged(t)
		r.changed(t)
		r.refused(t)
		imported := r.racingWrites(t)

		// A source that fails: fetch_failed, and nothing recorded.
		r.serve(t, map[string]any{}, http.StatusInternalServerError)
		r.refresh(t, nil, http.StatusBadGateway, "fetch_failed")
		var card struct{ Revision int64 }
		e.getCard("acme", "geo").json(t, &card)
		if card.Revision != imported {
			t.Errorf("a failed fetch wrote revision %d", card.Revision)
		}

		// Who may not write it may not refresh it; a card not imported from a URL cannot be.
		expect(t, e.do("POST", "/v1/tenants/acme/cards/geo/refresh", bob, nil), http.StatusForbidden, "forbidden")
		expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, sampleCard("plain")), http.StatusCreated)
		expect(t, e.do("POST", "/v1/tenants/acme/cards/plain/refresh", alice, nil), http.StatusConflict, "conflict")
		expect(t, e.do("POST", "/v1/tenants/acme/cards/nope/refresh", alice, nil), http.StatusNotFound, "not_found")
		// A client cannot set the source itself: it is the server's.
		c := sampleCard("forged")
		c["source"] = map[string]any{"url": r.url}
		expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, c), http.StatusCreated)
		expect(t, e.do("POST", "/v1/tenants/acme/cards/forged/refresh", alice, nil), http.StatusConflict, "conflict")
	})
}

// refreshEnv is the state the steps of TestCardRefresh share: the server, the tenant acme's
// admin, the source of the card geo (an agent serving it at the well-known path) and its URL,
// and the key its cards are signed with.
type refreshEnv struct {
	e     *env
	alice string
	src   *agenttest.Agent
	url   string
	priv  ed25519.PrivateKey
	keys  jose.JSONWebKeySet
}

// serve makes the source answer card with the status code.
func (r *refreshEnv) serve(t *testing.T, card map[string]any, code int) {
	t.Helper()
	raw, err := json.Marshal(card)
	if err != nil {
		t.Fatal(err)
	}
	r.src.ServeJSON(agenttest.CardPath, code, raw)
}

// refreshAnswer is the answer of a refresh.
type refreshAnswer struct {
	Card struct {
		Name, Description, Status, Visibility string
		Revision                              int64
		Source                                struct {
			URL         string
			Verified    bool
			RefreshedAt string
			Refresh     struct{ Outcome, Reason string }
		}
	}
	Outcome, Reason string
}

// refresh refreshes geo as alice with body, expecting code (and errCode); an answered refresh
// must be recorded in the card and carry an ETag.
func (r *refreshEnv) refresh(t *testing.T, body any, code int, errCode ...string) refreshAnswer {
	t.Helper()
	resp := r.e.do("POST", "/v1/tenants/acme/cards/geo/refresh", r.alice, body)
	expect(t, resp, code, errCode...)
	var out refreshAnswer
	if code == http.StatusOK {
		resp.json(t, &out)
		if resp.header.Get("ETag") == "" || out.Card.Source.Refresh.Outcome != out.Outcome || out.Card.Source.RefreshedAt == "" {
			t.Errorf("the refresh is not recorded, or has no ETag: %s", resp.body)
		}
	}
	return out
}

// unchanged imports geo without its keys: unverified, not found as verified. Unchanged,
// refreshed with the keys, it is recorded as a new revision, the content as it was, the import
// record the new check's (so it is now found as verified). Then the registry's own fields are
// changed, for the later refreshes to keep.
func (r *refreshEnv) unchanged(t *testing.T) {
	e, alice := r.e, r.alice
	r.serve(t, a2atest.SignEd25519(t, r.priv, "k1", "", a2atest.SampleV1(t)), http.StatusOK)
	expect(t, e.do("POST", "/v1/tenants/acme/cards/import", alice, map[string]any{"agentId": "geo", "url": r.url}), http.StatusCreated)
	if a := e.search(alice, "acme", "verified=true"); a.Total != 0 {
		t.Fatalf("an unverified import is found as verified: %+v", a)
	}

	got := r.refresh(t, map[string]any{"keys": r.keys}, http.StatusOK)
	if got.Outcome != "unchanged" || got.Card.Revision != 2 || got.Card.Source.URL != r.url || !got.Card.Source.Verified {
		t.Errorf("unchanged: %+v", got)
	}
	if a := e.search(alice, "acme", "verified=true"); a.Total != 1 {
		t.Errorf("after a verified unchanged refresh, verified=true finds %d", a.Total)
	}
	expect(t, e.do("PATCH", "/v1/tenants/acme/cards/geo", alice, map[string]any{"status": "deprecated", "visibility": "public"}), http.StatusOK)
}

// changed: changed at the source, signed, the card is applied as a new revision, the
// registry's own fields kept, and found by its new words.
func (r *refreshEnv) changed(t *testing.T) {
	changed := a2atest.SampleV1(t)
	changed["description"] = "Plans routes, now with ferries."
	r.serve(t, a2atest.SignEd25519(t, r.priv, "k1", "", changed), http.StatusOK)
	got := r.refresh(t, map[string]any{"keys": r.keys}, http.StatusOK)
	if got.Outcome != "updated" || got.Card.Description != "Plans routes, now with ferries." || got.Card.Revision != 4 ||
		got.Card.Status != "deprecated" || got.Card.Visibility != "public" {
		t.Errorf("updated: %+v", got)
	}
	if a := r.e.search(r.alice, "acme", "q=ferries"); a.Total != 1 {
		t.Errorf("the refreshed card is not found by its new words: %+v", a)
	}
}

// refused: a signature a key rejects, or none that verifies where one did, is refused, the
// card left as it was.
func (r *refreshEnv) refused(t *testing.T) {
	changed := a2atest.SampleV1(t)
	changed["description"] = "Plans routes, now with ferries."
	tampered := a2atest.SignEd25519(t, r.priv, "k1", "", changed)
	tampered["name"] = "Someone Else"
	r.serve(t, tampered, http.StatusOK)
	got := r.refresh(t, map[string]any{"keys": r.keys, "allowInvalidSignature": true}, http.StatusOK)
	if got.Outcome != "refused" || !strings.Contains(got.Reason, "signature") || got.Card.Name != "GeoSpatial Route Planner Agent" ||
		got.Card.Revision != 5 || !got.Card.Source.Verified {
		t.Errorf("tampered: %+v", got)
	}
	unsigned := a2atest.SampleV1(t)
	unsigned["name"] = "Someone Else"
	r.serve(t, unsigned, http.StatusOK)
	got = r.refresh(t, nil, http.StatusOK)
	if got.Outcome != "refused" || !strings.Contains(got.Reason, "verified") || got.Card.Name != "GeoSpatial Route Planner Agent" {
		t.Errorf("unsigned after signed: %+v", got)
	}
}

// racingWrites: a write during the fetch, the fetch is weighed against the card as written (no
// 412), and the write's change is kept; a delete during the fetch, not found. The card is then
// imported again; it answers the revision it is imported at.
func (r *refreshEnv) racingWrites(t *testing.T) int64 {
	e, alice := r.e, r.alice
	again := a2atest.SampleV1(t) // a2atest.SignEd25519 signs its map in place: the card applied, anew
	again["description"] = "Plans routes, now with ferries."
	r.serve(t, a2atest.SignEd25519(t, r.priv, "k1", "", again), http.StatusOK)
	r.src.OnNext(func() {
		expect(t, e.do("PATCH", "/v1/tenants/acme/cards/geo", alice, map[string]any{"metadata": map[string]any{"team": "maps"}}), http.StatusOK)
	})
	got := r.refresh(t, map[string]any{"keys": r.keys}, http.StatusOK)
	var meta struct {
		Card struct{ Metadata map[string]string }
	}
	resp := e.getCard("acme", "geo")
	resp.json(t, &meta.Card)
	if got.Outcome != "unchanged" || got.Card.Revision != 8 || meta.Card.Metadata["team"] != "maps" {
		t.Errorf("a refresh racing a write: %+v, metadata %v", got, meta.Card.Metadata)
	}
	r.src.OnNext(func() { expect(t, e.do("DELETE", "/v1/tenants/acme/cards/geo", alice, nil), http.StatusNoContent) })
	r.refresh(t, map[string]any{"keys": r.keys}, http.StatusNotFound, "not_found")
	resp = e.do("POST", "/v1/tenants/acme/cards/import", alice, map[string]any{"agentId": "geo", "url": r.url, "keys": r.keys})
	expect(t, resp, http.StatusCreated)
	var imported struct{ Revision int64 }
	resp.json(t, &imported)
	if imported.Revision != 9 {
		t.Errorf("imported again after revision 8 was deleted: revision %d, want 9", imported.Revision)
	}
	return imported.Revision
}
