package search_test

import (
	"context"
	"slices"
	"strconv"
	"syscall"
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
	"github.com/agentcards/agentcards/tenants/paging"
)

// benchCaller is the context of a caller of tenant "bench" (allowAll lets it do everything).
var benchCaller = authz.WithPrincipal(context.Background(), authz.Principal{Subject: "bench", Tenant: "bench"})

// benchStore returns a SQLite store holding 10k generated cards in tenant "bench", and the
// tenant gate over the same database, its rows cached as a server caches them.
func benchStore(b *testing.B) (*storage.CardStore, *tenants.Service) { return benchStoreOf(b, 10_000) }

// benchStoreOf returns a SQLite store holding n generated cards in tenant "bench", and the gate.
func benchStoreOf(b *testing.B, n int) (*storage.CardStore, *tenants.Service) {
	ctx := benchCaller
	db := storagetest.Open(b, "sqlite")
	if err := storage.NewTenantStore(db).Create(ctx, tenants.Tenant{ID: "bench", Name: "Bench", Status: tenants.StatusActive,
		CreatedAt: time.Now(), UpdatedAt: time.Now()}, nil); err != nil {
		b.Fatal(err)
	}
	store := storage.NewCardStore(db)
	gate := &tenants.Service{Store: storage.NewTenantStore(db), CacheTTL: 250 * time.Millisecond}
	svc := &cards.Service{Store: store, Gate: gate, Authz: authztest.AllowAll{}}
	for _, doc := range cardgen.Documents(42, n) {
		if _, err := svc.Register(ctx, "bench", doc); err != nil {
			b.Fatal(err)
		}
	}
	return store, gate
}

// BenchmarkSearchModes runs the same queries through the service with search.index memory and
// none, over 10k cards in SQLite, including fetching the page's cards.
func BenchmarkSearchModes(b *testing.B) {
	store, gate := benchStore(b)
	ctx := benchCaller
	middle := cardgen.Make(42, 5_000)
	queries := []struct {
		name string
		q    search.Query
	}{
		{"capability", search.Query{Capabilities: []string{middle.Capabilities[0].Name}}},
		{"protocol+capability", search.Query{Protocols: []string{middle.Protocols[0]}, Capabilities: []string{middle.Capabilities[0].Name}}},
		{"q-3-words", search.Query{Q: "invoice forecast summar"}},
		{"name-substring", search.Query{Name: "careful image"}},
	}
	for _, mode := range []string{"memory", "none"} {
		svc := &search.Service{Store: store, Gate: gate, Authz: authztest.AllowAll{}}
		if mode == "memory" {
			svc.Index = search.NewIndex(store, store)
		}
		for _, q := range queries {
			b.Run(mode+"/"+q.name, func(b *testing.B) {
				if _, err := svc.Search(ctx, "bench", q.q); err != nil { // builds the index
					b.Fatal(err)
				}
				lat := make([]time.Duration, 0, b.N)
				b.ResetTimer()
				for range b.N {
					t0 := time.Now()
					if _, err := svc.Search(ctx, "bench", q.q); err != nil {
						b.Fatal(err)
					}
					lat = append(lat, time.Since(t0))
				}
				b.StopTimer()
				reportPercentiles(b, lat)
			})
		}
	}
}

// BenchmarkIndexBuildFromStore builds the index of 100k cards the way a server does on a
// tenant's first search: reading the cards from SQLite in batches, decoding and indexing them.
// BenchmarkIndexBuild measures the indexing alone.
func BenchmarkIndexBuildFromStore(b *testing.B) {
	store, gate := benchStoreOf(b, 100_000)
	ctx := benchCaller
	q := search.Query{Capabilities: []string{cardgen.Make(42, 50_000).Capabilities[0].Name}}
	b.ResetTimer()
	for range b.N {
		svc := &search.Service{Store: store, Gate: gate, Authz: authztest.AllowAll{}, Index: search.NewIndex(store, store)}
		t0, cpu0 := time.Now(), cpuTime()
		if _, err := svc.Search(ctx, "bench", q); err != nil { // the first search builds
			b.Fatal(err)
		}
		// The CPU time (user and system, every thread) is steadier than the wall time on a
		// machine shared with other work.
		b.ReportMetric(time.Since(t0).Seconds(), "build-s")
		b.ReportMetric((cpuTime() - cpu0).Seconds(), "cpu-s")
	}
}

