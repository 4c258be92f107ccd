// Package web is the HTTP API: the Echo server, its routes and handlers, JWT authentication, and
// the one table from domain errors to status codes.
package web

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/authz/policy"
	"github.com/agentcards/agentcards/authz/token"
	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/a2a"
	"github.com/agentcards/agentcards/cards/delegation"
	"github.com/agentcards/agentcards/cards/follow"
	"github.com/agentcards/agentcards/cards/search"
	"github.com/agentcards/agentcards/cards/webhooks"
	"github.com/agentcards/agentcards/tenants"
	"github.com/agentcards/agentcards/tenants/audit"
	"github.com/agentcards/agentcards/web/catalog"
	"github.com/agentcards/agentcards/web/console"
)

// Config holds the HTTP settings.
type Config struct {
	// BodyLimit caps request bodies, in bytes (413 beyond).
	BodyLimit int64
	// RequestTimeout bounds each request's context.
	RequestTimeout time.Duration
	// A2ACacheMaxAge is the Cache-Control max-age of served A2A cards.
	A2ACacheMaxAge time.Duration
	Logger         *slog.Logger
	// PublicURL is the base URL agents reach this server at, for async callbacks. When empty,
	// a loopback ListenAddr stands in for it; otherwise async delegations are refused, since the
	// request's Host header, which the caller controls, must never choose where results go.
	PublicURL string
	// ListenAddr is the address the server listens on (host:port), used as above.
	ListenAddr string
	// Metrics, when set, times every request (see cmd/agentcards/app/metrics).
	Metrics echo.MiddlewareFunc
	// CORSOrigins are the origins (scheme://host[:port]) of browser pages that may call the API
	// and /mcp (see cors.go); none by default. New panics on one ParseOrigin refuses.
	CORSOrigins []string
}

// Deps are the services the handlers call.
type Deps struct {
	Tenants   *tenants.Service
	Cards     *cards.Service
	Enforcers *policy.Enforcers
	Tokens    *token.Tokens
	// Search answers searches over a tenant's cards.
	Search *search.Service
	// Changes answers the change feed; nil leaves its route out. Streams serves it live (Accept:
	// text/event-stream); nil answers pages only.
	Changes *search.Changes
	Streams *search.Streams
	// Synonyms manages the tenants' search synonym sets; nil leaves its routes out.
	Synonyms *search.Synonyms
	// Webhooks manages the tenants' webhook subscriptions; nil leaves its routes out.
	Webhooks *webhooks.Service
	// Trust manages the tenants' trust policies; nil leaves its routes out.
	Trust *a2a.Trust
	// Sources manages the registries the tenants follow; nil leaves its routes out.
	Sources *follow.Service
	// A2A imports cards, serves A2A cards and lists the public agents.
	A2A *a2a.Service
	// ServiceKeys are the service's signing keys, published at /.well-known/jwks.json.
	ServiceKeys *token.ServiceKeys
	// Delegations sends tasks to agents and keeps their records; nil leaves its routes out.
	Delegations *delegation.Dispatcher
	// Secrets keeps the static secrets of agent endpoints; nil (no key configured) leaves its
	// routes out.
	Secrets *delegation.EndpointSecrets
	// Ready reports whether the service can serve: the database answers.
	Ready func(context.Context) error
	// MCP serves the MCP door over streamable HTTP at /mcp, behind the same bearer tokens as
	// /v1; nil leaves it out.
	MCP http.Handler
	// Audit reads the tenants' audit trails.
	Audit *audit.Service
	// Warming, when set, reports that the server is still building the search indexes it warms
	// at start and was told to be not ready meanwhile (search.warmReady).
	Warming func() bool
}

// serveConsole answers a file of the console, or 404.
func serveConsole(c echo.Context) error {
	if !console.Serve(c.Response(), c.Request(), c.Param("*")) {
		return echo.ErrNotFound
	}
	return nil
}

// mcpPath is where the MCP door is served.
const mcpPath = "/mcp"

// mcpMethods are the methods of the MCP streamable HTTP transport the door answers. It is
// stateless: no session to end with DELETE and no stream of server-sent requests to open with
// GET, which the transport answers with 405 and Allow (as here, from the router) when a server
// offers none.
var mcpMethods = []string{http.MethodPost}

