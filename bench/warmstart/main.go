// Command warmstart measures the warm start of the search indexes from outside. The goal it
// checks: "the first search after a restart at 10k cards within 2x a plain SQL scan of that
// tenant, measured side by side; at 100k, within the 3 s build."
//
// It builds the real binary once. For each size it starts it on a fresh database, creates a
// tenant, registers that many generated cards (bench/cardgen) in batches of 200, searches the
// tenant once so that it is recorded as searched (tenant_activity, checked in the database
// before the stop), and stops it with SIGTERM. Then, -rounds times, in an order that rotates
// from round to round, it:
//
//   - warm: starts the server (search.warmWindow 24h) and, as soon as the port answers
//     (GET /health), sends a free-text search (q=-q, limit=10), timed from the start of the
//     process and from the port's first answer;
//   - cold: the same with search.warmWindow 0 (no warm start: the search builds the index);
//   - ready: starts it with search.warmReady on and times /ready's first 200 (the warm build,
//     which reads the index back from the snapshot the last stop wrote: search.snapshotDir),
//     then one search;
//   - build: ready with search.snapshotDir none: the index built from the cards;
//   - scan: with the server stopped, reads the tenant's card documents with plain database/sql,
//     decodes each and matches the query word case-insensitively as a substring of the name,
//     the description and the capabilities' names and descriptions, counting the matches: how
//     a registry without an index answers that search.
//
// It prints p50 / max over the rounds, the ratios first search / scan, and the goal lines.
//
//	go run ./bench/warmstart -sizes 10000,100000 -rounds 3
//
// Postgres and MySQL runs (-dialect) make a schema (database) of their own per size on the server
// of -dsn, or AGENTCARDS_TEST_POSTGRES_DSN / AGENTCARDS_TEST_MYSQL_DSN, and drop it at the end.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agentcards/agentcards/bench/internal/proc"
	"github.com/agentcards/agentcards/bench/internal/scratch"
)

// options are the flags.
type options struct {
	dialect, dsn string
	sizes        []int
	rounds       int
	query        string
	seeders      int
	settle       time.Duration
	seed         uint64
	serverLog    string
	modes        []mode
	// profiles is where modes ready's and build's CPU profiles go; empty: none are taken.
	profiles string
	// noSnapshots turns search.snapshotDir off in every mode (build is then ready).
	noSnapshots bool
}

func main() {
	var o options
	var sizes string
	flag.StringVar(&o.dialect, "dialect", "sqlite", "sqlite, postgres or mysql")
	flag.StringVar(&o.dsn, "dsn", "", "Postgres or MySQL server to make scratch schemas on (default $AGENTCARDS_TEST_POSTGRES_DSN or $AGENTCARDS_TEST_MYSQL_DSN, else the local test server)")
	flag.StringVar(&sizes, "sizes", "10000,100000", "cards in the tenant, comma-separated; each size gets a database of its own")
	flag.IntVar(&o.rounds, "rounds", 3, "rounds; each restarts the server with and without warm start and with warmReady, and runs the SQL scan")
	flag.StringVar(&o.query, "q", "latency", "the free-text query: one word of bench/cardgen's vocabulary")
	flag.IntVar(&o.seeders, "seeders", 4, "concurrent clients registering the cards (200 a request)")
	flag.DurationVar(&o.settle, "settle", 0, "wait this long after the seeding before the first restart (the index re-reads the change feed of the last 35 s at a build)")
	flag.Uint64Var(&o.seed, "seed", 1, "seed of the generated cards")
	flag.StringVar(&o.serverLog, "serverlog", "warn", "the servers' log.level (their log goes to stderr; info shows the warm start's own timing)")
	flag.StringVar(&o.profiles, "profiles", "", "directory for a CPU profile of each ready and build run's first 10 s, cpu-<mode>-<cards>-<round>.pprof (server.pprof)")
	flag.BoolVar(&o.noSnapshots, "nosnapshots", false, "search.snapshotDir none in every mode: every restart builds from the cards")
	modeList := flag.String("modes", "warm,cold,ready,build,scan", "the modes of each round, comma-separated")
	flag.Parse()
	for _, s := range strings.Split(*modeList, ",") {
		if strings.TrimSpace(s) == "" {
			continue // -modes "": the registrations and the first search only
		}
		m, ok := parseMode(strings.TrimSpace(s))
		if !ok {
			log.Fatalf("-modes: %q is not one of %s", s, strings.Join(modeNames[:], ", "))
		}
		o.modes = append(o.modes, m)
	}
	for _, s := range strings.Split(sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			log.Fatalf("-sizes: %q is not a count", s)
		}
		o.sizes = append(o.sizes, n)
	}
	if o.rounds < 1 || o.seeders < 1 {
		log.Fatal("-rounds and -seeders must be at least 1")
	}
	o.query = strings.ToLower(strings.TrimSpace(o.query))
	if o.query == "" || strings.ContainsAny(o.query, " \t") {
		log.Fatal("-q: want one word")
	}
	if o.dsn == "" {
		o.dsn = scratch.DefaultServer(o.dialect)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, o, os.Stdout)
	stop()
	if err != nil {
		log.Fatal(err)
	}
}

// run builds the binary, measures each size and prints the report to out.
func run(ctx context.Context, o options, out io.Writer) error {
	work, err := os.MkdirTemp("", "agentcards-warmstart")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	if o.profiles != "" {
		if err := os.MkdirAll(o.profiles, 0o755); err != nil {
			return err
		}
	}
	bin, err := proc.Build(work)
	if err != nil {
		return err
	}
	var results []*sizeResult
	for _, n := range o.sizes {
		dir := filepath.Join(work, fmt.Sprintf("n%d", n))
		if err := os.Mkdir(dir, 0o700); err != nil {
			return err
		}
		res, err := measureSize(ctx, o, bin, dir, n)
		if err != nil {
			return fmt.Errorf("%d cards: %w", n, err)
		}
		results = append(results, res)
	}
	report(out, o, results)
	return nil
}

// progress tells on stderr how the run goes; the report goes to stdout.
func progress(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }
