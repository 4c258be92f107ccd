package web_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/agenttest"
	"github.com/agentcards/agentcards/cards/liveness"
	"github.com/agentcards/agentcards/storage/storagetest"
)

// probed is a probed agent's answer to every request, its A2A card at the well-known path among
// them: status, with a card's JSON.
func probed(status int) agenttest.Reply { return agenttest.Answer(status, `{"name": "probed"}`) }

// probes is how many requests the agent received whose host and path end with path (by the
// path prefix of each card's endpoint); "" counts them all.
func probes(a *agenttest.Agent, path string) int {
	return a.Count(func(r agenttest.Request) bool { return strings.HasSuffix(r.Host+r.Path, path) })
}

// TestProbes: a card's agent probed at its A2A card (the well-known path at its endpoint's
// origin) comes online on a 2xx; failures in a row (two here) make it offline, and a success
// online again; the probe's outcome is served with the card. A second round within the
// interval probes nothing: the lease is held. On every database.
func TestProbes(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, d string) {
		clk := &clock{t: time.Now().UTC()}
		e := newEnvWith(t, storagetest.Open(t, d), envOptions{allowLoopback: true, livenessNow: clk.now, livenessTTL: 10 * time.Minute,
			probe: liveness.ProbeConfig{Interval: time.Minute, Failures: 2, Timeout: 2 * time.Second, Spread: -1}})
		a := agenttest.New(t, probed(http.StatusOK))
		e.mkTenant("acme", "alice")
		alice := e.token("alice", "acme", false)
		card := sampleCard("agt1")
		card["endpoint"] = a.URL + "/rpc"
		expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, card), http.StatusCreated)
		noEndpoint := sampleCard("quiet")
		delete(noEndpoint, "endpoint")
		expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, noEndpoint), http.StatusCreated)
		ctx := context.Background()
		round := func(wantClaimed int) liveness.RoundStats {
			t.Helper()
			st, err := e.prober.Round(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if st.Claimed != wantClaimed {
				t.Fatalf("round claimed %d cards, want %d", st.Claimed, wantClaimed)
			}
			return st
		}
		state := func() cards.Liveness { return e.cardLiveness("acme", "agt1") }

		round(1)
		if l := state(); l.State != cards.Online || l.Probe == nil || !l.Probe.OK || l.Probe.Failures != 0 || l.LastSeenAt != nil {
			t.Fatalf("after a good probe: %+v (probe %+v)", l, l.Probe)
		}
		if n := probes(a, "/.well-known/agent-card.json"); n != 1 {
			t.Fatalf("the agent's card was fetched %d times, want 1", n)
		}
		if e.cardLiveness("acme", "quiet").State != cards.Unknown {
			t.Error("a card with nowhere to probe is not unknown")
		}
		round(0) // within the interval: the lease is held
		if n := probes(a, "/.well-known/agent-card.json"); n != 1 {
			t.Fatalf("a second round in the interval probed again (%d)", n)
		}

		a.SetReply(probed(http.StatusServiceUnavailable))
		clk.add(time.Minute)
		if st := round(1); st.Failed != 1 {
			t.Fatalf("failed %d", st.Failed)
		}
		if l := state(); l.State != cards.Online || l.Probe.OK || l.Probe.Failures != 1 || !strings.Contains(l.Probe.Error, "503") {
			t.Fatalf("after one failure (of two): %+v (probe %+v)", l, l.Probe)
		}
		clk.add(time.Minute)
		round(1)
		if l := state(); l.State != cards.Offline || l.Probe.Failures != 2 {
			t.Fatalf("after two failures: %+v (probe %+v)", l, l.Probe)
		}
		if ids := e.search(alice, "acme", "online=false").ids(); len(ids) != 2 {
			t.Errorf("online=false: %v", ids)
		}
		// A heartbeat after the failures is a sign of life too.
		expect(t, e.beat("acme", "agt1", alice), http.StatusOK)
		if l := state(); l.State != cards.Online {
			t.Errorf("a heartbeat after the probes failed: %+v", l)
		}
		// The run of failures marked it once: more of the same run do not undo the heartbeat.
		clk.add(time.Minute)
		round(1)
		if l := state(); l.State != cards.Online || l.Probe.Failures != 3 {
			t.Errorf("a third failure after the heartbeat: %+v (probe %+v)", l, l.Probe)
		}
		a.SetReply(probed(http.StatusOK))
		clk.add(time.Minute)
		round(1)
		if l := state(); l.State != cards.Online || !l.Probe.OK || l.Probe.Failures != 0 {
			t.Fatalf("after a good probe again: %+v (probe %+v)", l, l.Probe)
		}
		if ids := e.search(alice, "acme", "online=true").ids(); len(ids) != 1 || ids[0] != "agt1" {
			t.Errorf("online=true: %v", ids)
		}
	})
}

