package web_test

import (
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/web/api"
	"github.com/agentcards/agentcards/web/client"
)

// BenchmarkHeartbeat: what a heartbeat costs the process, against a plain authenticated GET of
// a card, over loopback HTTP with 1,000 agents' cards, on each database, many callers at once (32 per
// core). cpu-µs/op is the process's CPU time (server and the benchmark's own client) per
// request; core-share is that cost at 1,000 agents beating every 10 s (100 heartbeats a second),
// as a share of one core. Heartbeats wait for the shared write of their batch (about 50 ms), so
// ns/op says little; the CPU is the measure.
func BenchmarkHeartbeat(b *testing.B) {
	for _, d := range storagetest.Dialects() {
		b.Run(d, func(b *testing.B) {
			e := newEnvWith(b, storagetest.Open(b, d), envOptions{})
			e.mkTenant("acme", "alice")
			alice := e.token("alice", "acme", false)
			const agents = 1000
			batch := make([]api.CardInput, agents)
			for i := range batch {
				batch[i] = api.CardInput{AgentID: fmt.Sprintf("agent-%d", i), Name: fmt.Sprintf("Agent %d", i), Protocols: []string{"http"}}
			}
			c, err := client.New(e.srv.URL, client.WithToken(alice), client.WithHTTPClient(e.srv.Client()))
			if err != nil {
				b.Fatal(err)
			}
			if _, err := c.Cards.RegisterBatch(b.Context(), api.CardsRegisterBatch{Cards: batch}); err != nil {
				b.Fatal(err)
			}
			for _, kind := range []string{"get", "heartbeat"} {
				b.Run(kind, func(b *testing.B) {
					var next atomic.Int64
					b.SetParallelism(32)
					cpu0, ok := processCPU()
					b.RunParallel(func(pb *testing.PB) {
						for pb.Next() {
							path := fmt.Sprintf("%s/v1/tenants/acme/cards/agent-%d", e.srv.URL, next.Add(1)%agents)
							method := http.MethodGet
							if kind == "heartbeat" {
								method, path = http.MethodPost, path+"/heartbeat"
							}
							req, _ := http.NewRequest(method, path, nil)
							req.Header.Set("Authorization", "Bearer "+alice)
							resp, err := e.srv.Client().Do(req)
							if err != nil || resp.StatusCode != http.StatusOK {
								b.Error(err, resp)
								return
							}
							_, _ = io.Copy(io.Discard, resp.Body)
							resp.Body.Close()
						}
					})
					if cpu1, ok1 := processCPU(); ok && ok1 {
						perOp := float64((cpu1 - cpu0).Microseconds()) / float64(b.N)
						b.ReportMetric(perOp, "cpu-µs/op")
						b.ReportMetric(perOp*100/1e6, "core-share")
					}
				})
			}
		})
	}
}
