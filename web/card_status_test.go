package web_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/agentcards/agentcards/cards/a2a"
	"github.com/agentcards/agentcards/cards/agenttest"
)

// TestCardStatus: a card is active, deprecated (still found and delegated to, flagged in results
// and in its A2A card) or disabled (kept, found only when asked for, refused to delegations with
// 409 card_disabled, out of the A2A views); status changes are card writes, back and forth, on
// every database and both search modes.
func TestCardStatus(t *testing.T) {
	forEachDialectAndIndex(t, func(t *testing.T, e *env) {
		a := agenttest.New(t, agenttest.Answer(http.StatusOK, `{"result": "ok"}`))
		alice, olga := e.delegationSetup("acme", "old", a.Endpoint())
		next := sampleCard("new")
		next["endpoint"] = a.Endpoint()
		expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, next), http.StatusCreated)
		s := statusSteps{t: t, e: e, alice: alice, olga: olga}
		s.refused()
		s.deprecated()
		s.disabled()
		s.extension()

		// Active again: as before.
		s.patch("old", `{"status": "active"}`, http.StatusOK)
		if got := e.search(alice, "acme", "").ids(); !slices.Equal(got, []string{"copy", "new", "old"}) {
			t.Errorf("default search after reactivation: %v", got)
		}
		expect(t, e.do("POST", "/v1/tenants/acme/delegations", olga, delegate("old", "sync")), http.StatusOK)
	})
}

// statusSteps are the steps of TestCardStatus, in order, on tenant acme's cards "old" and "new"
// (admin alice, orchestrator olga).
type statusSteps struct {
	t           *testing.T
	e           *env
	alice, olga string
}

// patch merge-patches card agentID with body as alice, and expects status (and code).
func (s statusSteps) patch(agentID, body string, status int, code ...string) response {
	s.t.Helper()
	r := s.e.do("PATCH", "/v1/tenants/acme/cards/"+agentID, s.alice, json.RawMessage(body), "Content-Type", "application/merge-patch+json")
	expect(s.t, r, status, code...)
	return r
}

// refused makes both cards public, then checks the active status and the changes refused.
func (s statusSteps) refused() {
	t, e, alice, patch := s.t, s.e, s.alice, s.patch
	for _, id := range []string{"old", "new"} {
		patch(id, `{"visibility": "public"}`, http.StatusOK)
	}
	// Active is the status of a card that names none: it is stored and served absent.
	r := patch("new", `{"status": "active"}`, http.StatusOK)
	if strings.Contains(string(r.body), `"status"`) {
		t.Errorf("an active card shows its status: %s", r.body)
	}

	// Refused: a status not taken, a card its own successor, a successor that is no agentId.
	patch("old", `{"status": "retired"}`, http.StatusBadRequest, "invalid")
	patch("old", `{"status": "deprecated", "deprecation": {"successor": "old"}}`, http.StatusBadRequest, "invalid")
	patch("old", `{"status": "deprecated", "deprecation": {"successor": "a b"}}`, http.StatusBadRequest, "invalid")
	// A deprecation goes with its status: without it, it is dropped.
	if r := patch("old", `{"deprecation": {"message": "x"}}`, http.StatusOK); strings.Contains(string(r.body), "deprecation") {
		t.Errorf("a deprecation kept without the status: %s", r.body)
	}
	e.refusedSearch(alice, "status=retired")
}

