package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/agentcards/agentcards/bench/internal/probe"

	"github.com/agentcards/agentcards/bench/cardgen"
	"github.com/agentcards/agentcards/bench/internal/proc"
)

// sample is one search under load.
type sample struct {
	at     time.Time
	took   time.Duration
	tenant int
	// failed: a transport error or an answer other than 200.
	failed bool
	// loaded: the search waited for its tenant's index to load (Server-Timing index-load).
	loaded  bool
	replica string
}

// searchPath is a random search of tenant i: a free-text q of 1-3 words (limit 10) or a tag of
// one of its cards (limit 100), as bench/tenants sends.
func searchPath(r *rand.Rand, o options, i int) string {
	q := url.Values{}
	if r.IntN(2) == 0 {
		words := cardgen.Words()
		var ws []string
		for range 1 + r.IntN(3) {
			ws = append(ws, words[r.IntN(len(words))])
		}
		q.Set("q", strings.Join(ws, " "))
		q.Set("limit", "10")
	} else {
		card := cardgen.Make(cardSeed(o, i), r.IntN(cardsIn(o, i)))
		q.Set("tag", card.Tags[r.IntN(len(card.Tags))])
		q.Set("limit", "100")
	}
	return "/v1/tenants/" + tenantID(i) + "/cards?" + q.Encode()
}

// load sends searches to base from o.clients closed-loop clients for d, each to a tenant drawn at
// random, and returns them in the order they ended.
func load(ctx context.Context, c *probe.Client, base string, o options, d time.Duration, stream uint64) []sample {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var mu sync.Mutex
	var out []sample
	var wg sync.WaitGroup
	for k := range o.clients {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(o.seed+stream, uint64(k)))
			for ctx.Err() == nil {
				i := r.IntN(o.tenants)
				s := sample{at: time.Now(), tenant: i}
				res, _, err := c.Do(context.WithoutCancel(ctx), http.MethodGet, base+searchPath(r, o, i), nil, http.StatusOK)
				s.took = time.Since(s.at)
				s.failed = err != nil
				if res != nil {
					s.loaded = strings.HasPrefix(res.Header.Get("Server-Timing"), "index-load")
					s.replica = res.Header.Get(ReplicaHeader)
				}
				mu.Lock()
				out = append(out, s)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return out
}

// memory is what one replica holds.
type memory struct {
	tenants, index, cached, copy, rss float64
}

func (m memory) total() float64 { return m.index + m.cached + m.copy }

// memoryOf reads a replica's indexes from its metrics and its RSS from /proc.
func memoryOf(ctx context.Context, c *probe.Client, s *proc.Server) (memory, error) {
	f, err := scrape(ctx, c, s)
	if err != nil {
		return memory{}, err
	}
	return memory{tenants: f["agentcards_index_tenants"], index: f["agentcards_index_bytes"], cached: f["agentcards_index_cached_bytes"],
		copy: f["agentcards_index_copy_bytes"], rss: float64(probe.RSS(s.Pid()))}, nil
}

// filled waits until every loaded index's outage copy holds all its cards (or a minute passed).
func filled(ctx context.Context, c *probe.Client, servers []*proc.Server) error {
	deadline := time.Now().Add(2 * time.Minute)
	for _, s := range servers {
		for {
			f, err := scrape(ctx, c, s)
			if err != nil {
				return err
			}
			if f["agentcards_index_copy_cards"] == f["agentcards_index_cards"] {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("outage copies not filled within 2 minutes")
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	return nil
}

// scrape reads a server's metrics and sums each family's samples (probe.Scrape).
func scrape(ctx context.Context, c *probe.Client, s *proc.Server) (map[string]float64, error) {
	base, err := s.Metrics()
	if err != nil {
		return nil, err
	}
	return probe.Scrape(ctx, c, base)
}

// latencies are the durations of the samples that pass keep.
func latencies(samples []sample, keep func(sample) bool) []time.Duration {
	var out []time.Duration
	for _, s := range samples {
		if keep(s) {
			out = append(out, s.took)
		}
	}
	return out
}

func mib(b float64) string { return fmt.Sprintf("%.1f MiB", b/(1<<20)) }
