package liveness_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/agenttest"
	"github.com/agentcards/agentcards/cards/liveness"
	"github.com/agentcards/agentcards/migrations"
	"github.com/agentcards/agentcards/storage"
	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/tenants"
)

// asks is what each request asked for, as "METHOD path Accept".
func asks(reqs []agenttest.Request) []string {
	out := make([]string, len(reqs))
	for i, r := range reqs {
		out[i] = r.Method + " " + r.Path + " " + r.Header.Get("Accept")
	}
	return out
}

// putCard stores a card of agentID in tenant, as edit makes it.
func putCard(t *testing.T, cs *storage.CardStore, tenant tenants.ID, agentID string, edit func(*cards.Card)) cards.Card {
	t.Helper()
	c := cards.Card{AgentID: agentID, Name: "Agent " + agentID, Protocols: []string{"http"}, Capabilities: []cards.Capability{},
		Resources: []cards.Resource{}, Tags: []string{}, Visibility: cards.VisibilityTenant,
		ID: uuid.NewSHA1(uuid.NameSpaceURL, []byte(string(tenant)+"/"+agentID)).String(), Revision: 1, CreatedAt: t0, UpdatedAt: t0}
	edit(&c)
	rev, err := cs.Create(context.Background(), tenant, c)
	if err != nil {
		t.Fatal(err)
	}
	c.Revision = rev
	return c
}

func round(t *testing.T, p *liveness.Prober) liveness.RoundStats {
	t.Helper()
	st, err := p.Round(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestProbeOutcomes: the tracker's account of a card as probes come in, with failures counted
// two to a run: a heartbeat before the failures does not keep the card online once the run is
// complete, a success makes it online again with the count cleared; each probe's time, outcome
// and error are told with the card. With failures counted one to a run, one failure is enough.
// On every database.
func TestProbeOutcomes(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) {
		db, store := openStore(t, dialect)
		ag := agenttest.New(t, agenttest.Answer(http.StatusOK, ""))
		card := putCard(t, storage.NewCardStore(db), "acme", "rev", func(c *cards.Card) { c.Endpoint = ag.URL + "/rpc" })
		clk := newClock(t0)
		tr := liveness.New(store, 10*time.Minute, clk.now)
		p := liveness.NewProber(liveness.ProbeConfig{Interval: time.Minute, Failures: 2, Spread: -1}, store, storage.NewCardStore(db), http.DefaultClient, tr)
		ctx := context.Background()
		// step moves the clock on a minute, runs a round, and checks its stats and the card's liveness.
		step := func(what string, status int, wantFailed int, want cards.LivenessState, wantProbe cards.Probe, p *liveness.Prober) {
			t.Helper()
			clk.add(time.Minute)
			ag.SetReply(agenttest.Answer(status, ""))
			if st := round(t, p); st != (liveness.RoundStats{Claimed: 1, Probed: 1, Failed: wantFailed}) {
				t.Errorf("%s: round %+v", what, st)
			}
			l, err := tr.Of(ctx, "acme", "rev", card.ID)
			if err != nil {
				t.Fatal(err)
			}
			if l.State != want || l.Probe == nil || l.LastSeenAt == nil || !l.LastSeenAt.Equal(t0) {
				t.Fatalf("%s: %+v, want %s, seen at t0", what, l, want)
			}
			got := *l.Probe
			got.LatencyMs = 0
			wantProbe.CheckedAt = clk.now()
			if got != wantProbe || l.Probe.LatencyMs < 0 {
				t.Errorf("%s: probe %+v, want %+v", what, *l.Probe, wantProbe)
			}
		}
		if _, err := tr.Beat(ctx, "acme", "rev", card.ID); err != nil {
			t.Fatal(err)
		}
		step("one failure", 503, 1, cards.Online, cards.Probe{Error: "answered 503", Failures: 1}, p)
		step("two failures", 503, 1, cards.Offline, cards.Probe{Error: "answered 503", Failures: 2}, p)
		step("a success", 204, 0, cards.Online, cards.Probe{OK: true}, p)
		one := liveness.NewProber(liveness.ProbeConfig{Interval: time.Minute, Failures: 1, Spread: -1}, store, storage.NewCardStore(db), http.DefaultClient, tr)
		step("one failure of one", 500, 1, cards.Offline, cards.Probe{Error: "answered 500", Failures: 1}, one)
		if asked := asks(ag.Requests()); len(asked) != 4 {
			t.Errorf("the agent was probed %d times, want 4: %q", len(asked), asked)
		}
	})
}

