package delegation_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/agentcards/agentcards/authz"
	"github.com/agentcards/agentcards/cards/agenttest"
	"github.com/agentcards/agentcards/cards/delegation"
	"github.com/agentcards/agentcards/tenants"
)

// refuses is a policy that forbids everything to one subject and allows the rest.
type refuses string

func (r refuses) Check(ctx context.Context, _, obj, _ string) error {
	if p, _ := authz.PrincipalFrom(ctx); p.Subject == string(r) {
		return fmt.Errorf("%s on %s: %w", p.Subject, obj, authz.ErrForbidden)
	}
	return nil
}

// TestServiceRateLimit: beyond its burst a tenant's delegations are ErrRateLimited, recorded
// rejected and not sent; attempts the policy refuses spend none of the budget; each tenant has
// its own.
func TestServiceRateLimit(t *testing.T) {
	a := agenttest.New(t, answered(http.StatusOK))
	// One token per ~17 minutes: the bucket does not refill while the test runs.
	x := newServiceDispatcher(t, delegation.Config{RatePerSecond: 0.001, RateBurst: 2}, serviceDeps{
		tenants: []tenants.ID{"acme", "globex"}, endpoint: a.Endpoint(), authz: refuses("mallory"),
	})
	mallory := as("mallory", "acme")
	for i := range 5 {
		d, err := x.Delegate(mallory, "acme", syncReview(), nil)
		if !errors.Is(err, authz.ErrForbidden) || d.Status != delegation.StatusRejected {
			t.Fatalf("refused attempt %d: %+v, %v; want rejected, ErrForbidden", i, d, err)
		}
		stored(t, mallory, x, "acme", d.ID, delegation.StatusRejected)
	}
	for _, tenant := range []tenants.ID{"acme", "globex"} {
		olga := as("olga", tenant)
		for i := range 2 {
			d, err := x.Delegate(olga, tenant, syncReview(), nil)
			if err != nil || d.Status != delegation.StatusCompleted {
				t.Fatalf("%s: delegation %d within the burst: %+v, %v; want completed", tenant, i, d, err)
			}
		}
		calls := a.Calls()
		d, err := x.Delegate(olga, tenant, syncReview(), nil)
		if !errors.Is(err, delegation.ErrRateLimited) || d.Status != delegation.StatusRejected {
			t.Fatalf("%s: beyond the burst: %+v, %v; want rejected, ErrRateLimited", tenant, d, err)
		}
		stored(t, olga, x, tenant, d.ID, delegation.StatusRejected)
		if n := a.Calls(); n != calls {
			t.Fatalf("%s: a rate-limited delegation reached the agent", tenant)
		}
	}
	if n := a.Calls(); n != 4 {
		t.Fatalf("the agent was called %d times, want 4", n)
	}
}
