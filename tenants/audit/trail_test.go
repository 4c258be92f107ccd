package audit_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/agentcards/agentcards/authz"
	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/authz/policy"
	"github.com/agentcards/agentcards/storage"
	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/tenants"
	"github.com/agentcards/agentcards/tenants/audit"
	"github.com/agentcards/agentcards/tenants/paging"
)

// TestTrailThroughPolicy: the service as the server wires it, on every database: the policy
// enforcers tell it each refusal, it records those of writes in the tenant's trail, and the
// trail reads back in pages through the service, newest first, by those the policy lets read it.
func TestTrailThroughPolicy(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) {
		db := storagetest.Open(t, dialect)
		ctx := context.Background()
		storagetest.CreateTenant(t, db, "acme", time.Now(), "alice")
		storagetest.CreateTenant(t, db, "beta", time.Now(), "zoe")
		rules := storage.NewRuleStore(db)
		if _, err := rules.AddRules(ctx, "acme", []authz.Rule{
			authz.Assignment{Subject: "bob", Role: authz.RoleReader}.Rule("acme"),
			authz.Policy{Subject: "carol", Object: authz.ObjAudit, Action: authz.ActAuditRead, Effect: authz.Allow}.Rule("acme"),
		}); err != nil {
			t.Fatal(err)
		}
		gate := &tenants.Service{Store: storage.NewTenantStore(db)}
		enforcers := policy.NewEnforcers(rules, gate)
		svc := &audit.Service{Store: storage.NewAuditStore(db), Gate: gate, Authz: enforcers}
		enforcers.Refused = svc.Refused

		// ask checks, as a request of the name given, whether who may act on obj.
		ask := func(who, request, id string, write bool, obj, act string) {
			t.Helper()
			rctx := authz.WithRequest(caller(who), authz.Request{Name: request, ID: id, Write: write})
			if err := enforcers.Check(rctx, "acme", obj, act); !errors.Is(err, fault.Forbidden) {
				t.Fatalf("%s %s %s: %v, want forbidden", who, act, obj, err)
			}
		}
		for i := 1; i <= 5; i++ {
			ask("bob", "cards.update", fmt.Sprintf("req-%d", i), true, fmt.Sprintf("cards/r%d", i), authz.ActCardsWrite)
		}
		ask("bob", "cards.update", "req-6", true, "cards/r1", authz.ActCardsWrite) // counted into r1's
		ask("dave", "cards.get", "req-7", false, "cards/r1", authz.ActCardsRead)
		ask("dave", "cards.heartbeat", "req-8", true, "cards/r1", authz.ActCardsHeartbeat)
		ask("dave", "delegations.create", "req-9", true, "cards/r1/capabilities/review", authz.ActDelegate)

		read := func(who string, f audit.Filter, limit int) ([]string, error) {
			t.Helper()
			rctx := authz.WithRequest(caller(who), authz.Request{Name: "audit.list", ID: "list-" + who})
			var lines []string
			page := paging.Page{Limit: &limit}
			for {
				list, next, err := svc.List(rctx, "acme", f, page)
				if err != nil {
					return lines, err
				}
				if len(list) > limit {
					t.Fatalf("a page of %d entries, asked for %d", len(list), limit)
				}
				for _, e := range list {
					lines = append(lines, fmt.Sprintf("%s %s %s %s %s %s ×%d", e.Principal, e.Action, e.Object, e.Detail, e.Outcome, e.RequestID, max(e.Attempts, 1)))
				}
				if next == "" {
					return lines, nil
				}
				page.Cursor = next
			}
		}
		want := []string{
			"bob cards.update cards/r5 cards:write denied req-5 ×1",
			"bob cards.update cards/r4 cards:write denied req-4 ×1",
			"bob cards.update cards/r3 cards:write denied req-3 ×1",
			"bob cards.update cards/r2 cards:write denied req-2 ×1",
			"bob cards.update cards/r1 cards:write denied req-1 ×2",
		}
		for _, who := range []string{"alice", "carol"} { // an admin (policies:manage), an auditor (audit:read)
			if got, err := read(who, audit.Filter{ObjectPrefix: "cards/"}, 2); err != nil || !slices.Equal(got, want) {
				t.Errorf("%s reads the cards' entries two at a time: %q, %v; want %q", who, got, err, want)
			}
		}
		if got, err := read("alice", audit.Filter{Principal: "dave"}, 10); err != nil || len(got) != 0 {
			t.Errorf("dave's refusals of a read, a heartbeat and a delegation: %q, %v; want none recorded", got, err)
		}
		// A reader may not read the trail, and trying is a read: not recorded.
		if _, err := read("bob", audit.Filter{}, 10); !errors.Is(err, fault.Forbidden) {
			t.Errorf("bob reads the trail: %v, want forbidden", err)
		}
		if got, _ := read("alice", audit.Filter{Action: "audit.list"}, 10); len(got) != 0 {
			t.Errorf("refused reads of the trail recorded: %q", got)
		}
		// Another tenant's trail is as a missing one; beta's own admin reads none of acme's refusals.
		if _, _, err := svc.List(caller("alice"), "beta", audit.Filter{}, paging.Page{}); !errors.Is(err, fault.NotFound) {
			t.Errorf("alice reads beta's trail: %v, want not found", err)
		}
		zoe := authz.WithPrincipal(ctx, authz.Principal{Subject: "zoe", Tenant: "beta"})
		if list, _, err := svc.List(zoe, "beta", audit.Filter{ObjectPrefix: "cards/"}, paging.Page{}); err != nil || len(list) != 0 {
			t.Errorf("beta's trail: %+v, %v; want none of acme's", list, err)
		}
	})
}
