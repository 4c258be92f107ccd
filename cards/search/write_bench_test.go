package search_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/search"
)

// BenchmarkLoneWriter patches cards one after another, as one tenant admin does, right after
// 10k cards were registered (so the change feed's recent window is full), in three setups of
// the same SQLite store: no index at all, an index with this tenant not loaded, and an index
// with it loaded by a search (the case orchestrators cause). It reports p50/p99 per write and
// loaded/none, the cost a loaded index adds to a write (goal ≤ 1.5).
func BenchmarkLoneWriter(b *testing.B) {
	store, gate := benchStore(b)
	ctx := benchCaller
	p50 := map[string]time.Duration{}
	for _, mode := range []string{"none", "unloaded", "loaded"} {
		b.Run(mode, func(b *testing.B) {
			svc := &cards.Service{Store: store, Gate: gate, Authz: allowAll{}}
			if mode != "none" {
				ix := search.NewIndex(store, store)
				svc.Index = ix
				if mode == "loaded" {
					s := &search.Service{Store: store, Gate: gate, Authz: allowAll{}, Index: ix}
					if _, err := s.Search(ctx, "bench", search.Query{}); err != nil {
						b.Fatal(err)
					}
				}
			}
			ids, err := store.IDs(ctx, "bench")
			if err != nil {
				b.Fatal(err)
			}
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := range b.N {
				patch := fmt.Appendf(nil, `{"description": "edited %s %d"}`, mode, i)
				t0 := time.Now()
				if _, err := svc.Patch(ctx, "bench", ids[i%len(ids)], patch, cards.Precondition{}); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
			}
			b.StopTimer()
			slices.Sort(lat)
			p50[mode] = lat[len(lat)/2]
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
			if mode == "loaded" && p50["none"] > 0 {
				b.ReportMetric(float64(p50["loaded"])/float64(p50["none"]), "loaded/none")
			}
		})
	}
}
