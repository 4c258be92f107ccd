package storage_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentcards/agentcards/authz"
	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/delegation"
	"github.com/agentcards/agentcards/storage"
	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/tenants"
	"github.com/agentcards/agentcards/tenants/audit"
)

// asAlice is a request of alice's, as a door tags it.
func asAlice(name string) context.Context {
	ctx := authz.WithPrincipal(context.Background(), authz.Principal{Subject: "alice", Tenant: "a"})
	return authz.WithRequest(ctx, authz.Request{Name: name, ID: "req-" + name, Write: true})
}

// trail reads the tenant's whole trail, oldest first, as "action object before→after outcome".
func trail(t *testing.T, db *storage.DB, tenant tenants.ID) []string {
	t.Helper()
	entries, err := storage.NewAuditStore(db).List(context.Background(), tenant, audit.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(entries))
	for i, e := range entries {
		out[len(entries)-1-i] = fmt.Sprintf("%s %s %s %d→%d %s", e.Principal, e.Action, e.Object, e.RevisionBefore, e.RevisionAfter, e.Outcome)
	}
	return out
}

// TestAuditEntriesCommitWithTheirWrites: every store write appends its entry (who, the request's
// name and id, the object, the revisions around it, the outcome), and a write that is refused
// (a stale revision, a duplicate) leaves none.
func TestAuditEntriesCommitWithTheirWrites(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) {
		db := storagetest.Open(t, dialect)
		ts := storage.NewTenantStore(db)
		if err := ts.Create(asAlice("tenants.create"), tenants.Tenant{ID: "a", Name: "A", Status: tenants.StatusActive, CreatedAt: fixed, UpdatedAt: fixed}, []string{"alice"}); err != nil {
			t.Fatal(err)
		}
		auditedCardWrites(t, db)
		auditedRuleAndSecretWrites(t, db)
		auditedDelegationWrites(t, db)
		suspended := tenants.Tenant{ID: "a", Name: "A", Status: tenants.StatusSuspended, UpdatedAt: fixed}
		if err := ts.Update(asAlice("tenants.update"), suspended); err != nil {
			t.Fatal(err)
		}

		if got := trail(t, db, "a"); !slices.Equal(got, auditedTrail) {
			t.Errorf("trail:\n got %q\nwant %q", got, auditedTrail)
		}
		checkAuditDetails(t, db)
		checkTrailArchived(t, db)
	})
}

// auditedTrail is tenant a's trail after the writes of TestAuditEntriesCommitWithTheirWrites,
// oldest first, as trail tells it.
var auditedTrail = []string{
	"alice tenants.create tenant 0→0 ok",
	"alice cards.register cards/x 0→1 ok",
	"alice cards.update cards/x 1→2 ok",
	"alice cards.register_batch cards/y 0→1 ok",
	"alice cards.register_batch cards/z 0→1 ok",
	"alice cards.remove cards/x 2→0 ok",
	"alice cards.replace cards/x 0→3 ok",
	"alice roles.grant roles/bob 0→1 ok",
	"alice policies.add policies/bob 1→2 ok",
	"alice policies.remove policies/bob 2→3 ok",
	"alice secrets.set cards/y/secret 0→0 ok",
	"alice secrets.remove cards/y/secret 0→0 ok",
	"alice delegations.create delegations/d1 0→0 pending",
	"alice delegations.create delegations/d1 0→0 completed",
	"agentcards:service delegations.create delegations/d2 0→0 pending",
	"agentcards:expire delegations.expire delegations/d2 0→0 timeout",
	"alice tenants.update tenant 0→0 ok",
}

