package storage_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/storage"
	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/tenants"
)

// forEachDialect runs fn once per dialect, each on a fresh database, the dialects in parallel.
func forEachDialect(t *testing.T, fn func(t *testing.T, db *storage.DB)) {
	t.Helper()
	for _, d := range storagetest.Dialects() {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			fn(t, storagetest.Open(t, d))
		})
	}
}

// fixed is the clock of the tests: microsecond precision, and not UTC, to prove stores convert.
var fixed = time.Date(2025, 3, 1, 12, 30, 45, 123456000, time.FixedZone("UTC+5", 5*3600))

func newTenant(t *testing.T, db *storage.DB, id tenants.ID, admins ...string) {
	t.Helper()
	tn := tenants.Tenant{ID: id, Name: "Tenant " + string(id), Status: tenants.StatusActive, CreatedAt: fixed, UpdatedAt: fixed}
	if err := storage.NewTenantStore(db).Create(context.Background(), tn, admins); err != nil {
		t.Fatalf("create tenant %s: %v", id, err)
	}
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
		ID:           fmt.Sprintf("5b0f7c1e-0000-4000-8000-%012d", rev),
		Revision:     rev,
		CreatedAt:    fixed,
		UpdatedAt:    fixed.Add(time.Duration(rev) * time.Second),
	}
}

func mustCreate(t *testing.T, s *storage.CardStore, tenant tenants.ID, c cards.Card) {
	t.Helper()
	if err := s.Create(context.Background(), tenant, c); err != nil {
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
	forEachDialect(t, func(t *testing.T, db *storage.DB) {
		if err := db.Ping(context.Background()); err != nil {
			t.Fatal(err)
		}
		// Migrating again is a no-op.
		if err := db.Migrate(context.Background()); err != nil {
			t.Fatal(err)
		}
		if db.Dialect() == "sqlite" {
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