// Defaults are the HTTP settings of a server configured with none: the binary's configuration
// (server.bodyLimit, server.requestTimeout, a2a.cacheMaxAge) starts from them, and New fills a
// zero field of its Config with them.
var Defaults = Config{BodyLimit: 1 << 20, RequestTimeout: 30 * time.Second, A2ACacheMaxAge: 5 * time.Minute}

// WithDefaults returns c with each zero limit set to its default.
func (c Config) WithDefaults() Config {
	if c.BodyLimit <= 0 {
		c.BodyLimit = Defaults.BodyLimit
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = Defaults.RequestTimeout
	}
	if c.A2ACacheMaxAge <= 0 {
		c.A2ACacheMaxAge = Defaults.A2ACacheMaxAge
	}
	return c
}

// New returns the API as an Echo instance, ready to serve.
func New(cfg Config, d Deps) *echo.Echo {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	cfg = cfg.WithDefaults()
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	outage := &outageLog{log: log}
	if d.Tenants != nil && d.Tenants.Ping != nil {
		// The outage is the gate's: said when its ping finds the database down, and when it
		// finds it back.
		outage.gated = true
		d.Tenants.OnDown(outage.begin)
		d.Tenants.OnAnswer(outage.ok)
	}
	if ready, gate := d.Ready, d.Tenants; ready != nil && gate != nil {
		// The readiness probe and the check of a failed request ask the gate too, so that
		// neither says the database answers while the gate refuses writes for it.
		d.Ready = func(ctx context.Context) error { return gate.Check(ctx, ready(ctx)) }
	}
	e.HTTPErrorHandler = errorHandler(log, d.Ready, outage)
	// The client address is the TCP peer: no proxy headers are trusted unless configured later.
	e.IPExtractor = echo.ExtractIPDirect()
	// Metrics first, outermost: they read the status once the error handler has answered.
	if cfg.Metrics != nil {
		e.Use(cfg.Metrics)
	}
	origins := newOrigins(cfg)
	e.Use(noSniff, withRequestID, logRequests(log, outage), recoverPanics(log), origins.cors)
	e.Use(middleware.ContextTimeoutWithConfig(middleware.ContextTimeoutConfig{Timeout: cfg.RequestTimeout, Skipper: noStreamTimeout}))
	e.Use(limitBody(cfg.BodyLimit), strictQuery)

	// The document is built from the catalogue when the first server is: a catalogue it cannot
	// describe is a bug, found at once.
	if _, err := openAPIDocument(); err != nil {
		panic(fmt.Sprintf("web: the OpenAPI document: %v", err))
	}
	h := &handlers{Deps: d, cfg: cfg, log: log, a2aMaxAge: cfg.A2ACacheMaxAge, callbackBase: callbackBase(cfg), outage: outage}
	// The routes are the catalogue's (web/catalog): each request's handler, on its routes, behind
	// the authentication its access names.
	byName := map[string]echo.HandlerFunc{
		"service.health": h.health, "service.ready": h.ready, "service.openapi": h.openAPI, "keys.list": h.jwks,
		"tenants.create": h.createTenant, "tenants.list": h.listTenants, "tenants.get": h.getTenant,
		"tenants.update": h.updateTenant, "tenants.delete": h.deleteTenant,
		"cards.register": h.registerCard, "cards.register_batch": h.registerBatch, "cards.import": h.importCard,
		"cards.refresh": h.refreshCard, "cards.heartbeat": h.heartbeat,
		"cards.get": h.getCard, "cards.replace": h.putCard, "cards.update": h.patchCard, "cards.remove": h.deleteCard,
		"cards.search": h.searchRoutes, "cards.changes": h.listChanges,
		"roles.list": h.listRoles, "roles.grant": h.grantRole, "roles.revoke": h.revokeRole,
		"policies.list": h.listPolicies, "policies.add": h.addPolicy, "policies.remove": h.removePolicy,
		"access.check": h.authorize, "audit.list": h.listAudit,
		"synonyms.list": h.listSynonyms, "synonyms.put": h.putSynonyms, "synonyms.remove": h.removeSynonyms,
		"trust.list": h.listTrust, "trust.get": h.getTrust, "trust.put": h.putTrust, "trust.remove": h.removeTrust,
		"sources.create": h.createSource, "sources.list": h.listSources, "sources.get": h.getSource, "sources.update": h.updateSource, "sources.remove": h.removeSource,
		"webhooks.create": h.createWebhook, "webhooks.list": h.listWebhooks, "webhooks.get": h.getWebhook,
		"webhooks.update": h.updateWebhook, "webhooks.remove": h.removeWebhook, "webhooks.deliveries": h.listDeliveries,
		"a2a.agents": h.a2aAgents, "a2a.card": h.a2aCard, "a2a.catalog": h.a2aCatalog,
		"delegations.create": h.createDelegation, "delegations.list": h.listDelegations,
		"delegations.get": h.getDelegation, "delegations.import": h.importDelegations, "delegations.complete": h.delegationResult,
		"secrets.set": h.putSecret, "secrets.remove": h.deleteSecret,
		"mesh.health": h.meshHealth, "mesh.agents_list": h.meshAgents, "mesh.agents_register": h.meshRegister,
		"mesh.agents_get": h.meshGetAgent, "mesh.agents_remove": h.meshRemoveAgent, "mesh.agents_heartbeat": h.meshHeartbeat,
		"mesh.discover": h.meshDiscover, "mesh.delegate": h.meshDelegate, "mesh.delegations_list": h.meshDelegations,
		"mesh.delegations_get": h.meshGetDelegation, "mesh.delegations_result": h.meshResult,
	}
	// A server built without delegations, endpoint secrets, an audit trail, the synonyms', the
	// trust policies', the sources' or the webhooks' service has no routes for their requests (nor for agentkit-mesh's delegation routes).
	without := map[string]bool{"delegations": d.Delegations == nil, "secrets": d.Secrets == nil, "audit": d.Audit == nil,
		"synonyms": d.Synonyms == nil, "cards.changes": d.Changes == nil, "webhooks": d.Webhooks == nil, "trust": d.Trust == nil,
		"sources":       d.Sources == nil,
		"mesh.delegate": d.Delegations == nil, "mesh.delegations_list": d.Delegations == nil,
		"mesh.delegations_get": d.Delegations == nil, "mesh.delegations_result": d.Delegations == nil}
	auth := map[catalog.Access][]echo.MiddlewareFunc{
		catalog.Token:         {authenticate(d.Tokens, h.delegationTokens(), log)},
		catalog.OptionalToken: {optionalAuth(d.Tokens, h.delegationTokens(), log)},
	}
	for _, r := range catalog.Requests {
		handler, ok := byName[r.Name]
		delete(byName, r.Name)
		if resource, _, _ := strings.Cut(r.Name, "."); r.Doors&catalog.REST == 0 || without[resource] || without[r.Name] {
			continue
		}
		if !ok {
			panic(fmt.Sprintf("web: no handler for the catalogue's request %s", r.Name))
		}
		mw := append([]echo.MiddlewareFunc{named(r)}, auth[r.Access]...)
		if r.FlatErrors {
			mw = append([]echo.MiddlewareFunc{flatErrors}, mw...)
		}
		if r.FromMemory && r.ReadOnly() {
			mw = append([]echo.MiddlewareFunc{withStaleMark}, mw...)
		}
		for _, route := range r.Routes {
			routes{e: e, mw: mw}.add(route.Method, route.Path, handler, route.Query...)
		}
	}
	if d.MCP != nil {
		for _, m := range mcpMethods {
			// The Origin first: a page of another origin is refused before its token is read.
			mw := append([]echo.MiddlewareFunc{origins.checkOrigin}, auth[catalog.Token]...)
			routes{e: e, mw: mw}.add(m, mcpPath, echo.WrapHandler(d.MCP))
		}
	}
	// The console (web/console): its files are open, as they hold no data (the page asks for a
	// token and sends it with every request). /console alone goes to /console/.
	routes{e: e}.add(http.MethodGet, strings.TrimSuffix(console.Path, "/"), func(c echo.Context) error {
		c.Response().Header().Set(echo.HeaderContentLength, "0") // HEAD's too, as GET's
		return c.Redirect(http.StatusMovedPermanently, console.Path)
	})
	routes{e: e}.add(http.MethodGet, console.Path+"*", serveConsole)
	if len(byName) > 0 {
		panic(fmt.Sprintf("web: handlers of requests not in the catalogue: %v", slices.Sorted(maps.Keys(byName))))
	}
	return e
}

