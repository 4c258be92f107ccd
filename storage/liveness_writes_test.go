package storage_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/agentcards/agentcards/cards/liveness"
	"github.com/agentcards/agentcards/migrations"
	"github.com/agentcards/agentcards/storage"
	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/tenants"
)

// TestLivenessSinceByLog: a window of the last minutes is read through the log of writes and
// answers what the records say: those written at or after its start (heartbeats and probe
// results), as they are now, and not one rewritten since with an older stamp; an older window
// reads the records themselves. A store deletes the log's entries past ten minutes once a minute
// at most.
func TestLivenessSinceByLog(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) {
		t.Parallel()
		db := storagetest.Open(t, dialect)
		ctx := context.Background()
		newTenant(t, db, "a")
		newTenant(t, db, "b")
		cs := storage.NewCardStore(db)
		mustCreate(t, cs, "a", newCard("x", 1))
		s := storage.NewLivenessStore(db)
		now := time.Now().UTC().Truncate(time.Microsecond)
		beat := func(tenant tenants.ID, agent string, at time.Time) liveness.Record {
			return liveness.Record{Tenant: tenant, AgentID: agent, CardID: newCard(agent, 1).ID, SeenAt: at, UpdatedAt: at}
		}
		save := func(beats ...liveness.Record) {
			t.Helper()
			if err := s.SaveBeats(ctx, beats); err != nil {
				t.Fatal(err)
			}
		}
		since := func(from time.Time) []string {
			t.Helper()
			recs, err := s.Since(ctx, from)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range recs {
				got = append(got, string(r.Tenant)+"/"+r.AgentID)
			}
			slices.Sort(got)
			return got
		}
		expect := func(what string, got []string, want ...string) {
			t.Helper()
			if !slices.Equal(got, want) {
				t.Errorf("%s: %v, want %v", what, got, want)
			}
		}
		save(beat("a", "x", now.Add(-2*time.Second)), beat("a", "y", now.Add(-2*time.Second)))
		save(beat("b", "x", now))
		expect("since now-1s", since(now.Add(-time.Second)), "b/x")
		expect("since now-3s", since(now.Add(-3*time.Second)), "a/x", "a/y", "b/x")
		// A write stamped by a clock behind puts a/y before the window: it is read as it is now.
		save(beat("a", "y", now.Add(-5*time.Second)))
		expect("since now-3s, a/y rewritten at now-5s", since(now.Add(-3*time.Second)), "a/x", "b/x")
		recs, err := s.SaveProbes(ctx, []liveness.ProbeResult{{Tenant: "a", AgentID: "x", CardID: newCard("x", 1).ID, At: now, OK: true}}, 2, now.Add(time.Second))
		if err != nil || len(recs) != 1 {
			t.Fatalf("save a probe: %+v, %v", recs, err)
		}
		got, err := s.Since(ctx, now.Add(500*time.Millisecond))
		if err != nil || len(got) != 1 || got[0].AgentID != "x" || !got[0].ProbedAt.Equal(now) || !got[0].SeenAt.Equal(now.Add(-2*time.Second)) {
			t.Errorf("since the probe: %+v, %v", got, err)
		}
		expect("since an hour ago (older than the log keeps)", since(now.Add(-time.Hour)), "a/x", "a/y", "b/x")

		entries := func() int {
			t.Helper()
			var n int
			if err := db.ReadSQL().QueryRow("SELECT COUNT(*) FROM card_liveness_writes").Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}
		n := entries()
		// Another store (replica) prunes after its first write: its own entry, stamped eleven
		// minutes ago, goes at once; the next one stays until a minute has passed.
		s2 := storage.NewLivenessStore(db)
		if err := s2.SaveBeats(ctx, []liveness.Record{beat("a", "z", now.Add(-11*time.Minute))}); err != nil {
			t.Fatal(err)
		}
		if got := entries(); got != n {
			t.Errorf("after an old entry and a prune: %d entries, want %d", got, n)
		}
		if err := s2.SaveBeats(ctx, []liveness.Record{beat("a", "z", now.Add(-11*time.Minute))}); err != nil {
			t.Fatal(err)
		}
		if got := entries(); got != n+1 {
			t.Errorf("after another old entry within the minute: %d entries, want %d", got, n+1)
		}
	})
}

// TestLivenessUpdatesAreHOT: on Postgres, heartbeats, probe results and probe claims update
// card_liveness in place (HOT updates: no indexed column changes, and the page has room), so they
// leave no dead index entries and their dead row versions are pruned without vacuum. The
// statistics are read after a forced flush on the pool's one connection, so they are exact.
func TestLivenessUpdatesAreHOT(t *testing.T) {
	db := storagetest.Open(t, migrations.Postgres)
	db.SetMaxConns(1)
	var version int
	if err := db.SQL().QueryRow("SELECT current_setting('server_version_num')::int").Scan(&version); err != nil {
		t.Fatal(err)
	}
	if version < 150000 {
		t.Skipf("pg_stat_force_next_flush needs Postgres 15 (the server is %d)", version)
	}
	ctx := context.Background()
	newTenant(t, db, "a")
	cs := storage.NewCardStore(db)
	agents := []string{"x", "y", "z"}
	var beats []liveness.Record
	var results []liveness.ProbeResult
	var cands []liveness.Candidate
	for _, a := range agents {
		c := newCard(a, 1)
		mustCreate(t, cs, "a", c)
		beats = append(beats, liveness.Record{Tenant: "a", AgentID: a, CardID: c.ID})
		results = append(results, liveness.ProbeResult{Tenant: "a", AgentID: a, CardID: c.ID, OK: true})
		cands = append(cands, liveness.Candidate{Tenant: "a", AgentID: a, CardID: c.ID, Revision: 1})
	}
	s := storage.NewLivenessStore(db)
	stamp := func(at time.Time) []liveness.Record {
		for i := range beats {
			beats[i].SeenAt, beats[i].UpdatedAt = at, at
		}
		return beats
	}
	now := time.Now().UTC()
	if err := s.SaveBeats(ctx, stamp(now)); err != nil { // inserts
		t.Fatal(err)
	}
	stats := func() (upd, hot int64) {
		t.Helper()
		if _, err := db.SQL().Exec("SELECT pg_stat_force_next_flush()"); err != nil {
			t.Fatal(err)
		}
		err := db.SQL().QueryRow("SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables WHERE relid = 'card_liveness'::regclass").Scan(&upd, &hot)
		if err != nil {
			t.Fatal(err)
		}
		return upd, hot
	}
	upd0, hot0 := stats()
	for i := range 3 {
		if err := s.SaveBeats(ctx, stamp(now.Add(time.Duration(i+1)*time.Second))); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.SaveProbes(ctx, results, 2, now.Add(5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Claim(ctx, "replica-1", "a", cands, now, now.Add(time.Minute)); err != nil || len(got) != len(agents) {
		t.Fatalf("claimed %v, %v", got, err)
	}
	upd, hot := stats()
	if want := int64(5 * len(agents)); upd-upd0 != want || hot-hot0 != want {
		t.Errorf("%d updates, %d of them HOT; want %d, all HOT", upd-upd0, hot-hot0, want)
	}
}
