package storage_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/liveness"
	"github.com/agentcards/agentcards/storage"
	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/tenants"
)

// TestLivenessStore: heartbeats are stored and read back by tenant and by time, a beat of
// another card of the same agent replaces the row, and deleting the card or its tenant removes it.
func TestLivenessStore(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) {
		db := storagetest.Open(t, dialect)
		ctx := context.Background()
		newTenant(t, db, "a")
		newTenant(t, db, "b")
		cs := storage.NewCardStore(db)
		mustCreate(t, cs, "a", newCard("x", 1))
		s := storage.NewLivenessStore(db)
		t0 := fixed.UTC()
		beat := func(tenant tenants.ID, agent, card string, at time.Time) liveness.Record {
			return liveness.Record{Tenant: tenant, AgentID: agent, CardID: card, SeenAt: at, UpdatedAt: at}
		}
		if err := s.SaveBeats(ctx, []liveness.Record{beat("a", "x", "c1", t0), beat("a", "y", "c2", t0), beat("b", "x", "c3", t0.Add(time.Second))}); err != nil {
			t.Fatal(err)
		}
		// A later beat of the same agent's card moves seen_at; one of another card replaces it.
		if err := s.SaveBeats(ctx, []liveness.Record{beat("a", "x", "c1", t0.Add(2*time.Second)), beat("a", "y", "c9", t0.Add(3*time.Second))}); err != nil {
			t.Fatal(err)
		}
		got, err := s.Load(ctx, "a")
		if err != nil {
			t.Fatal(err)
		}
		byAgent := map[string]liveness.Record{}
		for _, r := range got {
			byAgent[r.AgentID] = r
		}
		if len(got) != 2 || !byAgent["x"].SeenAt.Equal(t0.Add(2*time.Second)) || byAgent["x"].CardID != "c1" ||
			byAgent["y"].CardID != "c9" || !byAgent["y"].SeenAt.Equal(t0.Add(3*time.Second)) || byAgent["y"].Tenant != "a" {
			t.Fatalf("tenant a: %+v", got)
		}
		if !byAgent["x"].ProbedAt.IsZero() || !byAgent["x"].DownAt.IsZero() || byAgent["x"].SeenAt.Location() != time.UTC {
			t.Errorf("x: %+v", byAgent["x"])
		}
		since, err := s.Since(ctx, t0.Add(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if len(since) != 3 {
			t.Errorf("since t0+1s: %d records, want 3 (b/x, a/x, a/y): %+v", len(since), since)
		}
		if err := cs.Delete(ctx, "a", "x", 0); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.Load(ctx, "a"); len(got) != 1 || got[0].AgentID != "y" {
			t.Errorf("after deleting card x: %+v", got)
		}
		// A record of a card that is not there (its beat raced the delete) is pruned, and so are y's and
		// b's x (no such cards either); a record of an existing card stays.
		mustCreate(t, cs, "a", newCard("z", 1))
		if err := s.SaveBeats(ctx, []liveness.Record{beat("a", "x", "gone", t0), beat("a", "z", newCard("z", 1).ID, t0)}); err != nil {
			t.Fatal(err)
		}
		if n, err := s.Prune(ctx); err != nil || n != 3 {
			t.Errorf("pruned %d (%v), want 3 (a/x, a/y, b/x: no such cards)", n, err)
		}
		if got, _ := s.Load(ctx, "a"); len(got) != 1 || got[0].AgentID != "z" {
			t.Errorf("after pruning: %+v", got)
		}
		if err := storage.NewTenantStore(db).Delete(ctx, "b"); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.Load(ctx, "b"); len(got) != 0 {
			t.Errorf("after deleting tenant b: %+v", got)
		}
	})
}

