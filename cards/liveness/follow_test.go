package liveness_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/liveness"
	"github.com/agentcards/agentcards/migrations"
	"github.com/agentcards/agentcards/storage"
	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/web/webtest"
)

// TestFollowReadsOtherReplicas: a replica that follows the database learns, within a few poll
// intervals, of a heartbeat another replica took, with no call of its own. On every database,
// each replica with its own connection pool.
func TestFollowReadsOtherReplicas(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) {
		dbs := storagetest.OpenShared(t, dialect, 2)
		storagetest.CreateTenant(t, dbs[0], "acme", t0)
		a := liveness.New(storage.NewLivenessStore(dbs[0]), time.Hour, nil)
		b := liveness.New(storage.NewLivenessStore(dbs[1]), time.Hour, nil)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		state := func(agent string) cards.LivenessState {
			l, err := b.Of(ctx, "acme", agent, "card-"+agent)
			if err != nil {
				t.Fatal(err)
			}
			return l.State
		}
		if s := state("x"); s != cards.Unknown { // loads the tenant on b: polls apply to loaded tenants
			t.Fatalf("before any heartbeat: %s", s)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			b.Follow(ctx, 20*time.Millisecond, func(err error) { t.Errorf("a round failed: %v", err) })
		}()
		if _, err := a.Beat(ctx, "acme", "x", "card-x"); err != nil {
			t.Fatal(err)
		}
		webtest.Eventually(t, 15*time.Second, "replica b to see x online", func() bool { return state("x") == cards.Online })
		cancel()
		<-done // Follow returns once its context ends
	})
}

// TestFollowSaysFailureOnce: Follow tells the first failure of each run of failed rounds, not
// every one; the first round that succeeds reads from where the last one that succeeded did, so
// nothing written while the rounds failed is missed, however long that lasted.
func TestFollowSaysFailureOnce(t *testing.T) {
	_, real := openStore(t, migrations.SQLite)
	down := errors.New("the database does not answer")
	store := &watchedStore{Store: real}
	clkA, clkB := newClock(t0.Add(time.Second)), newClock(t0)
	a := liveness.New(real, time.Hour, clkA.now)
	b := liveness.New(store, time.Hour, clkB.now)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	online := func(agent string) bool {
		l, err := b.Of(ctx, "acme", agent, "card-"+agent)
		if err != nil {
			t.Fatal(err)
		}
		return l.State == cards.Online
	}
	online("x") // loads the tenant on b
	var mu sync.Mutex
	var told []error
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.Follow(ctx, 10*time.Millisecond, func(err error) {
			mu.Lock()
			told = append(told, err)
			mu.Unlock()
		})
	}()
	toldSoFar := func() []error {
		mu.Lock()
		defer mu.Unlock()
		return append([]error(nil), told...)
	}
	counts := func() (ok, failed int) {
		store.with(func(s *watchedStore) { ok, failed = s.sinceOK, s.sinceFailed })
		return ok, failed
	}
	// failFor fails b's rounds until rounds more have failed, doing meanwhile what is given.
	failFor := func(rounds int, meanwhile func()) {
		t.Helper()
		store.with(func(s *watchedStore) { s.failSince = down })
		meanwhile()
		_, before := counts() // rounds failed after what was done meanwhile
		webtest.Eventually(t, 15*time.Second, "failed rounds", func() bool { _, f := counts(); return f >= before+rounds })
		store.with(func(s *watchedStore) { s.failSince = nil })
	}

	// A heartbeat taken on a at t0+1s while b's rounds fail, and b's clock moving on to t0+10s
	// meanwhile (past the margin each round reads back): b's first round that succeeds reads it.
	failFor(4, func() {
		if _, err := a.Beat(ctx, "acme", "x", "card-x"); err != nil {
			t.Fatal(err)
		}
		clkB.set(t0.Add(10 * time.Second))
	})
	webtest.Eventually(t, 15*time.Second, "b to see x once its rounds succeed", func() bool { return online("x") })
	if got := toldSoFar(); len(got) != 1 || !errors.Is(got[0], down) {
		t.Fatalf("after a run of 4 failed rounds Follow told %v, want the failure once", got)
	}
	// Another run of failures, after rounds that succeeded, is told once more.
	okBefore, _ := counts()
	webtest.Eventually(t, 15*time.Second, "a round that succeeds", func() bool { ok, _ := counts(); return ok > okBefore })
	failFor(3, func() {})
	if got := toldSoFar(); len(got) != 2 {
		t.Fatalf("after a second run of failures Follow told %d failures, want 2", len(got))
	}
	cancel()
	<-done
}

// TestRoundReadsBehindClocks: each round reads from a margin before the last round that
// succeeded began, so a record stamped by a replica whose clock is two seconds behind, and
// written after that round, is still read by the next.
func TestRoundReadsBehindClocks(t *testing.T) {
	_, store := openStore(t, migrations.SQLite)
	ctx := context.Background()
	b := liveness.New(store, time.Hour, newClock(t0).now)
	a := liveness.New(store, time.Hour, newClock(t0.Add(-2*time.Second)).now)
	if l, err := b.Of(ctx, "acme", "x", "card-x"); err != nil || l.State != cards.Unknown {
		t.Fatalf("before: %+v, %v", l, err)
	}
	if err := b.Round(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Beat(ctx, "acme", "x", "card-x"); err != nil {
		t.Fatal(err)
	}
	if err := b.Round(ctx); err != nil {
		t.Fatal(err)
	}
	l, err := b.Of(ctx, "acme", "x", "card-x")
	if err != nil || l.State != cards.Online || !l.LastSeenAt.Equal(t0.Add(-2*time.Second)) {
		t.Errorf("after b's next round: %+v, %v; want online, seen at t0-2s", l, err)
	}
}
