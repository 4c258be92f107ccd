package search

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/search/index"
	"github.com/agentcards/agentcards/cards/search/searchtest"
)

// TestSearchesTakeTurns: no more searches run inside the indexes at once than the index has
// turns for (GOMAXPROCS); the others wait outside, holding no lock, so that a write can take the
// index's lock meanwhile; a search whose request ends while it waits answers with that.
func TestSearchesTakeTurns(t *testing.T) {
	f := newTurnsFixture(t)
	ix, s, q, want, e := f.ix, f.s, f.q, f.want, f.e

	// Every turn taken: a search waits, and holds no lock while it does.
	turns := cap(ix.searching)
	for range turns {
		ix.searching <- struct{}{}
	}
	done := make(chan error, 1)
	go f.searchT(done)
	select {
	case err := <-done:
		t.Fatalf("a search ran with every turn taken (%v)", err)
	case <-time.After(50 * time.Millisecond):
	}
	if !e.x.TryWrite(func() {}) {
		t.Fatal("a search waiting for its turn holds the index's lock")
	}
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

// TestSearchWaitsForAWriteWithoutATurn: while a write waits for a tenant's index behind a long
// reader (a snapshot being written), the searches of that tenant wait without a turn, and the
// searches of another tenant run meanwhile; behind searches alone, they wait in line.
func TestSearchWaitsForAWriteWithoutATurn(t *testing.T) {
	f := newTurnsFixture(t)
	ix, s, q, e := f.ix, f.s, f.q, f.e
	if _, err := s.Search(caller, "u", q); err != nil {
		t.Fatal(err)
	}

	// A long reader holds t's index, and a write waits for it.
	e.x.RLockLong()
	wrote := writeWhenFree(e.x)

	// As many searches of t as there are turns: each gives its turn back to wait.
	turns := cap(ix.searching)
	done := make(chan error, turns)
	for range turns {
		go f.searchT(done)
	}
	deadline := time.Now().Add(5 * time.Second)
	for ix.yielded.Load() < int64(turns) {
		if time.Now().After(deadline) {
			e.x.RUnlockLong()
			t.Fatalf("%d of %d searches waiting for a write gave their turn back", ix.yielded.Load(), turns)
		}
		time.Sleep(time.Millisecond)
	}

	// Meanwhile another tenant's search runs.
	other := make(chan error, 1)
	go func() {
		_, err := s.Search(caller, "u", q)
		other <- err
	}()
	select {
	case err := <-other:
		if err != nil {
			t.Error(err)
		}
	case <-time.After(5 * time.Second):
		t.Error("another tenant's search waits for the write too")
	}
	select {
	case err := <-done:
		t.Errorf("a search of t ran while a write waited for its index (%v)", err)
	default:
	}
	// And a search of t whose request ends while it waits for the write answers with that.
	ctx, cancel := context.WithTimeout(caller, 20*time.Millisecond)
	defer cancel()
	late := make(chan error, 1)
	go func() {
		_, err := s.Search(ctx, "t", q)
		late <- err
	}()
	select {
	case err := <-late:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("a search past its deadline while waiting for a write: %v, want the deadline's error", err)
		}
	case <-time.After(5 * time.Second):
		t.Error("a search past its deadline still waits for the write")
	}

	// The reader ends, the write goes, and the searches of t answer in full.
	e.x.RUnlockLong()
	<-wrote
	for range turns {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-late:
	default:
	}

	// Behind a short reader (a search), a search of t waits for the write in line, keeping
	// its turn.
	e.x.RLock()
	wrote = writeWhenFree(e.x)
	yielded := ix.yielded.Load()
	go f.searchT(done)
	for deadline := time.Now().Add(5 * time.Second); len(ix.searching) == 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond)
	if n, y := len(ix.searching), ix.yielded.Load(); n != 1 || y != yielded {
		t.Errorf("a search waiting for a write behind searches holds %d turns and gave %d back, want 1 and 0", n, y-yielded)
	}
	e.x.RUnlock()
	<-wrote
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := ix.inside.Load(); n != 0 {
		t.Fatalf("%d searches inside after all returned, want 0", n)
	}
}

// turnsFixture is an index of the hand corpus with tenant t's index built, and the answer of a
// query that finds cards in it.
type turnsFixture struct {
	ix   *Index
	s    *Service
	q    Query
	want Result
	e    *indexEntry
}

func newTurnsFixture(t *testing.T) *turnsFixture {
	t.Helper()
	store := &feedModel{cards: map[string]cards.Card{}}
	for _, c := range searchtest.HandCorpus() {
		store.cards[c.AgentID] = c
	}
	f := &turnsFixture{ix: NewIndex(store, store), q: Query{Q: "review"}}
	f.s = &Service{Store: store, Gate: admitAll{}, Index: f.ix, Authz: hiding(nil)}
	var err error
	if f.want, err = f.s.Search(caller, "t", f.q); err != nil { // builds the index
		t.Fatal(err)
	}
	if len(f.want.Items) == 0 {
		t.Fatal("the query finds nothing: it tests nothing")
	}
	if f.e, err = f.ix.entry(caller, "t"); err != nil {
		t.Fatal(err)
	}
	return f
}

// searchT runs the query on tenant t and sends done its error, or one if the answer differs.
func (f *turnsFixture) searchT(done chan<- error) {
	res, err := f.s.Search(caller, "t", f.q)
	if err == nil && len(res.Items) != len(f.want.Items) {
		err = errors.New("a different answer")
	}
	done <- err
}

// writeWhenFree starts a write of x and returns once it waits for x's lock; the channel it
// returns is closed when the write holds the lock.
func writeWhenFree(x *index.Tenant) chan struct{} {
	wrote := make(chan struct{})
	go x.Write(func() { close(wrote) })
	for x.TryRLock() { // until the write waits
		x.RUnlock()
		time.Sleep(time.Millisecond)
	}
	return wrote
}
