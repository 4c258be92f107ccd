package mcp_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/agentcards/agentcards/web/catalog"
	"github.com/agentcards/agentcards/web/mcp"
	"github.com/agentcards/agentcards/web/webtest"
)

// searchPage is a page of two results as the REST door answers it: whole cards, one deprecated
// with its successor, with scores and what matched.
const searchPage = `{"total": 9, "nextCursor": "next-1", "items": [
	{"card": {"agentId": "rev", "name": "Reviewer", "description": "Reviews pull requests", "protocols": ["http", "a2a"],
		"capabilities": [{"name": "review_pr", "title": "Review a PR"}], "resources": [{"uri": "repo://web"}], "tags": ["code"],
		"endpoint": "https://rev.example.com/task", "visibility": "tenant", "id": "c-1", "revision": 4,
		"createdAt": "2026-05-04T10:00:00Z", "updatedAt": "2026-05-04T11:00:00Z"},
	 "score": 2.5, "matchedCapabilities": ["review_pr"], "matchedResources": ["repo://web"]},
	{"card": {"agentId": "old", "name": "Old reviewer", "protocols": ["http"], "capabilities": [], "resources": [], "tags": [],
		"visibility": "tenant", "status": "deprecated", "deprecation": {"message": "use rev", "successor": "rev"},
		"id": "c-2", "revision": 1, "createdAt": "2026-05-04T10:00:00Z", "updatedAt": "2026-05-04T10:00:00Z"}}]}`

// TestSearchCompact: cards_search answers each result compact by default (what an agent needs to
// pick one and call it: no empty member, the status only of a card that is not active); fields
// chooses other members, card for the whole card; the view is the door's, never sent on.
func TestSearchCompact(t *testing.T) {
	door := webtest.NewScript(func(w http.ResponseWriter, _ *http.Request, _ int) { webtest.Reply(w, http.StatusOK, searchPage) })
	s, _ := session(t, door, beforeTheDay)
	webtest.JSONEqual(t, "the default view", structured(t, call(t, s, "cards_search", `{"q": "review", "limit": 2}`)), []byte(`{
		"total": 9, "nextCursor": "next-1", "items": [
		{"agentId": "rev", "name": "Reviewer", "description": "Reviews pull requests", "score": 2.5, "matchedCapabilities": ["review_pr"],
		 "endpoint": "https://rev.example.com/task"},
		{"agentId": "old", "name": "Old reviewer", "status": "deprecated", "deprecation": {"message": "use rev", "successor": "rev"}}]}`))
	webtest.JSONEqual(t, "fields chosen", structured(t, call(t, s, "cards_search", `{"fields": ["agentId", "tags", "revision", "matchedResources"]}`)), []byte(`{
		"total": 9, "nextCursor": "next-1", "items": [
		{"agentId": "rev", "tags": ["code"], "revision": 4, "matchedResources": ["repo://web"]},
		{"agentId": "old", "tags": [], "revision": 1}]}`))
	whole := structured(t, call(t, s, "cards_search", `{"fields": ["card"]}`))
	webtest.JSONEqual(t, "the whole card", whole, []byte(`{"total": 9, "nextCursor": "next-1", "items": [
		{"card": {"agentId": "rev", "name": "Reviewer", "description": "Reviews pull requests", "protocols": ["http", "a2a"],
			"capabilities": [{"name": "review_pr", "title": "Review a PR"}], "resources": [{"uri": "repo://web"}], "tags": ["code"],
			"endpoint": "https://rev.example.com/task", "visibility": "tenant", "id": "c-1", "revision": 4,
			"createdAt": "2026-05-04T10:00:00Z", "updatedAt": "2026-05-04T11:00:00Z"}},
		{"card": {"agentId": "old", "name": "Old reviewer", "protocols": ["http"], "capabilities": [], "resources": [], "tags": [],
			"visibility": "tenant", "status": "deprecated", "deprecation": {"message": "use rev", "successor": "rev"},
			"id": "c-2", "revision": 1, "createdAt": "2026-05-04T10:00:00Z", "updatedAt": "2026-05-04T10:00:00Z"}}]}`))
	for _, r := range door.Requests() {
		if r.Method != "GET" || r.Target != "/v1/tenants/acme/cards?limit=2&q=review" && r.Target != "/v1/tenants/acme/cards" {
			t.Errorf("sent %s %s: the view is not the door's to see", r.Method, r.Target)
		}
	}
	if code := errorCode(t, call(t, s, "cards_search", `{"fields": ["secret"]}`)); code != "invalid" {
		t.Errorf("a field no card has: %s, want invalid", code)
	}
	if n := len(door.Requests()); n != 3 {
		t.Errorf("%d searches sent, want 3 (none for the field refused)", n)
	}
}

// TestSearchExplainSimilarity: cards_search sends explain on, and answers each result's
// explanation as REST gave it, the sentence encoder's similarity of a re-ranked card included,
// within its full output schema (the one its tool announces is trimmed to an object).
func TestSearchExplainSimilarity(t *testing.T) {
	door := webtest.NewScript(func(w http.ResponseWriter, _ *http.Request, _ int) {
		webtest.Reply(w, http.StatusOK, `{"total": 1, "items": [
			{"card": {"agentId": "tripgo", "name": "TripGo", "protocols": ["http"], "capabilities": [], "resources": [], "tags": [],
				"visibility": "tenant", "id": "c-1", "revision": 1, "createdAt": "2026-05-04T10:00:00Z", "updatedAt": "2026-05-04T10:00:00Z"},
			 "score": 0.31, "explain": {"words": [{"word": "transit", "weight": 1, "matched": "transit", "by": "word",
				"where": ["description"], "count": 1, "adds": 0.31}], "length": 40, "averageLength": 52.5,
				"similarity": {"cosine": 0.43, "weight": 2, "rank": 1.86}}}]}`)
	})
	s, _ := session(t, door, beforeTheDay)
	got := structured(t, call(t, s, "cards_search", `{"q": "transit", "explain": true}`))
	r, ok := catalog.Lookup("cards.search")
	if !ok {
		t.Fatal("cards.search is not in the catalogue")
	}
	schema, err := mcp.OutputSchema(r)
	if err != nil {
		t.Fatal(err)
	}
	resolved, err := schema.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(got, &v); err != nil {
		t.Fatal(err)
	}
	if err := resolved.Validate(v); err != nil {
		t.Errorf("outside cards_search's output schema: %v", err)
	}
	webtest.JSONEqual(t, "the explained result", got, []byte(`{
		"total": 1, "items": [{"agentId": "tripgo", "name": "TripGo", "score": 0.31,
		"explain": {"words": [{"word": "transit", "weight": 1, "matched": "transit", "by": "word", "where": ["description"], "count": 1, "adds": 0.31}],
			"length": 40, "averageLength": 52.5, "similarity": {"cosine": 0.43, "weight": 2, "rank": 1.86}}}]}`))
	if r := door.Requests(); len(r) != 1 || r[0].Target != "/v1/tenants/acme/cards?explain=true&q=transit" {
		t.Errorf("sent %+v, want one search with explain", r)
	}
}
