package web_test

import (
	"context"
	"net/http"
	"slices"
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