// BenchmarkSearchStatus: the index's status check. The same queries over 10k cards, in a
// tenant without disabled cards (where a default search checks no status) and in one where 1%
// of the cards are disabled (where each candidate's status is compared).
func BenchmarkSearchStatus(b *testing.B) {
	ctx := benchCaller
	for _, disabled := range []int{0, 100} {
		store, gate := benchStore(b)
		svc := &cards.Service{Store: store, Gate: gate, Authz: authztest.AllowAll{}}
		for i := range disabled {
			id := cardgen.Make(42, i*97).AgentID
			if _, err := svc.Patch(ctx, "bench", id, []byte(`{"status": "disabled"}`), cards.Precondition{}); err != nil {
				b.Fatal(err)
			}
		}
		finder := &search.Service{Store: store, Gate: gate, Authz: authztest.AllowAll{}, Index: search.NewIndex(store, store)}
		middle := cardgen.Make(42, 5_000)
		for _, q := range []struct {
			name string
			q    search.Query
		}{
			{"all", search.Query{}},
			{"capability", search.Query{Capabilities: []string{middle.Capabilities[0].Name}}},
			{"q-3-words", search.Query{Q: "invoice forecast summar"}},
		} {
			b.Run(q.name+"/disabled-"+strconv.Itoa(disabled), func(b *testing.B) {
				if _, err := finder.Search(ctx, "bench", q.q); err != nil { // builds the index
					b.Fatal(err)
				}
				for b.Loop() {
					if _, err := finder.Search(ctx, "bench", q.q); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// cpuTime is the CPU time the process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkFirstAnswers times free-text searches as bench/meshdiscover sends them (1 to 3 words
// of the cards' vocabulary, limit 10) over 10k SQLite cards, in process: "before" answers cards
// answered before (encoded and cached); "first" empties the render cache before each search, so
// each of its cards is answered for the first time, from the outage copy (as a server keeps one);
// "first-database" does the same without an outage copy, reading them from the database.
func BenchmarkFirstAnswers(b *testing.B) {
	store, gate := benchStore(b)
	ctx := benchCaller
	queries := cardgen.Queries(42, 150)
	withCopy := &search.Service{Store: store, Gate: gate, Authz: authztest.AllowAll{}, Index: search.NewIndex(store, store)}
	withCopy.Index.Copy = &search.OutageCopy{Store: store, Bytes: 64 << 20}
	if err := withCopy.Index.LoadCopy("bench"); err != nil {
		b.Fatal(err)
	}
	withoutCopy := &search.Service{Store: store, Gate: gate, Authz: authztest.AllowAll{}, Index: search.NewIndex(store, store)}
	for _, mode := range []string{"before", "first", "first-database"} {
		svc := withCopy
		if mode == "first-database" {
			svc = withoutCopy
		}
		b.Run(mode, func(b *testing.B) {
			for _, q := range queries {
				if _, err := svc.Search(ctx, "bench", search.Query{Q: q, Page: paging.Page{Limit: new(10)}}); err != nil {
					b.Fatal(err)
				}
			}
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := range b.N {
				if mode != "before" {
					svc.Index.ForgetAnswers("bench")
				}
				t0 := time.Now()
				if _, err := svc.Search(ctx, "bench", search.Query{Q: queries[i%len(queries)], Page: paging.Page{Limit: new(10)}}); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
			}
			b.StopTimer()
			reportPercentiles(b, lat)
		})
	}
}

// reportPercentiles reports the p50 and p99 of the latencies lat, in µs.
func reportPercentiles(b *testing.B, lat []time.Duration) {
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}
