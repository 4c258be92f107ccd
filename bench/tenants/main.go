// Command tenants measures many tenants on one replica under search.memoryBudget, from outside.
// The goal it checks: "10,000 tenants of 100 cards searched in a random order under a budget
// that holds a tenth of them: every answer right, p99 of a search that reloads a tenant from
// its snapshot ≤ 50 ms, RSS within the budget + 200 MiB."
//
// It builds the real binary and, on a fresh SQLite database:
//
//   - seed: starts a server (search.buildOnWrite 0, so that seeding loads no index), creates
//     -tenants tenants and registers -cards bench/cardgen cards in each, one batch a tenant,
//     from -clients clients;
//   - calibrate: searches -calibrate random tenants on it, waits for their outage copies, and
//     reads from its metrics what a loaded tenant holds (index, cached answers, outage copy);
//     the budget is -share of what all the tenants would hold (or -budget, if given); the
//     server is stopped;
//   - first: starts the measured server with that budget, and searches every tenant once, in a
//     random order: each search builds its tenant's index from its cards, and most evict one,
//     written to its snapshot;
//   - search: starts beside it an oracle on the same database with search.index none (every
//     search reads the cards), and sends -searches searches, one at a time, each to a tenant
//     drawn at random: a free-text q of 1-3 words from the cards' vocabulary, or a tag of one
//     of the tenant's cards (limit 100). Each answer is compared with the oracle's. A search
//     whose answer carries Server-Timing index-load loaded its tenant's index, from its
//     snapshot or from its cards (desc). The measured server's RSS is sampled every 50 ms, and
//     its garbage collections are read from its metrics.
//
// It prints the latencies of the searches that loaded an index and of those that did not, the
// RSS against the budget, the metrics of the budget, and the goal lines.
//
//	go run ./bench/tenants -tenants 10000 -cards 100 -searches 10000
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentcards/agentcards/bench/cardgen"
	"github.com/agentcards/agentcards/bench/internal/probe"
	"github.com/agentcards/agentcards/bench/internal/proc"
)

type options struct {
	tenants, cards, searches, calibrate, clients int
	share                                        float64
	budget                                       int64
	seed                                         uint64
	keep                                         string
}

func main() {
	var o options
	flag.IntVar(&o.tenants, "tenants", 10000, "tenants to create")
	flag.IntVar(&o.cards, "cards", 100, "cards in each tenant")
	flag.IntVar(&o.searches, "searches", 10000, "searches to measure")
	flag.IntVar(&o.calibrate, "calibrate", 200, "tenants searched to learn what a loaded one holds")
	flag.IntVar(&o.clients, "clients", 4, "concurrent clients while seeding")
	flag.Float64Var(&o.share, "share", 0.1, "share of all the tenants' indexes the budget holds")
	flag.Int64Var(&o.budget, "budget", 0, "search.memoryBudget in bytes (0: -share of the calibrated total)")
	flag.Uint64Var(&o.seed, "seed", 1, "card and search seed")
	flag.StringVar(&o.keep, "keep", "", "a directory to keep the run's binary, database and snapshots in (default: a temporary one, removed)")
	flag.Parse()
	log.SetFlags(0)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, o options) error {
	dir := o.keep
	if dir == "" {
		d, err := os.MkdirTemp("", "agentcards-tenants-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	bin, err := proc.Build(dir)
	if err != nil {
		return err
	}
	data := filepath.Join(dir, "data")
	env := proc.Env("AGENTCARDS_DATA_DIR="+data, "AGENTCARDS_AUTH_SECRET=tenants-bench-secret-0123456789abcdef")
	token, err := proc.Token(bin, dir, env)
	if err != nil {
		return err
	}
	fmt.Printf("tenants %d x %d cards, %d searches; load average %s\n", o.tenants, o.cards, o.searches, probe.LoadAverage())

	seeder, err := proc.Start(bin, dir, append(env, "AGENTCARDS_SEARCH_BUILD_ON_WRITE=0"))
	if err != nil {
		return err
	}
	c := &probe.Client{HTTP: &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 16}}, Token: token}
	start := time.Now()
	if err := seed(ctx, c, seeder.Base, o); err != nil {
		seeder.Stop()
		return fmt.Errorf("seed: %w", err)
	}
	fmt.Printf("seeded in %s\n", time.Since(start).Round(time.Second))
	perTenant, err := calibrate(ctx, c, seeder, o)
	seeder.Stop()
	if err != nil {
		return fmt.Errorf("calibrate: %w", err)
	}
	budget := o.budget
	if budget == 0 {
		budget = int64(float64(perTenant) * float64(o.tenants) * o.share)
	}
	fmt.Printf("a loaded tenant holds %s; budget %s (%.0f tenants' worth)\n", mib(perTenant), mib(budget), float64(budget)/float64(perTenant))

	measured, err := proc.Start(bin, dir, append(env, "AGENTCARDS_SEARCH_MEMORY_BUDGET="+strconv.FormatInt(budget, 10)))
	if err != nil {
		return err
	}
	defer measured.Stop()
	if err := firstPass(ctx, c, measured, o); err != nil {
		return fmt.Errorf("first pass: %w", err)
	}
	oracle, err := proc.Start(bin, dir, append(env, "AGENTCARDS_SEARCH_INDEX=none"))
	if err != nil {
		return err
	}
	defer oracle.Stop()
	return measure(ctx, c, measured, oracle, o, budget)
}

