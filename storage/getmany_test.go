package storage_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/agentcards/agentcards/storage"
	"github.com/agentcards/agentcards/storage/storagetest"
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
