package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"runtime/debug"
	"time"

	"github.com/agentcards/agentcards/authz/token"
	"github.com/agentcards/agentcards/cards/delegation"
	"github.com/agentcards/agentcards/cards/liveness"
	"github.com/agentcards/agentcards/cards/search"
	"github.com/agentcards/agentcards/cards/webhooks"
	"github.com/agentcards/agentcards/cmd/agentcards/app"
	"github.com/agentcards/agentcards/cmd/agentcards/app/gcpace"
	"github.com/agentcards/agentcards/cmd/agentcards/app/metrics"
	"github.com/agentcards/agentcards/storage"
	"github.com/agentcards/agentcards/web"
	"github.com/agentcards/agentcards/web/outbound"
)

// serve runs the API until ctx ends (SIGTERM or SIGINT), then drains in-flight requests and
// closes the database. stray are the AGENTCARDS_ variables that name no key, to warn about.
func serve(ctx context.Context, cfg Config, stray []strayEnv, stdout, stderr io.Writer) error {
	log := newLogger(cfg.Log, stderr)
	for _, v := range stray {
		attrs := []any{"variable", v.Name}
		if v.Suggestion != "" {
			attrs = append(attrs, "did_you_mean", v.Suggestion)
		}
		log.Warn("environment variable names no configuration key; ignored", attrs...)
	}
	// Listen first: without delegation.publicUrl, a loopback listen address is the callback base.
	ln, err := net.Listen("tcp", cfg.Server.Addr)
	if err != nil {
		return err
	}
	// Metrics get a listener of their own (loopback by default): the API's port may be public.
	var m *metrics.Metrics
	var mln net.Listener
	if cfg.Server.MetricsAddr != "" {
		if mln, err = net.Listen("tcp", cfg.Server.MetricsAddr); err != nil {
			_ = ln.Close()
			return fmt.Errorf("server.metricsAddr: %w", err)
		}
		m = metrics.New(buildVersion())
	}
	a, db, err := buildApp(ctx, cfg, log, ln.Addr().String(), m)
	if err != nil {
		_ = ln.Close()
		if mln != nil {
			_ = mln.Close()
		}
		return err
	}
	defer db.Close()
	defer limitMemory(cfg.Search.MemoryBudget, log)()
	defer paceGC(cfg.Server.GCHeadroom, log)()
	a.Start(ctx)
	// After the server stops taking requests: async delegations in flight get their outcome,
	// and the background work stops, before the database closes.
	defer a.Close()

	srv := &http.Server{}
	a.ConfigureServer(srv)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()

	if mln != nil {
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", m.Handler())
		if cfg.Server.Pprof {
			mux.HandleFunc("/debug/pprof/", pprof.Index)
			mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
			mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
			mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
			mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
		}
		msrv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = msrv.Serve(mln) }()
		defer msrv.Close()
	}
	fmt.Fprintf(stdout, "agentcards %s listening on http://%s (database: %s)\n", buildVersion(), ln.Addr(), cfg.Database.Driver)
	fmt.Fprint(stdout, firstTokenHint)
	if mln != nil {
		fmt.Fprintf(stdout, "metrics on http://%s/metrics\n", mln.Addr())
	}

	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down: draining in-flight requests")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), cfg.Server.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// firstTokenArgs are the arguments of the token command the first-token hint prints.
const firstTokenArgs = "token --subject root --platform-admin --ttl 1h"

// firstTokenHint tells a newcomer how to mint a first token, in both forms the README uses: with
// `go run` from the module's root, and with a binary built there. Both are printed, rather than
// guessed from how this process was started.
const firstTokenHint = "mint a first token, from this directory, with one of:\n" +
	"  go run ./cmd/agentcards " + firstTokenArgs + "\n" +
	"  ./agentcards " + firstTokenArgs + "   (after go build -o agentcards ./cmd/agentcards)\n"