func tenantID(i int) string { return fmt.Sprintf("t%05d", i) }

// cardsOf are the cards of tenant i.
func cardsOf(o options, i int) []cardgen.Card {
	out := make([]cardgen.Card, o.cards)
	for n := range out {
		out[n] = cardgen.Make(o.seed*1_000_003+uint64(i), n)
	}
	return out
}

// seed creates the tenants and registers their cards, o.clients at a time.
func seed(ctx context.Context, c *probe.Client, base string, o options) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan int)
	go func() {
		defer close(next)
		for i := range o.tenants {
			select {
			case next <- i:
			case <-ctx.Done():
				return
			}
		}
	}()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for range o.clients {
		wg.Go(func() {
			for i := range next {
				tenant := tenantID(i)
				body, _ := json.Marshal(map[string]any{"id": tenant, "name": tenant})
				_, _, err := c.Do(ctx, http.MethodPost, base+"/v1/tenants", body, http.StatusCreated)
				if err == nil {
					body, _ = json.Marshal(cardsOf(o, i))
					_, _, err = c.Do(ctx, http.MethodPost, base+"/v1/tenants/"+tenant+"/cards:batch", body, http.StatusCreated)
				}
				if err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					cancel()
					return
				}
			}
		})
	}
	wg.Wait()
	return first
}

