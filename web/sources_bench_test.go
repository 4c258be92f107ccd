package web_test

import (
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/agentcards/agentcards/storage/storagetest"
)

// BenchmarkFollowConvergence measures how long a write at an agentcards source takes to show in
// a tenant of another server that follows it, on Postgres: the source runs as two replicas of
// one database, the follower's stream is served by one and the writes go to the other, so each
// change reaches the stream through LISTEN/NOTIFY, as between replicas in production. Each op is
// one update at the source, then reads of the follower's copy (every millisecond) until it shows
// it. It reports the median and the 99th percentile, in milliseconds; the goal is under 1,000.
func BenchmarkFollowConvergence(b *testing.B) {
	dbs := storagetest.OpenShared(b, "postgres", 2)
	upWrite := newEnvWith(b, dbs[0], envOptions{allowLoopback: true, follow: true})
	upRead := newEnvWith(b, dbs[1], envOptions{allowLoopback: true, follow: true})
	upWrite.mkTenant("upstream", "alice")
	upTok := upWrite.token("alice", "upstream", false)
	expect(b, upWrite.do(http.MethodPost, "/v1/tenants/upstream/cards", upTok, sampleCard("bench")), http.StatusCreated)
	down := newEnvWith(b, storagetest.Open(b, "postgres"), envOptions{allowLoopback: true, follow: true})
	down.mkTenant("mirror", "bob")
	downTok := down.token("bob", "mirror", false)
	expect(b, down.do(http.MethodPost, "/v1/tenants/mirror/sources", downTok, map[string]any{
		"kind": "agentcards", "url": upRead.srv.URL + "/v1/tenants/upstream", "token": upTok}), http.StatusCreated)
	revision := func() float64 {
		r := down.do(http.MethodGet, "/v1/tenants/mirror/cards/bench", downTok, nil)
		if r.status != http.StatusOK {
			return 0
		}
		var c struct {
			Mirror struct {
				Revision float64 `json:"revision"`
			} `json:"mirror"`
		}
		r.json(b, &c)
		return c.Mirror.Revision
	}
	deadline := time.Now().Add(30 * time.Second)
	for revision() != 1 {
		if time.Now().After(deadline) {
			b.Fatal("the first sync did not end")
		}
		time.Sleep(10 * time.Millisecond)
	}
	took := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		start := time.Now()
		r := upWrite.do(http.MethodPatch, "/v1/tenants/upstream/cards/bench", upTok, map[string]any{"description": "write " + time.Now().String()})
		expect(b, r, http.StatusOK)
		want := float64(i + 2)
		for revision() < want {
			if time.Since(start) > 30*time.Second {
				b.Fatalf("write %d not mirrored within 30 s", i)
			}
			time.Sleep(time.Millisecond)
		}
		took = append(took, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(took)
	ms := func(q float64) float64 {
		return float64(took[min(len(took)-1, int(q*float64(len(took))))].Microseconds()) / 1000
	}
	b.ReportMetric(ms(0.5), "p50-ms")
	b.ReportMetric(ms(0.99), "p99-ms")
	b.ReportMetric(ms(1), "max-ms")
}
