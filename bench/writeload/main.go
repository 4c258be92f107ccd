// Command writeload measures card writes under load from outside (issue 11): it builds and
// starts the real binary on a loopback port, on SQLite, Postgres or MySQL, and has N concurrent
// clients (-writers, default 1, 16 and 64) register new cards and patch them in turn over HTTP,
// in a fresh tenant never searched ("none") and in one of -cards cards whose search index a
// search loaded ("loaded"). Against each it measures a baseline in the same run and database:
// N goroutines writing the same rows (card, change-feed and audit entries, one transaction per write)
// with plain database/sql and the server's connection settings. Server and baseline phases
// alternate, -rounds times, each in tenants of its own. Then (-mixed) 64 clients send 70% free-
// text searches and 30% writes to one loaded tenant, and the same mix again with each write made
// by the baseline instead (in a tenant of its own), while the server answers the searches: what
// the database alone makes of a write under that load. It prints writes/s, p50 and p99 per
// phase, the ratios, and each goal of the issue beside its measure.
//
//	go run ./bench/writeload -dialect sqlite -writers 1,16,64 -cards 2000 -d 3s -rounds 2
//
// Postgres and MySQL runs create a schema (database) of their own on the server named by -dsn,
// or AGENTCARDS_TEST_POSTGRES_DSN / AGENTCARDS_TEST_MYSQL_DSN, and drop it at the end.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agentcards/agentcards/bench/internal/proc"
	scratchdb "github.com/agentcards/agentcards/bench/internal/scratch"
)

// options are the flags.
type options struct {
	dialect, dsn string
	writers      []int
	cards        int
	d            time.Duration
	rounds       int
	mixed        bool
	clients      int
	batch        int
	regWriters   int
}

func main() {
	var o options
	var writers string
	flag.StringVar(&o.dialect, "dialect", "sqlite", "sqlite, postgres or mysql")
	flag.StringVar(&o.dsn, "dsn", "", "Postgres or MySQL server to make a scratch schema on (default $AGENTCARDS_TEST_POSTGRES_DSN or $AGENTCARDS_TEST_MYSQL_DSN, else the local test server)")
	flag.StringVar(&writers, "writers", "1,16,64", "concurrent writers, comma-separated")
	flag.IntVar(&o.cards, "cards", 2000, "cards in a loaded tenant")
	flag.DurationVar(&o.d, "d", 3*time.Second, "length of one phase")
	flag.IntVar(&o.rounds, "rounds", 2, "rounds; each runs every server and baseline phase once, alternating")
	flag.BoolVar(&o.mixed, "mixed", true, "also run the 70/30 search/write mix, one phase per round")
	flag.IntVar(&o.clients, "clients", 64, "clients of the mixed phase")
	flag.IntVar(&o.batch, "batch", 200, "cards per request of the batch registration phase (0: no registration phases)")
	flag.IntVar(&o.regWriters, "regwriters", 16, "clients of the registration phases")
	flag.Parse()
	for _, s := range strings.Split(writers, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			log.Fatalf("-writers: %q is not a count", s)
		}
		o.writers = append(o.writers, n)
	}
	if o.dsn == "" {
		o.dsn = scratchdb.DefaultServer(o.dialect)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, o, os.Stdout)
	stop()
	if err != nil {
		log.Fatal(err)
	}
}

// run sets up the database, the server and the baseline, runs the rounds and prints the report
// to out. Whatever happens, it stops the server and drops the scratch database.
func run(ctx context.Context, o options, out io.Writer) (err error) {
	work, err := os.MkdirTemp("", "agentcards-writeload")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	bin, err := proc.Build(work)
	if err != nil {
		return err
	}
	db, err := newScratch(ctx, o.dialect, work, o.dsn)
	if err != nil {
		return err
	}
	defer func() {
		if derr := db.Drop(); derr != nil && err == nil {
			err = derr
		}
	}()
	env := proc.Env(
		"AGENTCARDS_DATABASE_DRIVER="+o.dialect, "AGENTCARDS_DATABASE_DSN="+db.DSN,
		"AGENTCARDS_AUTH_SECRET=writeload-bench-secret-0123456789abcdef")
	srv, err := proc.Start(bin, work, env) // migrates the scratch database before it listens
	if err != nil {
		return err
	}
	defer srv.Stop()
	token, err := proc.Token(bin, work, env)
	if err != nil {
		return err
	}
	pool, err := db.openPool()
	if err != nil {
		return err
	}
	defer pool.Close()
	if db.stopCheckpoints != nil {
		defer db.stopCheckpoints()
	}

	b := &bench{
		o:      o,
		api:    &api{client: &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 2 * max(o.clients, 64)}}, base: srv.Base, token: token},
		base:   newBaseline(pool, o.dialect),
		deck:   newDeck(7, 256),
		seeded: seedCards(o.cards),
		server: map[phase]*rounds{}, baseline: map[phase]*rounds{},
	}
	if err := b.runAll(ctx); err != nil {
		return err
	}
	b.report(out)
	return b.failures()
}

// phase names a writer phase: how many writers, and whether the tenant's index is loaded.
type phase struct {
	writers int
	loaded  bool
}

func (p phase) index() string {
	if p.loaded {
		return "loaded"
	}
	return "none"
}

// rounds gathers a phase's results over the rounds.
type rounds struct {
	all   result
	rates []float64 // writes/s of each round
}

func (r *rounds) add(res result) {
	r.all.merge(&res)
	r.all.elapsed += res.elapsed
	r.rates = append(r.rates, res.rate(kindRegister, kindPatch))
}

