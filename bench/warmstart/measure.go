package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"time"

	"github.com/agentcards/agentcards/bench/internal/proc"
)

// tenant is the one tenant of each size's database.
const tenant = "warm"

// mode is one way of measuring the first search of a round.
type mode int

const (
	// warm restarts the server with warm start (search.warmWindow 24h) and searches at once.
	warm mode = iota
	// cold restarts it without (search.warmWindow 0): the search builds the index.
	cold
	// ready restarts it with warm start and search.warmReady, and waits for /ready's 200.
	ready
	// build is ready with search.snapshotDir none: the index built from the cards, not read
	// back from its snapshot.
	build
	// scan answers the search with plain database/sql while the server is stopped.
	scan
	modes
)

func (m mode) String() string {
	return [...]string{"warm start", "no warm start", "warmReady", "build", "SQL scan"}[m]
}

// modeNames are the modes' flag names.
var modeNames = [modes]string{"warm", "cold", "ready", "build", "scan"}

// parseMode reads a mode's flag name.
func parseMode(s string) (mode, bool) {
	for m, name := range modeNames {
		if s == name {
			return mode(m), true
		}
	}
	return 0, false
}

// restart is one start of the server and its first search.
type restart struct {
	// port is when /health first answered, from the start of the process.
	port time.Duration
	// fromStart and fromPort are when the first search's answer came, from the start of the
	// process and from the port's first answer (for ready: the search's own latency in both).
	fromStart, fromPort time.Duration
	total               int
	// ready and readyFromPort are when /ready first answered 200 (mode ready), unready how many
	// 503s it answered first.
	ready, readyFromPort time.Duration
	unready              int
}

// sizeResult is everything measured at one size.
type sizeResult struct {
	n        int
	seedTook time.Duration
	// firstSearch is how long the first search after the registrations took to answer 200,
	// firstRefused the 503s it had before (one a second, as Retry-After asks).
	firstSearch  time.Duration
	firstRefused int
	total        int // the server's total for the query, at the seeding
	runs         [modes][]restart
	scans        []scanResult
	// unrecorded counts restarts after which the search was not seen in tenant_activity.
	unrecorded int
}

// bench is the measurement of one size.
type bench struct {
	o        options
	bin, dir string
	db       *database
	token    string
	// searched is tenant_activity.searched_at as last seen.
	searched string
	res      *sizeResult
}

// env is the server's environment in mode m (AGENTCARDS_* names as cmd/agentcards/config.go
// derives them from search.warmWindow and search.warmReady). Later entries win over the caller's.
func (b *bench) env(m mode) []string {
	window, readyOn, snapshots := "24h", "false", "" // "": <dataDir>/index, the default
	switch m {
	case cold:
		window = "0"
	case ready:
		readyOn = "true"
	case build:
		readyOn, snapshots = "true", "none"
	}
	if b.o.noSnapshots {
		snapshots = "none"
	}
	return proc.Env("AGENTCARDS_LOG_LEVEL="+b.o.serverLog,
		"AGENTCARDS_DATABASE_DRIVER="+b.o.dialect, "AGENTCARDS_DATABASE_DSN="+b.db.DSN,
		"AGENTCARDS_AUTH_SECRET=warmstart-bench-secret-0123456789abcdef",
		"AGENTCARDS_SEARCH_WARM_WINDOW="+window, "AGENTCARDS_SEARCH_WARM_READY="+readyOn, "AGENTCARDS_SEARCH_SNAPSHOT_DIR="+snapshots)
}

