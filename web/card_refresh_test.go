package web_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/go-jose/go-jose/v4"
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
		keys := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: pub, KeyID: "k1", Algorithm: "EdDSA"}}}

		var mu sync.Mutex
		var served []byte
		status := http.StatusOK
		var during func() // run by the source while it answers a fetch, once
		serve := func(card map[string]any, code int) {
			raw, _ := json.Marshal(card)
			mu.Lock()
			served, status = raw, code
			mu.Unlock()
		}
		source := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			mu.Lock()
			f := during
			during = nil
			mu.Unlock()
			if f != nil {
				f()
			}
			mu.Lock()
			defer mu.Unlock()
			w.WriteHeader(status)
			_, _ = w.Write(served)
		}))
		defer source.Close()
		url := source.URL + "/.well-known/agent-card.json"

		type refreshed struct {
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
		refresh := func(body any, code int, errCode ...string) refreshed {
			t.Helper()
			r := e.do("POST", "/v1/tenants/acme/cards/geo/refresh", alice, body)
			expect(t, r, code, errCode...)
			var out refreshed
			if code == http.StatusOK {
				r.json(t, &out)
				if r.header.Get("ETag") == "" || out.Card.Source.Refresh.Outcome != out.Outcome || out.Card.Source.RefreshedAt == "" {
					t.Errorf("the refresh is not recorded, or has no ETag: %s", r.body)
				}
			}
			return out
		}

		// Imported without its keys: unverified, not found as verified.
		serve(signEd25519(t, priv, "k1", "", sampleV1(t)), http.StatusOK)
		expect(t, e.do("POST", "/v1/tenants/acme/cards/import", alice, map[string]any{"agentId": "geo", "url": url}), http.StatusCreated)
		if a := e.search(alice, "acme", "verified=true"); a.Total != 0 {
			t.Fatalf("an unverified import is found as verified: %+v", a)
		}

		// Unchanged, refreshed with the keys: recorded as a new revision, the content as it was,
		// the import record the new check's (so it is now found as verified).
		got := refresh(map[string]any{"keys": keys}, http.StatusOK)
		if got.Outcome != "unchanged" || got.Card.Revision != 2 || got.Card.Source.URL != url || !got.Card.Source.Verified {
			t.Errorf("unchanged: %+v", got)
		}
		if a := e.search(alice, "acme", "verified=true"); a.Total != 1 {
			t.Errorf("after a verified unchanged refresh, verified=true finds %d", a.Total)
		}
		// The registry's own fields, changed here, are kept by refreshes.
		expect(t, e.do("PATCH", "/v1/tenants/acme/cards/geo", alice, map[string]any{"status": "deprecated", "visibility": "public"}), http.StatusOK)

		// Changed at the source, signed: applied as a new revision.
		changed := sampleV1(t)
		changed["description"] = "Plans routes, now with ferries."
		serve(signEd25519(t, priv, "k1", "", changed), http.StatusOK)
		got = refresh(map[string]any{"keys": keys}, http.StatusOK)
		if got.Outcome != "updated" || got.Card.Description != "Plans routes, now with ferries." || got.Card.Revision != 4 ||
			got.Card.Status != "deprecated" || got.Card.Visibility != "public" {
			t.Errorf("updated: %+v", got)
		}
		if a := e.search(alice, "acme", "q=ferries"); a.Total != 1 {
			t.Errorf("the refreshed card is not found by its new words: %+v", a)
		}

		// A signature a key rejects, or none that verifies where one did: refused, left as it was.
		tampered := signEd25519(t, priv, "k1", "", changed)
		tampered["name"] = "Someone Else"
		serve(tampered, http.StatusOK)
		got = refresh(map[string]any{"keys": keys, "allowInvalidSignature": true}, http.StatusOK)
		if got.Outcome != "refused" || !strings.Contains(got.Reason, "signature") || got.Card.Name != "GeoSpatial Route Planner Agent" ||
			got.Card.Revision != 5 || !got.Card.Source.Verified {
			t.Errorf("tampered: %+v", got)
		}
		unsigned := sampleV1(t)
		unsigned["name"] = "Someone Else"
		serve(unsigned, http.StatusOK)
		got = refresh(nil, http.StatusOK)
		if got.Outcome != "refused" || !strings.Contains(got.Reason, "verified") || got.Card.Name != "GeoSpatial Route Planner Agent" {
			t.Errorf("unsigned after signed: %+v", got)
		}

		// A write during the fetch: the fetch is weighed against the card as written (no 412), and
		// the write's change is kept; a delete during the fetch: not found.
		again := sampleV1(t) // signEd25519 signs its map in place: the card applied, anew
		again["description"] = "Plans routes, now with ferries."
		serve(signEd25519(t, priv, "k1", "", again), http.StatusOK)
		mu.Lock()
		during = func() {
			expect(t, e.do("PATCH", "/v1/tenants/acme/cards/geo", alice, map[string]any{"metadata": map[string]any{"team": "maps"}}), http.StatusOK)
		}
		mu.Unlock()
		got = refresh(map[string]any{"keys": keys}, http.StatusOK)
		var meta struct {
			Card struct{ Metadata map[string]string }
		}
		r := e.getCard("acme", "geo")
		r.json(t, &meta.Card)
		if got.Outcome != "unchanged" || got.Card.Revision != 8 || meta.Card.Metadata["team"] != "maps" {
			t.Errorf("a refresh racing a write: %+v, metadata %v", got, meta.Card.Metadata)
		}
		mu.Lock()
		during = func() { expect(t, e.do("DELETE", "/v1/tenants/acme/cards/geo", alice, nil), http.StatusNoContent) }
		mu.Unlock()
		refresh(map[string]any{"keys": keys}, http.StatusNotFound, "not_found")
		r = e.do("POST", "/v1/tenants/acme/cards/import", alice, map[string]any{"agentId": "geo", "url": url, "keys": keys})
		expect(t, r, http.StatusCreated)
		var imported struct{ Revision int64 }
		r.json(t, &imported)
		if imported.Revision != 9 {
			t.Errorf("imported again after revision 8 was deleted: revision %d, want 9", imported.Revision)
		}

		// A source that fails: fetch_failed, and nothing recorded.
		serve(map[string]any{}, http.StatusInternalServerError)
		refresh(nil, http.StatusBadGateway, "fetch_failed")
		var card struct{ Revision int64 }
		e.getCard("acme", "geo").json(t, &card)
		if card.Revision != imported.Revision {
			t.Errorf("a failed fetch wrote revision %d", card.Revision)
		}

		// Who may not write it may not refresh it; a card not imported from a URL cannot be.
		expect(t, e.do("POST", "/v1/tenants/acme/cards/geo/refresh", bob, nil), http.StatusForbidden, "forbidden")
		expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, sampleCard("plain")), http.StatusCreated)
		expect(t, e.do("POST", "/v1/tenants/acme/cards/plain/refresh", alice, nil), http.StatusConflict, "conflict")
		expect(t, e.do("POST", "/v1/tenants/acme/cards/nope/refresh", alice, nil), http.StatusNotFound, "not_found")
		// A client cannot set the source itself: it is the server's.
		c := sampleCard("forged")
		c["source"] = map[string]any{"url": url}
		expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, c), http.StatusCreated)
		expect(t, e.do("POST", "/v1/tenants/acme/cards/forged/refresh", alice, nil), http.StatusConflict, "conflict")
	})
}
