package web_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/agentcards/agentcards/cards/a2a"
)

// TestCardStatus: a card is active, deprecated (still found and delegated to, flagged in results
// and in its A2A card) or disabled (kept, found only when asked for, refused to delegations with
// 409 card_disabled, out of the A2A views); status changes are card writes, back and forth, on
// every database and both search modes.
func TestCardStatus(t *testing.T) {
	forEachDialectAndIndex(t, func(t *testing.T, e *env) {
		a := newAgent(t, reply(http.StatusOK, `{"result": "ok"}`))
		alice, olga := e.delegationSetup("acme", "old", a.endpoint())
		next := sampleCard("new")
		next["endpoint"] = a.endpoint()
		expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, next), http.StatusCreated)
		patch := func(agentID, body string, status int, code ...string) response {
			t.Helper()
			r := e.do("PATCH", "/v1/tenants/acme/cards/"+agentID, alice, json.RawMessage(body), "Content-Type", "application/merge-patch+json")
			expect(t, r, status, code...)
			return r
		}
		for _, id := range []string{"old", "new"} {
			patch(id, `{"visibility": "public"}`, http.StatusOK)
		}
		// Active is the status of a card that names none: it is stored and served absent.
		r := patch("new", `{"status": "active"}`, http.StatusOK)
		if strings.Contains(string(r.body), `"status"`) {
			t.Errorf("an active card shows its status: %s", r.body)
		}

		// Refused: a status not taken, a deprecation without deprecated, a card its own successor.
		patch("old", `{"status": "retired"}`, http.StatusBadRequest, "invalid")
		patch("old", `{"deprecation": {"message": "x"}}`, http.StatusBadRequest, "invalid")
		patch("old", `{"status": "deprecated", "deprecation": {"successor": "old"}}`, http.StatusBadRequest, "invalid")
		e.refusedSearch(alice, "status=retired")

		// Deprecated: found, flagged, delegated to; its A2A card declares the deprecation.
		r = patch("old", `{"status": "deprecated", "deprecation": {"message": "Use new.", "successor": "new"}}`, http.StatusOK)
		var card struct {
			Status      string
			Deprecation struct{ Message, Successor string }
			Revision    int64
		}
		r.json(t, &card)
		if card.Status != "deprecated" || card.Deprecation.Successor != "new" || card.Revision != 3 {
			t.Errorf("deprecated: %+v", card)
		}
		found := e.search(alice, "acme", "")
		if got := found.ids(); !slices.Equal(got, []string{"new", "old"}) {
			t.Errorf("default search with a deprecated card: %v", got)
		}
		if raw := e.do("GET", "/v1/tenants/acme/cards?q=review", alice, nil).body; !strings.Contains(string(raw), `"status":"deprecated"`) {
			t.Errorf("search results do not flag the deprecated card: %s", raw)
		}
		if got := e.search(alice, "acme", "status=deprecated").ids(); !slices.Equal(got, []string{"old"}) {
			t.Errorf("status=deprecated: %v", got)
		}
		expect(t, e.do("POST", "/v1/tenants/acme/delegations", olga, delegate("old", "sync")), http.StatusOK)
		r = e.do("GET", "/a2a/acme/old/.well-known/agent-card.json", "", nil)
		expect(t, r, http.StatusOK)
		var ac struct {
			Capabilities struct {
				Extensions []struct {
					URI         string
					Description string
					Params      map[string]string
				}
			}
		}
		r.json(t, &ac)
		if ext := ac.Capabilities.Extensions; len(ext) != 1 || ext[0].URI != a2a.DeprecationExtension || ext[0].Description != "Use new." || ext[0].Params["successor"] != "new" {
			t.Errorf("the deprecated card's A2A extensions: %+v", ext)
		}

		// Disabled: kept and readable, out of searches unless asked for, never delegated to, out
		// of the A2A views.
		patch("old", `{"status": "disabled", "deprecation": null}`, http.StatusOK)
		expect(t, e.getCard("acme", "old"), http.StatusOK)
		if got := e.search(alice, "acme", "").ids(); !slices.Equal(got, []string{"new"}) {
			t.Errorf("default search with a disabled card: %v", got)
		}
		if got := e.search(alice, "acme", "q=review").ids(); !slices.Equal(got, []string{"new"}) {
			t.Errorf("ranked search with a disabled card: %v", got)
		}
		if got := e.search(alice, "acme", "status=disabled").ids(); !slices.Equal(got, []string{"old"}) {
			t.Errorf("status=disabled: %v", got)
		}
		if got := e.search(alice, "acme", "status=active&status=disabled&q=review").ids(); len(got) != 2 {
			t.Errorf("status=active&status=disabled&q=review: %v", got)
		}
		expect(t, e.do("POST", "/v1/tenants/acme/delegations", olga, delegate("old", "sync")), http.StatusConflict, "card_disabled")
		expect(t, e.do("GET", "/a2a/acme/old/.well-known/agent-card.json", "", nil), http.StatusNotFound, "not_found")
		var agents struct{ Items []struct{ AgentID string } }
		e.do("GET", "/a2a/acme/agents", "", nil).json(t, &agents)
		if len(agents.Items) != 1 || agents.Items[0].AgentID != "new" {
			t.Errorf("the public list with a disabled card: %+v", agents.Items)
		}

		// Active again: as before.
		patch("old", `{"status": "active"}`, http.StatusOK)
		if got := e.search(alice, "acme", "").ids(); !slices.Equal(got, []string{"new", "old"}) {
			t.Errorf("default search after reactivation: %v", got)
		}
		expect(t, e.do("POST", "/v1/tenants/acme/delegations", olga, delegate("old", "sync")), http.StatusOK)
	})
}

// refusedSearch expects the search to be refused as invalid.
func (e *env) refusedSearch(tok, query string) {
	e.t.Helper()
	expect(e.t, e.do("GET", "/v1/tenants/acme/cards?"+query, tok, nil), http.StatusBadRequest, "invalid")
}
