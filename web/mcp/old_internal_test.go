package mcp

import (
	"errors"
	"testing"

	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/web/client"
)

// TestChooseCapability: the capability of a delegation that names none: the card's only one
// whatever the task; else the one whose name and title share the most words with the task (words
// split at anything not a letter or digit, any case), the first listed on a tie.
func TestChooseCapability(t *testing.T) {
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
		got, err := chooseCapability(c.card, c.task)
		if err != nil || got != c.want {
			t.Errorf("%q: %q, %v; want %q", c.task, got, err, c.want)
		}
	}
	_, err := chooseCapability(cards.Card{AgentID: "quiet"}, "anything")
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Code != "invalid" || ce.Status != 400 {
		t.Errorf("no capability: %v", err)
	}
}
