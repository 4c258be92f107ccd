package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agentcards/agentcards/authz"
	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/delegation"
	"github.com/agentcards/agentcards/cards/search"
	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/tenants"
	"github.com/agentcards/agentcards/tenants/paging"
	"github.com/agentcards/agentcards/web/webtest"
)

// entry is one service entry point scoped to a tenant, called with the caller in ctx.
type entry struct {
	name string
	call func(ctx context.Context, tenant tenants.ID) error
}

// gateCard is a valid card document of agentID.
func gateCard(t *testing.T, agentID string) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{
		"agentId": agentID, "name": "Reviewer " + agentID, "protocols": []string{"a2a"},
		"capabilities": []any{map[string]any{"name": "review_pr"}},
		"endpoint":     "http://127.0.0.1:9/" + agentID, "visibility": "public",
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// entries lists the entry points of the services the root builds, each with arguments that
// would succeed for a caller allowed everything in an active tenant holding the card agt1.
func entries(t *testing.T, a *App) []entry {
	grant := authz.Assignment{Subject: "dora", Role: authz.RoleReader}
	pol := authz.Policy{Subject: "dora", Object: "cards/agt1", Action: authz.ActCardsRead, Effect: authz.Allow}
	return []entry{
		{"cards.Register", func(ctx context.Context, tn tenants.ID) error {
			_, err := a.Cards.Register(ctx, tn, gateCard(t, "agt2"))
			return err
		}},
		{"cards.Put", func(ctx context.Context, tn tenants.ID) error {
			_, _, err := a.Cards.Put(ctx, tn, "agt1", gateCard(t, "agt1"), cards.Precondition{})
			return err
		}},
		{"cards.Patch", func(ctx context.Context, tn tenants.ID) error {
			_, err := a.Cards.Patch(ctx, tn, "agt1", []byte(`{"description":"patched"}`), cards.Precondition{})
			return err
		}},
		{"cards.Get", func(ctx context.Context, tn tenants.ID) error {
			_, err := a.Cards.Get(ctx, tn, "agt1")
			return err
		}},
		{"cards.Delete", func(ctx context.Context, tn tenants.ID) error {
			return a.Cards.Delete(ctx, tn, "agt1", cards.Precondition{IfMatch: []int64{999}})
		}},
		{"search.Search", func(ctx context.Context, tn tenants.ID) error {
			_, err := a.Search.Search(ctx, tn, search.Query{Q: "reviewer"})
			return err
		}},
		{"a2a.Import", func(ctx context.Context, tn tenants.ID) error {
			_, err := a.A2A.Import(ctx, tn, []byte(`{"agentId": "imported", "card": {"name": "Imported", "description": "d",
				"supportedInterfaces": [{"url": "http://127.0.0.1:9/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
				"version": "1", "capabilities": {}, "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
				"skills": [{"id": "s", "name": "s", "description": "d", "tags": ["t"]}]}}`))
			return err
		}},
		{"cards.CreateImported", func(ctx context.Context, tn tenants.ID) error {
			c, err := cards.Decode(gateCard(t, "agt3"))
			if err != nil {
				t.Fatal(err)
			}
			_, err = a.Cards.CreateImported(ctx, tn, c, cards.ImportRecord{Format: "a2a-1.0"})
			return err
		}},
		{"policy.Roles", func(ctx context.Context, tn tenants.ID) error {
			_, err := a.Enforcers.Roles(ctx, string(tn))
			return err
		}},
		{"policy.Grant", func(ctx context.Context, tn tenants.ID) error {
			_, err := a.Enforcers.Grant(ctx, string(tn), grant)
			return err
		}},
		{"policy.Revoke", func(ctx context.Context, tn tenants.ID) error {
			return a.Enforcers.Revoke(ctx, string(tn), authz.Assignment{Subject: "nobody", Role: authz.RoleReader})
		}},
		{"policy.Policies", func(ctx context.Context, tn tenants.ID) error {
			_, err := a.Enforcers.Policies(ctx, string(tn))
			return err
		}},
		{"policy.AddPolicy", func(ctx context.Context, tn tenants.ID) error {
			_, err := a.Enforcers.AddPolicy(ctx, string(tn), pol)
			return err
		}},
		{"policy.RemovePolicy", func(ctx context.Context, tn tenants.ID) error {
			return a.Enforcers.RemovePolicy(ctx, string(tn), authz.Policy{Subject: "nobody", Object: "cards/agt1", Action: authz.ActCardsRead, Effect: authz.Allow})
		}},
		{"policy.Authorize", func(ctx context.Context, tn tenants.ID) error {
			_, err := a.Enforcers.Authorize(ctx, string(tn), authz.Question{Action: authz.ActCardsRead, Object: "cards/agt1"})
			return err
		}},
		{"secrets.Set", func(ctx context.Context, tn tenants.ID) error {
			return a.Secrets.Set(ctx, tn, "agt1", "s3cret", "")
		}},
		{"secrets.Remove", func(ctx context.Context, tn tenants.ID) error {
			return a.Secrets.Remove(ctx, tn, "agt1")
		}},
	}
}

// tenantEntries are the tenant service's entry points, for platform admins only.
func tenantEntries(a *App) []entry {
	name := "Renamed"
	return []entry{
		{"tenants.Create", func(ctx context.Context, _ tenants.ID) error {
			_, err := a.Tenants.Create(ctx, tenants.Input{ID: "newco", Name: "New"})
			return err
		}},
		{"tenants.Get", func(ctx context.Context, tn tenants.ID) error { _, err := a.Tenants.Get(ctx, tn); return err }},
		{"tenants.List", func(ctx context.Context, _ tenants.ID) error { _, err := a.Tenants.List(ctx); return err }},
		{"tenants.Update", func(ctx context.Context, tn tenants.ID) error {
			_, err := a.Tenants.Update(ctx, tn, tenants.Patch{Name: &name})
			return err
		}},
		{"tenants.Delete", func(ctx context.Context, tn tenants.ID) error { return a.Tenants.Delete(ctx, tn) }},
	}
}

// delegationEntries are the entry points a delegation token opens.
func delegationEntries(a *App) []entry {
	return []entry{
		{"delegation.Delegate", func(ctx context.Context, tn tenants.ID) error {
			_, err := a.Dispatcher.Delegate(ctx, tn, delegation.Request{AgentID: "agt1", Capability: "review_pr", Task: "t", Mode: delegation.ModeSync}, nil)
			return err
		}},
		{"delegation.Get", func(ctx context.Context, tn tenants.ID) error {
			_, err := a.Dispatcher.Get(ctx, tn, "0190c0de-0000-7000-8000-000000000000")
			return err
		}},
		{"delegation.List", func(ctx context.Context, tn tenants.ID) error {
			_, _, err := a.Dispatcher.List(ctx, tn, delegation.Filter{}, paging.Page{})
			return err
		}},
	}
}

func as(p authz.Principal) context.Context { return authz.WithPrincipal(context.Background(), p) }

// TestGatesWithoutHTTP calls the services the root builds directly, as a door other than the REST
// API would: each entry point refuses a suspended tenant, a caller of another tenant (as if the
// tenant did not exist), a caller without a principal, and an agent's delegation token outside
// delegations; and another tenant's card cannot be read.
func TestGatesWithoutHTTP(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) {
		t.Parallel()
		a, root := newGatedApp(t, dialect)
		all := append(entries(t, a), delegationEntries(a)...)
		t.Run("suspended tenant", func(t *testing.T) {
			refused(t, as(authz.Principal{Subject: "admin-frozen", Tenant: "frozen"}), "its admin", "frozen", all, tenants.ErrSuspended)
			refused(t, root, "a platform admin", "frozen", all, tenants.ErrSuspended)
		})
		t.Run("another tenant", func(t *testing.T) { gateAnotherTenant(t, a, all) })
		t.Run("no caller", func(t *testing.T) {
			refused(t, context.Background(), "nobody", "acme", all, authz.ErrUnauthenticated)
		})
		t.Run("delegation token", func(t *testing.T) { gateDelegationToken(t, a) })
		t.Run("open A2A entry points", func(t *testing.T) { gateOpenA2A(t, a, root) })
		t.Run("allowed", func(t *testing.T) { gateAllowed(t, a, all) })
	})
}

