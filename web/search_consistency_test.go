package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestReadYourWritesUnderLoad: on every database, with the tenant's index loaded, its follower
// applying the change feed as in a running server, and eight other writers registering and
// patching cards of the tenant all along, a client's search right after each of its writes sees
// that write: the card it registered, the text it patched in (and not the text it replaced), and
// no longer the card it deleted.
func TestReadYourWritesUnderLoad(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		e.mkTenant("acme", "alice")
		alice := e.token("alice", "acme", false)
		// The index is loaded before any write: each write must reach it before its answer.
		if a := e.search(alice, "acme", "q=probe"); a.Total != 0 {
			t.Fatalf("before any write: %+v", a)
		}
		// The follower applies every write again from the feed, racing with each write's own
		// apply; polled often, so that its rounds fall between a write and the next search.
		ctx, cancel := context.WithCancel(context.Background())
		following := make(chan struct{})
		go func() {
			defer close(following)
			e.index.Follow(ctx, 5*time.Millisecond, nil, nil)
		}()
		defer func() { cancel(); <-following }()

		const writers = 8
		var writes atomic.Int64
		errs := make([]error, writers)
		stop := make(chan struct{})
		var wg sync.WaitGroup
		ready := make([]chan struct{}, writers)
		for w := range writers {
			ready[w] = make(chan struct{})
			wg.Go(func() {
				// Ready once it has written, or has failed trying.
				isReady := sync.OnceFunc(func() { close(ready[w]) })
				defer isReady()
				for n := 0; ; n++ {
					select {
					case <-stop:
						return
					default:
					}
					card := sampleCard(fmt.Sprintf("load%d-%05d", w, n))
					card["description"] = "background churn"
					body, _ := json.Marshal(card)
					// Each round registers a card and patches one registered before.
					for _, rq := range []struct {
						method, path, body string
						want               int
					}{
						{"POST", "/v1/tenants/acme/cards", string(body), http.StatusCreated},
						{"PATCH", fmt.Sprintf("/v1/tenants/acme/cards/load%d-%05d", w, n/2), fmt.Sprintf(`{"description": "churn %d"}`, n), http.StatusOK},
					} {
						status, err := send(e, rq.method, rq.path, alice, rq.body)
						if err == nil && status != rq.want {
							err = fmt.Errorf("%s %s: status %d, want %d", rq.method, rq.path, status, rq.want)
						}
						if err != nil {
							errs[w] = fmt.Errorf("writer %d: %w", w, err)
							return
						}
						writes.Add(1)
					}
					isReady()
				}
			})
		}
		stopWriters := sync.OnceFunc(func() { close(stop); wg.Wait() })
		defer stopWriters()
		for _, r := range ready {
			<-r
		}

		ids := func(query string) []string { t.Helper(); return e.search(alice, "acme", query).ids() }
		const rounds = 20
		before := writes.Load()
		for r := range rounds {
			// Words of one length, so that none is a prefix of another (the last word of q
			// also matches as a prefix).
			id, created, patched := fmt.Sprintf("probe-%03d", r), fmt.Sprintf("rywc%04d", r), fmt.Sprintf("rywp%04d", r)
			card := sampleCard(id)
			card["description"] = "probe " + created
			expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, card), http.StatusCreated)
			if got := ids("q=" + created); !slices.Equal(got, []string{id}) {
				t.Fatalf("round %d: right after registering %s, q=%s finds %v", r, id, created, got)
			}
			expect(t, e.do("PATCH", "/v1/tenants/acme/cards/"+id, alice, map[string]any{"description": "probe " + patched}), http.StatusOK)
			if got := ids("q=" + patched); !slices.Equal(got, []string{id}) {
				t.Fatalf("round %d: right after patching %s, q=%s finds %v", r, id, patched, got)
			}
			if got := ids("q=" + created); len(got) != 0 {
				t.Fatalf("round %d: right after patching %s, its old text %s still finds %v", r, id, created, got)
			}
			expect(t, e.do("DELETE", "/v1/tenants/acme/cards/"+id, alice, nil), http.StatusNoContent)
			if got := ids("q=" + patched); len(got) != 0 {
				t.Fatalf("round %d: right after deleting %s, q=%s finds %v", r, id, patched, got)
			}
		}
		during := writes.Load() - before
		stopWriters()
		for _, err := range errs {
			if err != nil {
				t.Error(err)
			}
		}
		t.Logf("%d writes of the other writers during the %d rounds", during, rounds)
	})
}
