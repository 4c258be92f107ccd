package storage_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/storage"
	"github.com/agentcards/agentcards/storage/storagetest"
)

// TestLookupsReadOnlyTheirKeys: on Postgres, looking up a list of cards by agent id (the check
// a batch registration makes, GetMany) reads the index entries of those keys only, although
// the table's statistics do not know how many cards the tenant holds (never gathered here, as
// in a tenant that grew since they last were). Postgres's counters of index entries read
// (pg_stat_user_indexes) measure it: a list of ids (agent_id IN (...)) planned without them read
// every card of the tenant each time (29,000 entries here, against the 1,000 of GetMany's cards).
func TestLookupsReadOnlyTheirKeys(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) {
		if dialect != "postgres" {
			t.Skip("plans cached across runs are Postgres's")
		}
		t.Parallel()
		db := storagetest.Open(t, dialect)
		ctx := context.Background()
		s := storage.NewCardStore(db)
		newTenant(t, db, "acme")
		batch := func(round int) []cards.Prepared {
			cs := make([]cards.Card, 200)
			for i := range cs {
				cs[i] = newCard(fmt.Sprintf("agt_%03d_%03d", round, i), 1)
			}
			return prepared(t, cs...)
		}
		// Twelve batches into a tenant that starts empty: more than the five runs after which
		// Postgres may keep a generic plan of a prepared statement, made while it was small.
		round := 0
		for ; round < 12; round++ {
			if err := s.CreateMany(ctx, "acme", batch(round)); err != nil {
				t.Fatal(err)
			}
		}
		before := indexEntriesRead(t, db)
		const more = 5
		ids := make([]string, 200)
		for i := range ids {
			ids[i] = fmt.Sprintf("agt_%03d_%03d", 3, i)
		}
		for end := round + more; round < end; round++ {
			if err := s.CreateMany(ctx, "acme", batch(round)); err != nil {
				t.Fatal(err)
			}
			if got, err := s.GetMany(ctx, "acme", ids); err != nil || len(got) != len(ids) {
				t.Fatalf("GetMany: %d cards, %v", len(got), err)
			}
		}
		read := indexEntriesRead(t, db) - before
		t.Logf("%d lookups of 200 cards read %d index entries", 2*more, read)
		// Each round: the batch's 200 new ids are found nowhere (no entry read) and GetMany
		// reads its 200 cards' entries. A lookup reading the whole tenant (2,400 cards and
		// more) would read at least 5 x 2 x 2,400.
		if want := int64(more * 2 * 200); read > want {
			t.Errorf("%d lookups of 200 cards read %d index entries of the cards table, want at most %d", 2*more, read, want)
		}
	})
}

// indexEntriesRead returns the index entries read from the cards table's indexes of db's
// schema, once Postgres's counters stop moving: each connection reports its counts after it
// has been idle a moment (up to a second).
func indexEntriesRead(t *testing.T, db *storage.DB) int64 {
	t.Helper()
	const q = "SELECT COALESCE(SUM(idx_tup_read), 0) FROM pg_stat_user_indexes WHERE schemaname = current_schema() AND relname = 'cards'"
	last := int64(-1)
	deadline := time.Now().Add(30 * time.Second)
	for {
		time.Sleep(1500 * time.Millisecond)
		var n int64
		if err := db.SQL().QueryRowContext(context.Background(), q).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == last {
			return n
		}
		if time.Now().After(deadline) {
			t.Fatalf("the index counters still moved after 30 s (%d, then %d)", last, n)
		}
		last = n
	}
}
