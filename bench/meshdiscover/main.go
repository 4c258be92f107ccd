// Command meshdiscover measures free-text discovery of agentcards against agentkit-mesh's
// (GET /v1/discover) with the same agents and the same queries, over HTTP on loopback, and
// prints p50/p90/p99 per system and their ratios. It registers the generated cards in both (a mesh
// agent gets the card's agentId as its name, its description, its capabilities' names and its
// endpoint), then runs 1-, 2- and 3-word queries drawn from the cards' vocabulary, limit 10,
// sequentially with one client, alternating the systems round by round.
//
// Before the rounds, the first -warmup queries of a round run on each system, untimed. The rest
// of the first round are then the first answers of most of their cards: agentcards reads such a
// card from the database and encodes it, and keeps the encoding for later answers. -warmup set to
// a round's queries (150 by default) times answers of cards answered before only. -detail prints
// each round's percentiles, those of agentcards' queries with and without such cards, and its
// slowest queries.
//
// agentkit-mesh must already run (bench/meshdiscover.sh starts it); agentcards is built and
// started here on SQLite unless -agentcards is a URL.
//
//	go run ./bench/meshdiscover -mesh http://127.0.0.1:8766 -cards 10000 -rounds 3
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"runtime/metrics"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentcards/agentcards/bench/cardgen"
	"github.com/agentcards/agentcards/bench/internal/proc"
)

// system is one registry under test: how to register a card and how to discover.
type system struct {
	name     string
	base     string
	auth     string // the Authorization header, or ""
	register func(c cardgen.Card, doc []byte) (string, []byte)
	discover func(q string, limit int) string
	client   *http.Client
}

func (s *system) do(method, path string, body []byte) (int, []byte) {
	req, err := http.NewRequest(method, s.base+path, bytes.NewReader(body))
	if err != nil {
		log.Fatal(err)
	}
	if s.auth != "" {
		req.Header.Set("Authorization", s.auth)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := s.client.Do(req)
	if err != nil {
		log.Fatalf("%s: %v", s.name, err)
	}
	b, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		log.Fatalf("%s: %v", s.name, err)
	}
	return res.StatusCode, b
}