// auditedCardWrites writes cards in tenant a as alice: x created (and refused a second
// time), replaced (and refused at a stale revision), y and z created in a batch, x deleted
// and registered again.
func auditedCardWrites(t *testing.T, db *storage.DB) {
	cs := storage.NewCardStore(db)
	if _, err := cs.Create(asAlice("cards.register"), "a", newCard("x", 1)); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.Create(asAlice("cards.register"), "a", newCard("x", 1)); err == nil {
		t.Fatal("a second create of x succeeded")
	}
	if err := cs.Replace(asAlice("cards.update"), "a", newCard("x", 2), 1); err != nil {
		t.Fatal(err)
	}
	if err := cs.Replace(asAlice("cards.update"), "a", newCard("x", 3), 1); !errors.Is(err, cards.ErrStale) {
		t.Fatalf("a stale replace: %v", err)
	}
	batch := []cards.Prepared{{Card: newCard("y", 0)}, {Card: newCard("z", 0)}}
	for i := range batch {
		doc, err := cards.MarshalDocument(batch[i].Card)
		if err != nil {
			t.Fatal(err)
		}
		batch[i].Document = doc
	}
	if err := cs.CreateMany(asAlice("cards.register_batch"), "a", batch); err != nil {
		t.Fatal(err)
	}
	if err := cs.Delete(asAlice("cards.remove"), "a", "x", 0); err != nil {
		t.Fatal(err)
	}
	// Registered again: it goes on from revision 2.
	if _, err := cs.Create(asAlice("cards.replace"), "a", newCard("x", 1)); err != nil {
		t.Fatal(err)
	}
}

// auditedRuleAndSecretWrites grants bob a role (twice, the second adding nothing), adds and
// removes a deny policy, and sets and removes y's secret (twice, the second refused), in tenant
// a as alice.
func auditedRuleAndSecretWrites(t *testing.T, db *storage.DB) {
	rules := storage.NewRuleStore(db)
	grant := authz.Assignment{Subject: "bob", Role: "reader"}.Rule("a")
	if _, err := rules.AddRules(asAlice("roles.grant"), "a", []authz.Rule{grant}); err != nil {
		t.Fatal(err)
	}
	if n, err := rules.AddRules(asAlice("roles.grant"), "a", []authz.Rule{grant}); err != nil || n != 0 {
		t.Fatalf("granting again: %d, %v", n, err)
	}
	deny := authz.Policy{Subject: "bob", Object: "cards/y", Action: authz.ActCardsRead, Effect: authz.Deny}.Rule("a")
	if _, err := rules.AddRules(asAlice("policies.add"), "a", []authz.Rule{deny}); err != nil {
		t.Fatal(err)
	}
	if _, err := rules.RemoveRules(asAlice("policies.remove"), "a", []authz.Rule{deny}); err != nil {
		t.Fatal(err)
	}
	secrets := storage.NewSecretStore(db)
	if err := secrets.PutSecret(asAlice("secrets.set"), "a", "y", delegation.SealedSecret{Endpoint: "https://y.example/task", Sealed: "sealed"}, fixed); err != nil {
		t.Fatal(err)
	}
	if err := secrets.DeleteSecret(asAlice("secrets.remove"), "a", "y"); err != nil {
		t.Fatal(err)
	}
	if err := secrets.DeleteSecret(asAlice("secrets.remove"), "a", "y"); err == nil {
		t.Fatal("removing a missing secret succeeded")
	}
}

// auditedDelegationWrites records delegation d1 as alice and its outcome (a second outcome
// refused); then d2 with a context that says nothing, timed out by the service's own job.
func auditedDelegationWrites(t *testing.T, db *storage.DB) {
	ds := storage.NewDelegationStore(db)
	d := delegation.Delegation{ID: "d1", Caller: "alice", AgentID: "y", Capability: "review_pr", Mode: delegation.ModeSync,
		Transport: "http", Status: delegation.StatusPending, CreatedAt: fixed, UpdatedAt: fixed}
	if err := ds.Create(asAlice("delegations.create"), "a", d, ""); err != nil {
		t.Fatal(err)
	}
	done := delegation.Outcome{Status: delegation.StatusCompleted, At: fixed.Add(time.Second)}
	if err := ds.Update(asAlice("delegations.create"), "a", "d1", []delegation.Status{delegation.StatusPending}, done); err != nil {
		t.Fatal(err)
	}
	if err := ds.Update(asAlice("delegations.create"), "a", "d1", []delegation.Status{delegation.StatusPending}, done); err == nil {
		t.Fatal("a second outcome was taken")
	}
	job := authz.AsJob(asAlice("cards.get"), "expire", "delegations.expire")
	d.ID = "d2"
	if err := ds.Create(context.Background(), "a", d, ""); err != nil {
		t.Fatal(err)
	}
	if err := ds.Update(job, "a", "d2", []delegation.Status{delegation.StatusPending}, delegation.Outcome{Status: delegation.StatusTimeout, At: fixed}); err != nil {
		t.Fatal(err)
	}
}