// calibrate searches o.calibrate random tenants, waits for their outage copies, and returns the
// bytes a loaded tenant holds on average, as the metrics count them.
func calibrate(ctx context.Context, c *probe.Client, s *proc.Server, o options) (int64, error) {
	metrics, err := s.Metrics()
	if err != nil {
		return 0, err
	}
	r := rand.New(rand.NewPCG(o.seed, 2))
	for _, i := range r.Perm(o.tenants)[:min(o.calibrate, o.tenants)] {
		q := url.Values{"q": {"report"}, "limit": {"10"}}
		if _, _, err := c.Do(ctx, http.MethodGet, s.Base+"/v1/tenants/"+tenantID(i)+"/cards?"+q.Encode(), nil, http.StatusOK); err != nil {
			return 0, err
		}
	}
	deadline := time.Now().Add(time.Minute)
	for {
		m, err := probe.Scrape(ctx, c, metrics)
		if err != nil {
			return 0, err
		}
		loaded := m["agentcards_index_tenants"]
		if loaded > 0 && m["agentcards_index_copy_cards"] == m["agentcards_index_cards"] {
			total := m["agentcards_index_bytes"] + m["agentcards_index_cached_bytes"] + m["agentcards_index_copy_bytes"]
			return int64(total / loaded), nil
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("the outage copies were not filled within a minute")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// sample is one measured search.
type sample struct {
	took, load time.Duration
	// from is where the index it waited for came from: "snapshot", "cards", or "" when it was
	// loaded already.
	from string
}

// search sends one search and reads how it found its tenant's index (Server-Timing).
func search(ctx context.Context, c *probe.Client, base, path string) (sample, []byte, error) {
	t0 := time.Now()
	res, body, err := c.Do(ctx, http.MethodGet, base+path, nil, http.StatusOK)
	s := sample{took: time.Since(t0)}
	if err != nil {
		return s, nil, err
	}
	if m := serverTiming.FindStringSubmatch(res.Header.Get("Server-Timing")); m != nil {
		ms, _ := strconv.ParseFloat(m[1], 64)
		s.load, s.from = time.Duration(ms*float64(time.Millisecond)), m[2]
	}
	return s, body, nil
}

var serverTiming = regexp.MustCompile(`^index-load;dur=([0-9.]+);desc="(\w+)"$`)

// firstPass searches every tenant once, in a random order, and reports those searches.
func firstPass(ctx context.Context, c *probe.Client, s *proc.Server, o options) error {
	r := rand.New(rand.NewPCG(o.seed, 4))
	var samples []sample
	start := time.Now()
	for _, i := range r.Perm(o.tenants) {
		got, _, err := search(ctx, c, s.Base, "/v1/tenants/"+tenantID(i)+"/cards?limit=10&q=report")
		if err != nil {
			return err
		}
		samples = append(samples, got)
	}
	fmt.Printf("first pass: %d searches, one a tenant, in %s\n", len(samples), time.Since(start).Round(time.Second))
	report(samples)
	return nil
}

// report prints the latencies of the searches by where their index came from.
func report(samples []sample) {
	for _, from := range []string{"snapshot", "cards", ""} {
		var took, load []time.Duration
		for _, s := range samples {
			if s.from == from {
				took, load = append(took, s.took), append(load, s.load)
			}
		}
		if len(took) == 0 {
			continue
		}
		what := map[string]string{"snapshot": "loaded from its snapshot", "cards": "built from its cards", "": "index loaded already"}[from]
		fmt.Printf("  %-25s %5d  p50 %8s  p99 %8s  max %8s", what, len(took), probe.Percentile(took, 50), probe.Percentile(took, 99), probe.Percentile(took, 100))
		if from != "" {
			fmt.Printf("  (waiting for the load: p50 %s  p99 %s)", probe.Percentile(load, 50), probe.Percentile(load, 99))
		}
		fmt.Println()
	}
}

// measure sends the searches to the measured server and the oracle, and reports.
func measure(ctx context.Context, c *probe.Client, measured, oracle *proc.Server, o options, budget int64) error {
	metrics, err := measured.Metrics()
	if err != nil {
		return err
	}
	var peak, before int64
	stopRSS := make(chan struct{})
	var sampling sync.WaitGroup
	sampling.Go(func() {
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			if rss := probe.RSS(measured.Pid()); rss > peak {
				peak = rss
			}
			select {
			case <-stopRSS:
				return
			case <-t.C:
			}
		}
	})
	before = probe.RSS(measured.Pid())
	m0, err := probe.Scrape(ctx, c, metrics)
	if err != nil {
		return err
	}
	words := cardgen.Words()
	r := rand.New(rand.NewPCG(o.seed, 3))
	samples := make([]sample, 0, o.searches)
	wrong := 0
	start := time.Now()
	for n := range o.searches {
		if ctx.Err() != nil {
			break
		}
		i := r.IntN(o.tenants)
		q := url.Values{}
		if n%2 == 0 {
			k := 1 + r.IntN(3)
			var ws []string
			for range k {
				ws = append(ws, words[r.IntN(len(words))])
			}
			q.Set("q", strings.Join(ws, " "))
			q.Set("limit", "10")
		} else {
			card := cardgen.Make(o.seed*1_000_003+uint64(i), r.IntN(o.cards))
			q.Set("tag", card.Tags[r.IntN(len(card.Tags))])
			q.Set("limit", "100")
		}
		path := "/v1/tenants/" + tenantID(i) + "/cards?" + q.Encode()
		s, got, err := search(ctx, c, measured.Base, path)
		if err != nil {
			return err
		}
		samples = append(samples, s)
		_, want, err := c.Do(ctx, http.MethodGet, oracle.Base+path, nil, http.StatusOK)
		if err != nil {
			return err
		}
		if !sameJSON(got, want) {
			wrong++
			if wrong <= 3 {
				fmt.Printf("WRONG %s\n  measured %.300s\n  oracle   %.300s\n", path, got, want)
			}
		}
	}
	elapsed := time.Since(start)
	close(stopRSS)
	sampling.Wait()
	m, err := probe.Scrape(ctx, c, metrics)
	if err != nil {
		return err
	}
	var reloads []time.Duration
	for _, s := range samples {
		if s.from == "snapshot" {
			reloads = append(reloads, s.took)
		}
	}
	fmt.Printf("%d random searches in %s (each answer compared with the oracle's: %d wrong)\n", len(samples), elapsed.Round(time.Second), wrong)
	report(samples)
	gcs, gcSeconds := m["go_gc_duration_seconds_count"]-m0["go_gc_duration_seconds_count"], m["go_gc_duration_seconds_sum"]-m0["go_gc_duration_seconds_sum"]
	cpu := m["process_cpu_seconds_total"] - m0["process_cpu_seconds_total"]
	fmt.Printf("server: %.0f garbage collections (%.0f ms of pauses), %.1f s of CPU over the %s\n", gcs, gcSeconds*1000, cpu, elapsed.Round(time.Second))
	fmt.Printf("metrics: %.0f indexes loaded, %s counted of the budget's %s, %.0f evictions, %.0f reloads\n",
		m["agentcards_index_tenants"], mib(int64(m["agentcards_index_memory_bytes"])), mib(budget),
		m["agentcards_index_evictions_total"], m["agentcards_index_reloads_total"])
	fmt.Printf("RSS: %s at the start of the searches, %s at most during them; budget + 200 MiB = %s\n", mib(before), mib(peak), mib(budget+200<<20))
	fmt.Printf("load average %s\n", probe.LoadAverage())
	fmt.Println()
	fmt.Printf("goal: every answer right: %d wrong of %d: %s\n", wrong, len(samples), verdict(wrong == 0 && len(samples) > 0))
	p99 := probe.Percentile(reloads, 99)
	fmt.Printf("goal: p99 of a search that reloads its tenant's index from its snapshot <= 50 ms: %s: %s\n", p99, verdict(len(reloads) > 0 && p99 <= 50*time.Millisecond))
	fmt.Printf("goal: RSS <= budget + 200 MiB: %s of %s: %s\n", mib(peak), mib(budget+200<<20), verdict(peak <= budget+200<<20))
	return nil
}

// sameJSON reports whether a and b hold the same JSON value.
func sameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}
