package app

import (
	"net/http"
	"time"

	"github.com/agentcards/agentcards/web"
	"github.com/agentcards/agentcards/web/mcp"
)

// buildHandler builds the HTTP API over the services, with the MCP door at /mcp. The door's
// tools call the REST handler in process with the caller's token (web/mcp), and the REST handler
// serves the door: it is bound once both exist.
func (a *App) buildHandler() error {
	o := a.opts
	wcfg := o.Web
	wcfg.Logger = o.Log
	if o.Metrics != nil {
		wcfg.Metrics = o.Metrics.Middleware()
	}
	var mcpDoor http.Handler
	a.Handler = web.New(wcfg, web.Deps{
		MCP:         http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { mcpDoor.ServeHTTP(w, r) }),
		Tenants:     a.Tenants,
		Cards:       a.Cards,
		Search:      a.Search,
		Changes:     a.Changes,
		Streams:     a.Streams,
		Synonyms:    a.Synonyms,
		Trust:       a.Trust,
		Sources:     a.Sources,
		Webhooks:    a.Webhooks,
		A2A:         a.A2A,
		Enforcers:   a.Enforcers,
		Tokens:      o.Tokens,
		ServiceKeys: o.Keys,
		Delegations: a.Dispatcher,
		Secrets:     a.Secrets,
		Audit:       a.Audit,
		Ready:       o.DB.Ping,
		Warming:     func() bool { return o.Search.WarmReady && a.Warmer != nil && !a.Warmer.Done() },
	})
	rest := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.Handler.ServeHTTP(w, r.WithContext(web.InProcess(r.Context())))
	})
	door, err := mcp.HTTPHandler(rest, mcp.Options{Version: o.Version, Now: o.Now, Toolsets: o.MCPToolsets})
	if err != nil {
		return err
	}
	mcpDoor = door
	return nil
}

// ConfigureServer sets the HTTP server's handler and its limits: the API, the connection context
// the API reads (for TCP_CORK), and the time a client may take. Reading a whole request, body
// included, is bounded by the request timeout: otherwise a client (even one without a token)
// that announces a body and trickles it holds the connection for ever, also after its request
// was answered, while the server drains the body.
func (a *App) ConfigureServer(s *http.Server) {
	s.Handler = a.Handler
	s.ConnContext = web.ConnContext
	s.ReadHeaderTimeout = 10 * time.Second
	s.ReadTimeout = a.opts.Web.WithDefaults().RequestTimeout
	s.IdleTimeout = 2 * time.Minute
	// A search index build in progress (a warm-up, or a first search) ends as soon as the
	// shutdown begins: the requests waiting for it answer 503 instead of holding the drain.
	s.RegisterOnShutdown(func() {
		// Live streams end with their final event at once: their clients resume elsewhere, and
		// the drain does not wait for them.
		a.Streams.Drain()
		if a.Index != nil {
			a.Index.Close()
		}
	})
}