// routes registers handlers with middleware that runs for those routes only. (Echo's group
// middleware would also register catch-all routes under a prefix, which answer a wrong method
// with 404 instead of 405.) Every route goes through add, so that every route gets
// what add gives: HEAD beside GET, and the refusal of query parameters it does not take.
type routes struct {
	e  *echo.Echo
	mw []echo.MiddlewareFunc
}

// add registers h for method and path. query lists the query parameters the route takes; any
// other is a 400 naming it (after the route's middleware, so authentication answers first; the
// tenant gate is the services', so a request's own shape, its parameters and body, is checked
// before it). A GET route also answers HEAD (RFC 9110 §9.3.2) through the same middleware
// and handler: net/http keeps the headers, Content-Length included, and drops the body.
func (r routes) add(method, path string, h echo.HandlerFunc, query ...string) {
	h = acceptQuery(query)(h)
	mw := append([]echo.MiddlewareFunc{wholeSegments}, r.mw...)
	r.e.Add(method, path, h, mw...)
	if method == http.MethodGet {
		r.e.Add(http.MethodHead, path, h, mw...)
	}
}

// wholeSegments answers 404, as for any path that is no route, when a path parameter holds a
// "/": Echo gives a route's last parameter the rest of a longer path when no route matches it
// (PUT .../cards/x/secret on a server without endpoint secrets would replace a card "x/secret"
// and be refused as invalid). No parameter of ours may hold one.
func wholeSegments(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		for _, v := range c.ParamValues() {
			if strings.Contains(v, "/") {
				return echo.ErrNotFound
			}
		}
		return next(c)
	}
}

