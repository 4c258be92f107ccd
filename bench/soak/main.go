// Command soak runs the real binary under mixed load for a long time (default 30 minutes) and
// watches it for leaks and slowdowns: every -every (10 s) it scrapes the server's Prometheus
// endpoint for its resident memory, Go heap in use, goroutines, open file descriptors and search
// index size, and prints them on one line with the interval's request rate, latency and errors
// and the machine's load average (other work on the machine slows the run too).
// At the end it prints each series' trend over the run's second half (the first half is
// warm-up: caches, indexes, pools): the least-squares slope per 10 minutes, the rise it makes
// over that half, the noise (standard deviation of the residuals), and a verdict: "flat" when
// the rise is within 2x the noise, else "GROWS" (memory and the like, or the p99 latency) or
// "FALLS" (the request rate). It exits 1 if any series grows or falls so. Not for CI: it takes
// the machine for the whole run.
//
//	go run ./bench/soak -d 30m -every 10s -clients 32
//
// The load: -tenants tenants of -cards generated cards each, and closed-loop clients (each bound
// to one tenant) sending free-text, capability, tag and paged searches, card GETs, PATCH and PUT
// of the seeded cards, registrations and deletions of new cards (each client keeps at most a few,
// so the card count stays bounded), heartbeats, and sync delegations to a loopback agent that
// this tool serves (every card's endpoint is that agent, so nothing leaves the machine). Clients
// act as tenant users, not as the platform admin, so every request goes through the policy
// checks: an editor writes and sends heartbeats, an orchestrator searches, reads and delegates.
//
// SQLite (a temporary file) by default. -dialect postgres runs, unless -dsn names a server, on a
// Postgres cluster of its own with the settings of a fresh initdb (autovacuum on, as a
// production server has it), which it creates, starts and removes (it needs the Postgres server
// binaries and a postgres user; see storage/storagetest/privatepg); -dsn aims it at another
// server instead, such as the shared test server, to compare. -dialect mysql uses the server of
// -dsn, else AGENTCARDS_TEST_MYSQL_DSN, else the local test server. On a server the run creates
// a schema (database) of its own and drops it at the end. On Postgres it also prints what the
// run cost each table (pg_stat_user_tables): HOT updates, dead rows, sequential scans, growth.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/agentcards/agentcards/bench/internal/proc"
	"github.com/agentcards/agentcards/bench/internal/scratch"
	"github.com/agentcards/agentcards/storage/storagetest/privatepg"
)

// options are the flags.
type options struct {
	dialect, dsn   string
	d, every       time.Duration
	clients        int
	tenants, cards int
	delegationRate float64
	keep           int
	// profiles is where the server's CPU and heap profiles go; empty: none are taken.
	profiles string
}

