package delegation_test

import (
	"context"
	"errors"
	"testing"

	"github.com/agentcards/agentcards/authz"
	"github.com/agentcards/agentcards/cards/delegation"
)

// TestServiceDepthExceeded: an agent already at the maximum depth cannot delegate further:
// ErrDepthExceeded, recorded rejected one level deeper, and nothing sent; one level less may.
func TestServiceDepthExceeded(t *testing.T) {
	f := newDispatcherFixture(t, delegation.Config{MaxDepth: 3}, nil)
	at := func(depth int) context.Context {
		return authz.WithPrincipal(context.Background(), authz.Principal{
			Subject: authz.AgentSubject("reviewer"), Tenant: "acme", Depth: depth, Delegated: true})
	}
	d, err := f.x.Delegate(at(3), "acme", syncReview(), nil)
	if !errors.Is(err, delegation.ErrDepthExceeded) || d.Status != delegation.StatusRejected {
		t.Fatalf("at MaxDepth: %+v, %v; want rejected, ErrDepthExceeded", d, err)
	}
	got := stored(t, at(3), f.x, "acme", d.ID, delegation.StatusRejected)
	if got.Depth != 4 || got.Caller != authz.AgentSubject("reviewer") {
		t.Fatalf("stored %+v, want depth 4 by agent:reviewer", got)
	}
	if n := f.agent.Calls(); n != 0 {
		t.Fatalf("the agent was called %d times", n)
	}
	d, err = f.x.Delegate(at(2), "acme", syncReview(), nil)
	if err != nil || d.Status != delegation.StatusCompleted || d.Depth != 3 {
		t.Fatalf("one below MaxDepth: %+v, %v; want completed at depth 3", d, err)
	}
}