func main() {
	meshURL := flag.String("mesh", "", "base URL of a running agentkit-mesh HTTP server (http://127.0.0.1:PORT)")
	meshSecret := flag.String("mesh-secret", "", "shared secret sent to agentkit-mesh as a bearer token, if it wants one")
	ac := flag.String("agentcards", "", "agentcards: a binary to start, a base URL of a running server (with -token), or empty to build ./cmd/agentcards")
	token := flag.String("token", "", "agentcards token, when -agentcards is a URL")
	tenant := flag.String("tenant", "bench", "agentcards tenant to register the cards in")
	n := flag.Int("cards", 10000, "agents to register in each")
	rounds := flag.Int("rounds", 3, "rounds per system, alternating")
	perSize := flag.Int("queries", 50, "queries of each length (1, 2 and 3 words) per round")
	limit := flag.Int("limit", 10, "results per query")
	seed := flag.Uint64("seed", 42, "card and query seed")
	warmup := flag.Int("warmup", 10, "queries run on each system before the measured rounds (the first of the rounds' queries), not counted")
	detail := flag.Bool("detail", false, "also print each round's percentiles, the slowest queries and whether their results were answered before")
	runqueue := flag.Bool("runqueue", false, "with -detail: also show how long this client's and agentcards' threads waited for a CPU during each slow query (Linux; reads /proc between the queries, outside their timing)")
	serverEnv := flag.String("server-env", "", "extra environment of the agentcards server started here, space-separated NAME=value (e.g. GODEBUG=gctrace=1)")
	flag.Parse()
	if *meshURL == "" {
		log.Fatal("-mesh is required (bench/meshdiscover.sh starts agentkit-mesh)")
	}
	if perRound := 3 * *perSize; *warmup < 0 || *warmup > perRound {
		log.Fatalf("-warmup %d: 0 to the %d queries of a round", *warmup, perRound)
	}
	if !loopback(*meshURL) {
		log.Fatalf("-mesh %s: loopback only", *meshURL)
	}

	acBase, acToken := *ac, *token
	if !strings.HasPrefix(*ac, "http://") {
		work, err := os.MkdirTemp("", "agentcards-meshdiscover")
		if err != nil {
			log.Fatal(err)
		}
		defer os.RemoveAll(work)
		bin := *ac
		if bin == "" {
			if bin, err = proc.Build(work); err != nil {
				log.Fatal(err)
			}
		}
		env := proc.Env(strings.Fields(*serverEnv)...)
		srv, err := proc.Start(bin, work, env)
		if err != nil {
			log.Fatal(err)
		}
		defer srv.Stop()
		acBase = srv.Base
		if *runqueue {
			waitPids = []int{os.Getpid(), srv.Pid()}
		}
		if acToken, err = proc.Token(bin, work, env); err != nil {
			log.Fatal(err)
		}
	} else if !loopback(*ac) {
		log.Fatalf("-agentcards %s: loopback only", *ac)
	}

	agentcards := &system{
		name: "agentcards", base: acBase, auth: "Bearer " + acToken,
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}},
		register: func(_ cardgen.Card, doc []byte) (string, []byte) {
			return "/v1/tenants/" + *tenant + "/cards", doc
		},
		discover: func(q string, limit int) string {
			return fmt.Sprintf("/v1/tenants/%s/cards?limit=%d&q=%s", *tenant, limit, url.QueryEscape(q))
		},
	}
	mesh := &system{
		name: "mesh", base: strings.TrimRight(*meshURL, "/"),
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}},
		register: func(c cardgen.Card, _ []byte) (string, []byte) {
			caps := make([]string, len(c.Capabilities))
			for i, cp := range c.Capabilities {
				caps[i] = cp.Name
			}
			b, err := json.Marshal(map[string]any{
				"name": c.AgentID, "description": c.Description, "capabilities": caps,
				"endpoint": c.Endpoint, "protocol": c.Protocols[0],
			})
			if err != nil {
				log.Fatal(err)
			}
			return "/v1/agents", b
		},
		discover: func(q string, limit int) string {
			return fmt.Sprintf("/v1/discover?query=%s&limit=%d", url.QueryEscape(q), limit)
		},
	}
	if *meshSecret != "" {
		mesh.auth = "Bearer " + *meshSecret
	}

	if s, b := agentcards.do("POST", "/v1/tenants", []byte(`{"id":"`+*tenant+`","name":"Bench"}`)); s != 201 && s != 409 {
		log.Fatalf("agentcards: create tenant: %d %s", s, b)
	}
	for _, sys := range []*system{agentcards, mesh} {
		t0 := time.Now()
		registerAll(sys, *seed, *n)
		fmt.Printf("%-10s registered %d agents in %s\n", sys.name, *n, time.Since(t0).Round(time.Millisecond))
	}
	if s, b := mesh.do("GET", "/v1/agents", nil); s == 200 {
		var all []json.RawMessage
		if err := json.Unmarshal(b, &all); err != nil || len(all) != *n {
			log.Fatalf("mesh holds %d agents, want %d (start it on an empty database): %v", len(all), *n, err)
		}
	} else {
		log.Fatalf("mesh: list agents: %d %s", s, b)
	}

	queries := cardgen.Queries(*seed, *perSize*3)
	// seen holds, per system, the agents it has answered with so far: a query's fresh results
	// are those it returns for the first time (agentcards renders a card on its first answer).
	seen := map[string]map[string]bool{"agentcards": {}, "mesh": {}}
	// Warm up both: agentcards builds the tenant's index on its first search, V8 compiles.
	var warm []sample
	for _, sys := range []*system{agentcards, mesh} {
		for i, q := range queries[:*warmup] {
			d, _, ids, gcs, wait := measure(sys, q, *limit)
			warm = append(warm, sample{sys.name, 0, i, q, d, fresh(seen[sys.name], ids), gcs, wait})
		}
	}

	type stats struct {
		lat            []time.Duration
		bytes, results int
	}
	all := map[string]*stats{"agentcards": {}, "mesh": {}}
	byLen := map[string]map[int][]time.Duration{"agentcards": {}, "mesh": {}}
	var samples []sample
	var gc0, gc1 runtime.MemStats
	runtime.ReadMemStats(&gc0)
	for r := 0; r < *rounds; r++ {
		order := []*system{mesh, agentcards}
		if r%2 == 1 {
			order = []*system{agentcards, mesh}
		}
		for _, sys := range order {
			st := all[sys.name]
			for i, q := range queries {
				d, size, ids, gcs, wait := measure(sys, q, *limit)
				st.lat = append(st.lat, d)
				st.bytes += size
				st.results += len(ids)
				words := len(strings.Fields(q))
				byLen[sys.name][words] = append(byLen[sys.name][words], d)
				samples = append(samples, sample{sys.name, r + 1, i, q, d, fresh(seen[sys.name], ids), gcs, wait})
			}
		}
	}
	runtime.ReadMemStats(&gc1)

	fmt.Printf("\n%d agents, %d queries per system (%d rounds of %d each of 1, 2 and 3 words), limit %d, one client, sequential\n",
		*n, len(all["mesh"].lat), *rounds, *perSize, *limit)
	fmt.Printf("%-10s %8s %12s %12s %12s %10s %10s\n", "system", "words", "p50", "p90", "p99", "results", "bytes")
	for _, name := range []string{"mesh", "agentcards"} {
		st := all[name]
		for w := 1; w <= 3; w++ {
			p := pct(byLen[name][w])
			fmt.Printf("%-10s %8d %12s %12s %12s\n", name, w, p[0], p[1], p[2])
		}
		p := pct(st.lat)
		fmt.Printf("%-10s %8s %12s %12s %12s %10.1f %10d\n", name, "all", p[0], p[1], p[2],
			float64(st.results)/float64(len(st.lat)), st.bytes/len(st.lat))
	}
	ratio := func(m, a []time.Duration) string {
		pm, pa := pct(m), pct(a)
		return fmt.Sprintf("p50 %.0fx, p90 %.0fx, p99 %.0fx", float64(pm[0])/float64(pa[0]), float64(pm[1])/float64(pa[1]), float64(pm[2])/float64(pa[2]))
	}
	fmt.Printf("\nratio mesh/agentcards: %s\n", ratio(all["mesh"].lat, all["agentcards"].lat))
	for w := 1; w <= 3; w++ {
		fmt.Printf("  %d word(s): %s\n", w, ratio(byLen["mesh"][w], byLen["agentcards"][w]))
	}
	if *detail {
		printDetail(warm, samples)
		fmt.Printf("\nthis client: %d GCs, %s of pauses during the rounds\n",
			gc1.NumGC-gc0.NumGC, time.Duration(gc1.PauseTotalNs-gc0.PauseTotalNs).Round(time.Microsecond))
	}
}

