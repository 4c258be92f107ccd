package storage_test

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/agentcards/agentcards/migrations"
	"github.com/agentcards/agentcards/storage"
	"github.com/agentcards/agentcards/storage/storagetest"
)

// TestGalera, on a MariaDB Galera cluster of two nodes: a transaction that loses to another
// node's write in certification fails with a deadlock, which the stores run again; a ping of a
// node cut off from the cluster fails, and passes again once it is back; and GET_LOCK, which
// serializes migrations, holds on one node only, while replicas migrating a new database together
// on both nodes do it once.
func TestGalera(t *testing.T) {
	cluster := storagetest.StartGalera(t, 2)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	nodes := make([]*sql.DB, 2)
	for i, nd := range cluster.Nodes {
		cfg, err := gomysql.ParseDSN(nd.DSN)
		if err != nil {
			t.Fatal(err)
		}
		cfg.DBName = "test"
		db, err := sql.Open("mysql", cfg.FormatDSN())
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		nodes[i] = db
	}
	if err := cluster.Exec(ctx, "CREATE DATABASE test", "CREATE TABLE test.t (id INT PRIMARY KEY, v INT)", "INSERT INTO test.t VALUES (1, 0)"); err != nil {
		t.Fatal(err)
	}

	// A transaction on the first node updates the row; the second node's update of it commits
	// first, and aborts the first node's transaction when it is applied there.
	tx, err := nodes[0].BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, "UPDATE t SET v = 1 WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	if _, err := nodes[1].ExecContext(ctx, "UPDATE t SET v = 2 WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	err = tx.Commit()
	var my *gomysql.MySQLError
	if !errors.As(err, &my) || !storage.Deadlocked(err) {
		t.Fatalf("the losing transaction's commit: %v, want a deadlock", err)
	}
	t.Logf("the losing transaction: %v", err)

	// GET_LOCK is per node: both nodes grant the same lock at once, so replicas that start
	// together on different nodes do not wait for each other's migrations.
	conns := make([]*sql.Conn, 2)
	for i, db := range nodes {
		if conns[i], err = db.Conn(ctx); err != nil {
			t.Fatal(err)
		}
		defer conns[i].Close()
		var got sql.NullInt64
		if err := conns[i].QueryRowContext(ctx, "SELECT GET_LOCK('agentcards_migrate:test', 0)").Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got.Int64 != 1 {
			t.Fatalf("node %d: GET_LOCK = %v, want 1 (held on the other node only)", i, got)
		}
	}

	// Replicas started together on both nodes migrate a new database once: the migration lease
	// holds across the cluster where GET_LOCK does not.
	if err := cluster.Exec(ctx, "CREATE DATABASE migrated"); err != nil {
		t.Fatal(err)
	}
	migrated := make([]*sql.DB, 6)
	for i := range migrated {
		cfg, err := gomysql.ParseDSN(cluster.Nodes[i%2].DSN)
		if err != nil {
			t.Fatal(err)
		}
		cfg.DBName, cfg.ParseTime, cfg.MultiStatements = "migrated", true, true
		if migrated[i], err = sql.Open("mysql", cfg.FormatDSN()); err != nil {
			t.Fatal(err)
		}
		defer migrated[i].Close()
	}
	errs := make([]error, len(migrated))
	var wg sync.WaitGroup
	for i, db := range migrated {
		wg.Go(func() { errs[i] = migrations.Up(ctx, db, migrations.MySQL) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("replica %d (node %d): %v", i, i%2, err)
		}
	}
	for i, db := range migrated[:2] {
		states, err := migrations.Status(ctx, db, migrations.MySQL)
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range states {
			if !st.Applied {
				t.Fatalf("node %d: migration %s not applied", i, st.Name)
			}
		}
		var twice int
		if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM (SELECT version_id FROM goose_db_version
			GROUP BY version_id HAVING COUNT(*) > 1) d`).Scan(&twice); err != nil {
			t.Fatal(err)
		}
		if twice != 0 {
			t.Fatalf("node %d: %d migrations recorded more than once", i, twice)
		}
	}

	// The second node cut off from the first: neither is in a primary component (one of two is
	// no majority), and a ping of either fails until they are together again.
	db, err := storage.Open(ctx, migrations.MySQL, cluster.Nodes[1].DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	isolate := func(on int) {
		q := "SET GLOBAL wsrep_provider_options = 'gmcast.isolate=" + map[int]string{0: "0", 1: "1"}[on] + "'"
		if _, err := nodes[1].ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	isolate(1)
	deadline := time.Now().Add(20 * time.Second)
	for err = db.Ping(ctx); !errors.Is(err, storage.ErrGaleraNotReady); err = db.Ping(ctx) {
		if time.Now().After(deadline) {
			t.Fatalf("a ping of the cut-off node: %v, want ErrGaleraNotReady", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := db.Alive(ctx); !errors.Is(err, storage.ErrGaleraNotReady) {
		t.Errorf("Alive on the cut-off node: %v, want ErrGaleraNotReady", err)
	}
	if _, err := db.ReadSQL().ExecContext(ctx, "SELECT * FROM mysql.user LIMIT 1"); err == nil {
		t.Errorf("a node outside the primary component answers statements")
	} else {
		t.Logf("a statement on the cut-off node: %v", err)
	}
	isolate(0)
	deadline = time.Now().Add(30 * time.Second)
	for err = db.Ping(ctx); err != nil; err = db.Ping(ctx) {
		if time.Now().After(deadline) {
			t.Fatalf("a ping of the node back in the cluster: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