// deprecated deprecates "old".
func (s statusSteps) deprecated() {
	t, e, alice, olga, patch := s.t, s.e, s.alice, s.olga, s.patch
	// Deprecated: found, flagged, delegated to; its A2A card declares the deprecation.
	r := patch("old", `{"status": "deprecated", "deprecation": {"message": "Use new.", "successor": "new"}}`, http.StatusOK)
	var card struct {
		Status      string
		Deprecation struct{ Message, Successor string }
		Revision    int64
	}
	r.json(t, &card)
	if card.Status != "deprecated" || card.Deprecation.Successor != "new" || card.Revision != 4 {
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
}

// disabled disables "old".
func (s statusSteps) disabled() {
	t, e, alice, olga, patch := s.t, s.e, s.alice, s.olga, s.patch
	// Disabled: kept and readable, out of searches unless asked for, never delegated to, out
	// of the A2A views. The deprecation goes with the status it came with.
	if r := patch("old", `{"status": "disabled"}`, http.StatusOK); strings.Contains(string(r.body), "deprecation") {
		t.Errorf("a disabled card keeps its deprecation: %s", r.body)
	}
	expect(t, e.getCard("acme", "old"), http.StatusOK)
	if got := e.search(alice, "acme", "").ids(); !slices.Equal(got, []string{"new"}) {
		t.Errorf("default search with a disabled card: %v", got)
	}
	if a := e.search(alice, "acme", "limit=1"); a.Total != 1 || !slices.Equal(a.ids(), []string{"new"}) || a.NextCursor != "" {
		t.Errorf("default search with a disabled card, a page of 1: %+v", a)
	}
	if got := e.search(alice, "acme", "q=review").ids(); !slices.Equal(got, []string{"new"}) {
		t.Errorf("ranked search with a disabled card: %v", got)
	}
	if got := e.search(alice, "acme", "status=disabled").ids(); !slices.Equal(got, []string{"old"}) {
		t.Errorf("status=disabled: %v", got)
	}
	if got := e.search(alice, "acme", "status=active&status=disabled").ids(); !slices.Equal(got, []string{"new", "old"}) {
		t.Errorf("status=active&status=disabled: %v", got)
	}
	expect(t, e.do("POST", "/v1/tenants/acme/delegations", olga, delegate("old", "sync")), http.StatusConflict, "card_disabled")
	var rejected struct {
		Items []struct{ AgentID, Status, Error string }
	}
	e.do("GET", "/v1/tenants/acme/delegations?status=rejected", olga, nil).json(t, &rejected)
	if len(rejected.Items) != 1 || rejected.Items[0].AgentID != "old" || !strings.Contains(rejected.Items[0].Error, "disabled") {
		t.Errorf("the refused delegation is not recorded as rejected: %+v", rejected.Items)
	}
	expect(t, e.do("GET", "/a2a/acme/old/.well-known/agent-card.json", "", nil), http.StatusNotFound, "not_found")
	expect(t, e.do("GET", "/a2a/acme/old/.well-known/agent-card.json", alice, nil), http.StatusNotFound, "not_found")
	var agents struct{ Items []struct{ AgentID string } }
	e.do("GET", "/a2a/acme/agents", "", nil).json(t, &agents)
	if len(agents.Items) != 1 || agents.Items[0].AgentID != "new" {
		t.Errorf("the public list with a disabled card: %+v", agents.Items)
	}
}

// extension gives "new" A2A extensions, then deprecates it and imports its A2A card as "copy".
func (s statusSteps) extension() {
	t, e, alice, patch := s.t, s.e, s.alice, s.patch
	// The extension says what the status says: an active card that stores one serves none; a
	// deprecated agent's A2A card, imported, is a deprecated card.
	ext := `[{"uri": "` + a2a.DeprecationExtension + `", "description": "Gone."}, {"uri": "https://example.com/ext"}]`
	patch("new", `{"a2a": {"extensions": `+ext+`}}`, http.StatusOK)
	r := e.do("GET", "/a2a/acme/new/.well-known/agent-card.json", "", nil)
	if strings.Contains(string(r.body), a2a.DeprecationExtension) || !strings.Contains(string(r.body), "https://example.com/ext") {
		t.Errorf("an active card's A2A extensions: %s", r.body)
	}
	patch("new", `{"status": "deprecated", "deprecation": {"message": "Use newer.", "successor": "newer"}}`, http.StatusOK)
	served := e.do("GET", "/a2a/acme/new/.well-known/agent-card.json?version=1.0", "", nil).body
	expect(t, e.do("POST", "/v1/tenants/acme/cards/import", alice, map[string]any{"agentId": "copy", "card": json.RawMessage(served)}), http.StatusCreated)
	var copied struct {
		Status      string
		Deprecation struct{ Message, Successor string }
		A2A         struct{ Extensions []struct{ URI string } }
	}
	e.getCard("acme", "copy").json(t, &copied)
	if copied.Status != "deprecated" || copied.Deprecation.Message != "Use newer." || copied.Deprecation.Successor != "newer" ||
		len(copied.A2A.Extensions) != 1 {
		t.Errorf("a deprecated agent's A2A card imported: %+v", copied)
	}
}

// refusedSearch expects the search to be refused as invalid.
func (e *env) refusedSearch(tok, query string) {
	e.t.Helper()
	expect(e.t, e.do("GET", "/v1/tenants/acme/cards?"+query, tok, nil), http.StatusBadRequest, "invalid")
}
