package storage_test

import (
	"context"
	"testing"

	"github.com/agentcards/agentcards/authz"
	"github.com/agentcards/agentcards/storage"
	"github.com/agentcards/agentcards/storage/storagetest"
)

// TestPolicyRevisionMoves: every rule write that changes something moves the tenant's policy
// revision, in its transaction; a write that changes nothing, or another tenant's, does not.
func TestPolicyRevisionMoves(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) {
		t.Parallel()
		db := storagetest.Open(t, dialect)
		ctx := context.Background()
		s := storage.NewRuleStore(db)
		newTenant(t, db, "a", "alice")
		newTenant(t, db, "b", "bob")
		rev := func(tenant string) int64 {
			t.Helper()
			v, err := s.PolicyVersion(ctx, tenant)
			if err != nil {
				t.Fatal(err)
			}
			if v.Epoch != fixed.UnixMicro() {
				t.Fatalf("epoch %d, want the creation time %d", v.Epoch, fixed.UnixMicro())
			}
			return v.Revision
		}
		if rev("a") != 0 {
			t.Fatalf("new tenant at revision %d", rev("a"))
		}
		g := []authz.Rule{grant("a", "carol", "reader")}
		steps := []struct {
			name string
			do   func() (int, error)
			want int64
		}{
			{"add", func() (int, error) { return s.AddRules(ctx, "a", g) }, 1},
			{"add again", func() (int, error) { return s.AddRules(ctx, "a", g) }, 1},
			{"remove", func() (int, error) { return s.RemoveRules(ctx, "a", g) }, 2},
			{"remove again", func() (int, error) { return s.RemoveRules(ctx, "a", g) }, 2},
		}
		for _, st := range steps {
			if _, err := st.do(); err != nil {
				t.Fatalf("%s: %v", st.name, err)
			}
			if got := rev("a"); got != st.want {
				t.Fatalf("after %s: revision %d, want %d", st.name, got, st.want)
			}
		}
		if err := s.RemoveFilteredPolicy("", "g", 2, "a"); err != nil {
			t.Fatal(err)
		}
		if rev("a") != 3 || rev("b") != 0 {
			t.Fatalf("filtered removal: a at %d, b at %d", rev("a"), rev("b"))
		}
		if v, err := s.PolicyVersion(ctx, "none"); err != nil || v != (authz.PolicyVersion{}) {
			t.Fatalf("missing tenant: %+v %v", v, err)
		}
	})
}