// checkAuditDetails checks what tenant a's entries carry beyond the trail: the suspension's
// request id, detail, time and sequence number, and the rules' details.
func checkAuditDetails(t *testing.T, db *storage.DB) {
	entries, err := storage.NewAuditStore(db).List(context.Background(), "a", audit.Filter{Action: "tenants.update"})
	if err != nil || len(entries) != 1 {
		t.Fatalf("tenants.update entries: %v, %v", entries, err)
	}
	if e := entries[0]; e.RequestID != "req-tenants.update" || e.Detail != "status suspended" || e.At.IsZero() || e.Seq == 0 {
		t.Errorf("the suspension's entry: %+v", e)
	}
	grants, _ := storage.NewAuditStore(db).List(context.Background(), "a", audit.Filter{ObjectPrefix: "roles/"})
	policies, _ := storage.NewAuditStore(db).List(context.Background(), "a", audit.Filter{ObjectPrefix: "policies/bob"})
	if len(grants) != 1 || grants[0].Detail != "role reader" || len(policies) != 2 || policies[0].Detail != "deny cards:read on cards/y" {
		t.Errorf("rule entries: %+v, %+v", grants, policies)
	}
}

// checkTrailArchived deletes tenant a: its trail (auditedTrail) is archived, its deletion
// last; the id created again starts with an empty one.
func checkTrailArchived(t *testing.T, db *storage.DB) {
	ts := storage.NewTenantStore(db)
	if err := ts.Delete(asAlice("tenants.delete"), "a"); err != nil {
		t.Fatal(err)
	}
	if got := trail(t, db, "a"); len(got) != 0 {
		t.Errorf("the deleted tenant's trail under its id: %q", got)
	}
	var archived []string
	rows, err := db.SQL().Query("SELECT DISTINCT tenant_id FROM audit_entries")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		archived = append(archived, id)
	}
	rows.Close()
	if len(archived) != 1 || !strings.HasPrefix(archived[0], "a/") {
		t.Fatalf("trails after the delete: %q, want one archived under a/<time>", archived)
	}
	want := auditedTrail
	kept := trail(t, db, tenants.ID(archived[0]))
	if len(kept) != len(want)+1 || kept[len(kept)-1] != "alice tenants.delete tenant 0→0 ok" || !slices.Equal(kept[:len(want)], want) {
		t.Errorf("the archived trail: %q", kept)
	}
	if err := ts.Create(asAlice("tenants.create"), tenants.Tenant{ID: "a", Name: "A again", Status: tenants.StatusActive, CreatedAt: fixed, UpdatedAt: fixed}, nil); err != nil {
		t.Fatal(err)
	}
	if got := trail(t, db, "a"); !slices.Equal(got, []string{"alice tenants.create tenant 0→0 ok"}) {
		t.Errorf("the trail of the tenant created again: %q", got)
	}
}

