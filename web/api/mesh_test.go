package api_test

import (
	"testing"
	"time"

	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/web/api"
)

// TestMeshCapability: the capability of a delegation that names none: the card's only one
// whatever the task; else the one whose name and title share the most words with the task (words
// split at anything not a letter or digit, any case), the first listed on a tie; none for a card
// that declares none.
func TestMeshCapability(t *testing.T) {
	finance := cards.Card{AgentID: "fin", Capabilities: []cards.Capability{
		{Name: "budget_planning"}, {Name: "expense_approval", Title: "Approve an expense report"}, {Name: "payroll"}}}
	for _, c := range []struct {
		card cards.Card
		task string
		want string
	}{
		{cards.Card{Capabilities: []cards.Capability{{Name: "only"}}}, "nothing in common", "only"},
		{finance, "Plan next year's BUDGET", "budget_planning"},
		{finance, "approve expense #42", "expense_approval"},
		{finance, "run payroll; approve it", "expense_approval"}, // one word each (approve, in the title): the first listed
		{finance, "report on the expense", "expense_approval"},
		{finance, "something else entirely", "budget_planning"}, // none shared: the first
		{finance, "payroll budget", "budget_planning"},          // one each: the first listed
	} {
		if got, ok := api.MeshCapability(c.card, c.task); !ok || got != c.want {
			t.Errorf("%q: %q, %v; want %q", c.task, got, ok, c.want)
		}
	}
	if got, ok := api.MeshCapability(cards.Card{AgentID: "quiet"}, "anything"); ok {
		t.Errorf("no capability: %q, true", got)
	}
	if got := api.MeshTime(time.Date(2026, 3, 1, 10, 0, 0, 123456789, time.FixedZone("x", 3600))); got != "2026-03-01T09:00:00.123Z" {
		t.Errorf("MeshTime: %s", got)
	}
}