// buildApp opens the configured database (migrating it when configured to) and builds the
// service on it, as the server at listenAddr ("" for none: the in-process MCP door); the
// caller closes the database after the app.
func buildApp(ctx context.Context, cfg Config, log *slog.Logger, listenAddr string, m *metrics.Metrics) (*app.App, *storage.DB, error) {
	tc, generated, err := tokenConfig(cfg, true)
	if err != nil {
		return nil, nil, err
	}
	if generated && cfg.Database.Driver != "sqlite" {
		log.Warn("using a JWT secret generated into the data directory; replicas sharing a database need the same auth.secret")
	}
	tokens, err := token.NewTokens(tc)
	if err != nil {
		return nil, nil, err
	}
	keys, err := serviceKeys(cfg)
	if err != nil {
		return nil, nil, err
	}
	allow, err := outbound.ParsePrefixes(cfg.Outbound.Allow)
	if err != nil {
		return nil, nil, err
	}
	secretKey, err := cfg.Delegation.secretKey()
	if err != nil {
		return nil, nil, err
	}
	rerank, err := cfg.Search.Encoder.reranker()
	if err != nil {
		return nil, nil, err
	}
	db, err := storage.Open(ctx, cfg.Database.Driver, cfg.Database.DSN)
	if err != nil {
		return nil, nil, err
	}
	db.SetMaxConns(cfg.Database.MaxConns) // 0 keeps storage's default
	// Migrations and LISTEN take the direct DSN when one is set, database.dsn otherwise.
	if err := db.UseDirect(ctx, cfg.Database.DirectDSN); err != nil {
		db.Close()
		return nil, nil, err
	}
	if cfg.Database.Migrate {
		if err := db.Migrate(ctx); err != nil {
			db.Close()
			return nil, nil, fmt.Errorf("migrate: %w", err)
		}
	}
	d := cfg.Delegation
	pr, wh := cfg.Liveness.Probe, cfg.Webhooks
	a, err := app.New(app.Options{
		DB: db, Tokens: tokens, Keys: keys, SecretKey: secretKey, Log: log, Version: buildVersion(), MCPToolsets: cfg.MCP.Toolsets,
		Web: web.Config{
			BodyLimit:      cfg.Server.BodyLimit,
			RequestTimeout: cfg.Server.RequestTimeout,
			A2ACacheMaxAge: cfg.A2A.CacheMaxAge,
			PublicURL:      cfg.Delegation.PublicURL,
			ListenAddr:     listenAddr,
			CORSOrigins:    cfg.Server.CORSOrigins,
		},
		TenantCacheTTL: cfg.Server.TenantCacheTTL,
		NoIndex:        cfg.Search.Index == "none",
		Search: app.SearchOptions{
			PollInterval: cfg.Search.PollInterval, Listen: cfg.Search.Listen, FeedRetention: cfg.Search.FeedRetention,
			WarmWindow: cfg.Search.WarmWindow, WarmReady: cfg.Search.WarmReady, BuildOnWrite: cfg.Search.BuildOnWrite,
			SnapshotDir: snapshotDir(cfg.Search.SnapshotDir), OutageCopyBytes: cfg.Search.OutageCopyBytes,
			MemoryBudget: cfg.Search.MemoryBudget, Rerank: rerank,
			Streams: search.StreamLimits{PerTenant: cfg.Search.Streams.PerTenant, PerReplica: cfg.Search.Streams.PerReplica,
				Buffer: cfg.Search.Streams.Buffer},
		},
		Delegation: delegation.Config{
			MaxDepth: d.MaxDepth, DefaultTimeout: d.DefaultTimeout, MaxTimeout: d.MaxTimeout, MaxAsyncTimeout: d.MaxAsyncTimeout,
			MaxResultBytes: d.MaxResultBytes, BreakerFailures: d.BreakerFailures, BreakerCooldown: d.BreakerCooldown,
			RatePerSecond: d.RatePerSecond, RateBurst: d.RateBurst, RecordTaskBytes: recordTaskBytes(d),
		},
		Outbound:       outbound.Config{Allow: allow, Timeout: cfg.Outbound.Timeout},
		Refresh:        app.RefreshOptions{Interval: cfg.A2A.RefreshInterval},
		Metrics:        m,
		AuditRetention: cfg.Audit.Retention,
		MaxJSONDepth:   cfg.Server.MaxJSONDepth,
		Webhooks: app.WebhookOptions{Config: webhooks.Config{
			PollInterval: wh.PollInterval, Timeout: wh.Timeout, MinBackoff: wh.MinBackoff, MaxBackoff: wh.MaxBackoff,
			DisableAfter: wh.DisableAfter, MaxPerTenant: wh.MaxPerTenant, KeepDeliveries: wh.KeepDeliveries, Lease: wh.Lease,
			Concurrency: wh.Concurrency,
		}},
		Liveness: app.LivenessOptions{TTL: cfg.Liveness.TTL, Probe: liveness.ProbeConfig{
			Interval: pr.Interval, Failures: pr.Failures, Timeout: pr.Timeout,
			Concurrency: pr.Concurrency, PerTenant: pr.PerTenant, Path: pr.Path,
		}},
	})
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	return a, db, nil
}

// recordTaskBytes is how much of a task delegation records keep: none with delegation.recordTask
// off.
func recordTaskBytes(d DelegationConfig) int {
	if !d.RecordTask {
		return 0
	}
	return d.RecordTaskBytes
}

// snapshotDir is search.snapshotDir as the app takes it: none is off (empty).
func snapshotDir(dir string) string {
	if dir == "none" {
		return ""
	}
	return dir
}

// paceGC starts a gcpace.Pacer that keeps the heap's garbage between collections within
// server.gcHeadroom, unless it is 0 or GOGC sets the runtime's pace. It returns the function that
// stops it.
func paceGC(headroom int64, log *slog.Logger) func() {
	if headroom <= 0 {
		return func() {}
	}
	if os.Getenv("GOGC") != "" {
		log.Info("server.gcHeadroom is off: GOGC sets the garbage collector's pace", "GOGC", os.Getenv("GOGC"))
		return func() {}
	}
	p := gcpace.Start(headroom)
	log.Debug("server.gcHeadroom: the heap's garbage between collections is bounded (GOGC sets another pace)", "headroom", headroom)
	return p.Stop
}

// memoryMargin is what the Go runtime's memory limit adds to search.memoryBudget: the heap of
// everything else (requests, the database drivers, the policies), and room for the garbage
// between collections.
const memoryMargin = 160 << 20

// limitMemory sets the Go runtime's soft memory limit to search.memoryBudget and a margin, when
// there is a budget and GOMEMLIMIT does not set the limit already: the collector then runs
// before the heap's garbage takes the process past the budget by more than the margin. It
// returns the function that restores the limit before.
func limitMemory(budget int64, log *slog.Logger) func() {
	if budget <= 0 || os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	limit := budget + memoryMargin
	before := debug.SetMemoryLimit(limit)
	log.Info("search.memoryBudget: the Go runtime's memory limit is the budget and a margin (GOMEMLIMIT sets another)", "budget", budget, "limit", limit)
	return func() { debug.SetMemoryLimit(before) }
}
