package web_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/agentcards/agentcards/cards/search"
	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/tenants"
	"github.com/agentcards/agentcards/web/webtest"
)

// TestTwoReplicas runs two API servers, each with its own search index, on one database: a card
// written, changed or removed through one is found (or no longer found) through the other within
// the follower's interval. In the "round" mode nothing follows by itself: one round of B's
// follower (what it does every search.pollInterval) runs after each write and must have applied
// it, which is docs/search.md's bound ("within that interval") checked without a clock. In "poll" B's
// follower polls; on Postgres, "listen" also listens for notifications, with polls an hour apart.
func TestTwoReplicas(t *testing.T) {
	for _, d := range storagetest.Dialects() {
		modes := []string{"round", "poll"}
		if d == "postgres" {
			modes = append(modes, "listen")
		}
		for _, mode := range modes {
			t.Run(d+"/"+mode, func(t *testing.T) {
				db := storagetest.Open(t, d)
				a, b := newEnv(t, db, 1<<20), newEnv(t, db, 1<<20)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				switch mode {
				case "poll":
					go b.index.Follow(ctx, 100*time.Millisecond, nil, nil)
				case "listen":
					notify := make(chan search.Notice, 16)
					resync := func() { b.index.SyncLoaded(ctx, nil) }
					if err := db.Listen(ctx, notify, resync, func(err error) { t.Log(err) }); err != nil {
						t.Fatal(err)
					}
					// Only notifications can make it in time.
					go b.index.Follow(ctx, time.Hour, notify, nil)
				}
				a.mkTenant("acme", "alice")
				alice := a.token("alice", "acme", false)
				// B builds its index before the writes, so it must follow them.
				if got := b.search(alice, "acme", "q=zanzibar"); got.Total != 0 {
					t.Fatalf("before: %+v", got)
				}
				waitFor := func(what string, ok func(searchAnswer) bool) {
					t.Helper()
					if mode == "round" {
						b.index.SyncLoaded(ctx, func(_ tenants.ID, err error) { t.Errorf("sync: %v", err) })
						if got := b.search(alice, "acme", "q=zanzibar"); !ok(got) {
							t.Fatalf("%s not seen on replica B after one round of its follower: %+v", what, got)
						}
						return
					}
					// Generous: the promise is "within the interval", and a loaded machine
					// stretches everything; with listen the interval is an hour, so only a
					// notification can make it at all.
					webtest.Eventually(t, 10*time.Second, what+" seen on replica B", func() bool {
						return ok(b.search(alice, "acme", "q=zanzibar"))
					})
				}
				card := sampleCard("agt1")
				card["description"] = "zanzibar"
				expect(t, a.do("POST", "/v1/tenants/acme/cards", alice, card), http.StatusCreated)
				waitFor("create", func(s searchAnswer) bool { return s.Total == 1 })
				expect(t, a.do("PATCH", "/v1/tenants/acme/cards/agt1", alice, map[string]any{"description": "elsewhere"}), http.StatusOK)
				waitFor("update", func(s searchAnswer) bool { return s.Total == 0 })
				expect(t, a.do("PATCH", "/v1/tenants/acme/cards/agt1", alice, map[string]any{"description": "zanzibar again"}), http.StatusOK)
				waitFor("update back", func(s searchAnswer) bool { return s.Total == 1 })
				// The card B returns is the new version, not a cached rendering of the old one.
				for _, r := range []*env{a, b} {
					if got := r.search(alice, "acme", "q=zanzibar").Items; got[0].Card.Description != "zanzibar again" || got[0].Card.Revision != 3 {
						t.Fatalf("stale card: %+v", got[0].Card)
					}
				}
				expect(t, a.do("DELETE", "/v1/tenants/acme/cards/agt1", alice, nil), http.StatusNoContent)
				waitFor("delete", func(s searchAnswer) bool { return s.Total == 0 })
			})
		}
	}
}

// TestIndexSurvivesTenantRecreation: a tenant deleted and created again gets an index that stays
// loaded (the old tenant's purge entry in the feed is older than the new index's snapshot).
func TestIndexSurvivesTenantRecreation(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		e.mkTenant("acme", "alice")
		alice := e.token("alice", "acme", false)
		expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, sampleCard("agt1")), http.StatusCreated)
		e.search(alice, "acme", "")
		expect(t, e.do("DELETE", "/v1/tenants/acme", e.admin(), nil), http.StatusNoContent)
		e.mkTenant("acme", "alice")
		expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, sampleCard("agt2")), http.StatusCreated)
		for range 2 {
			if a := e.search(alice, "acme", ""); fmt.Sprint(a.ids()) != "[agt2]" {
				t.Fatalf("after recreation: %v", a.ids())
			}
		}
		if loaded := fmt.Sprint(e.index.Loaded()); loaded != "[acme]" {
			t.Fatalf("index of the recreated tenant not kept: loaded %s", loaded)
		}
		// A write is still applied to it at once.
		expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, sampleCard("agt3")), http.StatusCreated)
		if a := e.search(alice, "acme", ""); fmt.Sprint(a.ids()) != "[agt2 agt3]" {
			t.Fatalf("after a write: %v", a.ids())
		}
	})
}
