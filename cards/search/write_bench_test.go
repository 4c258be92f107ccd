package search_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentcards/agentcards/authz"
	"github.com/agentcards/agentcards/authz/authztest"
	"github.com/agentcards/agentcards/bench/cardgen"
	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/search"
	"github.com/agentcards/agentcards/storage"
	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/tenants"
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
			svc := &cards.Service{Store: store, Gate: gate, Authz: authztest.AllowAll{}}
			if mode != "none" {
				ix := search.NewIndex(store, store)
				svc.Index = ix
				if mode == "loaded" {
					s := &search.Service{Store: store, Gate: gate, Authz: authztest.AllowAll{}, Index: ix}
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

// BenchmarkConcurrentWriters has 16 writers patch cards of one tenant at once, right after 10k
// registrations, with no index and with the tenant's index loaded, and reports writes per second
// and loaded/none (goal ≥ 0.5: orchestrators' searches must not slow the tenant's writes down).
func BenchmarkConcurrentWriters(b *testing.B) {
	store, gate := benchStore(b)
	ctx := benchCaller
	ids, err := store.IDs(ctx, "bench")
	if err != nil {
		b.Fatal(err)
	}
	const writers = 16
	rate := map[string]float64{}
	for _, mode := range []string{"none", "loaded"} {
		b.Run(mode, func(b *testing.B) {
			svc := &cards.Service{Store: store, Gate: gate, Authz: authztest.AllowAll{}}
			if mode == "loaded" {
				ix := search.NewIndex(store, store)
				svc.Index = ix
				s := &search.Service{Store: store, Gate: gate, Authz: authztest.AllowAll{}, Index: ix}
				if _, err := s.Search(ctx, "bench", search.Query{}); err != nil {
					b.Fatal(err)
				}
			}
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			t0 := time.Now()
			for w := range writers {
				wg.Go(func() {
					for {
						i := next.Add(1) - 1
						if i >= int64(b.N) {
							return
						}
						// Each writer its own cards, as admins editing different agents.
						id := ids[(int(i)*writers+w)%len(ids)]
						patch := fmt.Appendf(nil, `{"description": "edited %s %d"}`, mode, i)
						if _, err := svc.Patch(ctx, "bench", id, patch, cards.Precondition{}); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			elapsed := time.Since(t0)
			b.StopTimer()
			rate[mode] = float64(b.N) / elapsed.Seconds()
			b.ReportMetric(rate[mode], "writes/s")
			if mode == "loaded" && rate["none"] > 0 {
				b.ReportMetric(rate["loaded"]/rate["none"], "loaded/none")
			}
		})
	}
}

// BenchmarkRegisterBatch registers 1,000 generated cards into an empty tenant of SQLite one by
// one and as one batch, and reports cards per second and batch/single (goal ≥ 5).
func BenchmarkRegisterBatch(b *testing.B) {
	db := storagetest.Open(b, "sqlite")
	store := storage.NewCardStore(db)
	gate := &tenants.Service{Store: storage.NewTenantStore(db), CacheTTL: 250 * time.Millisecond}
	svc := &cards.Service{Store: store, Gate: gate, Authz: authztest.AllowAll{}}
	docs := cardgen.Documents(7, 1000)
	body := append([]byte("["), bytes.Join(docs, []byte(","))...)
	body = append(body, ']')
	rate := map[string]float64{}
	round := 0
	for _, mode := range []string{"single", "batch"} {
		b.Run(mode, func(b *testing.B) {
			var spent time.Duration
			for range b.N {
				round++
				tenant := tenants.ID(fmt.Sprintf("t%d", round))
				storagetest.CreateTenant(b, db, tenant, time.Now())
				ctx := authz.WithPrincipal(context.Background(), authz.Principal{Subject: "bench", Tenant: string(tenant)})
				t0 := time.Now()
				if mode == "batch" {
					if _, err := svc.RegisterBatch(ctx, tenant, body); err != nil {
						b.Fatal(err)
					}
				} else {
					for _, doc := range docs {
						if _, err := svc.Register(ctx, tenant, doc); err != nil {
							b.Fatal(err)
						}
					}
				}
				spent += time.Since(t0)
			}
			rate[mode] = float64(b.N*len(docs)) / spent.Seconds()
			b.ReportMetric(rate[mode], "cards/s")
			if mode == "batch" && rate["single"] > 0 {
				b.ReportMetric(rate["batch"]/rate["single"], "batch/single")
			}
		})
	}
}
