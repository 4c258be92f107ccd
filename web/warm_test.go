package web_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/tenants"
	"github.com/agentcards/agentcards/web/webtest"
)

// TestWarmStart: a search is remembered (tenant_activity); a replica started later on the same
// database builds the indexes of the tenants searched within the window in the background, and
// not those of the others; with search.warmReady, /ready answers 503 (the one error body) until
// it has. On every database.
func TestWarmStart(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, d string) {
		db := storagetest.Open(t, d)
		first := newEnvWith(t, db, envOptions{})
		first.mkTenant("acme", "alice")
		first.mkTenant("beta", "bob")
		alice := first.token("alice", "acme", false)
		expect(t, first.do("POST", "/v1/tenants/acme/cards", alice, sampleCard("agt1")), http.StatusCreated)
		expect(t, first.do("POST", "/v1/tenants/beta/cards", first.token("bob", "beta", false), sampleCard("agt1")), http.StatusCreated)
		first.search(alice, "acme", "q=review") // beta is never searched
		webtest.Eventually(t, 10*time.Second, "the search of acme recorded", func() bool {
			var n int
			return db.SQL().QueryRowContext(context.Background(), "SELECT COUNT(*) FROM tenant_activity WHERE tenant_id = 'acme'").Scan(&n) == nil && n == 1
		})

		// A replica starting now.
		second := newEnvWith(t, db, envOptions{warmReady: true})
		r := second.do("GET", "/ready", "", nil)
		expect(t, r, http.StatusServiceUnavailable, "unavailable")
		if len(second.index.Loaded()) != 0 {
			t.Fatalf("indexes loaded before the warm-up: %v", second.index.Loaded())
		}
		second.warmer.Warm(context.Background(), time.Hour)
		loaded := second.index.Loaded()
		if !slices.Contains(loaded, tenants.ID("acme")) || slices.Contains(loaded, tenants.ID("beta")) {
			t.Errorf("warmed %v, want acme and not beta", loaded)
		}
		expect(t, second.do("GET", "/ready", "", nil), http.StatusOK)
		if got := second.search(alice, "acme", "q=review"); got.Total != 1 {
			t.Errorf("the warmed index answers %v", got.ids())
		}
	})
}

// TestWarmStartFromSnapshot: a replica that stops writes its tenant's index out; the next one
// started on the same database and directory reads it back, reads again only the cards written
// after it (one patched, one deleted, one new), and answers as the database has them. On every
// database.
func TestWarmStartFromSnapshot(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, d string) {
		db := storagetest.Open(t, d)
		dir := t.TempDir()
		first := newEnvWith(t, db, envOptions{snapshotDir: dir, snapshotMin: 5})
		first.mkTenant("acme", "alice")
		alice := first.token("alice", "acme", false)
		for i := range 12 {
			expect(t, first.do("POST", "/v1/tenants/acme/cards", alice, sampleCard(fmt.Sprintf("agt%02d", i))), http.StatusCreated)
		}
		if got := first.search(alice, "acme", "q=review"); got.Total != 12 {
			t.Fatalf("before the restart: %v", got.ids())
		}
		if err := first.index.SaveSnapshots(context.Background()); err != nil {
			t.Fatal(err)
		}
		// Written after the snapshot, as by another replica: this one's index is not told.
		other := newEnvWith(t, db, envOptions{noIndex: true})
		expect(t, other.do("PATCH", "/v1/tenants/acme/cards/agt03", alice, map[string]any{"description": "Translates contracts."}), http.StatusOK)
		expect(t, other.do("DELETE", "/v1/tenants/acme/cards/agt07", alice, nil), http.StatusNoContent)
		expect(t, other.do("POST", "/v1/tenants/acme/cards", alice, sampleCard("agt99")), http.StatusCreated)

		var logged webtest.LogBuffer
		second := newEnvWith(t, db, envOptions{snapshotDir: dir, snapshotMin: 5, log: slog.New(slog.NewTextHandler(&logged, nil))})
		if got := second.search(alice, "acme", "q=contracts"); !slices.Equal(got.ids(), []string{"agt03"}) {
			t.Errorf("the patched card: %v", got.ids())
		}
		got := second.search(alice, "acme", "limit=100")
		want := []string{"agt00", "agt01", "agt02", "agt03", "agt04", "agt05", "agt06", "agt08", "agt09", "agt10", "agt11", "agt99"}
		if !slices.Equal(got.ids(), want) {
			t.Errorf("after the restart: %v, want %v", got.ids(), want)
		}
		if line := logged.String(); !strings.Contains(line, "search index read back from its snapshot") || !strings.Contains(line, "readAgain=2 removed=1") {
			t.Errorf("the restore was not logged as read back with 2 cards read again and 1 removed:\n%s", line)
		}
	})
}