// measureSize seeds a database of n cards, then runs the rounds.
func measureSize(ctx context.Context, o options, bin, dir string, n int) (res *sizeResult, err error) {
	db, err := newDatabase(ctx, o.dialect, dir, o.dsn)
	if err != nil {
		return nil, err
	}
	defer func() {
		if derr := db.Drop(); derr != nil && err == nil {
			err = derr
		}
	}()
	b := &bench{o: o, bin: bin, dir: dir, db: db, res: &sizeResult{n: n}}
	if err := b.setUp(ctx); err != nil {
		return nil, err
	}
	if o.settle > 0 {
		progress("%d cards: waiting %s before the first restart", n, o.settle)
		select {
		case <-time.After(o.settle):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	for r := range o.rounds {
		for i := range b.o.modes {
			m := b.o.modes[(r+i)%len(b.o.modes)] // the order rotates from round to round
			if err := b.measure(ctx, m, r); err != nil {
				return nil, fmt.Errorf("round %d, %s: %w", r+1, m, err)
			}
		}
	}
	return b.res, nil
}

// setUp starts the server on the new database, creates the tenant, registers the cards, has the
// tenant searched once, waits until tenant_activity records that search, and stops the server.
func (b *bench) setUp(ctx context.Context) error {
	srv, err := proc.Start(b.bin, b.dir, b.env(warm)) // migrates the new database before it listens
	if err != nil {
		return err
	}
	defer srv.Stop()
	if b.token, err = proc.Token(b.bin, b.dir, b.env(warm)); err != nil {
		return err
	}
	c := newClient(srv.Base, b.token)
	defer c.close()
	if err := c.createTenant(ctx, tenant); err != nil {
		return err
	}
	start := time.Now()
	if err := c.seed(ctx, tenant, b.res.n, b.o.seeders, b.o.seed); err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	b.res.seedTook = time.Since(start)
	progress("%d cards registered in %s", b.res.n, b.res.seedTook.Round(time.Millisecond))
	// The first search after the registrations, as a client that follows Retry-After makes it:
	// timed until its first 200, its 503s counted.
	start = time.Now()
	for {
		b.res.total, err = c.search(ctx, tenant, b.o.query)
		var refused *statusError
		if errors.As(err, &refused) && refused.status == http.StatusServiceUnavailable && b.res.firstRefused < 100 {
			b.res.firstRefused++
			progress("the first search was refused: %v", err)
			select {
			case <-time.After(time.Second):
			case <-ctx.Done():
				return ctx.Err()
			}
			continue
		}
		if err != nil {
			return err
		}
		break
	}
	b.res.firstSearch = time.Since(start)
	progress("the first search answered in %s (%d refused before)", b.res.firstSearch.Round(time.Millisecond), b.res.firstRefused)
	// The server records the search after answering it, in the background; a stop before that
	// would leave the tenant unknown to the warm start.
	at, ok, err := b.db.awaitSearched(ctx, tenant, "", 30*time.Second)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("the search of tenant %q was not recorded in tenant_activity within 30 s", tenant)
	}
	b.searched = at
	return nil
}

// measure runs mode m once.
func (b *bench) measure(ctx context.Context, m mode, round int) error {
	if m == scan {
		s, err := b.db.scan(ctx, tenant, b.o.query)
		if err != nil {
			return err
		}
		if s.cards != b.res.n {
			return fmt.Errorf("the scan read %d cards, want %d", s.cards, b.res.n)
		}
		b.res.scans = append(b.res.scans, s)
		progress("%d cards, round %d, %-13s: %s (%d of %d cards match)", b.res.n, round+1, m, fmtDur(s.took), s.matched, s.cards)
		return nil
	}
	r, err := b.restart(ctx, m)
	if err != nil {
		return err
	}
	b.res.runs[m] = append(b.res.runs[m], r)
	line := fmt.Sprintf("%d cards, round %d, %-13s: port answered at %s; first search %s from start, %s from port",
		b.res.n, round+1, m, fmtDur(r.port), fmtDur(r.fromStart), fmtDur(r.fromPort))
	if m == ready || m == build {
		line = fmt.Sprintf("%d cards, round %d, %-13s: port answered at %s; /ready 200 at %s from start, %s from port (%d x 503 before); then a search took %s",
			b.res.n, round+1, m, fmtDur(r.port), fmtDur(r.ready), fmtDur(r.readyFromPort), r.unready, fmtDur(r.fromPort))
	}
	progress("%s", line)
	return nil
}

// restart starts the server in mode m, waits for its port to answer (and in mode ready for
// /ready's 200), sends the first search, and stops the server once the search is recorded.
func (b *bench) restart(ctx context.Context, m mode) (restart, error) {
	var r restart
	env := b.env(m)
	profile := ""
	if (m == ready || m == build) && b.o.profiles != "" {
		addr, err := proc.FreePort()
		if err != nil {
			return r, err
		}
		env = append(env, "AGENTCARDS_SERVER_METRICS_ADDR="+addr, "AGENTCARDS_SERVER_PPROF=true")
		profile = addr
	}
	start := time.Now()
	srv, err := proc.Start(b.bin, b.dir, env)
	if err != nil {
		return r, err
	}
	defer srv.Stop()
	if profile != "" {
		// From the server's start (the build began a moment ago), for long enough to hold it.
		done := make(chan struct{})
		path := filepath.Join(b.o.profiles, fmt.Sprintf("cpu-%s-%d-%d.pprof", modeNames[m], b.res.n, len(b.res.runs[m])+1))
		go func() {
			defer close(done)
			if err := proc.Profile(profile, 10*time.Second, path); err != nil {
				progress("profile: %v", err)
			}
		}()
		defer func() { <-done }()
	}
	c := newClient(srv.Base, b.token)
	defer c.close()
	if err := c.awaitHealth(ctx); err != nil {
		return r, err
	}
	port := time.Now()
	r.port = port.Sub(start)
	if m == ready || m == build {
		if r.unready, err = c.awaitReady(ctx); err != nil {
			return r, err
		}
		at := time.Now()
		r.ready, r.readyFromPort = at.Sub(start), at.Sub(port)
	}
	sent := time.Now()
	if r.total, err = c.search(ctx, tenant, b.o.query); err != nil {
		return r, err
	}
	done := time.Now()
	r.fromStart, r.fromPort = done.Sub(start), done.Sub(port)
	if m == ready || m == build {
		r.fromStart, r.fromPort = done.Sub(sent), done.Sub(sent)
	}
	if r.total != b.res.total {
		return r, fmt.Errorf("the search found %d cards after the restart, %d before", r.total, b.res.total)
	}
	// Stop only once this process has recorded the search, as a replica that keeps running
	// would: the next restart finds the tenant recently searched whatever the mode.
	at, ok, err := b.db.awaitSearched(ctx, tenant, b.searched, 5*time.Second)
	if err != nil {
		return r, err
	}
	if !ok {
		b.res.unrecorded++
	}
	b.searched = at
	return r, nil
}
