package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/agentcards/agentcards/authz"
	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/storage"
	"github.com/agentcards/agentcards/tenants"
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
	tc, generated, err := tokenConfig(cfg, true)
	if err != nil {
		return err
	}
	if generated && cfg.Database.Driver != "sqlite" {
		log.Warn("using a JWT secret generated into the data directory; replicas sharing a database need the same auth.secret")
	}
	tokens, err := authz.NewTokens(tc)
	if err != nil {
		return err
	}
	keys, err := serviceKeys(cfg)
	if err != nil {
		return err
	}
	db, err := storage.Open(ctx, cfg.Database.Driver, cfg.Database.DSN)
	if err != nil {
		return err
	}
	defer db.Close()
	if cfg.Database.Migrate {
		if err := db.Migrate(ctx); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
	}

	allow, err := outbound.ParsePrefixes(cfg.Outbound.Allow)
	if err != nil {
		return err
	}
	fetch := outbound.New(outbound.Config{Allow: allow, Timeout: cfg.Outbound.Timeout, FollowSameHostRedirects: true})
	enforcers := authz.NewEnforcers(storage.NewRuleStore(db))
	cardStore := storage.NewCardStore(db)
	var index *cards.Index
	// The background work (feed pruning, the follower, the listener) stops and is waited for
	// before the database closes (the defers run in reverse), so none queries a closed pool.
	var background sync.WaitGroup
	defer background.Wait()
	followCtx, stopBackground := context.WithCancel(ctx)
	defer stopBackground()
	background.Go(func() { pruneFeed(followCtx, cardStore, storage.NewTenantStore(db), cfg.Search.FeedRetention, log) })
	if cfg.Search.Index == "memory" {
		index = cards.NewIndex(cardStore, cardStore)
		// A write's transaction lasts at most a request: the follower reads that far back.
		index.Window = cfg.Server.RequestTimeout + 5*time.Second
		notify := make(chan tenants.ID, 64)
		syncFailed := func(t tenants.ID, err error) {
			log.Warn("index sync failed; retrying next round", "tenant", t, "err", err)
		}
		if cfg.Search.Listen {
			// Each (re)established LISTEN first syncs every loaded tenant: what was notified
			// while none was in effect reached nobody.
			resync := func() { index.SyncLoaded(followCtx, syncFailed) }
			switch err := db.Listen(followCtx, notify, resync, func(err error) { log.Warn("change-feed listener", "err", err) }); {
			case err == nil:
				log.Info("following the change feed with LISTEN/NOTIFY and polling", "interval", cfg.Search.PollInterval)
			case !errors.Is(err, storage.ErrNoListen) && followCtx.Err() == nil:
				log.Warn("change-feed LISTEN failed; following by polling until a retry (every second) succeeds", "err", err)
			}
		}
		background.Go(func() { index.Follow(followCtx, cfg.Search.PollInterval, notify, syncFailed) })
	}
	secrets, err := endpointSecrets(cfg, db, enforcers)
	if err != nil {
		return err
	}
	dispatcher, err := newDispatcher(cfg, db, enforcers, keys, secrets, log)
	if err != nil {
		return err
	}
	// Async delegations in flight get their outcome recorded before the database closes.
	defer dispatcher.Wait()
	// Listen first: without delegation.publicUrl, a loopback listen address is the callback base.
	ln, err := net.Listen("tcp", cfg.Server.Addr)
	if err != nil {
		return err
	}
	tenantService := &tenants.Service{
		Store:    storage.NewTenantStore(db),
		CacheTTL: cfg.Server.TenantCacheTTL,
		Changed: func(id tenants.ID) {
			enforcers.Invalidate(string(id))
			if index != nil {
				index.Drop(id)
			}
		},
	}
	// A rule written here makes the next request re-read the tenant row (and its revision).
	enforcers.Changed = func(t string) { tenantService.Forget(tenants.ID(t)) }
	api := web.New(web.Config{
		BodyLimit:      cfg.Server.BodyLimit,
		RequestTimeout: cfg.Server.RequestTimeout,
		A2ACacheMaxAge: cfg.A2A.CacheMaxAge,
		Logger:         log,
		PublicURL:      cfg.Delegation.PublicURL,
		ListenAddr:     ln.Addr().String(),
	}, web.Deps{
		Tenants:     tenantService,
		Cards:       &cards.Service{Store: cardStore, Authz: enforcers, Index: index, Fetch: fetch},
		Enforcers:   enforcers,
		Tokens:      tokens,
		ServiceKeys: keys,
		Delegations: dispatcher,
		Secrets:     secrets,
		Ready:       db.Ping,
	})

	srv := &http.Server{
		Handler:           api,
		ConnContext:       web.ConnContext,
		ReadHeaderTimeout: 10 * time.Second,
		// Reading a whole request, body included, is bounded too: otherwise a client (even
		// one without a token) that announces a body and trickles it holds the connection for
		// ever, also after its request was answered, while the server drains the body.
		ReadTimeout: cfg.Server.RequestTimeout,
		IdleTimeout: 2 * time.Minute,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()

	fmt.Fprintf(stdout, "agentcards %s listening on http://%s (database: %s)\n", buildVersion(), ln.Addr(), cfg.Database.Driver)
	fmt.Fprint(stdout, firstTokenHint)

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

// pruneFeed deletes change-feed entries older than retention, tenant by tenant, every
// retention/24 (an hour by default), until ctx ends.
func pruneFeed(ctx context.Context, feed *storage.CardStore, ts *storage.TenantStore, retention time.Duration, log *slog.Logger) {
	t := time.NewTicker(retention / 24)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		list, err := ts.List(ctx)
		if err != nil {
			log.Warn("feed pruning: list tenants", "err", err)
			continue
		}
		for _, tenant := range list {
			if _, err := feed.PruneChanges(ctx, tenant.ID, time.Now().Add(-retention)); err != nil && ctx.Err() == nil {
				log.Warn("feed pruning", "tenant", tenant.ID, "err", err)
			}
		}
	}
}

// firstTokenArgs are the arguments of the token command the first-token hint prints.
const firstTokenArgs = "token --subject root --platform-admin --ttl 1h"

// firstTokenHint tells a newcomer how to mint a first token, in both forms the README uses: with
// `go run` from the module's root, and with a binary built there. Both are printed, rather than
// guessed from how this process was started.
const firstTokenHint = "mint a first token, from this directory, with one of:\n" +
	"  go run ./cmd/agentcards " + firstTokenArgs + "\n" +
	"  ./agentcards " + firstTokenArgs + "   (after go build -o agentcards ./cmd/agentcards)\n"