// newGatedApp builds the root on a fresh database of dialect with three tenants, acme, other
// and frozen (suspended), each holding the card agt1 and other also only_other. It answers the
// app and a platform admin's context.
func newGatedApp(t *testing.T, dialect string) (*App, context.Context) {
	t.Helper()
	db := storagetest.Open(t, dialect)
	a, err := New(Options{DB: db, Keys: webtest.ServiceKeys(t), SecretKey: make([]byte, 32), NoIndex: dialect != "sqlite"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	root := as(authz.Principal{Subject: "root", PlatformAdmin: true})
	for _, tn := range []tenants.ID{"acme", "other", "frozen"} {
		if _, err := a.Tenants.Create(root, tenants.Input{ID: tn, Name: string(tn), Admins: []string{"admin-" + string(tn)}}); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Cards.Register(as(authz.Principal{Subject: "admin-" + string(tn), Tenant: string(tn)}), tn, gateCard(t, "agt1")); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.Cards.Register(as(authz.Principal{Subject: "admin-other", Tenant: "other"}), "other", gateCard(t, "only_other")); err != nil {
		t.Fatal(err)
	}
	suspended := tenants.StatusSuspended
	if _, err := a.Tenants.Update(root, "frozen", tenants.Patch{Status: &suspended}); err != nil {
		t.Fatal(err)
	}
	return a, root
}

// refused checks that every entry of list, called by who (ctx) in tenant tn, answers want.
func refused(t *testing.T, ctx context.Context, who string, tn tenants.ID, list []entry, want error) {
	t.Helper()
	for _, e := range list {
		err := e.call(ctx, tn)
		if !errors.Is(err, want) {
			t.Errorf("%s, %s in %s: %v, want %v", who, e.name, tn, err, want)
		}
		// Not-found is one kind for tenants, cards and delegations: the message says
		// that the gate refused, not a lookup behind it.
		if want == tenants.ErrNotFound && fault.MessageOf(err) != fmt.Sprintf("tenant %q: not found", tn) {
			t.Errorf("%s, %s in %s: %q, want the tenant's not found", who, e.name, tn, fault.MessageOf(err))
		}
	}
}

// gateAnotherTenant: other's admin is refused in acme and in a tenant that does not exist alike,
// and acme's admin finds other's card missing, by id and in a search.
func gateAnotherTenant(t *testing.T, a *App, all []entry) {
	bob := as(authz.Principal{Subject: "admin-other", Tenant: "other"})
	refused(t, bob, "other's admin", "acme", all, tenants.ErrNotFound)
	refused(t, bob, "other's admin", "nosuch", all, tenants.ErrNotFound)
	// A card of another tenant is missing in one's own, whatever its id.
	acme := as(authz.Principal{Subject: "admin-acme", Tenant: "acme"})
	if _, err := a.Cards.Get(acme, "acme", "only_other"); !errors.Is(err, cards.ErrNotFound) {
		t.Errorf("acme reads other's card: %v", err)
	}
	res, err := a.Search.Search(acme, "acme", search.Query{})
	if err != nil || res.Total != 1 || res.Items[0].Card.AgentID != "agt1" {
		t.Errorf("acme's search: %+v, %v; want its one card", res, err)
	}
}

// gateDelegationToken: an agent's delegation token opens the delegation entry points only,
// which then answer as for any caller; it opens neither the other services nor the tenants'.
func gateDelegationToken(t *testing.T, a *App) {
	agent := as(authz.Principal{Subject: authz.AgentSubject("agt1"), Tenant: "acme", Depth: 1, Delegated: true})
	refused(t, agent, "an agent's delegation token", "acme", entries(t, a), authz.ErrUnauthenticated)
	for _, e := range []struct {
		entry
		want error
	}{
		// The agent holds no grant to delegate: refused by policy, and recorded.
		{delegationEntries(a)[0], authz.ErrForbidden},
		{delegationEntries(a)[1], delegation.ErrNotFound},
		{delegationEntries(a)[2], nil},
	} {
		err := e.call(agent, "acme")
		if !errors.Is(err, e.want) {
			t.Errorf("an agent's delegation token, %s: %v, want %v", e.name, err, e.want)
		}
		// Past the gate: the delegation is missing, not the tenant.
		if e.want == delegation.ErrNotFound && !strings.HasPrefix(fault.MessageOf(err), "delegation ") {
			t.Errorf("an agent's delegation token, %s: %q, want the delegation's not found", e.name, fault.MessageOf(err))
		}
	}
	// The token is no credential for tenants either.
	for _, ctx := range []context.Context{agent, context.Background()} {
		for _, e := range tenantEntries(a) {
			if err := e.call(ctx, "acme"); !errors.Is(err, authz.ErrUnauthenticated) {
				t.Errorf("%s without a user's token: %v", e.name, err)
			}
		}
	}
}

// gateOpenA2A: a missing or suspended tenant answers as one without the card, or without public
// cards (no AI Catalog), to anyone; a delegation token is no credential there either.
func gateOpenA2A(t *testing.T, a *App, root context.Context) {
	for _, ctx := range []context.Context{context.Background(), root} {
		for _, tn := range []tenants.ID{"frozen", "nosuch"} {
			if _, err := a.A2A.GetA2A(ctx, tn, "agt1"); !errors.Is(err, cards.ErrNotFound) {
				t.Errorf("GetA2A in %s: %v", tn, err)
			}
			page, err := a.A2A.PublicAgents(ctx, tn, paging.Page{})
			if err != nil || len(page.Items) != 0 {
				t.Errorf("PublicAgents in %s: %d agents, %v", tn, len(page.Items), err)
			}
			if _, err := a.A2A.Catalog(ctx, tn, paging.Page{}); !errors.Is(err, tenants.ErrNotFound) {
				t.Errorf("Catalog in %s: %v", tn, err)
			}
		}
		if _, err := a.A2A.GetA2A(ctx, "acme", "agt1"); err != nil {
			t.Errorf("GetA2A of a public card: %v", err)
		}
		if page, err := a.A2A.Catalog(ctx, "acme", paging.Page{}); err != nil || len(page.Cards) != 1 || page.Tenant.ID != "acme" {
			t.Errorf("Catalog in acme: %d cards of %q, %v; want its public card", len(page.Cards), page.Tenant.ID, err)
		}
	}
	agent := as(authz.Principal{Subject: authz.AgentSubject("agt1"), Tenant: "acme", Depth: 1, Delegated: true})
	if _, err := a.A2A.GetA2A(agent, "acme", "agt1"); !errors.Is(err, authz.ErrUnauthenticated) {
		t.Errorf("GetA2A with a delegation token: %v", err)
	}
	if _, err := a.A2A.PublicAgents(agent, "acme", paging.Page{}); !errors.Is(err, authz.ErrUnauthenticated) {
		t.Errorf("PublicAgents with a delegation token: %v", err)
	}
	if _, err := a.A2A.Catalog(agent, "acme", paging.Page{}); !errors.Is(err, authz.ErrUnauthenticated) {
		t.Errorf("Catalog with a delegation token: %v", err)
	}
	// The search service's own list, which PublicAgents asks, passes the same gate.
	for _, tn := range []tenants.ID{"frozen", "nosuch"} {
		if page, err := a.Search.Public(context.Background(), tn, "", 10); err != nil || len(page.Cards) != 0 {
			t.Errorf("search.Public in %s: %d cards, %v", tn, len(page.Cards), err)
		}
	}
	if page, err := a.Search.Public(context.Background(), "acme", "", 10); err != nil || len(page.Cards) != 1 {
		t.Errorf("search.Public in acme: %d cards, %v; want its public card", len(page.Cards), err)
	}
	if _, err := a.Search.Public(agent, "acme", "", 10); !errors.Is(err, authz.ErrUnauthenticated) {
		t.Errorf("search.Public with a delegation token: %v", err)
	}
}

// gateAllowed: the same calls pass for the tenant's admin, so the refusals of the other
// subtests come from the gates.
func gateAllowed(t *testing.T, a *App, all []entry) {
	ctx := as(authz.Principal{Subject: "admin-acme", Tenant: "acme"})
	for _, e := range all {
		err := e.call(ctx, "acme")
		// Not-found is one kind for tenants, roles, policies and delegations: the
		// message says which was missing.
		missing := func(what string) bool {
			return errors.Is(err, fault.NotFound) && strings.HasPrefix(fault.MessageOf(err), what)
		}
		switch {
		case e.name == "cards.Delete" && errors.Is(err, cards.ErrStale),
			e.name == "policy.Revoke" && missing("role "),
			e.name == "policy.RemovePolicy" && missing("policy "),
			e.name == "delegation.Get" && missing("delegation "),
			// Past every gate and the policy: the outbound guard refuses loopback.
			e.name == "delegation.Delegate" && errors.Is(err, delegation.ErrBlocked):
		case err != nil:
			t.Errorf("admin, %s: %v", e.name, err)
		}
	}
}
