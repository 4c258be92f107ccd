package storage_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/agentcards/agentcards/storage"
	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/tenants"
)

// TestGetManyOrderAndSize: GetMany returns the cards that exist in the order asked, repeats
// included, whatever the padding of its IN list; and takes more ids than one statement may bind
// (SQLite binds at most 32,766), in several queries.
func TestGetManyOrderAndSize(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) {
		t.Parallel()
		db := storagetest.Open(t, dialect)
		ctx := context.Background()
		s := storage.NewCardStore(db)
		newTenant(t, db, "acme")
		for _, id := range []string{"a", "b", "c"} {
			mustCreate(t, s, "acme", newCard(id, 1))
		}
		agents := func(ids []string) []string {
			t.Helper()
			got, err := s.GetMany(ctx, "acme", ids)
			if err != nil {
				t.Fatalf("GetMany(%d ids): %v", len(ids), err)
			}
			out := []string{}
			for _, c := range got {
				out = append(out, c.AgentID)
			}
			return out
		}
		for _, c := range []struct{ ids, want []string }{
			{[]string{"a"}, []string{"a"}},
			{[]string{"c", "a", "c"}, []string{"c", "a", "c"}},
			{[]string{"b", "b", "b", "b", "b"}, []string{"b", "b", "b", "b", "b"}},
			{[]string{"x", "a", "y"}, []string{"a"}},
			{[]string{}, []string{}},
		} {
			if got := agents(c.ids); !slices.Equal(got, c.want) {
				t.Errorf("GetMany(%v) = %v, want %v", c.ids, got, c.want)
			}
		}
		ids := make([]string, 40000)
		for i := range ids {
			ids[i] = fmt.Sprintf("id%06d", i)
		}
		ids[0], ids[20000], ids[39999] = "a", "b", "c"
		if got := agents(ids); !slices.Equal(got, []string{"a", "b", "c"}) {
			t.Errorf("GetMany(40000 ids) = %v", got)
		}
	})
}

// TestCountUpTo: the count of a tenant's cards stops at most, and counts no other tenant's.
func TestCountUpTo(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) {
		t.Parallel()
		db := storagetest.Open(t, dialect)
		s := storage.NewCardStore(db)
		newTenant(t, db, "acme")
		newTenant(t, db, "zeta")
		for _, id := range []string{"a", "b", "c"} {
			mustCreate(t, s, "acme", newCard(id, 1))
		}
		mustCreate(t, s, "zeta", newCard("z", 1))
		for _, c := range []struct{ tenant, most, want int }{{0, 10, 3}, {0, 3, 3}, {0, 2, 2}, {0, 0, 0}, {1, 10, 1}} {
			tenant := []string{"acme", "zeta"}[c.tenant]
			got, err := s.CountUpTo(context.Background(), tenants.ID(tenant), c.most)
			if err != nil || got != c.want {
				t.Errorf("CountUpTo(%s, %d) = %d, %v; want %d", tenant, c.most, got, err, c.want)
			}
		}
	})
}