type handlers struct {
	Deps
	cfg       Config
	log       *slog.Logger
	a2aMaxAge time.Duration
	// callbackBase is the URL this server is reached at (Config.BaseURL): async callbacks and the
	// AI Catalog's URLs are on it. "" refuses async delegations, and the catalog names paths.
	callbackBase string
	outage       *outageLog
}

// tenantOf is the tenant a request names. The services it calls admit the caller into it (the
// tenant gate is theirs, so every door shares it).
func tenantOf(c echo.Context) tenants.ID { return tenants.ID(c.Param("tenant")) }

func (h *handlers) health(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
}

func (h *handlers) ready(c echo.Context) error {
	// A deadline of its own: a probe of a database that hangs answers within it, not after the
	// request timeout.
	ctx, cancel := context.WithTimeout(c.Request().Context(), readyTimeout)
	defer cancel()
	if err := h.Ready(ctx); err != nil {
		return notReady{fault.Wrap(err, fault.Unavailable, "the database is unreachable: service unavailable")}
	}
	if h.Warming != nil && h.Warming() {
		// Expected at start, not a failure to log: answered here, in the one error body.
		c.Response().Header().Set("Retry-After", "1")
		return c.JSON(http.StatusServiceUnavailable, errorBody{Error: errorDetail{Code: string(fault.Unavailable),
			Message: "the search indexes of recently searched tenants are being built; try again shortly", RequestID: requestID(c)}})
	}
	h.outage.wrote()
	return c.JSON(http.StatusOK, map[string]string{"status": "ready"})
}

// readyTimeout bounds /ready's ping of the database.
const readyTimeout = 2 * time.Second

// jwks publishes the public keys that verify what the service signs (A2A card signatures,
// delegation tokens), newest first.
func (h *handlers) jwks(c echo.Context) error {
	if h.ServiceKeys == nil {
		return echo.ErrNotFound
	}
	c.Response().Header().Set(echo.HeaderCacheControl, "public, max-age=300")
	return c.JSON(http.StatusOK, h.ServiceKeys.JWKS())
}