// TestTrackerReplicas: two trackers over one database, as two replicas. A heartbeat makes the
// card online on the replica that took it at once and on the other after its poll; the TTL then
// makes it offline on both without any write.
func TestTrackerReplicas(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) {
		db := storagetest.Open(t, dialect)
		ctx := context.Background()
		newTenant(t, db, "a")
		now := time.Now().UTC()
		clock := func() time.Time { return now }
		a := liveness.New(storage.NewLivenessStore(db), time.Minute, clock)
		b := liveness.New(storage.NewLivenessStore(db), time.Minute, clock)
		state := func(tr *liveness.Tracker, card string) cards.LivenessState {
			l, err := tr.Of(ctx, "a", "x", card)
			if err != nil {
				t.Fatal(err)
			}
			return l.State
		}
		if state(a, "c1") != cards.Unknown || state(b, "c1") != cards.Unknown {
			t.Fatal("a card nobody heard of is not unknown")
		}
		v0, _ := b.Version(ctx, "a")
		l, err := a.Beat(ctx, "a", "x", "c1")
		if err != nil {
			t.Fatal(err)
		}
		if l.State != cards.Online || l.LastSeenAt == nil || !l.LastSeenAt.Equal(now.Truncate(time.Microsecond)) {
			t.Fatalf("after a beat: %+v", l)
		}
		if state(b, "c1") != cards.Unknown {
			t.Fatal("replica b knew before polling")
		}
		if err := b.Poll(ctx, now.Add(-time.Second)); err != nil {
			t.Fatal(err)
		}
		if state(b, "c1") != cards.Online || state(b, "c2") != cards.Unknown {
			t.Errorf("replica b after its poll: %s (card c2: %s)", state(b, "c1"), state(b, "c2"))
		}
		v1, _ := b.Version(ctx, "a")
		if v1 == v0 {
			t.Error("the version did not move when the card came online")
		}
		// A tenant forgotten and loaded again never repeats a version an answer was derived at.
		b.Forget("a")
		if v, _ := b.Version(ctx, "a"); v == v1 || v == v0 {
			t.Errorf("version after reloading %d, before %d and %d", v, v0, v1)
		}
		var until time.Time
		_, until, _ = b.Online(ctx, "a", func(online func(string, string) bool) {
			if !online("x", "c1") || online("x", "c2") || online("y", "c1") {
				t.Error("Online disagrees with Of")
			}
		})
		if want := now.Truncate(time.Microsecond).Add(time.Minute); !until.Equal(want) {
			t.Errorf("online until %v, want %v", until, want)
		}
		now = now.Add(time.Minute)
		if state(a, "c1") != cards.Offline || state(b, "c1") != cards.Offline {
			t.Errorf("after the TTL: %s, %s", state(a, "c1"), state(b, "c1"))
		}
		// A poll that reads an older state back does not undo a newer one.
		if _, err := a.Beat(ctx, "a", "x", "c1"); err != nil {
			t.Fatal(err)
		}
		if err := a.Poll(ctx, now.Add(-time.Hour)); err != nil {
			t.Fatal(err)
		}
		if state(a, "c1") != cards.Online {
			t.Error("a poll undid a beat")
		}
		// The agent's card is replaced (deleted and registered again) and the new one beats:
		// on the other replica, online before and after, but of another card, so answers derived
		// before (an index's online set) must be derived again.
		if err := b.Poll(ctx, now.Add(-time.Hour)); err != nil || state(b, "c1") != cards.Online {
			t.Fatalf("replica b: %s (%v)", state(b, "c1"), err)
		}
		vb, _ := b.Version(ctx, "a")
		now = now.Add(time.Second)
		if _, err := a.Beat(ctx, "a", "x", "c2"); err != nil {
			t.Fatal(err)
		}
		if err := b.Poll(ctx, now.Add(-time.Hour)); err != nil {
			t.Fatal(err)
		}
		if v, _ := b.Version(ctx, "a"); v == vb || state(b, "c2") != cards.Online || state(b, "c1") != cards.Unknown {
			t.Errorf("after the new card beat: version %d (was %d), c2 %s, c1 %s", v, vb, state(b, "c2"), state(b, "c1"))
		}
	})
}

// TestSaveProbes: a probe result of a card that exists is recorded, failures counted in a row and
// the card marked down at the failures-th, once per run; a success clears the count; a result
// of a card that no longer exists (deleted, or replaced by another card of its agent) writes
// nothing. On every database.
func TestSaveProbes(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) {
		t.Parallel()
		db := storagetest.Open(t, dialect)
		ctx := context.Background()
		newTenant(t, db, "a")
		cs := storage.NewCardStore(db)
		mustCreate(t, cs, "a", newCard("x", 1))
		card := newCard("x", 1).ID
		s := storage.NewLivenessStore(db)
		t0 := fixed.UTC()
		save := func(i int, ok bool, cardID string) liveness.Record {
			t.Helper()
			r := liveness.ProbeResult{Tenant: "a", AgentID: "x", CardID: cardID, At: t0.Add(time.Duration(i) * time.Minute), OK: ok, LatencyMs: 7}
			if !ok {
				r.Error = "answered 503 — ünïcode"
			}
			recs, err := s.SaveProbes(ctx, []liveness.ProbeResult{r}, 2, t0.Add(time.Duration(i)*time.Minute+time.Second))
			if err != nil {
				t.Fatal(err)
			}
			if len(recs) != 1 {
				t.Fatalf("save %d: %+v", i, recs)
			}
			return recs[0]
		}
		if r := save(0, true, card); !r.ProbedAt.Equal(t0) || r.ProbeFailures != 0 || !r.DownAt.IsZero() || !r.UpdatedAt.Equal(t0.Add(time.Second)) {
			t.Errorf("a success: %+v", r)
		}
		if r := save(1, false, card); r.ProbeFailures != 1 || !r.DownAt.IsZero() || !r.ProbedAt.Equal(t0) || r.ProbeError != "answered 503 — ünïcode" {
			t.Errorf("one failure: %+v", r)
		}
		if r := save(2, false, card); r.ProbeFailures != 2 || !r.DownAt.Equal(t0.Add(2*time.Minute)) {
			t.Errorf("two failures: %+v", r)
		}
		if r := save(3, false, card); r.ProbeFailures != 3 || !r.DownAt.Equal(t0.Add(2*time.Minute)) {
			t.Errorf("a third failure moved down_at: %+v", r)
		}
		if r := save(4, true, card); r.ProbeFailures != 0 || !r.ProbedAt.Equal(t0.Add(4*time.Minute)) {
			t.Errorf("a success after failures: %+v", r)
		}
		// A result of another card of the agent (one deleted meanwhile) writes nothing.
		recs, err := s.SaveProbes(ctx, []liveness.ProbeResult{{Tenant: "a", AgentID: "x", CardID: "old", At: t0.Add(time.Hour)}}, 2, t0.Add(time.Hour))
		if err != nil || len(recs) != 1 || recs[0].CardID != card || !recs[0].CheckedAt.Equal(t0.Add(4*time.Minute)) {
			t.Errorf("a stale result: %+v, %v", recs, err)
		}
		if err := cs.Delete(ctx, "a", "x", 0); err != nil {
			t.Fatal(err)
		}
		if recs, err := s.SaveProbes(ctx, []liveness.ProbeResult{{Tenant: "a", AgentID: "x", CardID: card, At: t0.Add(time.Hour)}}, 2, t0.Add(time.Hour)); err != nil || len(recs) != 0 {
			t.Errorf("a result of a deleted card: %+v, %v", recs, err)
		}
	})
}
