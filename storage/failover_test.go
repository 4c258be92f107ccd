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
// Retry-After, not a failure of the server's own), and the next write succeeds.
func TestWritesAfterFailover(t *testing.T) {
	for _, inTx := range []bool{true, false} {
		t.Run(fmt.Sprintf("transaction=%t", inTx), func(t *testing.T) {
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
			if err := pair.Primary.Stop(); err != nil {
				t.Fatal(err)
			}
			if err := pair.Standby.Promote(); err != nil {
				t.Fatal(err)
			}

			if inTx {
				if err := s.CreateMany(ctx, "acme", []cards.Prepared{{Card: newCard("after-0", 0)}}); err != nil {
					t.Fatalf("a write in a transaction after the failover: %v", err)
				}
			} else {
				_, err := s.Create(ctx, "acme", newCard("after-0", 0))
				if err != nil && !errors.Is(err, fault.Unavailable) {
					t.Fatalf("a write in autocommit after the failover: %v, want success or %s", err, fault.Unavailable)
				}
				t.Logf("the first write after the failover: %v", err)
			}
			mustCreate(t, s, "acme", newCard("after-1", 0))
		})
	}
}
