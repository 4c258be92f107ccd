// Command affinity measures tenant-affinity routing: replicas behind a proxy that sends each
// tenant's requests to one replica (rendezvous hashing of the tenant in the path), against the
// same number of replicas in turn (round robin), on one Postgres schema.
//
// It builds the real binary, makes a scratch schema on the Postgres server, and:
//
//   - seed: through a server that builds no index at a write, creates -tenants tenants of
//     -min-cards to -max-cards bench/cardgen cards each;
//
//   - starts two sets of -replicas replicas (warm start off, each its own data directory), one
//     behind the proxy with affinity and one behind it in turn, and searches every tenant on
//     them until each replica has loaded its share (affinity: once; round robin: once on each
//     replica, as round robin ends up doing);
//
//   - load: -rounds rounds of -d, alternating the sets, of -clients closed-loop clients each
//     searching a random tenant; then, outage copies filled, each replica's indexes (metrics)
//     and RSS;
//
//   - stop: under the same load through the affinity proxy, stops one replica (SIGTERM, or
//     SIGKILL with -kill) and reports the clients' errors, the searches that loaded a moved
//     tenant's index on its new replica, and the survivors' memory;
//
//   - restart: starts the stopped replica again on its address with the default warm start
//     (search.warmWindow 24h, search.warmReady), which the proxy's health check waits for, and
//     reports what it loaded.
//
//     go run ./bench/affinity -tenants 300 -min-cards 100 -max-cards 1000
//
// With -serve ADDR it only runs the proxy, in front of the replicas listed in -backends.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentcards/agentcards/bench/internal/probe"

	"github.com/agentcards/agentcards/bench/cardgen"
	"github.com/agentcards/agentcards/bench/internal/proc"
	"github.com/agentcards/agentcards/bench/internal/scratch"
)

type options struct {
	dsn                        string
	replicas, tenants, clients int
	minCards, maxCards, rounds int
	d, stopAfter, afterStop    time.Duration
	seed                       uint64
	kill                       bool
	serve, backends            string
}

func main() {
	var o options
	flag.StringVar(&o.dsn, "dsn", scratch.DefaultServer("postgres"), "Postgres server; the run makes a schema of its own on it")
	flag.IntVar(&o.replicas, "replicas", 3, "replicas in each set")
	flag.IntVar(&o.tenants, "tenants", 300, "tenants")
	flag.IntVar(&o.minCards, "min-cards", 100, "fewest cards in a tenant")
	flag.IntVar(&o.maxCards, "max-cards", 1000, "most cards in a tenant")
	flag.IntVar(&o.clients, "clients", 8, "closed-loop clients under load")
	flag.IntVar(&o.rounds, "rounds", 2, "load rounds of each routing")
	flag.DurationVar(&o.d, "d", 10*time.Second, "length of a load round")
	flag.DurationVar(&o.stopAfter, "stop-after", 5*time.Second, "load before a replica stops")
	flag.DurationVar(&o.afterStop, "after-stop", 15*time.Second, "load after it stopped")
	flag.BoolVar(&o.kill, "kill", false, "stop the replica with SIGKILL instead of SIGTERM")
	flag.Uint64Var(&o.seed, "seed", 1, "card and search seed")
	flag.StringVar(&o.serve, "serve", "", "only run the proxy on this address, before -backends")
	flag.StringVar(&o.backends, "backends", "", "with -serve: the replicas' base URLs, comma-separated")
	flag.Parse()
	log.SetFlags(0)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	if o.serve != "" {
		err = serve(ctx, o)
	} else {
		err = run(ctx, o)
	}
	if err != nil {
		log.Fatal(err)
	}
}

