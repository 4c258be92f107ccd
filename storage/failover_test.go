package storage_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/migrations"
	"github.com/agentcards/agentcards/storage"
	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/storage/storagetest/privatepg"
)

// TestWritesAfterFailover: a pool over a primary and its standby (both hosts in the DSN,
// target_session_attrs=read-write) holds connections to the primary when it is stopped and the
// standby promoted. A write in a transaction that meets one of them runs again on a new
// connection, to the new primary, and succeeds; a write of one statement in autocommit, which
// may have been applied when its connection was lost, fails as fault.Unavailable (503 and
// Retry-After, not a failure of the server's own), and the next write succeeds. Pings of the
// gate's connection and of the pool answer at once, though the connection they find is dead.
func TestWritesAfterFailover(t *testing.T) {
	for _, c := range []struct {
		name string
		// first is what meets the dead connections first.
		first func(ctx context.Context, db *storage.DB, s *storage.CardStore) error
	}{
		{"transaction", func(ctx context.Context, _ *storage.DB, s *storage.CardStore) error {
			return s.CreateMany(ctx, "acme", []cards.Prepared{{Card: newCard("after-0", 0)}})
		}},
		{"statement", func(ctx context.Context, _ *storage.DB, s *storage.CardStore) error {
			_, err := s.Create(ctx, "acme", newCard("after-0", 0))
			if errors.Is(err, fault.Unavailable) {
				t.Logf("the first write after the failover: %v", err)
				return nil
			}
			return err
		}},
		{"ping", func(ctx context.Context, db *storage.DB, _ *storage.CardStore) error { return db.Ping(ctx) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			pair := storagetest.StartPrivatePair(t, privatepg.PairOptions{Settings: []string{"fsync=off"}})
			ctx := context.Background()
			db, err := storage.Open(ctx, migrations.Postgres, pair.DSN)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if err := db.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			newTenant(t, db, "acme")
			s := storage.NewCardStore(db)
			var wg sync.WaitGroup
			for i := range 10 { // connections to the primary, left idle in the pool
				wg.Go(func() { mustCreate(t, s, "acme", newCard(fmt.Sprintf("before-%d", i), 0)) })
			}
			wg.Wait()
			for range 2 { // opens the gate's connection, then uses it, as the gate does
				if err := db.Alive(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if err := pair.Primary.Stop(); err != nil {
				t.Fatal(err)
			}
			if err := pair.Standby.Promote(); err != nil {
				t.Fatal(err)
			}

			if err := db.Alive(ctx); err != nil {
				t.Fatalf("the gate's ping after the failover: %v", err)
			}
			if err := c.first(ctx, db, s); err != nil {
				t.Fatalf("after the failover: %v", err)
			}
			mustCreate(t, s, "acme", newCard("after-1", 0))
		})
	}
}
