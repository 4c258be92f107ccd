package web_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/agentcards/agentcards/cards/agenttest"
	"github.com/agentcards/agentcards/cards/liveness"
	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/web/api"
	"github.com/agentcards/agentcards/web/client"
)

// BenchmarkProbeRound: one replica's round over 10,000 cards (SQLite), each probed at a loopback
// agent's A2A card, without the spread (the probes back to back, 32 at a time): what a
// 1-minute interval asks of one replica. probes/s is the rate a round sustains; core-share is the
// process's CPU time (prober, database and the loopback agent) for 10,000 probes, as a share of
// one core over a minute.
func BenchmarkProbeRound(b *testing.B) {
	const n = 10_000
	clk := &clock{t: time.Now().UTC()}
	e := newEnvWith(b, storagetest.Open(b, "sqlite"), envOptions{allowLoopback: true, livenessNow: clk.now,
		probe: liveness.ProbeConfig{Interval: time.Minute, Spread: -1}})
	a := agenttest.New(b, probed(http.StatusOK))
	e.mkTenant("acme", "alice")
	c, err := client.New(e.srv.URL, client.WithToken(e.token("alice", "acme", false)), client.WithHTTPClient(e.srv.Client()))
	if err != nil {
		b.Fatal(err)
	}
	for start := 0; start < n; start += 1000 {
		batch := make([]api.CardInput, 1000)
		for i := range batch {
			batch[i] = api.CardInput{AgentID: fmt.Sprintf("agent-%05d", start+i), Name: "Agent", Protocols: []string{"http"},
				Endpoint: a.URL + "/rpc"}
		}
		if _, err := c.Cards.RegisterBatch(context.Background(), api.CardsRegisterBatch{Cards: batch}); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		clk.add(time.Minute) // every lease has run out: a new interval
		cpu0, ok := processCPU()
		start := time.Now()
		st, err := e.prober.Round(context.Background())
		if err != nil || st.Claimed != n || st.Failed != 0 {
			b.Fatal(st, err)
		}
		b.ReportMetric(float64(n)/time.Since(start).Seconds(), "probes/s")
		if cpu1, ok1 := processCPU(); ok && ok1 {
			b.ReportMetric((cpu1-cpu0).Seconds()/60, "core-share")
		}
	}
}
