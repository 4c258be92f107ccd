package storage_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/migrations"
	"github.com/agentcards/agentcards/storage"
	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/web/webtest"
)

// TestCardWritesGrouped: on SQLite, card writes made while the group committer is busy commit
// together in one transaction, in the order they came; a write refused inside the batch (a stale
// revision, a duplicate, a missing card) is rolled back alone, with its own error, and leaves no
// change-feed entry, while the others commit with theirs.
func TestCardWritesGrouped(t *testing.T) {
	db := storagetest.Open(t, migrations.SQLite)
	ctx := context.Background()
	s := storage.NewCardStore(db)
	newTenant(t, db, "acme")
	for i := range 10 {
		mustCreate(t, s, "acme", newCard(fmt.Sprintf("agt_%d", i), 1))
	}
	before := len(changes(t, db))
	txs := storage.CountTransactions(db)

	release := storage.HoldGroupCommit(t, db)
	var returned atomic.Int32
	errs := make([]error, 6)
	writes := []func() error{
		func() error { _, err := s.Create(ctx, "acme", newCard("agt_new", 1)); return err }, // commits
		func() error { _, err := s.Create(ctx, "acme", newCard("agt_1", 1)); return err },   // exists
		func() error { return s.Replace(ctx, "acme", newCard("agt_2", 2), 1) },              // commits
		func() error { return s.Replace(ctx, "acme", newCard("agt_3", 3), 2) },              // stale
		func() error { return s.Delete(ctx, "acme", "agt_4", 0) },                           // commits
		func() error { return s.Delete(ctx, "acme", "agt_missing", 0) },                     // not found
	}
	var wg sync.WaitGroup
	for i, w := range writes {
		wg.Go(func() {
			errs[i] = w()
			returned.Add(1)
		})
		// One at a time, so that the batch holds them in this order.
		webtest.Eventually(t, 10*time.Second, "the write queued", func() bool { return storage.QueuedGroupWrites(db) == i+1 })
	}
	if r := returned.Load(); r != 0 {
		t.Fatalf("%d writes returned before they could commit", r)
	}
	beforeTx := txs.Load()
	release()
	wg.Wait()
	if n := txs.Load() - beforeTx; n != 1 {
		t.Errorf("%d card writes committed in %d transactions, want 1", len(writes), n)
	}
	for i, want := range []error{nil, cards.ErrExists, nil, cards.ErrStale, nil, cards.ErrNotFound} {
		if (want == nil) != (errs[i] == nil) || (want != nil && !errors.Is(errs[i], want)) {
			t.Errorf("write %d: %v, want %v", i, errs[i], want)
		}
	}
	var ops []string
	for _, c := range changes(t, db)[before:] {
		ops = append(ops, c.Op+" "+c.Agent)
	}
	if got, want := fmt.Sprint(ops), "[create agt_new update agt_2 delete agt_4]"; got != want {
		t.Errorf("change feed after the batch: %s, want %s", got, want)
	}
	if c, err := s.Get(ctx, "acme", "agt_3"); err != nil || c.Revision != 1 {
		t.Errorf("the stale write changed agt_3: %+v %v", c, err)
	}
	if c, err := s.Get(ctx, "acme", "agt_2"); err != nil || c.Revision != 2 {
		t.Errorf("agt_2 after its write: %+v %v", c, err)
	}
}

// TestSQLiteReadPool: on SQLite, reads go to a pool of read-only connections that a write
// transaction in progress does not hold up, and that refuse a write sent to them by mistake.
func TestSQLiteReadPool(t *testing.T) {
	db := storagetest.Open(t, migrations.SQLite)
	ctx := context.Background()
	s := storage.NewCardStore(db)
	newTenant(t, db, "acme")
	mustCreate(t, s, "acme", newCard("agt_1", 1))

	release := storage.HoldGroupCommit(t, db)
	defer release()
	// The writing connection is inside the held transaction: reads still answer.
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if c, err := s.Get(rctx, "acme", "agt_1"); err != nil || c.AgentID != "agt_1" {
		t.Fatalf("a read while a write transaction is open: %+v %v", c, err)
	}
	if err := db.Ping(rctx); err != nil {
		t.Fatalf("ping while a write transaction is open: %v", err)
	}
	if err := storage.WriteOnReadPool(rctx, db); err == nil {
		t.Fatal("a write on the read pool succeeded")
	}
}
