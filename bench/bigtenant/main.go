// Command bigtenant measures one large tenant from outside, as issue 43's first goals state them:
// for a tenant of -cards generated cards (bench/cardgen, ~2 KB each) on SQLite, it prints
//
//   - the first search after the registrations (goal: answered within 2 s);
//   - the index built from the cards at a start (its snapshot removed; warmReady: /ready's
//     first 200; goal ≤ 30 s), and read back from the snapshot that start's stop wrote (goal
//     ≤ 5 s);
//   - the server's resident set: its peak over the build, and over the read-back and a load of
//     searches (VmHWM; goal ≤ 1.5 GiB), and the Go heap live once the index is loaded;
//   - search latency over HTTP at -c clients (goal: free text of 1–3 words p99 ≤ 10 ms; filters
//     p99 ≤ 2 ms).
//
// It builds the binary, seeds the database once (kept with -keep, and reused by a later run with
// the same -keep and -cards), and restarts the server for each part. The index alone (heap,
// build, p99 in process) is measured by the benchmarks in cards/search/index; bench/scale.sh runs
// both.
//
//	go run ./bench/bigtenant -cards 1000000 -keep /tmp/bigtenant
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentcards/agentcards/bench/cardgen"
	"github.com/agentcards/agentcards/bench/internal/probe"
	"github.com/agentcards/agentcards/bench/internal/proc"
)

const tenant = "big"

type options struct {
	cards, clients, seeders int
	keep                    string
	duration                time.Duration
	seed                    uint64
	budget                  int64
}

func main() {
	var o options
	flag.IntVar(&o.cards, "cards", 1_000_000, "cards in the tenant")
	flag.IntVar(&o.clients, "c", 16, "concurrent clients of the search load")
	flag.IntVar(&o.seeders, "seeders", 4, "concurrent clients registering the cards, 200 a request")
	flag.DurationVar(&o.duration, "d", 20*time.Second, "how long each kind of search is loaded")
	flag.StringVar(&o.keep, "keep", "", "work directory to keep (binary, database, snapshots); a later run with the same one and -cards reuses the cards")
	flag.Uint64Var(&o.seed, "seed", 1, "seed of the generated cards")
	flag.Int64Var(&o.budget, "budget", 1<<30, "search.memoryBudget of the restarts, in bytes (0: none); it also sets the Go runtime's memory limit to the budget + 160 MiB")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		log.Fatal(err)
	}
}

// goal is one line of the report.
type goal struct {
	name, figure string
	met          bool
	hasGoal      bool
}

