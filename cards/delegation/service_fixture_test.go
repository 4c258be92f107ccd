package delegation_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/agentcards/agentcards/authz"
	"github.com/agentcards/agentcards/authz/authztest"
	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/delegation"
	"github.com/agentcards/agentcards/storage"
	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/tenants"
	"github.com/agentcards/agentcards/web/webtest"
)

// serviceDeps are the dependencies a service-level test chooses when newDispatcherFixtureAt's
// (one tenant, authztest.AllowAll, the plain HTTP client) are not the ones under test.
type serviceDeps struct {
	tenants  []tenants.ID // each gets the card agt1 at endpoint; "acme" when empty
	endpoint string
	authz    delegation.Authorizer // authztest.AllowAll when nil
	doer     delegation.Doer       // http.DefaultClient when nil
	blocked  func(error) bool
}

// newServiceDispatcher builds a dispatcher over a real SQLite store with deps.
func newServiceDispatcher(t *testing.T, cfg delegation.Config, deps serviceDeps) *delegation.Dispatcher {
	t.Helper()
	db := storagetest.Open(t, "sqlite")
	ctx := context.Background()
	if len(deps.tenants) == 0 {
		deps.tenants = []tenants.ID{"acme"}
	}
	if deps.authz == nil {
		deps.authz = authztest.AllowAll{}
	}
	if deps.doer == nil {
		deps.doer = http.DefaultClient
	}
	cardStore := storage.NewCardStore(db)
	now := time.Now().UTC()
	for i, tenant := range deps.tenants {
		storagetest.CreateTenant(t, db, tenant, now, "alice")
		card := cards.Card{AgentID: "agt1", Name: "Agent", Protocols: []string{"http"}, Endpoint: deps.endpoint,
			Capabilities: []cards.Capability{{Name: "review_pr"}}, Visibility: cards.VisibilityTenant,
			ID: fmt.Sprintf("5b0f7c1e-0000-4000-8000-%012d", 100+i), Revision: 1, CreatedAt: now, UpdatedAt: now}
		if _, err := cardStore.Create(ctx, tenant, card); err != nil {
			t.Fatal(err)
		}
	}
	x := delegation.NewDispatcher(cfg, delegation.Deps{
		Store: storage.NewDelegationStore(db), Cards: cardStore, Authz: deps.authz,
		Gate: &tenants.Service{Store: storage.NewTenantStore(db)},
		Doer: deps.doer, Signer: webtest.ServiceKeys(t), Blocked: deps.blocked,
	})
	t.Cleanup(x.Wait)
	return x
}

// as is a context carrying a caller's own token in tenant.
func as(subject string, tenant tenants.ID) context.Context {
	return authz.WithPrincipal(context.Background(), authz.Principal{Subject: subject, Tenant: string(tenant)})
}

// syncReview and asyncReview are requests for the fixture card's capability.
func syncReview() delegation.Request {
	return delegation.Request{AgentID: "agt1", Capability: "review_pr", Task: "review", Mode: delegation.ModeSync}
}

func asyncReview() delegation.Request {
	r := syncReview()
	r.Mode = delegation.ModeAsync
	return r
}

// stored reads the record back as its caller, and fails the test unless it has status.
func stored(t *testing.T, ctx context.Context, x *delegation.Dispatcher, tenant tenants.ID, id string, status delegation.Status) delegation.Delegation {
	t.Helper()
	d, err := x.Get(ctx, tenant, id)
	if err != nil {
		t.Fatalf("read back %s: %v", id, err)
	}
	if d.Status != status {
		t.Fatalf("stored record %s is %s (%q), want %s", id, d.Status, d.Error, status)
	}
	return d
}

// eventually calls cond until it reports true, failing the test after a generous limit: for
// waiting on an event (a cooldown ending, a background call finishing), never on a duration.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	limit := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(limit) {
			t.Fatalf("still waiting for %s after 30s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
