package index

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/cardstest"
	"github.com/agentcards/agentcards/tenants"
	"github.com/agentcards/agentcards/tenants/paging"
)

var (
	benchMu    sync.Mutex
	benchIndex = map[int]*Tenant{}
	benchCards = map[int][]cards.Card{}
)

// benchSizes are the index sizes the benchmarks measure: 10k and 100k cards, or those listed in
// AGENTCARDS_BENCH_CARDS (comma-separated; bench/scale.sh sets 1000000).
func benchSizes(b testing.TB) []int {
	list := os.Getenv("AGENTCARDS_BENCH_CARDS")
	if list == "" {
		return []int{10_000, 100_000}
	}
	var out []int
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			b.Fatalf("AGENTCARDS_BENCH_CARDS: %q is not a count", f)
		}
		out = append(out, n)
	}
	return out
}

// benchCorpus returns n generated cards and their index, built once per process.
func benchCorpus(b testing.TB, n int) ([]cards.Card, *Tenant) {
	benchMu.Lock()
	defer benchMu.Unlock()
	if x, ok := benchIndex[n]; ok {
		return benchCards[n], x
	}
	cs := cardstest.Cards(b, 42, n)
	x := New()
	x.Load(cs)
	benchCards[n], benchIndex[n] = cs, x
	return cs, x
}

// benchQueries are the queries the issue measures, drawn from the generated vocabulary.
func benchQueries(cs []cards.Card) map[string]Query {
	c := cs[len(cs)/2]
	return map[string]Query{
		"capability":          {Capabilities: []string{c.Capabilities[0].Name}, Page: paging.Page{Limit: new(20)}},
		"protocol+capability": {Protocols: []string{c.Protocols[0]}, Capabilities: []string{c.Capabilities[0].Name}, Page: paging.Page{Limit: new(20)}},
		// Two filters each of which most cards pass.
		"protocol+tag": {Protocols: []string{c.Protocols[0]}, Tags: []string{c.Tags[0]}, Page: paging.Page{Limit: new(20)}},
		"q-1-word":     {Q: "forecast", Page: paging.Page{Limit: new(20)}},
		"q-2-words":    {Q: "invoice forecast", Page: paging.Page{Limit: new(20)}},
		"q-3-words":    {Q: "invoice forecast summar", Page: paging.Page{Limit: new(20)}},
		// The same words, two of them in synonym sets: one of a word, one of a phrase.
		"q-3-words-synonyms": {Q: "invoice forecast summar", Page: paging.Page{Limit: new(20)}, Synonyms: []tenants.SynonymSet{
			{ID: "invoice", Words: []string{"invoice", "bill", "billing statement"}},
			{ID: "forecast", Words: []string{"forecast", "prediction", "projection"}}}},
		"name-substring": {Name: "careful image", Page: paging.Page{Limit: new(20)}},
	}
}

// reportLatency runs fn b.N times and reports p50 and p99 next to ns/op.
func reportLatency(b *testing.B, fn func()) {
	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		fn()
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1e3, "p99-µs")
}

// BenchmarkIndexSearch measures the in-memory index alone (no database) at 10k and 100k cards
// (see benchSizes).
func BenchmarkIndexSearch(b *testing.B) {
	for _, n := range benchSizes(b) {
		cs, x := benchCorpus(b, n)
		queries := benchQueries(cs)
		for _, name := range []string{"capability", "protocol+capability", "protocol+tag", "q-1-word", "q-2-words", "q-3-words", "q-3-words-synonyms", "q-3-words-read-rules", "name-substring"} {
			// With read rules, the caller may read two cards in three: each match is checked.
			query, readable := queries[name], (func(string) bool)(nil)
			if name == "q-3-words-read-rules" {
				query, readable = queries["q-3-words"], func(id string) bool { return id[len(id)-1]%3 != 0 }
			}
			p, err := query.Compile()
			if err != nil {
				b.Fatal(err)
			}
			b.Run(fmt.Sprintf("%dk/%s", n/1000, name), func(b *testing.B) {
				x.mu.RLock()
				defer x.mu.RUnlock()
				_, total, _ := x.Search(&p, readable, nil)
				b.ReportMetric(float64(total), "matches")
				reportLatency(b, func() { x.Search(&p, readable, nil) })
			})
		}
	}
}

// BenchmarkIndexBuild measures building the index of the largest size of benchSizes (100k
// cards) from decoded cards, and the heap it holds.
func BenchmarkIndexBuild(b *testing.B) {
	sizes := benchSizes(b)
	cs := cardstest.Cards(b, 42, sizes[len(sizes)-1])
	for range b.N {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		t0 := time.Now()
		x := New()
		x.Load(cs)
		elapsed := time.Since(t0)
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(elapsed.Seconds(), "build-s")
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "heap-MiB")
		runtime.KeepAlive(x)
	}
}
