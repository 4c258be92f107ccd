package storage_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/agentcards/agentcards/cards/search"
	"github.com/agentcards/agentcards/migrations"
	"github.com/agentcards/agentcards/storage"
	"github.com/agentcards/agentcards/storage/storagetest"
)

// TestStoresThroughPgBouncer: two DBs (two replicas) on PgBouncer in transaction mode with one
// server connection, so every statement of either runs on the same server session. With pgx's
// default exec mode the second replica's first prepared statement already exists there (the
// first's), and fails. With default_query_exec_mode=exec and the direct DSN for migrations and
// LISTEN, both write and read, and a write is heard at once on the direct LISTEN; a LISTEN
// through the pooler takes effect on a server connection that others then use, and hears nothing.
func TestStoresThroughPgBouncer(t *testing.T) {
	_, direct := storagetest.EmptyDatabase(t, migrations.Postgres)
	pgb := storagetest.StartPgBouncer(t, direct, 1)
	ctx := context.Background()
	open := func(dsn string) *storage.DB {
		t.Helper()
		db, err := storage.Open(ctx, migrations.Postgres, dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = db.Close() })
		return db
	}
	replica := func(dsn string) *storage.DB {
		t.Helper()
		db := open(dsn)
		if err := db.UseDirect(ctx, direct); err != nil {
			t.Fatal(err)
		}
		if err := db.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		return db
	}

	var err error
	for _, db := range []*storage.DB{open(pgb.DSN), open(pgb.DSN)} {
		var schema string
		if err = db.SQL().QueryRowContext(ctx, "SELECT current_schema()").Scan(&schema); err != nil {
			break
		}
	}
	if pg := (*pgconn.PgError)(nil); !errors.As(err, &pg) || pg.Code != "42P05" {
		t.Fatalf("named prepared statements through the pooler: %v, want 42P05 (already exists)", err)
	}

	dbs := []*storage.DB{replica(pgb.DSN + "&default_query_exec_mode=exec"), replica(pgb.DSN + "&default_query_exec_mode=exec")}
	heard := make(chan search.Notice, 16)
	listenCtx, stop := context.WithCancel(ctx)
	defer stop()
	if err := dbs[1].Listen(listenCtx, heard, nil, nil); err != nil {
		t.Fatal(err)
	}
	pooled, err := storage.Open(ctx, migrations.Postgres, pgb.DSN+"&default_query_exec_mode=exec")
	if err != nil {
		t.Fatal(err)
	}
	defer pooled.Close()
	deaf := make(chan search.Notice, 16)
	if err := pooled.Listen(listenCtx, deaf, nil, nil); err != nil {
		t.Fatal(err)
	}
	newTenant(t, dbs[0], "beta", "bob")
	for i, id := range []string{"agt1", "agt2"} {
		mustCreate(t, storage.NewCardStore(dbs[i]), "beta", newCard(id, 1))
		for _, db := range dbs {
			if c, err := storage.NewCardStore(db).Get(ctx, "beta", id); err != nil || c.AgentID != id {
				t.Fatalf("read %s: %+v, %v", id, c, err)
			}
		}
		if n := nextNotification(t, heard, "LISTEN on the direct DSN"); n.Change.AgentID != id {
			t.Fatalf("heard %+v, want %s", n, id)
		}
	}
	select {
	case n := <-deaf:
		t.Errorf("a LISTEN through the pooler heard %+v", n)
	case <-time.After(500 * time.Millisecond):
	}
}

// TestUseDirectRefusesAnotherSchema: a direct DSN must reach the schema the pool works in, where
// migrations lock and notifications are told apart.
func TestUseDirectRefusesAnotherSchema(t *testing.T) {
	db := storagetest.Open(t, migrations.Postgres)
	_, other := storagetest.EmptyDatabase(t, migrations.Postgres)
	err := db.UseDirect(context.Background(), other)
	if err == nil || !strings.Contains(err.Error(), "both must reach the same database and schema") {
		t.Fatalf("UseDirect with another schema: %v", err)
	}
}