// bench is one run.
type bench struct {
	o        options
	api      *api
	base     *baseline
	deck     *deck
	seeded   []card
	server   map[phase]*rounds
	baseline map[phase]*rounds
	mixed    rounds
	// single and batched are the registration phases: the same clients registering new cards
	// one a request, and o.batch a request.
	single, batched rounds
	// floor is the mixed load with its writes made by the baseline: what the database alone
	// makes of a write while the server answers the searches.
	floor rounds
}

// runAll runs the rounds: in each, every writer phase on the server and on the baseline (which
// goes first alternates from phase to phase and round to round), then a mixed phase.
func (b *bench) runAll(ctx context.Context) error {
	const mixedTenant, floorTenant = "mixed", "bmixed"
	if b.o.mixed {
		if err := b.loadedTenant(mixedTenant); err != nil {
			return err
		}
		if err := b.base.createTenant(ctx, floorTenant, b.seeded); err != nil {
			return fmt.Errorf("baseline tenant: %w", err)
		}
		defer b.base.dropTenant(context.WithoutCancel(ctx), floorTenant)
	}
	turn := 0
	for r := range b.o.rounds {
		for _, n := range b.o.writers {
			for _, loaded := range []bool{false, true} {
				p := phase{n, loaded}
				steps := []func() error{func() error { return b.runServer(ctx, p, r) }, func() error { return b.runBaseline(ctx, p, r) }}
				if turn%2 == 1 {
					steps[0], steps[1] = steps[1], steps[0]
				}
				turn++
				for _, step := range steps {
					if err := step(); err != nil {
						return err
					}
					if err := ctx.Err(); err != nil {
						return err
					}
				}
			}
		}
		if b.o.batch > 0 {
			if err := b.runRegistrations(ctx, r); err != nil {
				return err
			}
		}
		if b.o.mixed {
			res := b.api.mixed(ctx, mixedTenant, b.o.clients, b.o.d, b.seeded, uint64(r), nil)
			progress("round %d mixed: %.0f searches/s, %.0f writes/s", r+1, res.rate(kindSearch), res.rate(kindPatch, kindPut))
			b.mixed.add(res)
			res = b.api.mixed(ctx, mixedTenant, b.o.clients, b.o.d, b.seeded, uint64(r), func(c card) error {
				return b.base.touch(ctx, floorTenant, c)
			})
			progress("round %d mixed, writes by the baseline: %.0f searches/s, %.0f writes/s", r+1, res.rate(kindSearch), res.rate(kindPatch))
			b.floor.add(res)
		}
	}
	return nil
}

// loadedTenant creates a tenant with the seeded cards and loads its index.
func (b *bench) loadedTenant(tenant string) error {
	if err := b.api.createTenant(tenant); err != nil {
		return err
	}
	if err := b.api.seed(tenant, b.seeded); err != nil {
		return err
	}
	return b.api.load(tenant)
}

func (b *bench) runServer(ctx context.Context, p phase, r int) error {
	tenant := fmt.Sprintf("w%d-%s-r%d", p.writers, p.index(), r)
	var err error
	if p.loaded {
		err = b.loadedTenant(tenant)
	} else {
		err = b.api.createTenant(tenant)
	}
	if err != nil {
		return err
	}
	res := b.api.writers(ctx, tenant, p.writers, b.o.d, b.deck)
	progress("round %d server   %2d writers, index %-6s: %6.0f writes/s", r+1, p.writers, p.index(), res.rate(kindRegister, kindPatch))
	add(b.server, p, res)
	return b.api.deleteTenant(tenant)
}

// runRegistrations runs the registration phases of round r, one card a request and a batch a
// request (which goes first alternates with the round), each in a new tenant with no index.
func (b *bench) runRegistrations(ctx context.Context, r int) error {
	steps := []struct {
		name  string
		batch int
		into  *rounds
	}{{"single", 1, &b.single}, {"batch", b.o.batch, &b.batched}}
	if r%2 == 1 {
		steps[0], steps[1] = steps[1], steps[0]
	}
	for _, s := range steps {
		tenant := fmt.Sprintf("reg-%s-r%d", s.name, r)
		if err := b.api.createTenant(tenant); err != nil {
			return err
		}
		res := b.api.registrations(ctx, tenant, b.o.regWriters, s.batch, b.o.d, b.deck)
		progress("round %d register %2d clients, %4d cards a request: %6.0f cards/s", r+1, b.o.regWriters, s.batch, res.rate(kindRegister))
		s.into.add(res)
		if err := b.api.deleteTenant(tenant); err != nil {
			return err
		}
	}
	return ctx.Err()
}

func (b *bench) runBaseline(ctx context.Context, p phase, r int) error {
	tenant := fmt.Sprintf("b%d-%s-r%d", p.writers, p.index(), r)
	// The loaded case's baseline tenant holds the same cards, so both write into tables alike.
	var seed []card
	if p.loaded {
		seed = b.seeded
	}
	if err := b.base.createTenant(ctx, tenant, seed); err != nil {
		return fmt.Errorf("baseline tenant: %w", err)
	}
	res := b.base.writers(ctx, tenant, p.writers, b.o.d, b.deck)
	progress("round %d baseline %2d writers, index %-6s: %6.0f writes/s", r+1, p.writers, p.index(), res.rate(kindRegister, kindPatch))
	add(b.baseline, p, res)
	if err := b.base.dropTenant(ctx, tenant); err != nil {
		return fmt.Errorf("baseline tenant: %w", err)
	}
	return nil
}

func add(m map[phase]*rounds, p phase, res result) {
	if m[p] == nil {
		m[p] = &rounds{}
	}
	m[p].add(res)
}

// progress tells on stderr how the run goes; the report goes to stdout.
func progress(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }
