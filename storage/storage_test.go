package storage_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/delegation"
	"github.com/agentcards/agentcards/migrations"
	"github.com/agentcards/agentcards/storage"
	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/tenants"
)

// fixed is the clock of the tests: microsecond precision, and not UTC, to prove stores convert.
var fixed = time.Date(2025, 3, 1, 12, 30, 45, 123456000, time.FixedZone("UTC+5", 5*3600))

// newTenant creates the tenant "Tenant <id>" at the fixed clock.
func newTenant(t *testing.T, db *storage.DB, id tenants.ID, admins ...string) {
	t.Helper()
	storagetest.CreateTenant(t, db, id, fixed, admins...)
}

func newCard(agentID string, rev int64) cards.Card {
	return cards.Card{
		AgentID:      agentID,
		Name:         "Agent " + agentID,
		Description:  "Reviews pull requests.",
		Protocols:    []string{"a2a", "http"},
		Capabilities: []cards.Capability{{Name: "review_pr", InputSchema: json.RawMessage(`{"type":"object"}`), Tags: []string{"code"}}},
		Resources:    []cards.Resource{},
		Tags:         []string{"code"},
		Metadata:     json.RawMessage(`{"team":"web"}`),
		Visibility:   cards.VisibilityTenant,
		// One card of the agent: its revisions share the id (Replace checks it).
		ID:        uuid.NewSHA1(uuid.NameSpaceURL, []byte(agentID)).String(),
		Revision:  rev,
		CreatedAt: fixed,
		UpdatedAt: fixed.Add(time.Duration(rev) * time.Second),
	}
}

func mustCreate(t *testing.T, s *storage.CardStore, tenant tenants.ID, c cards.Card) {
	t.Helper()
	if _, err := s.Create(context.Background(), tenant, c); err != nil {
		t.Fatalf("create card %s in %s: %v", c.AgentID, tenant, err)
	}
}

// change is one row of the change feed as the tests read it.
type change struct {
	Seq      int64
	Tenant   string
	Agent    string
	Op       string
	Revision int64
}

// changes reads the whole change feed in seq order. It uses no placeholders, so one query text
// serves every dialect.
func changes(t *testing.T, db *storage.DB) []change {
	t.Helper()
	rows, err := db.SQL().Query(`SELECT seq, tenant_id, agent_id, op, revision FROM card_changes ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []change
	for rows.Next() {
		var c change
		if err := rows.Scan(&c.Seq, &c.Tenant, &c.Agent, &c.Op, &c.Revision); err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// count counts the rows of a table that belong to tenant.
func count(t *testing.T, db *storage.DB, table, tenant string) int {
	t.Helper()
	var n int
	// Tenant ids in tests are plain slugs: inlining them keeps the query dialect-neutral.
	if err := db.SQL().QueryRow(`SELECT COUNT(*) FROM ` + table + ` WHERE tenant_id = '` + tenant + `'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestOpenAndPing(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) {
		t.Parallel()
		db := storagetest.Open(t, dialect)
		if err := db.Ping(context.Background()); err != nil {
			t.Fatal(err)
		}
		if db.Dialect() != dialect {
			t.Errorf("Dialect() = %q, want %q", db.Dialect(), dialect)
		}
		if dialect == migrations.SQLite {
			var mode string
			if err := db.SQL().QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
				t.Errorf("journal_mode = %q, %v; want wal", mode, err)
			}
			var fk int
			if err := db.SQL().QueryRow(`PRAGMA foreign_keys`).Scan(&fk); err != nil || fk != 1 {
				t.Errorf("foreign_keys = %d, %v; want 1", fk, err)
			}
		}
	})
}

// TestMigrateAgainChangesNothing: migrating a database that has every migration, as a restart
// (the same pool) or another replica (a second pool) does, changes nothing: the same rows in
// goose's version table, the same tables, columns, indexes and constraints, and every row
// written before still there as it was.
func TestMigrateAgainChangesNothing(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) {
		t.Parallel()
		ctx := context.Background()
		dbs := storagetest.OpenShared(t, dialect, 2)
		db := dbs[0]
		newTenant(t, db, "acme", "alice")
		mustCreate(t, storage.NewCardStore(db), "acme", newCard("agt1", 1))
		if err := storage.NewDelegationStore(db).Create(ctx, "acme", delegation.Delegation{ID: "0190-0001", Caller: "alice",
			AgentID: "agt1", Capability: "review_pr", Mode: delegation.ModeSync, Transport: delegation.TransportHTTP, Depth: 1,
			Status: delegation.StatusRunning, CreatedAt: fixed, UpdatedAt: fixed}, ""); err != nil {
			t.Fatal(err)
		}
		before := snapshot(t, db)
		// The snapshot sees what it must compare: every migration applied, and the rows above.
		states, err := migrations.Status(ctx, db.SQL(), dialect)
		if err != nil {
			t.Fatal(err)
		}
		applied := 0
		for _, s := range states {
			if s.Applied {
				applied++
			}
		}
		if applied == 0 || applied != len(states) || len(before.rows["goose_db_version"]) < applied {
			t.Fatalf("%d of %d migrations applied, version rows %q", applied, len(states), before.rows["goose_db_version"])
		}
		for _, table := range []string{"tenants", "cards", "card_changes", "casbin_rules", "delegations"} {
			if len(before.rows[table]) == 0 {
				t.Fatalf("no rows in %s before migrating again: %v", table, before.tables)
			}
		}

		for i, again := range dbs {
			if err := again.Migrate(ctx); err != nil {
				t.Fatalf("migrate again on pool %d: %v", i, err)
			}
			after := snapshot(t, db)
			if !slices.Equal(after.tables, before.tables) {
				t.Errorf("pool %d: tables %v became %v", i, before.tables, after.tables)
			}
			sameLines(t, fmt.Sprintf("pool %d: schema", i), after.schema, before.schema)
			for _, table := range before.tables {
				sameLines(t, fmt.Sprintf("pool %d: rows of %s", i, table), after.rows[table], before.rows[table])
			}
		}
	})
}

