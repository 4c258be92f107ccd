package app

import (
	"context"
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/migrations"
	"github.com/agentcards/agentcards/storage"
	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/tenants"
	"github.com/agentcards/agentcards/web/webtest"
)

// setChangedAt backdates the change-feed entries of tenant's agent to at.
func setChangedAt(t *testing.T, db *storage.DB, tenant tenants.ID, agent string, at time.Time) {
	t.Helper()
	query := "UPDATE card_changes SET changed_at = ? WHERE tenant_id = ? AND agent_id = ?"
	if db.Dialect() == migrations.Postgres {
		query = "UPDATE card_changes SET changed_at = $1 WHERE tenant_id = $2 AND agent_id = $3"
	}
	if _, err := db.SQL().Exec(query, at.UTC().Truncate(time.Microsecond), string(tenant), agent); err != nil {
		t.Fatal(err)
	}
}

// TestPruneFeedLoop: the loop Start runs, pruneFeed, deletes every retention/24, in every
// tenant, the change-feed entries older than retention and keeps the newer ones; it goes on
// doing so, and logs nothing when all goes well.
func TestPruneFeedLoop(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) {
		t.Parallel()
		ctx := context.Background()
		db := storagetest.Open(t, dialect)
		feed, ts := storage.NewCardStore(db), storage.NewTenantStore(db)
		const retention = 12 * time.Second // pruned every 500ms
		now := time.Now()
		// The kept entries are dated ahead, so that however long a loaded machine takes over
		// this test they never age past the retention while it runs.
		ages := map[string]time.Duration{"old": time.Hour, "expired": retention + time.Second, "mid": -time.Hour / 2, "new": -time.Hour}
		for _, tenant := range []tenants.ID{"a", "b", "c"} {
			storagetest.CreateTenant(t, db, tenant, now, "alice")
		}
		for _, tenant := range []tenants.ID{"a", "b"} { // c has no entries
			for agent, age := range ages {
				c := cards.Card{AgentID: agent, Name: agent, Protocols: []string{"http"}, Capabilities: []cards.Capability{{Name: "review_pr"}},
					Visibility: cards.VisibilityTenant, ID: "5b0f7c1e-0000-4000-8000-00000000000" + string(tenant), Revision: 1, CreatedAt: now, UpdatedAt: now}
				if _, err := feed.Create(ctx, tenant, c); err != nil {
					t.Fatal(err)
				}
				setChangedAt(t, db, tenant, agent, now.Add(-age))
			}
		}
		left := func(tenant tenants.ID) string {
			t.Helper()
			list, err := feed.Changes(ctx, tenant, 0, 100)
			if err != nil {
				t.Fatal(err)
			}
			var agents []string
			for _, c := range list {
				agents = append(agents, c.AgentID)
			}
			slices.Sort(agents)
			return strings.Join(agents, " ")
		}

		var log webtest.LogBuffer
		loopCtx, stop := context.WithCancel(ctx)
		stopped := make(chan struct{})
		go func() {
			defer close(stopped)
			pruneFeed(loopCtx, feed, ts, storage.NewLivenessStore(db), retention, slog.New(slog.NewTextHandler(&log, nil)))
		}()
		defer func() {
			stop()
			<-stopped
		}()
		webtest.Eventually(t, 10*time.Second, "entries older than retention pruned in a and b", func() bool {
			return left("a") == "mid new" && left("b") == "mid new"
		})
		// An entry that ages past retention later goes at a later round; the other tenant keeps its own.
		setChangedAt(t, db, "a", "mid", now.Add(-retention-time.Second))
		webtest.Eventually(t, 10*time.Second, "a's entry pruned at a later round", func() bool { return left("a") == "new" })
		if got := left("b"); got != "mid new" {
			t.Errorf("b's entries after a later round: %q, want mid new", got)
		}
		if log.String() != "" {
			t.Errorf("pruning logged:\n%s", log.String())
		}
	})
}

// TestSnapshotsOffWhenUnwritable: a snapshot directory that cannot be written (here a file
// stands where it would be made) turns snapshots off with one warning at the start, and the
// server runs on; a writable one turns them on.
func TestSnapshotsOffWhenUnwritable(t *testing.T) {
	db := storagetest.Open(t, "sqlite")
	blocked := t.TempDir() + "/file"
	if err := os.WriteFile(blocked, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		dir string
		on  bool
	}{{blocked + "/index", false}, {t.TempDir() + "/index", true}} {
		var log webtest.LogBuffer
		a, err := New(Options{DB: db, Keys: webtest.ServiceKeys(t), Log: slog.New(slog.NewTextHandler(&log, nil)), Search: SearchOptions{SnapshotDir: c.dir}})
		if err != nil {
			t.Fatal(err)
		}
		if on := a.Index.Snapshots != nil; on != c.on {
			t.Errorf("%s: snapshots on %v, want %v", c.dir, on, c.on)
		}
		if warned := strings.Contains(log.String(), "search index snapshots are off"); warned == c.on {
			t.Errorf("%s: warned %v:\n%s", c.dir, warned, log.String())
		}
		a.Close()
	}
}
