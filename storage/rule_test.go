package storage_test

import (
	"context"
	"testing"

	"github.com/casbin/casbin/v2"
	"github.com/casbin/casbin/v2/model"

	"github.com/agentcards/agentcards/authz"
	"github.com/agentcards/agentcards/authz/policy"
	"github.com/agentcards/agentcards/storage"
	"github.com/agentcards/agentcards/storage/storagetest"
)

func newModel(t *testing.T) model.Model {
	t.Helper()
	m, err := policy.NewModel()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// loadTenant loads one tenant's rules through the filtered adapter, as the enforcers do.
func loadTenant(t *testing.T, s *storage.RuleStore, tenant string) model.Model {
	t.Helper()
	m := newModel(t)
	if err := s.LoadFilteredPolicy(m, policy.Filter{Tenant: tenant}); err != nil {
		t.Fatal(err)
	}
	return m
}

func countRules(m model.Model) int {
	n := 0
	for _, sec := range []string{"p", "g"} {
		for _, ast := range m[sec] {
			n += len(ast.Policy)
		}
	}
	return n
}

func grant(tenant, subject, role string) authz.Rule {
	return authz.Rule{PType: "g", Values: []string{subject, "role:" + role, tenant}}
}

func TestRuleLoadFiltered(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) {
		t.Parallel()
		db := storagetest.Open(t, dialect)
		s := storage.NewRuleStore(db)
		newTenant(t, db, "a", "alice")
		newTenant(t, db, "b", "bob", "carol")
		seedA, seedB := len(authz.SeedRules("a", []string{"alice"})), len(authz.SeedRules("b", []string{"bob", "carol"}))

		if !s.IsFiltered() {
			t.Error("IsFiltered = false")
		}
		all := newModel(t)
		if err := s.LoadPolicy(all); err != nil {
			t.Fatal(err)
		}
		if n := countRules(all); n != seedA+seedB {
			t.Errorf("LoadPolicy loaded %d rules, want %d", n, seedA+seedB)
		}
		if n := countRules(loadTenant(t, s, "b")); n != seedB {
			t.Errorf("filtered load of b: %d rules, want %d", n, seedB)
		}
		m := newModel(t)
		if err := s.LoadFilteredPolicy(m, &policy.Filter{Tenant: "a"}); err != nil || countRules(m) != seedA {
			t.Errorf("filtered load of a by pointer: %d rules, %v; want %d", countRules(m), err, seedA)
		}
		if ok, _ := m.HasPolicy("g", "g", []string{"bob", "role:admin", "b"}); ok {
			t.Error("a's load contains b's rule")
		}
		for _, bad := range []any{nil, "a", policy.Filter{}, (*policy.Filter)(nil)} {
			if err := s.LoadFilteredPolicy(newModel(t), bad); err == nil {
				t.Errorf("LoadFilteredPolicy(%#v) accepted", bad)
			}
		}
	})
}

func TestRuleAddRemoveCounts(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) {
		t.Parallel()
		db := storagetest.Open(t, dialect)
		ctx := context.Background()
		s := storage.NewRuleStore(db)
		newTenant(t, db, "a", "alice")
		newTenant(t, db, "b")

		// alice's admin grant exists already; two are new, one is listed twice.
		rules := []authz.Rule{grant("a", "alice", "admin"), grant("a", "dave", "reader"), grant("a", "erin", "editor"), grant("a", "dave", "reader")}
		if n, err := s.AddRules(ctx, "a", rules); err != nil || n != 2 {
			t.Errorf("AddRules = %d, %v; want 2 new", n, err)
		}
		if n, err := s.AddRules(ctx, "a", rules); err != nil || n != 0 {
			t.Errorf("AddRules again = %d, %v; want 0 new", n, err)
		}
		// The same rule in another tenant is another row.
		if n, err := s.AddRules(ctx, "b", []authz.Rule{grant("b", "dave", "reader")}); err != nil || n != 1 {
			t.Errorf("AddRules in b = %d, %v; want 1", n, err)
		}
		// A rule whose domain is another tenant is refused.
		if _, err := s.AddRules(ctx, "a", []authz.Rule{grant("b", "mallory", "admin")}); err == nil {
			t.Error("AddRules accepted a rule of another tenant")
		}
		if n, err := s.RemoveRules(ctx, "a", []authz.Rule{grant("a", "dave", "reader"), grant("a", "zed", "reader")}); err != nil || n != 1 {
			t.Errorf("RemoveRules = %d, %v; want 1 existed", n, err)
		}
		if n, err := s.RemoveRules(ctx, "a", []authz.Rule{grant("a", "dave", "reader")}); err != nil || n != 0 {
			t.Errorf("RemoveRules again = %d, %v; want 0", n, err)
		}
		if ok, _ := loadTenant(t, s, "b").HasPolicy("g", "g", []string{"dave", "role:reader", "b"}); !ok {
			t.Error("removing a's rule removed b's")
		}
	})
}