// TestProbeGuard: probes go through the SSRF guard. With it denying loopback, the agent is never
// reached; each probe is recorded as failed, and the failures make the card offline.
func TestProbeGuard(t *testing.T) {
	clk := &clock{t: time.Now().UTC()}
	e := newEnvWith(t, storagetest.Open(t, "sqlite"), envOptions{livenessNow: clk.now,
		probe: liveness.ProbeConfig{Interval: time.Minute, Failures: 2, Spread: -1}})
	a := agenttest.New(t, probed(http.StatusOK))
	e.mkTenant("acme", "alice")
	card := sampleCard("agt1")
	card["endpoint"] = a.URL + "/rpc"
	expect(t, e.do("POST", "/v1/tenants/acme/cards", e.token("alice", "acme", false), card), http.StatusCreated)
	for i := range 2 {
		if st, err := e.prober.Round(context.Background()); err != nil || st.Claimed != 1 || st.Failed != 1 {
			t.Fatalf("round %d: %+v, %v", i, st, err)
		}
		clk.add(time.Minute)
	}
	if n := probes(a, ""); n != 0 {
		t.Fatalf("the guard let %d probes reach loopback", n)
	}
	if l := e.cardLiveness("acme", "agt1"); l.State != cards.Offline || l.Probe == nil || l.Probe.Error == "" {
		t.Errorf("after two blocked probes: %+v (probe %+v)", l, l.Probe)
	}
}

// TestProbesOncePerInterval: two replicas on one database run their rounds at the same moment;
// each card is probed by exactly one of them, and the next interval once more. On every database.
func TestProbesOncePerInterval(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, d string) {
		clk := &clock{t: time.Now().UTC()}
		db := storagetest.Open(t, d)
		o := envOptions{allowLoopback: true, livenessNow: clk.now, probe: liveness.ProbeConfig{Interval: time.Minute, Spread: 20 * time.Millisecond}}
		r1, r2 := newEnvWith(t, db, o), newEnvWith(t, db, o)
		a := agenttest.New(t, probed(http.StatusOK))
		r1.mkTenant("acme", "alice")
		alice := r1.token("alice", "acme", false)
		const n = 40
		for i := range n {
			card := sampleCard(fmt.Sprintf("agt%02d", i))
			// One origin for all: the agent's card is at the same URL; the path tells them apart.
			card["endpoint"] = a.URL + "/rpc"
			expect(t, r1.do("POST", "/v1/tenants/acme/cards", alice, card), http.StatusCreated)
		}
		for interval := 1; interval <= 2; interval++ {
			var wg sync.WaitGroup
			claimed := make([]int, 2)
			for i, r := range []*env{r1, r2} {
				wg.Go(func() {
					st, err := r.prober.Round(context.Background())
					if err != nil {
						t.Error(err)
					}
					claimed[i] = st.Claimed
				})
			}
			wg.Wait()
			if claimed[0]+claimed[1] != n || probes(a, "") != interval*n {
				t.Fatalf("interval %d: claimed %v, %d probes; want %d cards probed once", interval, claimed, probes(a, ""), n)
			}
			t.Logf("interval %d: replicas probed %v", interval, claimed)
			clk.add(time.Minute)
		}
	})
}

// TestProbeRoundCancelled: a round that ends with its context (the server stopping) records
// nothing for the probes it cut short: they say nothing of the agent.
func TestProbeRoundCancelled(t *testing.T) {
	e := newEnvWith(t, storagetest.Open(t, "sqlite"), envOptions{allowLoopback: true,
		probe: liveness.ProbeConfig{Interval: time.Minute, Failures: 1, Timeout: 30 * time.Second, Spread: -1}})
	reached := make(chan struct{}, 1)
	agent := agenttest.New(t, func(w http.ResponseWriter, r *http.Request, got agenttest.Request) {
		select {
		case reached <- struct{}{}:
		default:
		}
		agenttest.Hang(w, r, got) // never answers
	})
	e.mkTenant("acme", "alice")
	card := sampleCard("agt1")
	card["endpoint"] = agent.URL + "/rpc"
	expect(t, e.do("POST", "/v1/tenants/acme/cards", e.token("alice", "acme", false), card), http.StatusCreated)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan liveness.RoundStats, 1)
	go func() {
		st, _ := e.prober.Round(ctx)
		done <- st
	}()
	<-reached
	cancel()
	st := <-done
	if st.Claimed != 1 || st.Probed != 0 {
		t.Errorf("the cancelled round: %+v", st)
	}
	if l := e.cardLiveness("acme", "agt1"); l.State != cards.Unknown || l.Probe != nil {
		t.Errorf("a probe cut short was recorded: %+v (probe %+v)", l, l.Probe)
	}
}
