package storage_test

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/agentcards/agentcards/authz"
	"github.com/agentcards/agentcards/authz/policy"
	"github.com/agentcards/agentcards/storage"
	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/tenants"
)

func TestTenantCRUD(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) {
		t.Parallel()
		db := storagetest.Open(t, dialect)
		ctx := context.Background()
		s := storage.NewTenantStore(db)
		newTenant(t, db, "zeta")
		newTenant(t, db, "acme", "alice")

		tn := tenants.Tenant{ID: "acme", Name: "Again", Status: tenants.StatusActive, CreatedAt: fixed, UpdatedAt: fixed}
		if err := s.Create(ctx, tn, nil); !errors.Is(err, tenants.ErrExists) {
			t.Errorf("duplicate Create = %v, want ErrExists", err)
		}
		got, err := s.Get(ctx, "acme")
		want := tenants.Tenant{ID: "acme", Name: "Tenant acme", Status: tenants.StatusActive, CreatedAt: fixed.UTC(), UpdatedAt: fixed.UTC()}
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("Get = %+v, %v; want %+v", got, err, want)
		}
		if _, err := s.Get(ctx, "nope"); !errors.Is(err, tenants.ErrNotFound) {
			t.Errorf("Get missing = %v, want ErrNotFound", err)
		}

		list, err := s.List(ctx)
		if err != nil || len(list) != 2 || list[0].ID != "acme" || list[1].ID != "zeta" {
			t.Errorf("List = %+v, %v; want acme, zeta", list, err)
		}

		got.Name, got.Status, got.UpdatedAt = "Acme Inc", tenants.StatusSuspended, fixed.Add(time.Hour)
		if err := s.Update(ctx, got); err != nil {
			t.Fatal(err)
		}
		// The same values again: MySQL reports no changed row, which is not "not found".
		if err := s.Update(ctx, got); err != nil {
			t.Errorf("Update with unchanged values: %v", err)
		}
		after, err := s.Get(ctx, "acme")
		if err != nil || after.Name != "Acme Inc" || after.Status != tenants.StatusSuspended ||
			!after.UpdatedAt.Equal(fixed.Add(time.Hour)) || !after.CreatedAt.Equal(fixed) {
			t.Errorf("after Update: %+v, %v", after, err)
		}
		missing := got
		missing.ID = "nope"
		if err := s.Update(ctx, missing); !errors.Is(err, tenants.ErrNotFound) {
			t.Errorf("Update missing = %v, want ErrNotFound", err)
		}
	})
}

func TestTenantCreateSeedsRules(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) {
		t.Parallel()
		db := storagetest.Open(t, dialect)
		newTenant(t, db, "acme", "alice", "bob")
		m := loadTenant(t, storage.NewRuleStore(db), "acme")
		want := authz.SeedRules("acme", []string{"alice", "bob"})
		if n := countRules(m); n != len(want) {
			t.Errorf("%d rules loaded, want %d", n, len(want))
		}
		for _, r := range want {
			if ok, err := m.HasPolicy(r.PType, r.PType, r.Values); err != nil || !ok {
				t.Errorf("seed rule %s %v missing (%v)", r.PType, r.Values, err)
			}
		}
		// The enforcers answer from what was seeded.
		enf := policy.NewEnforcers(storage.NewRuleStore(db), &tenants.Service{Store: storage.NewTenantStore(db)})
		as := func(subject string) context.Context {
			return authz.WithPrincipal(context.Background(), authz.Principal{Subject: subject, Tenant: "acme"})
		}
		if err := enf.Check(as("alice"), "acme", "cards/agt_1", authz.ActCardsWrite); err != nil {
			t.Errorf("alice may not write cards: %v", err)
		}
		if err := enf.Check(as("carol"), "acme", "cards/agt_1", authz.ActCardsRead); !errors.Is(err, authz.ErrForbidden) {
			t.Errorf("carol may read cards: %v", err)
		}
	})
}

func TestTenantDelete(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) {
		t.Parallel()
		db := storagetest.Open(t, dialect)
		ctx := context.Background()
		ts, cs := storage.NewTenantStore(db), storage.NewCardStore(db)
		for _, id := range []tenants.ID{"a", "b"} {
			newTenant(t, db, id, "alice")
			mustCreate(t, cs, id, newCard("agt_1", 1))
			mustCreate(t, cs, id, newCard("agt_2", 1))
		}
		before := map[string]int{}
		for _, table := range []string{"cards", "casbin_rules", "card_changes", "tenants"} {
			before[table] = count(t, db, table, "b")
		}

		if err := ts.Delete(ctx, "a"); err != nil {
			t.Fatal(err)
		}
		for _, table := range []string{"cards", "casbin_rules", "tenants"} {
			if n := count(t, db, table, "a"); n != 0 {
				t.Errorf("%d rows of a left in %s", n, table)
			}
		}
		for table, n := range before {
			if got := count(t, db, table, "b"); got != n {
				t.Errorf("%s has %d rows of b, had %d", table, got, n)
			}
		}
		// Of a's change history only the purge entry remains, and it is the newest entry.
		feed := changes(t, db)
		last := feed[len(feed)-1]
		if last.Tenant != "a" || last.Op != "purge" || last.Agent != "" {
			t.Errorf("last change = %+v, want a purge of a", last)
		}
		if n := count(t, db, "card_changes", "a"); n != 1 {
			t.Errorf("%d changes of a remain, want only the purge", n)
		}
		if _, err := ts.Get(ctx, "a"); !errors.Is(err, tenants.ErrNotFound) {
			t.Errorf("Get deleted = %v, want ErrNotFound", err)
		}
		if err := ts.Delete(ctx, "a"); !errors.Is(err, tenants.ErrNotFound) {
			t.Errorf("Delete again = %v, want ErrNotFound", err)
		}
		// A tenant re-created with the same id starts empty.
		newTenant(t, db, "a")
		if ids, err := cs.IDs(ctx, "a"); err != nil || len(ids) != 0 {
			t.Errorf("re-created tenant has cards %v, %v", ids, err)
		}
		if n := countRules(loadTenant(t, storage.NewRuleStore(db), "a")); n != len(authz.SeedRules("a", nil)) {
			t.Errorf("re-created tenant has %d rules, want only the seed", n)
		}
	})
}