func TestRuleCasbinAutoSave(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) {
		t.Parallel()
		db := storagetest.Open(t, dialect)
		s := storage.NewRuleStore(db)
		newTenant(t, db, "a", "alice")
		newTenant(t, db, "b", "alice")
		seed := len(authz.SeedRules("a", []string{"alice"}))

		enf, err := casbin.NewEnforcer(newModel(t), s)
		if err != nil {
			t.Fatal(err)
		}
		if n := countRules(enf.GetModel()); n != 0 {
			t.Errorf("a filtered adapter made NewEnforcer load %d rules", n)
		}
		if err := enf.LoadFilteredPolicy(policy.Filter{Tenant: "a"}); err != nil {
			t.Fatal(err)
		}
		if _, err := enf.AddGroupingPolicy("dave", "role:reader", "a"); err != nil {
			t.Fatal(err)
		}
		if _, err := enf.AddPolicy("dave", "a", "cards/x", "cards:write", "deny"); err != nil {
			t.Fatal(err)
		}
		if n := countRules(loadTenant(t, s, "a")); n != seed+2 {
			t.Errorf("after AddPolicy: %d rules stored, want %d", n, seed+2)
		}
		if _, err := enf.RemovePolicy("dave", "a", "cards/x", "cards:write", "deny"); err != nil {
			t.Fatal(err)
		}
		// Remove alice's grants in a only: the filter fixes the domain.
		if _, err := enf.RemoveFilteredGroupingPolicy(0, "alice", "", "a"); err != nil {
			t.Fatal(err)
		}
		a := loadTenant(t, s, "a")
		if n := countRules(a); n != seed {
			t.Errorf("after removals: %d rules in a, want %d", n, seed)
		}
		if ok, _ := a.HasPolicy("g", "g", []string{"alice", "role:admin", "a"}); ok {
			t.Error("alice's grant in a survived RemoveFilteredGroupingPolicy")
		}
		if ok, _ := loadTenant(t, s, "b").HasPolicy("g", "g", []string{"alice", "role:admin", "b"}); !ok {
			t.Error("alice's grant in b was removed with a's")
		}
		// A filtered enforcer must not overwrite every tenant's rules.
		if err := enf.SavePolicy(); err == nil {
			t.Error("SavePolicy of a filtered enforcer succeeded")
		}
	})
}

func TestRuleSavePolicy(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) {
		t.Parallel()
		db := storagetest.Open(t, dialect)
		s := storage.NewRuleStore(db)
		newTenant(t, db, "a", "alice")
		newTenant(t, db, "b", "bob")
		m := newModel(t)
		if err := s.LoadPolicy(m); err != nil {
			t.Fatal(err)
		}
		if err := m.AddPolicy("g", "g", []string{"carol", "role:reader", "b"}); err != nil {
			t.Fatal(err)
		}
		if _, err := m.RemovePolicy("g", "g", []string{"alice", "role:admin", "a"}); err != nil {
			t.Fatal(err)
		}
		if err := s.SavePolicy(m); err != nil {
			t.Fatal(err)
		}
		a, b := loadTenant(t, s, "a"), loadTenant(t, s, "b")
		if ok, _ := a.HasPolicy("g", "g", []string{"alice", "role:admin", "a"}); ok {
			t.Error("SavePolicy kept a removed rule")
		}
		if ok, _ := b.HasPolicy("g", "g", []string{"carol", "role:reader", "b"}); !ok {
			t.Error("SavePolicy lost an added rule")
		}
		if got, want := countRules(a)+countRules(b), countRules(m); got != want {
			t.Errorf("%d rules stored after SavePolicy, want %d", got, want)
		}
	})
}