// registerAll registers the n generated cards in sys with 8 writers.
func registerAll(sys *system, seed uint64, n int) {
	docs := cardgen.Documents(seed, n)
	next := make(chan int)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				path, body := sys.register(cardgen.Make(seed, i), docs[i])
				if s, b := sys.do("POST", path, body); s != 201 {
					log.Fatalf("%s: register %d: %d %s", sys.name, i, s, b)
				}
			}
		}()
	}
	for i := range docs {
		next <- i
	}
	close(next)
	wg.Wait()
}

// waitPids are the processes whose wait for a CPU measure notes (see waited): with -runqueue,
// this one and the agentcards server it started.
var waitPids []int

// measure runs one discovery and returns its latency (request to the last byte of the answer),
// the answer's size, the ids of the agents it held, in order, how many of this client's garbage
// collections ended meanwhile and how long the waitPids waited for a CPU meanwhile.
func measure(sys *system, q string, limit int) (time.Duration, int, []string, int, time.Duration) {
	var w0 time.Duration
	if sys.name == "agentcards" && waitPids != nil {
		w0 = waited(waitPids)
	}
	gc0 := gcCycles()
	t0 := time.Now()
	s, b := sys.do("GET", sys.discover(q, limit), nil)
	d := time.Since(t0)
	gcs := int(gcCycles() - gc0)
	var wait time.Duration
	if sys.name == "agentcards" && waitPids != nil {
		wait = max(0, waited(waitPids)-w0)
	}
	if s != 200 {
		log.Fatalf("%s: discover %q: %d %s", sys.name, q, s, b)
	}
	var ids []string
	if sys.name == "mesh" {
		var r []struct{ Agent struct{ Name string } }
		if err := json.Unmarshal(b, &r); err != nil {
			log.Fatalf("mesh: %v", err)
		}
		for _, a := range r {
			ids = append(ids, a.Agent.Name)
		}
	} else {
		var r struct {
			Items []struct {
				Card struct{ AgentID string }
			}
		}
		if err := json.Unmarshal(b, &r); err != nil {
			log.Fatalf("agentcards: %v", err)
		}
		for _, it := range r.Items {
			ids = append(ids, it.Card.AgentID)
		}
	}
	return d, len(b), ids, gcs, wait
}

var gcSample = []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}

// gcCycles is the number of garbage collections this process has completed.
func gcCycles() uint64 {
	metrics.Read(gcSample)
	return gcSample[0].Value.Uint64()
}

// pct returns the p50, p90 and p99 of lat.
func pct(lat []time.Duration) [3]time.Duration {
	s := slices.Clone(lat)
	slices.Sort(s)
	at := func(f float64) time.Duration { return s[int(float64(len(s))*f)].Round(time.Microsecond) }
	return [3]time.Duration{at(0.50), at(0.90), at(0.99)}
}

func loopback(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	return u.Hostname() == "127.0.0.1"
}
