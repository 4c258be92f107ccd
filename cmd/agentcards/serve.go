package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/agentcards/agentcards/authz"
	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/storage"
	"github.com/agentcards/agentcards/tenants"
	"github.com/agentcards/agentcards/web"
)

// serve runs the API until ctx ends (SIGTERM or SIGINT), then drains in-flight requests and
// closes the database.
func serve(ctx context.Context, cfg Config, stdout, stderr io.Writer) error {
	log := newLogger(cfg.Log, stderr)
	tc, generated, err := tokenConfig(cfg)
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

	enforcers := authz.NewEnforcers(storage.NewRuleStore(db))
	secrets, err := endpointSecrets(cfg, db, enforcers)
	if err != nil {
		return err
	}
	dispatcher, err := newDispatcher(cfg, db, enforcers, keys, secrets)
	if err != nil {
		return err
	}
	// Async delegations in flight get their outcome recorded before the database closes.
	defer dispatcher.Wait()
	api := web.New(web.Config{
		BodyLimit:      cfg.Server.BodyLimit,
		RequestTimeout: cfg.Server.RequestTimeout,
		Logger:         log,
		PublicURL:      cfg.Delegation.PublicURL,
	}, web.Deps{
		Tenants: &tenants.Service{
			Store:   storage.NewTenantStore(db),
			Changed: func(id tenants.ID) { enforcers.Invalidate(string(id)) },
		},
		Cards:       &cards.Service{Store: storage.NewCardStore(db), Authz: enforcers},
		Enforcers:   enforcers,
		Tokens:      tokens,
		ServiceKeys: keys,
		Delegations: dispatcher,
		Secrets:     secrets,
		Ready:       db.Ping,
	})

	ln, err := net.Listen("tcp", cfg.Server.Addr)
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           api,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()

	fmt.Fprintf(stdout, "agentcards %s listening on http://%s (database: %s)\n", buildVersion(), ln.Addr(), cfg.Database.Driver)
	fmt.Fprintf(stdout, "mint a first token with: agentcards token --subject admin --platform-admin --ttl 1h\n")

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
