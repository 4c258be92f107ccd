package storage_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/agentcards/agentcards/cards/delegation"
	"github.com/agentcards/agentcards/migrations"
	"github.com/agentcards/agentcards/storage"
	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/web/webtest"
)

// TestDelegationStore: records round-trip, updates are conditional on the current status (so a
// second result is a conflict), lists filter and page newest first, and every call is scoped to
// its tenant.
func TestDelegationStore(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) {
		t.Parallel()
		db := storagetest.Open(t, dialect)
		ctx := context.Background()
		s := storage.NewDelegationStore(db)
		newTenant(t, db, "a", "alice")
		newTenant(t, db, "b", "bob")
		mk := func(i int, caller, agent string, st delegation.Status) delegation.Delegation {
			return delegation.Delegation{ID: fmt.Sprintf("0190-%04d", i), Caller: caller, AgentID: agent, Capability: "review_pr",
				Mode: delegation.ModeAsync, Transport: delegation.TransportHTTP, Depth: 1, Status: st,
				CreatedAt: fixed.Add(time.Duration(i) * time.Second), UpdatedAt: fixed}
		}
		for i := 1; i <= 5; i++ {
			caller := "olga"
			if i%2 == 0 {
				caller = "rita"
			}
			if err := s.Create(ctx, "a", mk(i, caller, "agt1", delegation.StatusPending), fmt.Sprintf("%064d", i)); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Create(ctx, "b", mk(9, "olga", "agt1", delegation.StatusRunning), ""); err != nil {
			t.Fatal(err)
		}
		got, err := s.Get(ctx, "a", "0190-0001")
		if err != nil || got.Caller != "olga" || !got.CreatedAt.Equal(fixed.Add(time.Second)) || got.Result != nil {
			t.Fatalf("get %+v %v", got, err)
		}
		if _, err := s.Get(ctx, "b", "0190-0001"); !errors.Is(err, delegation.ErrNotFound) {
			t.Fatalf("another tenant's record: %v", err)
		}
		if h, err := s.CallbackHash(ctx, "a", "0190-0002"); err != nil || h != fmt.Sprintf("%064d", 2) {
			t.Fatalf("hash %q %v", h, err)
		}

		open := []delegation.Status{delegation.StatusPending, delegation.StatusRunning, delegation.StatusAccepted}
		done := delegation.Outcome{Status: delegation.StatusCompleted, Result: []byte(`{"ok":true}`), LatencyMS: 12, At: fixed.Add(time.Minute)}
		if err := s.Update(ctx, "a", "0190-0001", open, done); err != nil {
			t.Fatal(err)
		}
		if err := s.Update(ctx, "a", "0190-0001", open, delegation.Outcome{Status: delegation.StatusFailed, At: fixed}); !errors.Is(err, delegation.ErrConflict) {
			t.Fatalf("second result: %v", err)
		}
		if err := s.Update(ctx, "b", "0190-0002", open, done); !errors.Is(err, delegation.ErrNotFound) {
			t.Fatalf("update across tenants: %v", err)
		}
		got, _ = s.Get(ctx, "a", "0190-0001")
		if got.Status != delegation.StatusCompleted || string(got.Result) != `{"ok":true}` || got.LatencyMS != 12 || !got.UpdatedAt.Equal(fixed.Add(time.Minute)) {
			t.Fatalf("after update %+v (%s)", got, got.Result)
		}

		ids := func(list []delegation.Delegation, err error) string {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
			out := ""
			for _, d := range list {
				out += d.ID[5:] + " "
			}
			return out
		}
		for _, c := range []struct {
			f    delegation.Filter
			want string
		}{
			{delegation.Filter{}, "0005 0004 0003 0002 0001 "},
			{delegation.Filter{Caller: "rita"}, "0004 0002 "},
			{delegation.Filter{Status: delegation.StatusCompleted}, "0001 "},
			{delegation.Filter{AgentID: "agt2"}, ""},
			{delegation.Filter{Limit: 2, Before: "0190-0004"}, "0003 0002 "},
		} {
			if got := ids(s.List(ctx, "a", c.f)); got != c.want {
				t.Errorf("list %+v = %q, want %q", c.f, got, c.want)
			}
		}
		if got := ids(s.List(ctx, "b", delegation.Filter{})); got != "0009 " {
			t.Errorf("tenant b lists %q", got)
		}
		// Deleting a tenant removes its records.
		if err := storage.NewTenantStore(db).Delete(ctx, "a"); err != nil {
			t.Fatal(err)
		}
		if got := ids(s.List(ctx, "a", delegation.Filter{})); got != "" {
			t.Errorf("records outlived their tenant: %q", got)
		}
	})
}