// serve runs the proxy alone.
func serve(ctx context.Context, o options) error {
	p, err := NewProxy(strings.Split(o.backends, ","), true)
	if err != nil {
		return err
	}
	go p.Check(ctx, 500*time.Millisecond)
	srv := &http.Server{Addr: o.serve, Handler: p}
	go func() { <-ctx.Done(); _ = srv.Close() }()
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func tenantID(i int) string { return fmt.Sprintf("t%04d", i) }

func cardSeed(o options, i int) uint64 { return o.seed*1_000_003 + uint64(i) }

// cardsIn is the number of cards of tenant i, spread evenly from o.minCards to o.maxCards.
func cardsIn(o options, i int) int {
	if o.tenants < 2 {
		return o.maxCards
	}
	return o.minCards + (o.maxCards-o.minCards)*((i*7919)%o.tenants)/(o.tenants-1)
}

// set is a set of replicas behind one proxy.
type set struct {
	name    string
	servers []*proc.Server
	dirs    []string
	proxy   *Proxy
	base    string
}

func run(ctx context.Context, o options) error {
	dir, err := os.MkdirTemp("", "agentcards-affinity-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin, err := proc.Build(dir)
	if err != nil {
		return err
	}
	db, err := scratch.New(ctx, "postgres", dir, o.dsn, "affinity")
	if err != nil {
		return err
	}
	defer func() {
		if err := db.Drop(); err != nil {
			log.Print(err)
		}
	}()
	// Warm start off, so that a replica loads only the tenants it is sent; few connections each,
	// as 7 servers share the test server's max_connections.
	env := proc.Env("AGENTCARDS_DATABASE_DRIVER=postgres", "AGENTCARDS_DATABASE_DSN="+db.DSN,
		"AGENTCARDS_AUTH_SECRET=affinity-bench-secret-0123456789abcdef", "AGENTCARDS_DATABASE_MAX_CONNS=4",
		"AGENTCARDS_SEARCH_WARM_WINDOW=0", "AGENTCARDS_SEARCH_BUILD_ON_WRITE=0")
	token, err := proc.Token(bin, dir, env)
	if err != nil {
		return err
	}
	c := &probe.Client{HTTP: &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}, Token: token}
	total := 0
	for i := range o.tenants {
		total += cardsIn(o, i)
	}
	fmt.Printf("%d tenants of %d-%d cards (%d in all), %d replicas a set; load average %s\n",
		o.tenants, o.minCards, o.maxCards, total, o.replicas, probe.LoadAverage())

	seedDir := filepath.Join(dir, "seed")
	seeder, err := proc.Start(bin, dir, append(env, "AGENTCARDS_DATA_DIR="+seedDir))
	if err != nil {
		return err
	}
	start := time.Now()
	err = seed(ctx, c, seeder.Base, o)
	seeder.Stop()
	if err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	fmt.Printf("seeded in %s\n", time.Since(start).Round(time.Second))

	var sets []*set
	defer func() {
		for _, s := range sets {
			for _, srv := range s.servers {
				if srv != nil {
					srv.Stop()
				}
			}
		}
	}()
	for _, name := range []string{"affinity", "round robin"} {
		s := &set{name: name}
		sets = append(sets, s)
		var bases []string
		for k := range o.replicas {
			d := filepath.Join(dir, fmt.Sprintf("%s-%d", strings.ReplaceAll(name, " ", ""), k))
			srv, err := proc.Start(bin, dir, append(env, "AGENTCARDS_DATA_DIR="+d))
			if err != nil {
				return err
			}
			s.servers, s.dirs, bases = append(s.servers, srv), append(s.dirs, d), append(bases, srv.Base)
		}
		if s.proxy, err = NewProxy(bases, name == "affinity"); err != nil {
			return err
		}
		if s.base, err = listen(ctx, s.proxy); err != nil {
			return err
		}
		// Each tenant once on each replica it is sent to: once with affinity, once a replica in turn.
		passes := 1
		if name != "affinity" {
			passes = o.replicas
		}
		start := time.Now()
		for i := range o.tenants {
			for range passes {
				if _, _, err := c.Do(ctx, http.MethodGet, s.base+"/v1/tenants/"+tenantID(i)+"/cards?limit=10&q=report", nil, http.StatusOK); err != nil {
					return err
				}
			}
		}
		fmt.Printf("%s: every tenant searched on its replicas in %s\n", name, time.Since(start).Round(100*time.Millisecond))
	}

	var samples [2][]sample
	var took [2]time.Duration
	for round := range o.rounds {
		for k := range sets {
			k = (k + round) % len(sets)
			start := time.Now()
			samples[k] = append(samples[k], load(ctx, c, sets[k].base, o, o.d, uint64(10+round))...)
			took[k] += time.Since(start)
		}
	}
	if err := report(ctx, c, o, sets, samples, took); err != nil {
		return err
	}
	for _, s := range sets[1].servers {
		s.Stop()
	}
	sets[1].servers = nil
	return stopOne(ctx, c, bin, dir, env, o, sets[0])
}

// listen serves the proxy on a loopback port and checks its replicas' health until ctx ends.
func listen(ctx context.Context, p *Proxy) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	srv := &http.Server{Handler: p}
	go func() { _ = srv.Serve(ln) }()
	go func() { <-ctx.Done(); _ = srv.Close() }()
	go p.Check(ctx, 500*time.Millisecond)
	return "http://" + ln.Addr().String(), nil
}

// seed creates the tenants and registers their cards in batches of 200, from 4 clients.
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
	var once sync.Once
	var first error
	for range 4 {
		wg.Go(func() {
			for i := range next {
				err := seedTenant(ctx, c, base, o, i)
				if err != nil {
					once.Do(func() { first = err })
					cancel()
					return
				}
			}
		})
	}
	wg.Wait()
	return first
}

func seedTenant(ctx context.Context, c *probe.Client, base string, o options, i int) error {
	body, _ := json.Marshal(map[string]any{"id": tenantID(i), "name": tenantID(i)})
	if _, _, err := c.Do(ctx, http.MethodPost, base+"/v1/tenants", body, http.StatusCreated); err != nil {
		return err
	}
	n := cardsIn(o, i)
	for from := 0; from < n; from += 200 {
		batch := make([]cardgen.Card, 0, 200)
		for k := from; k < min(from+200, n); k++ {
			batch = append(batch, cardgen.Make(cardSeed(o, i), k))
		}
		body, _ := json.Marshal(batch)
		if _, _, err := c.Do(ctx, http.MethodPost, base+"/v1/tenants/"+tenantID(i)+"/cards:batch", body, http.StatusCreated); err != nil {
			return err
		}
	}
	return nil
}