func main() {
	var o options
	flag.StringVar(&o.dialect, "dialect", "sqlite", "sqlite, postgres or mysql")
	flag.StringVar(&o.dsn, "dsn", "", "Postgres or MySQL server to make a scratch schema on (default: for postgres a private cluster with default settings that the run starts; for mysql $AGENTCARDS_TEST_MYSQL_DSN, else the local test server)")
	flag.DurationVar(&o.d, "d", 30*time.Minute, "length of the load")
	flag.DurationVar(&o.every, "every", 10*time.Second, "sampling interval")
	flag.IntVar(&o.clients, "clients", 32, "closed-loop clients")
	flag.IntVar(&o.tenants, "tenants", 2, "tenants")
	flag.IntVar(&o.cards, "cards", 2000, "seeded cards per tenant")
	flag.Float64Var(&o.delegationRate, "delegation-rate", 0, "the server's delegation.ratePerSecond (per tenant); 0 turns the limit off so that every delegation reaches the agent (429s, when limited, are expected answers)")
	flag.IntVar(&o.keep, "keep", 8, "new cards each client keeps registered before it deletes its oldest")
	flag.StringVar(&o.profiles, "profiles", "", "directory for the server's profiles (server.pprof): a CPU profile over the first and the last quarter of the second half and a heap profile at each of their ends, to compare with go tool pprof -diff_base")
	flag.Parse()
	if o.d < 2*o.every || o.every <= 0 || o.clients < 1 || o.tenants < 1 || o.cards < 1 || o.keep < 1 {
		log.Fatal("want -d at least 2 x -every, and positive -every, -clients, -tenants, -cards, -keep")
	}
	if o.dsn == "" && o.dialect != "postgres" {
		o.dsn = scratch.DefaultServer(o.dialect)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	failed, err := run(ctx, o, os.Stdout)
	stop()
	if err != nil {
		log.Fatal(err)
	}
	if failed {
		os.Exit(1)
	}
}

// run sets up the database, the agent and the server, seeds the tenants, runs the load while
// sampling, and prints the samples and the trend to out. It reports whether a series grew or
// fell beyond its noise. Whatever happens, it stops the server and drops the scratch database
// (and removes a private cluster).
func run(ctx context.Context, o options, out io.Writer) (failed bool, err error) {
	work, err := os.MkdirTemp("", "agentcards-soak")
	if err != nil {
		return false, err
	}
	defer os.RemoveAll(work)
	bin, err := proc.Build(work)
	if err != nil {
		return false, err
	}
	where := ""
	if o.dsn != "" {
		where = redact(o.dialect, o.dsn)
	}
	if o.dialect == "postgres" && o.dsn == "" {
		c, err := startPrivatePostgres()
		if err != nil {
			return false, err
		}
		defer func() {
			if rerr := c.Remove(); rerr != nil && err == nil {
				err = rerr
			}
		}()
		o.dsn, where = c.DSN, "a private cluster (initdb defaults), log "+c.Log()
	}
	db, err := scratch.New(ctx, o.dialect, work, o.dsn, "soak")
	if err != nil {
		return false, err
	}
	defer func() {
		if derr := db.Drop(); derr != nil && err == nil {
			err = derr
		}
	}()
	var pg *pgWatch
	if o.dialect == "postgres" {
		if pg, err = newPGWatch(ctx, db.DSN); err != nil {
			return false, err
		}
		defer pg.close()
		where += ", autovacuum " + pg.autovacuum
		if pg.autovacuum != "on" {
			where += " (dead rows pile up: not a production setting)"
		}
	}
	ag, err := startAgent()
	if err != nil {
		return false, err
	}
	defer ag.close()
	// serve prints the metrics address after the API's, and proc.Start stops reading at the
	// API's line: take a free loopback port here and give it to the server.
	metricsAddr, err := proc.FreePort()
	if err != nil {
		return false, err
	}
	env := append(os.Environ(), "AGENTCARDS_SERVER_ADDR=127.0.0.1:0", "AGENTCARDS_SERVER_METRICS_ADDR="+metricsAddr,
		"AGENTCARDS_LOG_LEVEL=warn", "AGENTCARDS_DATABASE_DRIVER="+o.dialect, "AGENTCARDS_DATABASE_DSN="+db.DSN,
		"AGENTCARDS_AUTH_SECRET=soak-bench-secret-0123456789abcdef0123",
		"AGENTCARDS_OUTBOUND_ALLOW=127.0.0.1/32",
		"AGENTCARDS_DELEGATION_RATE_PER_SECOND="+strconv.FormatFloat(o.delegationRate, 'f', -1, 64),
		"AGENTCARDS_SERVER_PPROF="+strconv.FormatBool(o.profiles != ""))
	srv, err := proc.Start(bin, work, env) // migrates the scratch database before it listens
	if err != nil {
		return false, err
	}
	defer srv.Stop()
	ttl := o.d + time.Hour // the tokens outlive the run
	admin, err := mint(bin, work, env, ttl, "--subject", "bench", "--platform-admin")
	if err != nil {
		return false, err
	}
	a := &api{
		client: &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConns: 4 * o.clients, MaxIdleConnsPerHost: 4 * o.clients}},
		base:   srv.Base,
	}
	fmt.Fprintf(out, "soak: %s, %d tenants x %d cards, %d clients, %s, a sample every %s; server pid %d, API %s, metrics http://%s/metrics, agent %s\n",
		o.dialect, o.tenants, o.cards, o.clients, o.d, o.every, srv.Pid(), srv.Base, metricsAddr, ag.base)
	if where != "" {
		fmt.Fprintf(out, "database: %s\n", where)
	}
	ts := make([]*tenant, o.tenants)
	for i := range ts {
		t, err := setupTenant(a, bin, work, env, admin, ttl, i, o.cards, ag.base)
		if err != nil {
			return false, err
		}
		ts[i] = t
	}
	progress("seeded %d tenants of %d cards", o.tenants, o.cards)
	sc := &scraper{client: &http.Client{Timeout: 5 * time.Second}, url: "http://" + metricsAddr + "/metrics", pid: srv.Pid()}
	if o.profiles != "" {
		if err := os.MkdirAll(o.profiles, 0o755); err != nil {
			return false, err
		}
		sc.pprof = "http://" + metricsAddr + "/debug/pprof/"
	}
	samples, err := soak(ctx, o, a, ts, sc, pg, out)
	if err != nil {
		return false, err
	}
	fmt.Fprintf(out, "agent: %d tasks received\n", ag.calls.Load())
	if pg != nil {
		pg.report(out)
	}
	return report(out, samples), nil
}

// startPrivatePostgres creates and starts a Postgres cluster with the settings of a fresh
// initdb, for the run alone.
func startPrivatePostgres() (*privatepg.Cluster, error) {
	const hint = "; or aim the run at a server with -dsn"
	if err := privatepg.Available(); err != nil {
		return nil, fmt.Errorf("%w%s", err, hint)
	}
	c, err := privatepg.Init()
	if err != nil {
		return nil, fmt.Errorf("%w%s", err, hint)
	}
	if err := c.Start(); err != nil {
		_ = c.Remove()
		return nil, fmt.Errorf("%w%s", err, hint)
	}
	progress("started a private Postgres cluster (%s)", c.Log())
	return c, nil
}

// redact hides the password of a server's DSN (a Postgres URL or a MySQL DSN), for printing;
// a DSN of another form is not printed.
func redact(dialect, dsn string) string {
	if u, err := url.Parse(dsn); err == nil && u.Scheme != "" {
		return u.Redacted()
	}
	if cfg, err := gomysql.ParseDSN(dsn); err == nil && dialect == "mysql" {
		if cfg.Passwd != "" {
			cfg.Passwd = "xxxxx"
		}
		return cfg.FormatDSN()
	}
	return "the server of -dsn"
}

// mint makes a token with `bin token`, with the server's dir and env: args name the subject and
// the tenant or --platform-admin.
func mint(bin, dir string, env []string, ttl time.Duration, args ...string) (string, error) {
	cmd := exec.Command(bin, append([]string{"token", "--ttl", ttl.String()}, args...)...)
	cmd.Dir, cmd.Env, cmd.Stderr = dir, env, os.Stderr
	tok, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("token %s: %w", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(tok)), nil
}

// progress tells on stderr how the setup goes; samples and the report go to stdout.
func progress(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }
