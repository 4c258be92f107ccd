package liveness_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/liveness"
	"github.com/agentcards/agentcards/migrations"
	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/web/webtest"
)

// TestTrackerStates: a card never heard of is unknown; a heartbeat makes it online until
// exactly its TTL has passed, then offline with its last heartbeat still told; another card of
// the same agent is unknown. Online answers the earliest moment a card it found online goes
// offline. The version moves when a card comes online or is removed, not when a TTL runs out.
// Forget drops the tenant, which is read again from the store.
func TestTrackerStates(t *testing.T) {
	_, store := openStore(t, migrations.SQLite)
	if d := liveness.New(store, 0, nil).TTL(); d != 60*time.Second {
		t.Errorf("the default TTL is %v, want 60s", d)
	}
	clk := newClock(t0)
	s := trackerSteps{t: t, ctx: context.Background(), clk: clk, tr: liveness.New(store, time.Minute, clk.now)}
	s.onlineUntilTTL()
	s.onlineUntilEarliestTTL()
	s.removedAndForgotten()
}

// trackerSteps is one tracker of tenant acme on a clock the test sets, with the reads the
// steps of TestTrackerStates make through it; each read fails the test on an error.
type trackerSteps struct {
	t   *testing.T
	ctx context.Context
	clk *clock
	tr  *liveness.Tracker
}

func (s trackerSteps) of(agent, card string) cards.Liveness {
	s.t.Helper()
	l, err := s.tr.Of(s.ctx, "acme", agent, card)
	if err != nil {
		s.t.Fatal(err)
	}
	return l
}

func (s trackerSteps) version() uint64 {
	s.t.Helper()
	v, err := s.tr.Version(s.ctx, "acme")
	if err != nil {
		s.t.Fatal(err)
	}
	return v
}

// online answers which of x/cx, y/cy, z/cz and x/other Online finds online, and until when.
func (s trackerSteps) online() (map[string]bool, time.Time) {
	s.t.Helper()
	got := map[string]bool{}
	_, until, err := s.tr.Online(s.ctx, "acme", func(on func(agentID, cardID string) bool) {
		got["x"], got["y"], got["z"], got["x/other"] = on("x", "cx"), on("y", "cy"), on("z", "cz"), on("x", "other")
	})
	if err != nil {
		s.t.Fatal(err)
	}
	return got, until
}

// onlineUntilTTL: x/cx, never heard of, is unknown; a heartbeat at t0 makes it online (and
// moves the version) until exactly t0+TTL, then offline, last seen at t0, with the version
// unmoved; x's other card stays unknown.
func (s trackerSteps) onlineUntilTTL() {
	t := s.t
	if l := s.of("x", "cx"); l.State != cards.Unknown || l.LastSeenAt != nil || l.Probe != nil {
		t.Fatalf("never heard of: %+v", l)
	}
	v0 := s.version()
	l, err := s.tr.Beat(s.ctx, "acme", "x", "cx")
	if err != nil {
		t.Fatal(err)
	}
	if l.State != cards.Online || l.LastSeenAt == nil || !l.LastSeenAt.Equal(t0) {
		t.Fatalf("the heartbeat answered %+v, want online, seen at %v", l, t0)
	}
	v1 := s.version()
	if v1 == v0 {
		t.Error("the version did not move when x came online")
	}
	s.clk.set(t0.Add(time.Minute - time.Microsecond))
	if l := s.of("x", "cx"); l.State != cards.Online {
		t.Errorf("a microsecond before the TTL: %s, want online", l.State)
	}
	s.clk.set(t0.Add(time.Minute))
	if l := s.of("x", "cx"); l.State != cards.Offline || l.LastSeenAt == nil || !l.LastSeenAt.Equal(t0) {
		t.Errorf("at the TTL: %+v, want offline, last seen at %v", l, t0)
	}
	if v := s.version(); v != v1 {
		t.Errorf("the version moved from %d to %d when the TTL ran out", v1, v)
	}
	if l := s.of("x", "other"); l.State != cards.Unknown {
		t.Errorf("another card of agent x: %s, want unknown", l.State)
	}
}

// onlineUntilEarliestTTL: x beats at t0+1m, y at t0+1m10s; at t0+1m20s both are online until
// t0+2m (x's TTL); past x's TTL only y is online, until its own TTL.
func (s trackerSteps) onlineUntilEarliestTTL() {
	t := s.t
	if _, err := s.tr.Beat(s.ctx, "acme", "x", "cx"); err != nil {
		t.Fatal(err)
	}
	s.clk.set(t0.Add(70 * time.Second))
	if _, err := s.tr.Beat(s.ctx, "acme", "y", "cy"); err != nil {
		t.Fatal(err)
	}
	s.clk.set(t0.Add(80 * time.Second))
	if got, until := s.online(); fmt.Sprint(got) != "map[x:true x/other:false y:true z:false]" || !until.Equal(t0.Add(2*time.Minute)) {
		t.Errorf("at t0+1m20s: %v until %v, want x and y until %v", got, until, t0.Add(2*time.Minute))
	}
	s.clk.set(t0.Add(125 * time.Second))
	if got, until := s.online(); fmt.Sprint(got) != "map[x:false x/other:false y:true z:false]" || !until.Equal(t0.Add(130*time.Second)) {
		t.Errorf("at t0+2m5s: %v until %v, want y alone until %v", got, until, t0.Add(130*time.Second))
	}
}

// removedAndForgotten: Removed forgets the agent here (the store keeps its record: deleting the
// card deletes it there) and moves the version, unless the agent was never heard of; Forget
// drops the tenant, and its next use reads the store again.
func (s trackerSteps) removedAndForgotten() {
	t := s.t
	before := s.version()
	s.tr.Removed("acme", "y")
	if l := s.of("y", "cy"); l.State != cards.Unknown {
		t.Errorf("y after Removed: %s, want unknown", l.State)
	}
	if v := s.version(); v == before {
		t.Error("the version did not move when y was removed")
	}
	before = s.version()
	s.tr.Removed("acme", "nobody")
	if v := s.version(); v != before {
		t.Error("removing an agent never heard of moved the version")
	}
	s.tr.Forget("acme")
	if l := s.of("y", "cy"); l.State != cards.Online || !l.LastSeenAt.Equal(t0.Add(70*time.Second)) {
		t.Errorf("y read again from the store after Forget: %+v, want online, seen at t0+1m10s", l)
	}
}

// TestBeatsShareWrites: heartbeats that come while a write is under way wait and go out
// together in the next one, stamped with the moment that write goes out (other replicas read
// rows by it), each keeping the moment it came as its heartbeat; a heartbeat once queued is
// written even if its caller gives up. On every database.
func TestBeatsShareWrites(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) {
		_, real := openStore(t, dialect)
		store := &watchedStore{Store: real, held: make(chan []liveness.Record, 32), release: make(chan struct{})}
		clk := newClock(t0)
		tr := liveness.New(store, time.Minute, clk.now)
		type answer struct {
			agent string
			l     cards.Liveness
			err   error
		}
		answers := make(chan answer, 32)
		beat := func(ctx context.Context, agent string) {
			l, err := tr.Beat(ctx, "acme", agent, "card-"+agent)
			answers <- answer{agent, l, err}
		}
		// a00's write is held at the store; its caller gives up meanwhile.
		ctx, cancel := context.WithCancel(context.Background())
		go beat(ctx, "a00")
		if first := <-store.held; len(first) != 1 || first[0].AgentID != "a00" || !first[0].SeenAt.Equal(t0) || !first[0].UpdatedAt.Equal(t0) {
			t.Fatalf("the first write: %+v", first)
		}
		cancel()
		// 19 more come at t0+1s while it is held: each reads the clock once as it queues.
		clk.set(t0.Add(time.Second))
		for i := 1; i < 20; i++ {
			go beat(context.Background(), fmt.Sprintf("a%02d", i))
		}
		webtest.Eventually(t, 15*time.Second, "19 heartbeats queued", func() bool { return clk.readsSinceSet() >= 19 })
		clk.set(t0.Add(2 * time.Second))
		go func() {
			for range store.held {
				store.release <- struct{}{}
			}
		}()
		store.release <- struct{}{}
		for range 20 {
			a := <-answers
			seen := t0.Add(time.Second)
			if a.agent == "a00" {
				seen = t0
			}
			if a.err != nil || a.l.State != cards.Online || a.l.LastSeenAt == nil || !a.l.LastSeenAt.Equal(seen) {
				t.Errorf("%s: %+v, %v; want online, seen at %v", a.agent, a.l, a.err, seen)
			}
		}
		var writes [][]liveness.Record
		store.with(func(s *watchedStore) { writes = s.writes })
		// One write for the 19, or two if the machine paused one of them for longer than the
		// writer lingers (50 ms) between its clock reading and its queueing: never one each.
		if len(writes) < 2 || len(writes) > 3 {
			t.Errorf("%d writes, want a00's and one (at most two) for the 19 others", len(writes))
		}
		close(store.held)
		recs, err := real.Load(context.Background(), "acme")
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != 20 {
			t.Fatalf("%d records stored, want 20", len(recs))
		}
		for _, r := range recs {
			seen, written := t0.Add(time.Second), t0.Add(2*time.Second)
			if r.AgentID == "a00" {
				seen, written = t0, t0
			}
			if r.CardID != "card-"+r.AgentID || !r.SeenAt.Equal(seen) || !r.UpdatedAt.Equal(written) {
				t.Errorf("stored %s: card %s, seen %v, written %v; want seen %v, written %v", r.AgentID, r.CardID, r.SeenAt, r.UpdatedAt, seen, written)
			}
		}
	})
}

// TestBeatWriteFails: when the write of its batch fails, a heartbeat answers the store's error
// and changes nothing in memory; the next heartbeat is written again.
func TestBeatWriteFails(t *testing.T) {
	_, real := openStore(t, migrations.SQLite)
	broken := errors.New("the database refused the write")
	store := &watchedStore{Store: real, failSave: broken}
	tr := liveness.New(store, time.Minute, newClock(t0).now)
	ctx := context.Background()
	if _, err := tr.Beat(ctx, "acme", "x", "cx"); !errors.Is(err, broken) {
		t.Fatalf("a failed write answered %v, want the store's error", err)
	}
	if l, err := tr.Of(ctx, "acme", "x", "cx"); err != nil || l.State != cards.Unknown {
		t.Errorf("after the failed write: %+v, %v; want unknown", l, err)
	}
	store.with(func(s *watchedStore) { s.failSave = nil })
	if l, err := tr.Beat(ctx, "acme", "x", "cx"); err != nil || l.State != cards.Online {
		t.Fatalf("the next heartbeat: %+v, %v", l, err)
	}
	if recs, err := real.Load(ctx, "acme"); err != nil || len(recs) != 1 || recs[0].AgentID != "x" {
		t.Errorf("stored: %+v, %v; want x's record", recs, err)
	}
}

// TestTenantLoadFails: a tenant whose records could not be read answers the error, and is read
// again on its next use rather than remembered as failed.
func TestTenantLoadFails(t *testing.T) {
	_, real := openStore(t, migrations.SQLite)
	ctx := context.Background()
	if err := real.SaveBeats(ctx, []liveness.Record{{Tenant: "acme", AgentID: "x", CardID: "cx", SeenAt: t0, UpdatedAt: t0}}); err != nil {
		t.Fatal(err)
	}
	down := errors.New("the database does not answer")
	store := &watchedStore{Store: real, failLoad: down}
	tr := liveness.New(store, time.Minute, newClock(t0.Add(time.Second)).now)
	if _, err := tr.Of(ctx, "acme", "x", "cx"); !errors.Is(err, down) {
		t.Fatalf("Of while the load fails: %v", err)
	}
	if _, err := tr.Version(ctx, "acme"); !errors.Is(err, down) {
		t.Fatalf("Version while the load fails: %v", err)
	}
	store.with(func(s *watchedStore) { s.failLoad = nil })
	l, err := tr.Of(ctx, "acme", "x", "cx")
	if err != nil || l.State != cards.Online || !l.LastSeenAt.Equal(t0) {
		t.Fatalf("once the database answers: %+v, %v; want online, seen at %v", l, err, t0)
	}
	var loads int
	store.with(func(s *watchedStore) { loads = s.loads })
	if loads != 3 {
		t.Errorf("%d loads, want 3 (each failed use, then the one that succeeded)", loads)
	}
}
