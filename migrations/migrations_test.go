package migrations_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agentcards/agentcards/migrations"
	"github.com/agentcards/agentcards/storage/storagetest"
)

// TestConcurrentUp starts several "replicas", each with its own pool, migrating one fresh
// database at once: all must succeed and every migration must be recorded exactly once.
func TestConcurrentUp(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) {
		t.Parallel()
		driver, dsn := storagetest.EmptyDatabase(t, dialect)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		replicas := 5
		if dialect == migrations.SQLite {
			replicas = 1 // one process owns a SQLite file
		}
		errs := make([]error, replicas)
		var wg sync.WaitGroup
		for i := range replicas {
			db, err := sql.Open(driver, dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			wg.Go(func() { errs[i] = migrations.Up(ctx, db, dialect) })
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("replica %d: %v", i, err)
			}
		}

		db, err := sql.Open(driver, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if err := migrations.Up(ctx, db, dialect); err != nil {
			t.Errorf("Up on an up-to-date database: %v", err)
		}
		var total, distinct int
		err = db.QueryRow(`SELECT COUNT(*), COUNT(DISTINCT version_id) FROM goose_db_version WHERE version_id > 0`).Scan(&total, &distinct)
		if err != nil {
			t.Fatal(err)
		}
		states, err := migrations.Status(ctx, db, dialect)
		if err != nil {
			t.Fatal(err)
		}
		if len(states) == 0 || total != len(states) || distinct != total {
			t.Errorf("version table has %d rows for %d versions; %d migrations known", total, distinct, len(states))
		}
		for _, s := range states {
			if !s.Applied || s.AppliedAt.IsZero() || s.Name == "" {
				t.Errorf("migration %+v not applied", s)
			}
		}
		if states[0].Version != 1 || states[0].Name != "0001_init.sql" {
			t.Errorf("first migration = %+v", states[0])
		}
	})
}

func TestUnknownDialect(t *testing.T) {
	db, err := sql.Open("sqlite3", filepath.Join(t.TempDir(), "x.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := migrations.Up(context.Background(), db, "oracle"); err == nil {
		t.Error("Up accepted an unknown dialect")
	}
}

// TestGaleraLeaseRenewed: the Galera migration lease is renewed while its holder migrates, so a
// replica on another node waits for it to be given back however long the migrations take
// (here five times the lease's own length), then takes it.
func TestGaleraLeaseRenewed(t *testing.T) {
	ctx := context.Background()
	driver, dsn := storagetest.EmptyDatabase(t, migrations.MySQL)
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conns := make([]*sql.Conn, 2)
	for i := range conns {
		if conns[i], err = db.Conn(ctx); err != nil {
			t.Fatal(err)
		}
		defer conns[i].Close()
	}
	a := migrations.LeaseLocker(db, "a", 10*time.Second, 500*time.Millisecond, 100*time.Millisecond)
	b := migrations.LeaseLocker(db, "b", 10*time.Second, 500*time.Millisecond, 100*time.Millisecond)
	if err := a.SessionLock(ctx, conns[0]); err != nil {
		t.Fatal(err)
	}
	took := make(chan error, 1)
	go func() { took <- b.SessionLock(ctx, conns[1]) }()
	select {
	case err := <-took:
		t.Fatalf("the lease was taken while its holder renewed it: %v", err)
	case <-time.After(2500 * time.Millisecond):
	}
	if err := a.SessionUnlock(ctx, conns[0]); err != nil {
		t.Fatal(err)
	}
	if err := <-took; err != nil {
		t.Fatalf("the lease given back was not taken: %v", err)
	}
	if err := b.SessionUnlock(ctx, conns[1]); err != nil {
		t.Fatal(err)
	}
}
