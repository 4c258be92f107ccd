package policy_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/casbin/casbin/v2"

	"github.com/agentcards/agentcards/authz"
	"github.com/agentcards/agentcards/authz/policy"
	"github.com/agentcards/agentcards/storage"
	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/tenants"
)

// TestCheckAgreesWithCasbin: Check, with its memo of decisions and one decision for every card
// where the rules cannot tell cards apart, answers what casbin answers for the same rules,
// asked afresh each time. Random policies mix rules that name every card ("cards/*"), some
// cards ("cards/a*", "cards/agt1"), capabilities, other objects, denies and roles; each is asked
// about every card, action and subject twice, in a random order (the second time from the memo).
func TestCheckAgreesWithCasbin(t *testing.T) {
	db := storagetest.Open(t, "sqlite")
	store := storage.NewRuleStore(db)
	tenantStore := storage.NewTenantStore(db)
	enforcers := policy.NewEnforcers(store, &tenants.Service{Store: tenantStore})
	objects := []string{"cards/*", "cards/a*", "cards/agt1", "cards/b?t", "cards/*/capabilities/*", "cards/agt2/capabilities/x", "policies", "delegations/*"}
	actions := []string{authz.ActCardsRead, authz.ActCardsWrite, authz.ActDelegate}
	subjects := []string{"alice", "bob", "carol"}
	cardsAsked := []string{"agt1", "agt2", "bat", "b.t", "zed", "a"}
	rng := rand.New(rand.NewPCG(11, 12))
	for round := range 60 {
		tenant := fmt.Sprintf("t%d", round)
		now := time.Now()
		if err := tenantStore.Create(context.Background(), tenants.Tenant{ID: tenants.ID(tenant), Name: tenant, Status: tenants.StatusActive, CreatedAt: now, UpdatedAt: now}, nil); err != nil {
			t.Fatal(err)
		}
		rules := []authz.Rule{{PType: "g", Values: []string{"alice", "editor", tenant}}, {PType: "g", Values: []string{"bob", "viewer", tenant}}}
		// Half the rounds draw only from objects that name every card or none, so that both of
		// Check's ways are taken.
		pool := objects
		if round%2 == 0 {
			pool = []string{"cards/*", "policies", "delegations/*"}
		}
		for range 1 + rng.IntN(6) {
			sub := []string{"alice", "bob", "carol", "editor", "viewer"}[rng.IntN(5)]
			eft := authz.Allow
			if rng.IntN(4) == 0 {
				eft = authz.Deny
			}
			rules = append(rules, authz.Rule{PType: "p", Values: []string{sub, tenant, pool[rng.IntN(len(pool))], actions[rng.IntN(len(actions))], eft}})
		}
		if _, err := store.AddRules(context.Background(), tenant, rules); err != nil {
			t.Fatal(err)
		}
		oracle := newOracle(t, rules)
		v, err := store.PolicyVersion(context.Background(), tenant)
		if err != nil {
			t.Fatal(err)
		}
		type question struct{ sub, obj, act string }
		var qs []question
		for _, sub := range subjects {
			for _, act := range actions {
				for _, id := range cardsAsked {
					qs = append(qs, question{sub, authz.CardObject(id), act}, question{sub, authz.CardObject(id) + "/capabilities/x", act})
				}
			}
		}
		for pass := range 2 {
			rng.Shuffle(len(qs), func(i, j int) { qs[i], qs[j] = qs[j], qs[i] })
			for _, q := range qs {
				ctx := authz.WithPolicyVersion(authz.WithPrincipal(context.Background(), authz.Principal{Subject: q.sub, Tenant: tenant}), tenant, v)
				got := enforcers.Check(ctx, tenant, q.obj, q.act) == nil
				want, err := oracle.Enforce(q.sub, tenant, q.obj, q.act)
				if err != nil {
					t.Fatal(err)
				}
				if got != want {
					t.Fatalf("round %d pass %d: %s %s %s: Check says %v, casbin %v; rules %v", round, pass, q.sub, q.act, q.obj, got, want, rules)
				}
			}
		}
	}
}

// newOracle is a casbin enforcer of the service's model holding rules, asked without any memo.
func newOracle(t *testing.T, rules []authz.Rule) *casbin.Enforcer {
	t.Helper()
	m, err := policy.NewModel()
	if err != nil {
		t.Fatal(err)
	}
	enf, err := casbin.NewEnforcer(m)
	if err != nil {
		t.Fatal(err)
	}
	enf.EnableAutoSave(false)
	for _, r := range rules {
		var ok bool
		if r.PType == "g" {
			ok, err = enf.AddGroupingPolicy(r.Values)
		} else {
			ok, err = enf.AddPolicy(r.Values)
		}
		if err != nil || !ok && r.PType == "g" {
			t.Fatalf("oracle rule %v: %v %v", r, ok, err)
		}
	}
	return enf
}
