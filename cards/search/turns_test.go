package search

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/agentcards/agentcards/cards"
)

// TestSearchesTakeTurns: no more searches run inside the indexes at once than the index has
// turns for (GOMAXPROCS); the others wait outside, holding no lock, so that a write can take the
// index's lock meanwhile; a search whose request ends while it waits answers with that.
func TestSearchesTakeTurns(t *testing.T) {
	store := &feedModel{cards: map[string]cards.Card{}}
	for _, c := range handCorpus() {
		store.cards[c.AgentID] = c
	}
	ix := NewIndex(store, store)
	s := &Service{Store: store, Gate: admitAll{}, Index: ix, Authz: hiding(nil)}
	q := Query{Q: "review"}
	want, err := s.Search(caller, "t", q) // builds the index
	if err != nil {
		t.Fatal(err)
	}
	if len(want.Items) == 0 {
		t.Fatal("the query finds nothing: it tests nothing")
	}
	e, err := ix.entry(caller, "t")
	if err != nil {
		t.Fatal(err)
	}

	// Every turn taken: a search waits, and holds no lock while it does.
	turns := cap(ix.searching)
	for range turns {
		ix.searching <- struct{}{}
	}
	done := make(chan error, 1)
	go func() {
		res, err := s.Search(caller, "t", q)
		if err == nil && len(res.Items) != len(want.Items) {
			err = errors.New("a different answer")
		}
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("a search ran with every turn taken (%v)", err)
	case <-time.After(50 * time.Millisecond):
	}
	if !e.x.mu.TryLock() {
		t.Fatal("a search waiting for its turn holds the index's lock")
	}
	e.x.mu.Unlock()
	<-ix.searching
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	// A request that ends while its search waits.
	ctx, cancel := context.WithTimeout(caller, 20*time.Millisecond)
	defer cancel()
	ix.searching <- struct{}{}
	if _, err := s.Search(ctx, "t", q); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a search past its deadline while waiting: %v, want the deadline's error", err)
	}
	for range turns {
		<-ix.searching
	}

	// Many searchers at once: at most turns of them inside, and each answers in full.
	ix.mostInside.Store(0)
	var wg sync.WaitGroup
	for range 8 * turns {
		wg.Go(func() {
			for range 200 {
				res, err := s.Search(caller, "t", q)
				if err != nil || len(res.Items) != len(want.Items) {
					t.Errorf("%d items (%v), want %d", len(res.Items), err, len(want.Items))
					return
				}
			}
		})
	}
	wg.Wait()
	if most := ix.mostInside.Load(); most < 1 || int(most) > turns {
		t.Fatalf("%d searches inside at once at most, want 1 to %d", most, turns)
	}
	if n := ix.inside.Load(); n != 0 {
		t.Fatalf("%d searches inside after all returned, want 0", n)
	}
}