// TestDelegationStoreA2AInterface: the A2A interface of a record (binding and version) is stored
// and read back by Get and List, and survives an outcome being recorded; an http record has none.
func TestDelegationStoreA2AInterface(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) {
		t.Parallel()
		db := storagetest.Open(t, dialect)
		ctx := context.Background()
		s := storage.NewDelegationStore(db)
		newTenant(t, db, "a", "alice")
		v03 := delegation.Interface{Binding: delegation.BindingHTTPJSON, Version: delegation.A2AVersion03}
		a2aRecord := record(1)
		a2aRecord.Transport, a2aRecord.A2A = delegation.TransportA2A, v03
		for _, d := range []delegation.Delegation{a2aRecord, record(2)} {
			if err := s.Create(ctx, "a", d, ""); err != nil {
				t.Fatal(err)
			}
		}
		if err := finish(ctx, s, a2aRecord.ID); err != nil {
			t.Fatal(err)
		}
		got, err := s.Get(ctx, "a", a2aRecord.ID)
		if err != nil || got.A2A != v03 || got.Status != delegation.StatusCompleted {
			t.Fatalf("a2a record %+v %v", got, err)
		}
		list, err := s.List(ctx, "a", delegation.Filter{})
		if err != nil || len(list) != 2 || list[0].A2A != (delegation.Interface{}) || list[1].A2A != v03 {
			t.Fatalf("list %+v %v", list, err)
		}
	})
}

// record is the delegation record i of the group-commit tests: running, in tenant a's agent agt1.
func record(i int) delegation.Delegation {
	return delegation.Delegation{ID: fmt.Sprintf("0190-%04d", i), Caller: "olga", AgentID: "agt1", Capability: "review_pr",
		Mode: delegation.ModeSync, Transport: delegation.TransportHTTP, Depth: 1, Status: delegation.StatusRunning,
		CreatedAt: fixed, UpdatedAt: fixed}
}

// finish moves record id from running to completed.
func finish(ctx context.Context, s *storage.DelegationStore, id string) error {
	return s.Update(ctx, "a", id, []delegation.Status{delegation.StatusRunning},
		delegation.Outcome{Status: delegation.StatusCompleted, At: fixed})
}

// TestDelegationWritesGrouped: on SQLite, record writes made while the group committer is busy
// commit together, in one transaction, each caller returning only once its write committed; a
// duplicate id in a batch fails alone, with gorm.ErrDuplicatedKey, and the rest of its batch
// commits. On Postgres and MySQL each write runs at once on the pool: one that waits on a row
// lock holds up no other. Everywhere a duplicate id is refused with gorm.ErrDuplicatedKey.
func TestDelegationWritesGrouped(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) {
		t.Parallel()
		db := storagetest.Open(t, dialect)
		ctx := context.Background()
		s := storage.NewDelegationStore(db)
		newTenant(t, db, "a", "alice")
		if err := s.Create(ctx, "a", record(0), ""); err != nil {
			t.Fatal(err)
		}
		if dialect == migrations.SQLite {
			groupCommit(t, db, s)
		} else {
			writesAtOnce(t, db, s)
		}
		if err := s.Create(ctx, "a", record(0), ""); !errors.Is(err, gorm.ErrDuplicatedKey) {
			t.Fatalf("a duplicate record: %v, want gorm.ErrDuplicatedKey", err)
		}
	})
}