// dbState is what a migration could change: the tables, their definitions (one line per
// column, index, constraint or CREATE statement) and their rows, each row one line, sorted.
type dbState struct {
	tables []string
	schema []string
	rows   map[string][]string
}

// snapshot reads db's whole state from the database's own catalog.
func snapshot(t *testing.T, db *storage.DB) dbState {
	t.Helper()
	var st dbState
	switch db.Dialect() {
	case migrations.SQLite:
		st.tables = lines(t, db, `SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name`)
		st.schema = lines(t, db, `SELECT type, name, tbl_name, COALESCE(sql, '') FROM sqlite_master ORDER BY type, name`)
	case migrations.Postgres:
		st.tables = lines(t, db, `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() ORDER BY table_name`)
		st.schema = slices.Concat(
			lines(t, db, `SELECT table_name, column_name, data_type, is_nullable, COALESCE(column_default, '')
				FROM information_schema.columns WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position`),
			lines(t, db, `SELECT tablename, indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema() ORDER BY tablename, indexname`),
			lines(t, db, `SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid) FROM pg_constraint
				WHERE connamespace = current_schema()::regnamespace ORDER BY 1, 2`),
			lines(t, db, `SELECT sequence_name, data_type FROM information_schema.sequences WHERE sequence_schema = current_schema() ORDER BY 1`),
			lines(t, db, `SELECT trigger_name, event_object_table, action_statement FROM information_schema.triggers
				WHERE trigger_schema = current_schema() ORDER BY 1, 2`),
		)
	case migrations.MySQL:
		st.tables = lines(t, db, `SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE() ORDER BY table_name`)
		// SHOW CREATE TABLE has it all: columns, keys, foreign keys, options, AUTO_INCREMENT.
		for _, table := range st.tables {
			st.schema = append(st.schema, lines(t, db, "SHOW CREATE TABLE "+table)...)
		}
		st.schema = append(st.schema, lines(t, db, `SELECT trigger_name, action_statement FROM information_schema.triggers
			WHERE trigger_schema = DATABASE() ORDER BY 1`)...)
	default:
		t.Fatalf("unknown dialect %q", db.Dialect())
	}
	st.rows = map[string][]string{}
	for _, table := range st.tables {
		rows := lines(t, db, "SELECT * FROM "+table)
		slices.Sort(rows)
		st.rows[table] = rows
	}
	return st
}

// lines runs query and returns each row as one line, its values separated by " | ".
func lines(t *testing.T, db *storage.DB, query string) []string {
	t.Helper()
	rows, err := db.SQL().Query(query)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatalf("%s: %v", query, err)
		}
		fields := make([]string, len(vals))
		for i, v := range vals {
			switch v := v.(type) {
			case nil:
				fields[i] = "NULL"
			case []byte:
				fields[i] = string(v)
			default:
				fields[i] = fmt.Sprint(v)
			}
		}
		out = append(out, strings.Join(fields, " | "))
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return out
}

// sameLines reports the lines only one of got and want has.
func sameLines(t *testing.T, what string, got, want []string) {
	t.Helper()
	if slices.Equal(got, want) {
		return
	}
	for _, l := range want {
		if !slices.Contains(got, l) {
			t.Errorf("%s: lost %q", what, l)
		}
	}
	for _, l := range got {
		if !slices.Contains(want, l) {
			t.Errorf("%s: gained %q", what, l)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%s: %d lines, want %d", what, len(got), len(want))
	}
}

// TestSetMaxConns: database.maxConns sizes a server's pool, open and idle; SQLite's pools keep
// their own sizes (one writing connection).
func TestSetMaxConns(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) {
		t.Parallel()
		db := storagetest.Open(t, dialect)
		before := db.SQL().Stats().MaxOpenConnections
		db.SetMaxConns(24)
		got := db.SQL().Stats().MaxOpenConnections
		switch {
		case dialect == "sqlite" && got != before:
			t.Fatalf("SQLite's pool went from %d to %d connections", before, got)
		case dialect != "sqlite" && (before != 10 || got != 24):
			t.Fatalf("the pool: %d connections by default, %d after SetMaxConns(24); want 10 and 24", before, got)
		}
	})
}