func run(ctx context.Context, o options) error {
	dir := o.keep
	if dir == "" {
		d, err := os.MkdirTemp("", "agentcards-bigtenant-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	bin, err := proc.Build(dir)
	if err != nil {
		return err
	}
	data := filepath.Join(dir, "data")
	base := proc.Env("AGENTCARDS_DATA_DIR="+data, "AGENTCARDS_AUTH_SECRET=bigtenant-bench-secret-0123456789abcdef",
		"AGENTCARDS_LOG_LEVEL=warn", "AGENTCARDS_SEARCH_WARM_WINDOW=24h")
	restarts := append(slices.Clone(base), "AGENTCARDS_SEARCH_MEMORY_BUDGET="+strconv.FormatInt(o.budget, 10))
	token, err := proc.Token(bin, dir, base)
	if err != nil {
		return err
	}
	c := &probe.Client{HTTP: &http.Client{Timeout: 5 * time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}, Token: token}
	fmt.Printf("one tenant of %d cards on SQLite, search.memoryBudget %s at the restarts; load average %s\n", o.cards, gib(o.budget), probe.LoadAverage())
	var goals []goal

	marker := filepath.Join(dir, "seeded")
	if b, err := os.ReadFile(marker); err == nil && strings.TrimSpace(string(b)) == strconv.Itoa(o.cards) {
		fmt.Printf("cards already registered in %s\n", dir)
	} else {
		if err := os.RemoveAll(data); err != nil {
			return err
		}
		first, took, err := seed(ctx, c, bin, dir, base, o)
		if err != nil {
			return fmt.Errorf("seed: %w", err)
		}
		fmt.Printf("%d cards registered in %s\n", o.cards, took.Round(time.Second))
		goals = append(goals, goal{"first search after the registrations", fmtDur(first), first <= 2*time.Second, true})
		if err := os.WriteFile(marker, []byte(strconv.Itoa(o.cards)), 0o644); err != nil {
			return err
		}
	}

	// The index built from the cards: its snapshot removed first; the stop writes it again.
	if err := os.RemoveAll(filepath.Join(data, "index")); err != nil {
		return err
	}
	took, peak, heap, err := start(ctx, c, bin, dir, append(slices.Clone(restarts), "AGENTCARDS_SEARCH_WARM_READY=true"), nil)
	if err != nil {
		return fmt.Errorf("build: %w", err)
	}
	goals = append(goals,
		goal{"index built from the cards (/ready)", fmtDur(took), took <= 30*time.Second, true},
		goal{"RSS peak while it builds", gib(peak), peak <= 3<<29, true},
		goal{"Go heap live once built", gib(heap), false, false})

	// Read back from its snapshot, then searched.
	var lines []goal
	took, peak, heap, err = start(ctx, c, bin, dir, append(slices.Clone(restarts), "AGENTCARDS_SEARCH_WARM_READY=true"), func(srv *proc.Server) error {
		l, err := load(ctx, c, srv, o)
		lines = l
		return err
	})
	if err != nil {
		return fmt.Errorf("read back: %w", err)
	}
	goals = append(goals,
		goal{"index read back from its snapshot (/ready)", fmtDur(took), took <= 5*time.Second, true},
		goal{"RSS peak: read back, then the searches below", gib(peak), peak <= 3<<29, true},
		goal{"Go heap live once read back", gib(heap), false, false})
	goals = append(goals, lines...)

	fmt.Println()
	for _, g := range goals {
		verdict := ""
		if g.hasGoal {
			verdict = "met"
			if !g.met {
				verdict = "NOT met"
			}
		}
		fmt.Printf("%-58s %14s  %s\n", g.name, g.figure, verdict)
	}
	fmt.Printf("(goals: first search ≤ 2 s; build ≤ 30 s; read back ≤ 5 s; RSS ≤ 1.5 GiB; free text p99 ≤ 10 ms and filters p99 ≤ 2 ms over HTTP at %d clients)\n", o.clients)
	return nil
}

// seed starts a server on a new database, registers the cards and times the first search after
// them; the stop writes the index's snapshot.
func seed(ctx context.Context, c *probe.Client, bin, dir string, env []string, o options) (first, took time.Duration, err error) {
	srv, err := proc.Start(bin, dir, append(env, "AGENTCARDS_SERVER_PPROF=true"))
	if err != nil {
		return 0, 0, err
	}
	defer srv.Stop()
	body, _ := json.Marshal(map[string]any{"id": tenant, "name": tenant})
	if _, _, err := c.Do(ctx, http.MethodPost, srv.Base+"/v1/tenants", body, http.StatusCreated); err != nil {
		return 0, 0, err
	}
	t0 := time.Now()
	next := make(chan int)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		defer close(next)
		for from := 0; from < o.cards; from += 200 {
			select {
			case next <- from:
			case <-ctx.Done():
				return
			}
		}
	}()
	var wg sync.WaitGroup
	errs := make([]error, o.seeders)
	for w := range o.seeders {
		wg.Go(func() {
			for from := range next {
				var b bytes.Buffer
				b.WriteByte('[')
				for i := from; i < min(from+200, o.cards); i++ {
					if i > from {
						b.WriteByte(',')
					}
					doc, _ := json.Marshal(cardgen.Make(o.seed, i))
					b.Write(doc)
				}
				b.WriteByte(']')
				if _, _, err := c.Do(ctx, http.MethodPost, srv.Base+"/v1/tenants/"+tenant+"/cards:batch", b.Bytes(), http.StatusCreated); err != nil {
					errs[w] = err
					cancel()
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return 0, 0, err
	}
	took = time.Since(t0)
	t1 := time.Now()
	if _, _, err := c.Do(ctx, http.MethodGet, srv.Base+"/v1/tenants/"+tenant+"/cards?q=latency&limit=10", nil, http.StatusOK); err != nil {
		return 0, 0, err
	}
	return time.Since(t1), took, nil
}

// start starts the server with env, times /ready's first 200, reads the live heap, runs then
// (if not nil), and returns the resident set's peak over the whole run.
func start(ctx context.Context, c *probe.Client, bin, dir string, env []string, then func(*proc.Server) error) (took time.Duration, peak, heap int64, err error) {
	t0 := time.Now()
	srv, err := proc.Start(bin, dir, append(env, "AGENTCARDS_SERVER_PPROF=true"))
	if err != nil {
		return 0, 0, 0, err
	}
	defer srv.Stop()
	for {
		res, _, err := c.Do(ctx, http.MethodGet, srv.Base+"/ready", nil, http.StatusOK)
		if err == nil {
			break
		}
		if res == nil || ctx.Err() != nil {
			return 0, 0, 0, err
		}
		time.Sleep(20 * time.Millisecond)
	}
	took = time.Since(t0)
	metrics, err := srv.Metrics()
	if err != nil {
		return 0, 0, 0, err
	}
	// A collection first (server.pprof's heap profile with gc=1), so that the heap read is what
	// is live.
	if _, _, err := c.Do(ctx, http.MethodGet, metrics+"/debug/pprof/heap?gc=1", nil, http.StatusOK); err != nil {
		return 0, 0, 0, err
	}
	m, err := probe.Scrape(ctx, c, metrics)
	if err != nil {
		return 0, 0, 0, err
	}
	heap = int64(m["go_memstats_heap_alloc_bytes"])
	if then != nil {
		if err := then(srv); err != nil {
			return 0, 0, 0, err
		}
	}
	return took, highWater(srv.Pid()), heap, nil
}

// highWater is the peak resident set of process pid (VmHWM), in bytes.
func highWater(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// load runs each kind of search at o.clients clients for o.duration and returns its lines.
func load(ctx context.Context, c *probe.Client, srv *proc.Server, o options) ([]goal, error) {
	sample := cardgen.Make(o.seed, 0)
	words := strings.Fields(strings.ToLower(strings.Map(func(r rune) rune {
		if r == '.' || r == ',' {
			return ' '
		}
		return r
	}, sample.Description)))
	kinds := []struct {
		name  string
		limit time.Duration
		query func(r *rand.Rand) url.Values
	}{
		{"free text, 1 word", 10 * time.Millisecond, func(r *rand.Rand) url.Values { return url.Values{"q": {pick(r, words, 1)}} }},
		{"free text, 2 words", 10 * time.Millisecond, func(r *rand.Rand) url.Values { return url.Values{"q": {pick(r, words, 2)}} }},
		{"free text, 3 words", 10 * time.Millisecond, func(r *rand.Rand) url.Values { return url.Values{"q": {pick(r, words, 3)}} }},
		{"filter: a capability", 2 * time.Millisecond, func(r *rand.Rand) url.Values {
			cs := cardgen.Make(o.seed, r.IntN(o.cards)).Capabilities
			return url.Values{"capability": {cs[r.IntN(len(cs))].Name}}
		}},
		{"filter: protocol and tag", 2 * time.Millisecond, func(r *rand.Rand) url.Values {
			cd := cardgen.Make(o.seed, r.IntN(o.cards))
			return url.Values{"protocol": {cd.Protocols[0]}, "tag": {cd.Tags[0]}}
		}},
	}
	// The floor: the same load on an endpoint that does nothing (GET /health), on the same
	// machine and clients.
	lat, err := loadOne(ctx, c, srv.Base+"/health", o, nil)
	if err != nil {
		return nil, fmt.Errorf("health: %w", err)
	}
	out := []goal{{fmt.Sprintf("the floor: GET /health (%d requests, p50 %s)", len(lat), fmtDur(probe.Percentile(lat, 50))), "p99 " + fmtDur(probe.Percentile(lat, 99)), false, false}}
	for _, k := range kinds {
		lat, err := loadOne(ctx, c, srv.Base+"/v1/tenants/"+tenant+"/cards", o, k.query)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k.name, err)
		}
		p50, p99 := probe.Percentile(lat, 50), probe.Percentile(lat, 99)
		out = append(out, goal{fmt.Sprintf("%s (%d searches, p50 %s)", k.name, len(lat), fmtDur(p50)), "p99 " + fmtDur(p99), p99 <= k.limit, true})
	}
	return out, nil
}

func pick(r *rand.Rand, words []string, n int) string {
	out := make([]string, n)
	for i := range out {
		out[i] = words[r.IntN(len(words))]
	}
	return strings.Join(out, " ")
}

// loadOne sends requests to u from o.clients clients for o.duration, each with the query query
// makes (a page of 10) or none when query is nil, and returns their latencies; the first second
// is a warm-up, not counted.
func loadOne(ctx context.Context, c *probe.Client, u string, o options, query func(*rand.Rand) url.Values) ([]time.Duration, error) {
	var mu sync.Mutex
	var lat []time.Duration
	var first error
	start := time.Now()
	warm, end := start.Add(time.Second), start.Add(time.Second+o.duration)
	var wg sync.WaitGroup
	for w := range o.clients {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(o.seed, uint64(w)))
			var mine []time.Duration
			for time.Now().Before(end) && ctx.Err() == nil {
				target := u
				if query != nil {
					q := query(r)
					q.Set("limit", "10")
					target += "?" + q.Encode()
				}
				t0 := time.Now()
				_, _, err := c.Do(ctx, http.MethodGet, target, nil, http.StatusOK)
				if err != nil {
					mu.Lock()
					first = cmpErr(first, err)
					mu.Unlock()
					return
				}
				if t0.After(warm) {
					mine = append(mine, time.Since(t0))
				}
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	return lat, first
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

func fmtDur(d time.Duration) string {
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.2f s", d.Seconds())
	case d >= time.Millisecond:
		return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000)
	}
	return fmt.Sprintf("%d µs", d.Microseconds())
}

func gib(b int64) string { return fmt.Sprintf("%.2f GiB", float64(b)/(1<<30)) }