// groupCommit checks group commit on SQLite: it holds the committer, queues writes behind it and
// counts the transactions they commit in.
func groupCommit(t *testing.T, db *storage.DB, s *storage.DelegationStore) {
	ctx := context.Background()
	txs := storage.CountTransactions(db)
	const n = 40 // fewer than the committer's queue holds, so that every write queues
	// batch makes the n writes of write(i) while the committer is held, and returns their errors
	// and how many transactions they committed in.
	batch := func(what string, write func(i int) error) ([]error, int64) {
		t.Helper()
		release := storage.HoldGroupCommit(t, db)
		defer release()
		before := txs.Load()
		errs := make([]error, n)
		var returned atomic.Int32
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				errs[i] = write(i)
				returned.Add(1)
			})
		}
		webtest.Eventually(t, 10*time.Second, what+": every write queued", func() bool { return storage.QueuedGroupWrites(db) == n })
		if r := returned.Load(); r != 0 {
			t.Fatalf("%s: %d writes returned before they could commit", what, r)
		}
		release()
		wg.Wait()
		return errs, txs.Load() - before
	}

	errs, committed := batch("create", func(i int) error { return s.Create(ctx, "a", record(i+1), "") })
	for i, err := range errs {
		if err != nil {
			t.Fatalf("create %d: %v", i+1, err)
		}
	}
	if committed != 1 {
		t.Errorf("%d concurrent creates committed in %d transactions, want 1", n, committed)
	}
	errs, committed = batch("update", func(i int) error { return finish(ctx, s, record(i+1).ID) })
	for i, err := range errs {
		if err != nil {
			t.Fatalf("update %d: %v", i+1, err)
		}
	}
	if committed != 1 {
		t.Errorf("%d concurrent updates committed in %d transactions, want 1", n, committed)
	}
	for i := 1; i <= n; i++ {
		if got, err := s.Get(ctx, "a", record(i).ID); err != nil || got.Status != delegation.StatusCompleted {
			t.Fatalf("record %d: %+v %v", i, got, err)
		}
	}

	// A duplicate in a batch fails alone, with the store's error; the others commit.
	const dup = 7
	errs, _ = batch("create with a duplicate", func(i int) error {
		if i == dup {
			return s.Create(ctx, "a", record(0), "")
		}
		return s.Create(ctx, "a", record(n+1+i), "")
	})
	for i, err := range errs {
		switch {
		case i == dup && !errors.Is(err, gorm.ErrDuplicatedKey):
			t.Errorf("the duplicate: %v, want gorm.ErrDuplicatedKey", err)
		case i != dup && err != nil:
			t.Errorf("create %d, batched with a duplicate: %v", n+1+i, err)
		}
	}
	for i := range n {
		_, err := s.Get(ctx, "a", record(n+1+i).ID)
		if (i == dup) != errors.Is(err, delegation.ErrNotFound) || (i != dup && err != nil) {
			t.Errorf("record %d after the batch with a duplicate: %v", n+1+i, err)
		}
	}
}

// writesAtOnce checks that on a server each record write runs at once, as its own statement:
// while one waits on a row lock another transaction holds, another record is created and
// updated, and is visible to every connection.
func writesAtOnce(t *testing.T, db *storage.DB, s *storage.DelegationStore) {
	ctx := context.Background()
	locker, err := db.SQL().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = locker.Rollback() }()
	var id string
	if err := locker.QueryRowContext(ctx, `SELECT id FROM delegations WHERE tenant_id = 'a' AND id = '0190-0000' FOR UPDATE`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	var waiting string // counts the record's updates in flight, held up by the locker's lock
	var pid int64
	if db.Dialect() == migrations.Postgres {
		waiting = `SELECT COUNT(*) FROM pg_stat_activity WHERE %d = ANY(pg_blocking_pids(pid))`
		err = locker.QueryRowContext(ctx, `SELECT pg_backend_pid()`).Scan(&pid)
	} else {
		// Not INNODB_TRX: MySQL refreshes that cache only after 100 ms without a read of it, so
		// polling it faster never sees the wait. An UPDATE of the record running at the server
		// cannot end before the lock is released.
		waiting = `SELECT COUNT(*) FROM information_schema.processlist
			WHERE db = DATABASE() AND id <> %d AND info LIKE 'UPDATE delegations %%'`
		err = locker.QueryRowContext(ctx, `SELECT CONNECTION_ID()`).Scan(&pid)
	}
	if err != nil {
		t.Fatal(err)
	}
	blocked := make(chan error, 1)
	go func() { blocked <- finish(ctx, s, record(0).ID) }()
	webtest.Eventually(t, 10*time.Second, "the update of a locked record waits for the lock", func() bool {
		var n int
		if err := db.SQL().QueryRowContext(ctx, fmt.Sprintf(waiting, pid)).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n > 0
	})

	other := make(chan error, 1)
	go func() {
		err := s.Create(ctx, "a", record(1), "")
		if err == nil {
			err = finish(ctx, s, record(1).ID)
		}
		other <- err
	}()
	select {
	case err := <-other:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a write waited for another record's write")
	}
	if got, err := s.Get(ctx, "a", record(1).ID); err != nil || got.Status != delegation.StatusCompleted {
		t.Fatalf("the other record, from the pool: %+v %v", got, err)
	}
	select {
	case err := <-blocked:
		t.Fatalf("the update of the locked record returned while the lock was held: %v", err)
	default:
	}
	if err := locker.Rollback(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-blocked:
		if err != nil {
			t.Fatalf("the update of the record once unlocked: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the update of the record did not go on once unlocked")
	}
	if got, err := s.Get(ctx, "a", record(0).ID); err != nil || got.Status != delegation.StatusCompleted {
		t.Fatalf("the once locked record: %+v %v", got, err)
	}
}
