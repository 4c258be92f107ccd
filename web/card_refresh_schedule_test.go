package web_test

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/agentcards/agentcards/cards/a2a/a2atest"
	"github.com/agentcards/agentcards/cards/agenttest"
	"github.com/agentcards/agentcards/storage/storagetest"
)

// TestScheduledRefresh: with a2a.refreshInterval, a card imported by URL is refreshed from its
// source once its last refresh (or import) is an interval old: by one of two replicas, once per
// interval, as POST .../refresh does (a change is a new revision, found by its new words); a
// card not imported from a URL is left alone. On every database.
func TestScheduledRefresh(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, d string) {
		clk := &clock{t: time.Now().UTC()}
		db := storagetest.Open(t, d)
		o := envOptions{allowLoopback: true, refreshInterval: time.Hour, refreshNow: clk.now}
		r1, r2 := newEnvWith(t, db, o), newEnvWith(t, db, o)
		r1.allowLoopback()
		r2.allowLoopback()
		var mu sync.Mutex
		card := a2atest.SampleV1(t)
		source := agenttest.New(t, nil)
		serve := func() {
			t.Helper()
			raw, err := json.Marshal(card)
			if err != nil {
				t.Fatal(err)
			}
			source.ServeJSON(agenttest.CardPath, http.StatusOK, raw)
		}
		serve()
		r1.mkTenant("acme", "alice")
		alice := r1.token("alice", "acme", false)
		expect(t, r1.do("POST", "/v1/tenants/acme/cards/import", alice, map[string]any{"agentId": "geo", "url": source.URL + agenttest.CardPath}), http.StatusCreated)
		expect(t, r1.do("POST", "/v1/tenants/acme/cards", alice, sampleCard("plain")), http.StatusCreated)
		// The clock starts once the cards are written: they are due an interval from now.
		clk.mu.Lock()
		clk.t = time.Now().UTC()
		clk.mu.Unlock()
		both := func() (claimed, updated, unchanged int) {
			t.Helper()
			var wg sync.WaitGroup
			for _, r := range []*env{r1, r2} {
				wg.Go(func() {
					st, err := r.refresher.Round(context.Background())
					if err != nil {
						t.Error(err)
					}
					mu.Lock()
					claimed, updated, unchanged = claimed+st.Claimed, updated+st.Updated, unchanged+st.Unchanged
					mu.Unlock()
				})
			}
			wg.Wait()
			return
		}
		if c, _, _ := both(); c != 0 || source.Calls() != 1 {
			t.Fatalf("just imported: %d claimed, %d fetches", c, source.Calls())
		}
		card["name"] = "Zanzibar Route Planner"
		serve()
		clk.add(time.Hour)
		if c, u, _ := both(); c != 1 || u != 1 || source.Calls() != 2 {
			t.Fatalf("an interval on: %d claimed, %d updated, %d fetches; want the card refreshed once", c, u, source.Calls())
		}
		if ids := r2.search(alice, "acme", "q=zanzibar").ids(); len(ids) != 1 || ids[0] != "geo" {
			t.Errorf("the refreshed card is not found by its new name: %v", ids)
		}
		var got struct {
			Revision int64
			Source   struct{ Refresh struct{ Outcome string } }
		}
		r := r1.getCard("acme", "geo")
		expect(t, r, http.StatusOK)
		r.json(t, &got)
		if got.Revision != 2 || got.Source.Refresh.Outcome != "updated" {
			t.Errorf("after the scheduled refresh: %s", r.body)
		}
		// Within the interval, nothing more; the next interval, once more (unchanged).
		if c, _, _ := both(); c != 0 {
			t.Errorf("a second round in the interval claimed %d", c)
		}
		clk.add(time.Hour)
		if c, _, un := both(); c != 1 || un != 1 || source.Calls() != 3 {
			t.Errorf("the next interval: %d claimed, %d unchanged, %d fetches", c, un, source.Calls())
		}
	})
}