// TestAuditListFilters: each filter, their combination, paging by seq, and the tenant's bound.
func TestAuditListFilters(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) {
		db := storagetest.Open(t, dialect)
		newTenant(t, db, "a")
		newTenant(t, db, "b")
		cs := storage.NewCardStore(db)
		bob := authz.WithRequest(authz.WithPrincipal(context.Background(), authz.Principal{Subject: "bob"}), authz.Request{Name: "cards.register"})
		for _, id := range []string{"x", "xy", "y"} {
			if _, err := cs.Create(asAlice("cards.register"), "a", newCard(id, 1)); err != nil {
				t.Fatal(err)
			}
		}
		before := time.Now()
		time.Sleep(2 * time.Millisecond)
		if _, err := cs.Create(bob, "a", newCard("x2", 1)); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.Create(bob, "b", newCard("x", 1)); err != nil {
			t.Fatal(err)
		}
		store := storage.NewAuditStore(db)
		objects := func(f audit.Filter) []string {
			t.Helper()
			entries, err := store.List(context.Background(), "a", f)
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, e := range entries {
				out = append(out, e.Object)
			}
			return out
		}
		for _, c := range []struct {
			f    audit.Filter
			want []string
		}{
			{audit.Filter{}, []string{"cards/x2", "cards/y", "cards/xy", "cards/x", "tenant"}},
			{audit.Filter{Principal: "bob"}, []string{"cards/x2"}},
			{audit.Filter{Action: "cards.register", Principal: "alice"}, []string{"cards/y", "cards/xy", "cards/x"}},
			{audit.Filter{ObjectPrefix: "cards/x"}, []string{"cards/x2", "cards/xy", "cards/x"}},
			{audit.Filter{ObjectPrefix: "cards/x%"}, nil}, // taken as it is, not as a pattern
			{audit.Filter{ObjectPrefix: "cards/"}, []string{"cards/x2", "cards/y", "cards/xy", "cards/x"}},
			{audit.Filter{Since: before}, []string{"cards/x2"}},
			{audit.Filter{Until: before, ObjectPrefix: "cards/"}, []string{"cards/y", "cards/xy", "cards/x"}},
			{audit.Filter{Limit: 2}, []string{"cards/x2", "cards/y"}},
		} {
			if got := objects(c.f); !slices.Equal(got, c.want) {
				t.Errorf("%+v: %q, want %q", c.f, got, c.want)
			}
		}
		all, _ := store.List(context.Background(), "a", audit.Filter{})
		if got := objects(audit.Filter{Before: all[1].Seq, Limit: 2}); !slices.Equal(got, []string{"cards/xy", "cards/x"}) {
			t.Errorf("the page after the second entry: %q", got)
		}
	})
}

// TestAuditRefusalsCount: a refusal is an entry of its own, and the same refusal again within
// the hour counts into it instead of adding one.
func TestAuditRefusalsCount(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) {
		db := storagetest.Open(t, dialect)
		newTenant(t, db, "a")
		store := storage.NewAuditStore(db)
		refuse := func(who, obj string) {
			t.Helper()
			ctx := authz.WithRequest(authz.WithPrincipal(context.Background(), authz.Principal{Subject: who}), authz.Request{Name: "cards.update", ID: "r-" + who, Write: true})
			e := audit.New(ctx, "", obj, 0, 0)
			e.Detail = authz.ActCardsWrite
			if err := store.Refused(ctx, "a", e); err != nil {
				t.Fatal(err)
			}
		}
		refuse("bob", "cards/x")
		refuse("bob", "cards/x")
		refuse("bob", "cards/x")
		refuse("carol", "cards/x")
		refuse("bob", "cards/y")
		entries, err := store.List(context.Background(), "a", audit.Filter{ObjectPrefix: "cards/"})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range entries {
			got = append(got, fmt.Sprintf("%s %s %s %d %s", e.Principal, e.Object, e.Outcome, max(e.Attempts, 1), e.RequestID))
		}
		want := []string{"bob cards/y denied 1 r-bob", "carol cards/x denied 1 r-carol", "bob cards/x denied 3 r-bob"}
		if !slices.Equal(got, want) {
			t.Errorf("refusals: %q, want %q", got, want)
		}
		first := entries[2].At
		// Made-up ids: past ten objects in the hour, the refusals count into the newest entry.
		for i := range 13 {
			refuse("mallory", fmt.Sprintf("cards/made-up-%d", i))
		}
		mallory, err := store.List(context.Background(), "a", audit.Filter{Principal: "mallory"})
		if err != nil {
			t.Fatal(err)
		}
		if len(mallory) != 10 || mallory[0].Object != "cards/made-up-9" || mallory[0].Attempts != 4 {
			t.Errorf("13 refusals on made-up ids: %d entries, the newest %+v; want 10, the newest counting 4", len(mallory), mallory[0])
		}
		if again, _ := store.List(context.Background(), "a", audit.Filter{Principal: "bob", ObjectPrefix: "cards/x"}); !again[0].At.Equal(first) {
			t.Errorf("a counted refusal moved its entry's time: %v, was %v", again[0].At, first)
		}
		// A tenant deleted meanwhile: nothing recorded, under its id or any other.
		if err := storage.NewTenantStore(db).Delete(context.Background(), "a"); err != nil {
			t.Fatal(err)
		}
		var before, after int
		if err := db.SQL().QueryRow("SELECT COUNT(*) FROM audit_entries").Scan(&before); err != nil {
			t.Fatal(err)
		}
		refuse("bob", "cards/z")
		if err := db.SQL().QueryRow("SELECT COUNT(*) FROM audit_entries").Scan(&after); err != nil {
			t.Fatal(err)
		}
		if after != before {
			t.Errorf("a refusal in a deleted tenant added %d entries", after-before)
		}
	})
}