// TestProbeTargets: where each card is probed: its A2A card at its endpoint's origin, or where
// it was imported from; the configured path at the origin instead, when set; never a disabled
// card or one with no HTTP endpoint. Each is a GET asking for JSON. A card whose endpoint changed
// is probed at its new one from the next round.
func TestProbeTargets(t *testing.T) {
	db, store := openStore(t, migrations.SQLite)
	cs := storage.NewCardStore(db)
	ag, moved := agenttest.New(t, agenttest.Answer(http.StatusOK, "")), agenttest.New(t, agenttest.Answer(http.StatusOK, ""))
	plain := putCard(t, cs, "acme", "plain", func(c *cards.Card) { c.Endpoint = ag.URL + "/rpc?x=1" })
	putCard(t, cs, "acme", "imported", func(c *cards.Card) {
		c.Endpoint = ag.URL + "/rpc"
		c.Source = &cards.Source{URL: ag.URL + "/cards/imported.json"}
	})
	putCard(t, cs, "acme", "disabled", func(c *cards.Card) { c.Endpoint, c.Status = ag.URL+"/rpc", cards.StatusDisabled })
	putCard(t, cs, "acme", "mailbox", func(c *cards.Card) { c.Endpoint = "mailto:agent@example.com" })
	putCard(t, cs, "acme", "quiet", func(*cards.Card) {})
	clk := newClock(t0)
	tr := liveness.New(store, time.Hour, clk.now)
	prober := func(path string) *liveness.Prober {
		return liveness.NewProber(liveness.ProbeConfig{Interval: time.Minute, Spread: -1, Path: path}, store, cs, http.DefaultClient, tr)
	}
	seen := map[*agenttest.Agent]int{}
	// took is what a was asked since the last look.
	took := func(a *agenttest.Agent) []string {
		reqs := a.Requests()
		from := seen[a]
		seen[a] = len(reqs)
		return asks(reqs[from:])
	}
	check := func(what string, p *liveness.Prober, wantClaimed int, a *agenttest.Agent, want ...string) {
		t.Helper()
		if st := round(t, p); st != (liveness.RoundStats{Claimed: wantClaimed, Probed: wantClaimed}) {
			t.Errorf("%s: round %+v, want %d claimed and probed", what, st, wantClaimed)
		}
		got := took(a)
		if len(got) != len(want) {
			t.Fatalf("%s: the agent was asked %q, want %q", what, got, want)
		}
		for _, w := range want {
			found := false
			for _, g := range got {
				found = found || g == w
			}
			if !found {
				t.Errorf("%s: the agent was asked %q, want %q", what, got, want)
			}
		}
	}
	def := prober("")
	check("by default", def, 2, ag,
		"GET /.well-known/agent-card.json application/json", "GET /cards/imported.json application/json")
	clk.add(time.Minute)
	check("with a path", prober("/health"), 2, ag, "GET /health application/json", "GET /health application/json")

	// The card's endpoint moves to another server: the prober's next round reads the card again.
	plain.Endpoint, plain.Revision = moved.URL+"/v2/rpc", plain.Revision+1
	if err := cs.Replace(context.Background(), "acme", plain, plain.Revision-1); err != nil {
		t.Fatal(err)
	}
	clk.add(time.Minute)
	check("after the move, the imported card", def, 2, ag, "GET /cards/imported.json application/json")
	if got := took(moved); len(got) != 1 || got[0] != "GET /.well-known/agent-card.json application/json" {
		t.Errorf("the moved card's new server was asked %q", got)
	}
}

// TestProbeTimeout: an agent that does not answer within the timeout is a failed probe, told as
// such with the timeout.
func TestProbeTimeout(t *testing.T) {
	db, store := openStore(t, migrations.SQLite)
	hung := agenttest.New(t, agenttest.Hang)
	card := putCard(t, storage.NewCardStore(db), "acme", "slow", func(c *cards.Card) { c.Endpoint = hung.URL })
	tr := liveness.New(store, time.Hour, newClock(t0).now)
	p := liveness.NewProber(liveness.ProbeConfig{Interval: time.Minute, Timeout: 100 * time.Millisecond, Spread: -1},
		store, storage.NewCardStore(db), http.DefaultClient, tr)
	if st := round(t, p); st != (liveness.RoundStats{Claimed: 1, Probed: 1, Failed: 1}) {
		t.Errorf("round %+v", st)
	}
	l, err := tr.Of(context.Background(), "acme", "slow", card.ID)
	if err != nil || l.Probe == nil || l.Probe.OK || l.Probe.Error != "no answer within 100ms" || l.Probe.Failures != 1 {
		t.Errorf("%+v (probe %+v), %v; want a failure with no answer within 100ms", l, l.Probe, err)
	}
}

// TestProbeConcurrency: a round has at most PerTenant probes of one tenant in flight, and at most
// Concurrency in all.
func TestProbeConcurrency(t *testing.T) {
	db, store := openStore(t, migrations.SQLite)
	storagetest.CreateTenant(t, db, "beta", t0)
	var inFlight, most atomic.Int64
	slow := agenttest.New(t, func(_ http.ResponseWriter, r *http.Request, _ agenttest.Request) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		// Long enough that probes let through at once overlap here.
		select {
		case <-time.After(100 * time.Millisecond):
		case <-r.Context().Done():
		}
	})
	cs := storage.NewCardStore(db)
	for _, tenant := range []tenants.ID{"acme", "beta"} {
		for _, id := range []string{"a", "b", "c", "d"} {
			putCard(t, cs, tenant, id, func(c *cards.Card) { c.Endpoint = slow.URL })
		}
	}
	clk := newClock(t0)
	tr := liveness.New(store, time.Hour, clk.now)
	for _, c := range []struct {
		cfg  liveness.ProbeConfig
		most int64
	}{
		{liveness.ProbeConfig{PerTenant: 2}, 4}, // two tenants, two each
		{liveness.ProbeConfig{PerTenant: 8, Concurrency: 3}, 3},
	} {
		c.cfg.Interval, c.cfg.Spread = time.Minute, -1
		most.Store(0)
		p := liveness.NewProber(c.cfg, store, cs, http.DefaultClient, tr)
		if st := round(t, p); st.Claimed != 8 || st.Probed != 8 {
			t.Errorf("%+v: round %+v, want 8 probed", c.cfg, st)
		}
		if m := most.Load(); m > c.most || m < 1 {
			t.Errorf("%+v: %d probes in flight at once, want at most %d", c.cfg, m, c.most)
		}
		clk.add(time.Minute)
	}
}