// TestAuditPrune: entries older than the bound go, in batches, and younger ones stay.
func TestAuditPrune(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) {
		db := storagetest.Open(t, dialect)
		newTenant(t, db, "a")
		cs := storage.NewCardStore(db)
		for i := range 7 {
			if _, err := cs.Create(asAlice("cards.register"), "a", newCard(fmt.Sprintf("c%d", i), 1)); err != nil {
				t.Fatal(err)
			}
		}
		store := storage.NewAuditStore(db)
		if n, err := store.Prune(context.Background(), time.Now().Add(-time.Hour)); err != nil || n != 0 {
			t.Fatalf("pruning what is younger than an hour: %d, %v", n, err)
		}
		defer storage.SetPruneBatch(3)()
		// The tenant's creation and the seven cards'.
		if n, err := store.Prune(context.Background(), time.Now().Add(time.Minute)); err != nil || n != 8 {
			t.Fatalf("pruning everything, 3 at a time: %d, %v", n, err)
		}
		if got := trail(t, db, "a"); len(got) != 0 {
			t.Errorf("after pruning: %q", got)
		}
	})
}

// failAuditInserts makes every insert into the trail fail, with a trigger: the writes that need
// one must fail with it.
func failAuditInserts(t *testing.T, db *storage.DB, dialect string) {
	t.Helper()
	stmts := map[string][]string{
		"sqlite": {"CREATE TRIGGER audit_fails BEFORE INSERT ON audit_entries BEGIN SELECT RAISE(ABORT, 'the audit insert fails'); END"},
		"postgres": {"CREATE FUNCTION audit_fails() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'the audit insert fails'; END $$",
			"CREATE TRIGGER audit_fails BEFORE INSERT ON audit_entries FOR EACH ROW EXECUTE FUNCTION audit_fails()"},
		"mysql": {"CREATE TRIGGER audit_fails BEFORE INSERT ON audit_entries FOR EACH ROW SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'the audit insert fails'"},
	}[dialect]
	for _, q := range stmts {
		if _, err := db.SQL().Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// TestNoWriteWithoutItsEntry: with the audit insert failing (a trigger refuses it), every kind of
// write fails and leaves nothing behind.
func TestNoWriteWithoutItsEntry(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) {
		db := storagetest.Open(t, dialect)
		ctx := asAlice("cards.update")
		newTenant(t, db, "a", "alice")
		ts, cs, rules := storage.NewTenantStore(db), storage.NewCardStore(db), storage.NewRuleStore(db)
		secrets, ds := storage.NewSecretStore(db), storage.NewDelegationStore(db)
		mustCreate(t, cs, "a", newCard("x", 1))
		d := delegation.Delegation{ID: "d1", Caller: "alice", AgentID: "x", Capability: "review_pr", Mode: delegation.ModeSync,
			Transport: "http", Status: delegation.StatusPending, CreatedAt: fixed, UpdatedAt: fixed}
		if err := ds.Create(ctx, "a", d, ""); err != nil {
			t.Fatal(err)
		}
		if err := secrets.PutSecret(ctx, "a", "x", delegation.SealedSecret{Endpoint: "https://x.example/task", Sealed: "s"}, fixed); err != nil {
			t.Fatal(err)
		}
		failAuditInserts(t, db, dialect)
		prepared := func() []cards.Prepared {
			p := []cards.Prepared{{Card: newCard("y", 0)}}
			p[0].Document, _ = cards.MarshalDocument(p[0].Card)
			return p
		}
		grant := authz.Assignment{Subject: "bob", Role: "reader"}.Rule("a")
		for name, write := range map[string]func() error{
			"card create":  func() error { _, err := cs.Create(ctx, "a", newCard("y", 1)); return err },
			"card batch":   func() error { return cs.CreateMany(ctx, "a", prepared()) },
			"card replace": func() error { return cs.Replace(ctx, "a", newCard("x", 2), 1) },
			"card delete":  func() error { return cs.Delete(ctx, "a", "x", 0) },
			"tenant create": func() error {
				return ts.Create(ctx, tenants.Tenant{ID: "b", Name: "B", Status: tenants.StatusActive, CreatedAt: fixed, UpdatedAt: fixed}, nil)
			},
			"tenant update": func() error {
				return ts.Update(ctx, tenants.Tenant{ID: "a", Name: "renamed", Status: tenants.StatusSuspended, UpdatedAt: fixed})
			},
			"tenant delete": func() error { return ts.Delete(ctx, "a") },
			"role grant":    func() error { _, err := rules.AddRules(ctx, "a", []authz.Rule{grant}); return err },
			"role revoke": func() error {
				_, err := rules.RemoveRules(ctx, "a", []authz.Rule{authz.Assignment{Subject: "alice", Role: "admin"}.Rule("a")})
				return err
			},
			"secret set": func() error {
				return secrets.PutSecret(ctx, "a", "x", delegation.SealedSecret{Endpoint: "https://x.example/other", Sealed: "t"}, fixed)
			},
			"secret remove":     func() error { return secrets.DeleteSecret(ctx, "a", "x") },
			"delegation create": func() error { d.ID = "d2"; return ds.Create(ctx, "a", d, "") },
			"delegation update": func() error {
				return ds.Update(ctx, "a", "d1", []delegation.Status{delegation.StatusPending}, delegation.Outcome{Status: delegation.StatusCompleted, At: fixed})
			},
		} {
			if err := write(); err == nil {
				t.Errorf("%s succeeded without its audit entry", name)
			}
		}
		// Nothing of it landed.
		bg := context.Background()
		if c, err := cs.Get(bg, "a", "x"); err != nil || c.Revision != 1 {
			t.Errorf("card x: revision %d, %v; want it untouched at 1", c.Revision, err)
		}
		if _, err := cs.Get(bg, "a", "y"); !errors.Is(err, cards.ErrNotFound) {
			t.Errorf("card y: %v, want not found", err)
		}
		if tn, err := ts.Get(bg, "a"); err != nil || tn.Name != "Tenant a" || tn.Status != tenants.StatusActive {
			t.Errorf("tenant a: %+v, %v; want it untouched", tn, err)
		}
		if _, err := ts.Get(bg, "b"); !errors.Is(err, tenants.ErrNotFound) {
			t.Errorf("tenant b: %v, want not found", err)
		}
		roles, err := rules.PolicyVersion(bg, "a")
		if err != nil || roles.Revision != 0 {
			t.Errorf("policy revision %d, %v; want 0 (no rule written)", roles.Revision, err)
		}
		if sec, err := secrets.GetSecret(bg, "a", "x"); err != nil || sec.Endpoint != "https://x.example/task" {
			t.Errorf("secret of x: %+v, %v; want it untouched", sec, err)
		}
		if got, err := ds.Get(bg, "a", "d1"); err != nil || got.Status != delegation.StatusPending {
			t.Errorf("delegation d1: %+v, %v; want it still pending", got, err)
		}
		if _, err := ds.Get(bg, "a", "d2"); !errors.Is(err, delegation.ErrNotFound) {
			t.Errorf("delegation d2: %v, want none", err)
		}
	})
}
