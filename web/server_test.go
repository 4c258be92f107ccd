package web_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/agentcards/agentcards/authz"
	"github.com/agentcards/agentcards/authz/policy"
	"github.com/agentcards/agentcards/authz/token"
	"github.com/agentcards/agentcards/cards/a2a"
	"github.com/agentcards/agentcards/cards/a2a/a2atest"
	"github.com/agentcards/agentcards/cards/delegation"
	"github.com/agentcards/agentcards/cards/liveness"
	"github.com/agentcards/agentcards/cards/search"
	"github.com/agentcards/agentcards/cards/webhooks"
	"github.com/agentcards/agentcards/cmd/agentcards/app"
	"github.com/agentcards/agentcards/cmd/agentcards/app/metrics"
	"github.com/agentcards/agentcards/storage"
	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/tenants"
	"github.com/agentcards/agentcards/web"
	"github.com/agentcards/agentcards/web/mcp"
	"github.com/agentcards/agentcards/web/outbound"
	"github.com/agentcards/agentcards/web/webtest"
)

// defaultTenantCacheTTL is server.tenantCacheTtl's default; the tests run with it, as servers do.
const defaultTenantCacheTTL = 250 * time.Millisecond

// testSecret is the HS256 key of the test servers' tokens, for tests that sign tokens by hand.
var testSecret = []byte(webtest.Secret)

// env is one running API over a real database, reached through real HTTP.
type env struct {
	t      testing.TB
	srv    *httptest.Server
	tokens *token.Tokens
	echo   *echo.Echo
	db     *storage.DB
	keys   *token.ServiceKeys
	authz  *policy.Enforcers
	index  *search.Index
	a2a    *a2a.Service
	// liveness is the server's liveness tracker, prober its prober.
	liveness *liveness.Tracker
	prober   *liveness.Prober
	// warmer is the server's index warmer.
	warmer *search.Warmer
	// refresher is the server's scheduled refresher.
	refresher *a2a.Refresher
	// dispatcher is the server's delegation dispatcher, for tests of its shutdown.
	dispatcher *delegation.Dispatcher
	// conns are the server's side of every connection it accepted.
	conns *connList
	// gate is the server's tenant gate, which keeps whether the database answers.
	gate *tenants.Service
	// changes is the server's change feed service, streams its live streams and app the
	// server's graph.
	changes *search.Changes
	streams *search.Streams
	app     *app.App
	// deliverer is the server's webhook deliverer (its rounds are run by the test unless follow).
	deliverer *webhooks.Deliverer
	// stop stops the server and its graph, as a test's end does (once).
	stop func()
}

type connList struct {
	mu    sync.Mutex
	conns []net.Conn
}

func (l *connList) all() []net.Conn {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.conns)
}

// grantRule writes a policy rule straight into the store and drops the cached enforcer, as a
// policy write does.
func (e *env) grantRule(t *testing.T, tenant, subject, obj, act, eft string) {
	t.Helper()
	rule := authz.Rule{PType: "p", Values: []string{subject, tenant, obj, act, eft}}
	if _, err := storage.NewRuleStore(e.db).AddRules(context.Background(), tenant, []authz.Rule{rule}); err != nil {
		t.Fatal(err)
	}
	e.authz.Invalidate(tenant)
}

// forEachDialect runs fn against a fresh server on SQLite, Postgres and MySQL.
func forEachDialect(t *testing.T, fn func(t *testing.T, e *env)) {
	t.Helper()
	storagetest.ForEachDialect(t, func(t *testing.T, d string) { fn(t, newEnv(t, storagetest.Open(t, d), 1<<20)) })
}

// forEachDialectAndIndex runs fn on every database with both search modes (memory, none).
func forEachDialectAndIndex(t *testing.T, fn func(t *testing.T, e *env)) {
	t.Helper()
	storagetest.ForEachDialect(t, func(t *testing.T, d string) {
		for _, mode := range []string{"memory", "none"} {
			t.Run(mode, func(t *testing.T) {
				fn(t, newEnvWith(t, storagetest.Open(t, d), envOptions{allowLoopback: true, noIndex: mode == "none"}))
			})
		}
	})
}

func newEnv(t testing.TB, db *storage.DB, bodyLimit int64) *env {
	t.Helper()
	return newEnvWith(t, db, envOptions{bodyLimit: bodyLimit, allowLoopback: true})
}

// envOptions vary the server a test runs against.
type envOptions struct {
	bodyLimit int64
	// allowLoopback lets delegations reach agents on 127.0.0.0/8, as test agents are.
	allowLoopback bool
	delegation    delegation.Config
	// noIndex answers searches by reading every card (search.index: none).
	noIndex bool
	// noSecrets builds the server without an endpoint secret key (no secret routes).
	noSecrets bool
	// listenAddr is the listen address the server is told of; empty means its real (loopback) one.
	listenAddr string
	// tenantCacheTTL is server.tenantCacheTtl; 0 means its default, negative turns it off.
	tenantCacheTTL time.Duration
	// requestTimeout is server.requestTimeout (0: its default); readTimeout replaces the bound
	// on reading a request, which is otherwise the request timeout, as serve sets it.
	requestTimeout, readTimeout time.Duration
	// a2aCacheMaxAge is a2a.cacheMaxAge; 0 means its default.
	a2aCacheMaxAge time.Duration
	// keys sign cards and delegation tokens; nil means fresh ones.
	keys *token.ServiceKeys
	// pollInterval replaces follow's poll interval of 500 ms.
	pollInterval time.Duration
	// streams bound the live streams of the change feed (search.streams; zero: the defaults).
	streams search.StreamLimits
	// follow runs the background work as serve does: the feed follower (polling every 500 ms,
	// and listening on Postgres) and pruning.
	follow bool
	// now is the clock of the MCP door's old names; nil is time.Now.
	now func() time.Time
	// livenessNow is the liveness tracker's clock (nil: time.Now), livenessTTL liveness.ttl.
	livenessNow func() time.Time
	livenessTTL time.Duration
	// probe configures the prober (its rounds are run by the test: Start is not called).
	probe liveness.ProbeConfig
	// refreshInterval and refreshNow schedule refreshes (rounds run by the test).
	refreshInterval time.Duration
	refreshNow      func() time.Time
	// log, when set, is the server's log (else discarded).
	log *slog.Logger
	// metrics turns the Prometheus metrics on, as serve does with server.metricsAddr.
	metrics bool
	// warmReady is search.warmReady (the test runs the warm-up itself).
	warmReady bool
	// snapshotDir is search.snapshotDir (empty: off); snapshotMin the cards an index needs to
	// be written out (0: the default, 1,000).
	snapshotDir string
	snapshotMin int
	// noCopy keeps no outage copy (search.outageCopyBytes 0); else its default, 64 MiB.
	noCopy bool
	// maxJSONDepth is server.maxJsonDepth; 0 means its default.
	maxJSONDepth int
	// corsOrigins is server.corsOrigins.
	corsOrigins []string
	// publicURL is delegation.publicUrl.
	publicURL string
	// webhooks configures webhook delivery (its clock and client too).
	webhooks app.WebhookOptions
	// fetchLoopback lets imports and followed sources read cards on 127.0.0.0/8 from the start
	// (env.allowLoopback does it later, for a server whose background does not run).
	fetchLoopback bool
	// sources tunes the follower of the sources tenants follow (its clock too).
	sources app.FollowOptions
	// bind is the address the server listens on (empty: a free loopback port), to start a
	// server again where one was.
	bind string
}

func newEnvWith(t testing.TB, db *storage.DB, o envOptions) *env {
	t.Helper()
	if o.bodyLimit == 0 {
		o.bodyLimit = 1 << 20
	}
	if o.tenantCacheTTL == 0 {
		o.tenantCacheTTL = defaultTenantCacheTTL
	}
	srv := httptest.NewUnstartedServer(nil)
	if o.bind != "" {
		_ = srv.Listener.Close()
		l, err := net.Listen("tcp", o.bind)
		if err != nil {
			t.Fatal(err)
		}
		srv.Listener = l
	}
	if o.listenAddr == "" {
		o.listenAddr = srv.Listener.Addr().String()
	}
	if o.keys == nil {
		o.keys = webtest.ServiceKeys(t)
	}
	opts := app.Options{
		// The door's tests reach every tool (the default toolsets are web/mcp's tests').
		MCPToolsets: []string{mcp.All},
		DB:          db, Tokens: webtest.Tokens(t), Keys: o.keys, SecretKey: testSecret[:32],
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Web: web.Config{BodyLimit: o.bodyLimit, ListenAddr: o.listenAddr, RequestTimeout: o.requestTimeout,
			A2ACacheMaxAge: o.a2aCacheMaxAge, CORSOrigins: o.corsOrigins, PublicURL: o.publicURL},
		TenantCacheTTL: o.tenantCacheTTL,
		NoIndex:        o.noIndex,
		Delegation:     o.delegation,
		// Imports reach nothing but loopback, and only where a test allows it (allowLoopback).
		Fetch:        a2atest.LoopbackOnly{Inner: outbound.New(outbound.Config{Timeout: 5 * time.Second})},
		Now:          o.now,
		Liveness:     app.LivenessOptions{TTL: o.livenessTTL, Now: o.livenessNow, Probe: o.probe},
		Refresh:      app.RefreshOptions{Interval: o.refreshInterval, Now: o.refreshNow},
		MaxJSONDepth: o.maxJSONDepth,
		Webhooks:     o.webhooks,
		Follow:       o.sources,
	}
	if o.noSecrets {
		opts.SecretKey = nil
	}
	if o.fetchLoopback {
		opts.Fetch = a2atest.LoopbackFetch()
	}
	if o.log != nil {
		opts.Log = o.log
	}
	if o.metrics {
		opts.Metrics = metrics.New("test")
	}
	opts.Search.WarmReady = o.warmReady
	if o.allowLoopback {
		opts.Outbound.Allow = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	}
	if o.follow {
		opts.Search = app.SearchOptions{PollInterval: 500 * time.Millisecond, Listen: true, FeedRetention: time.Hour}
		if o.pollInterval > 0 {
			opts.Search.PollInterval = o.pollInterval
		}
	}
	opts.Search.SnapshotDir = o.snapshotDir
	opts.Search.Streams = o.streams
	if !o.noCopy {
		opts.Search.OutageCopyBytes = 64 << 20
	}
	a, err := app.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if o.snapshotMin > 0 && a.Index != nil && a.Index.Snapshots != nil {
		a.Index.Snapshots.MinCards = o.snapshotMin
	}
	stopApp := sync.OnceFunc(a.Close)
	t.Cleanup(stopApp)
	if o.follow {
		a.Start(context.Background())
	}
	e := a.Handler
	// The server as serve configures it; readTimeout, when given, replaces its read bound.
	a.ConfigureServer(srv.Config)
	srv.Config.Handler = checked(t, srv.Config.Handler)
	if o.readTimeout != 0 {
		srv.Config.ReadTimeout = o.readTimeout
	}
	conns := &connList{}
	srv.Config.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		conns.mu.Lock()
		conns.conns = append(conns.conns, c)
		conns.mu.Unlock()
		return web.ConnContext(ctx, c)
	}
	srv.Start()
	stopSrv := sync.OnceFunc(srv.Close)
	t.Cleanup(stopSrv)
	// A stop ends the live streams first (as a drain at SIGTERM does), which a server's Close
	// would otherwise wait for.
	return &env{stop: func() { a.Streams.Drain(); srv.CloseClientConnections(); stopSrv(); stopApp() }, t: t, srv: srv, tokens: opts.Tokens, echo: e, db: db, keys: opts.Keys, authz: a.Enforcers, index: a.Index,
		a2a: a.A2A, dispatcher: a.Dispatcher, conns: conns, liveness: a.Liveness, prober: a.Prober, refresher: a.Refresher, warmer: a.Warmer,
		gate: a.Tenants, changes: a.Changes, streams: a.Streams, app: a, deliverer: a.Deliverer}
}

// token mints a token for subject in tenant ("" with admin for a platform admin).
func (e *env) token(subject, tenant string, admin bool) string {
	e.t.Helper()
	return webtest.Mint(e.t, e.tokens, subject, tenant, admin)
}

func (e *env) admin() string { return e.token("root", "", true) }

// client reaches the env's server through its own HTTP client.
func (e *env) client() webtest.Client {
	return webtest.Client{BaseURL: e.srv.URL, HTTP: e.srv.Client()}
}

// response is webtest.Response under the field names the web tests were written with.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) wt() webtest.Response {
	return webtest.Response{Status: r.status, Header: r.header, Body: r.body}
}

func (r response) json(t testing.TB, v any) { t.Helper(); r.wt().JSON(t, v) }

// errCode returns the error code of the one error body, failing if the body has another shape.
func (r response) errCode(t testing.TB) string { t.Helper(); return r.wt().ErrCode(t) }

// do sends one request; see webtest.Client.Do.
func (e *env) do(method, path, token string, body any, headers ...string) response {
	e.t.Helper()
	r := e.client().Do(e.t, method, path, token, body, headers...)
	return response{status: r.Status, header: r.Header, body: r.Body}
}

// expect fails unless r has the status (and, for errors, the code).
func expect(t testing.TB, r response, status int, code ...string) {
	t.Helper()
	webtest.Expect(t, r.wt(), status, code...)
}

// mkTenant creates a tenant with the given admins through the API.
func (e *env) mkTenant(id string, admins ...string) {
	e.t.Helper()
	e.client().CreateTenant(e.t, e.admin(), id, admins...)
}

// sampleCard is a valid card document.
func sampleCard(agentID string) map[string]any {
	return map[string]any{
		"agentId":     agentID,
		"name":        "Code Reviewer",
		"description": "Reviews pull requests and suggests improvements.",
		"version":     "1.0.0",
		"protocols":   []string{"a2a", "http"},
		"capabilities": []any{map[string]any{
			"name": "review_pr", "description": "Review a pull request",
			"inputSchema": map[string]any{"type": "object"}, "tags": []string{"code"},
		}},
		"authRequirements": map[string]any{"type": "bearer", "scopes": []string{"mcp:read"}},
		"endpoint":         "https://agents.example.com/code-reviewer",
		"resources":        []any{map[string]any{"uri": "https://github.com/acme/*", "access": "read"}},
		"tags":             []string{"code", "github"},
		"metadata":         map[string]any{"team": "platform"},
	}
}

// getCard fetches a card's raw JSON with a platform admin token (for before/after comparisons).
func (e *env) getCard(tenant, agentID string) response {
	e.t.Helper()
	return e.do("GET", "/v1/tenants/"+tenant+"/cards/"+agentID, e.admin(), nil)
}

func TestHealthAndReady(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		expect(t, e.do("GET", "/health", "", nil), http.StatusOK)
		expect(t, e.do("GET", "/ready", "", nil), http.StatusOK)
		if err := e.db.Close(); err != nil {
			t.Fatal(err)
		}
		expect(t, e.do("GET", "/ready", "", nil), http.StatusServiceUnavailable, "unavailable")
		expect(t, e.do("GET", "/health", "", nil), http.StatusOK)
	})
}

func TestPanicIsAnOpaque500(t *testing.T) {
	e := newEnv(t, storagetest.Open(t, "sqlite"), 1<<20)
	e.echo.GET("/boom", func(echo.Context) error { panic("secret internals: password=hunter2") })
	e.echo.GET("/fail", func(echo.Context) error { return io.ErrUnexpectedEOF })
	for _, path := range []string{"/boom", "/fail"} {
		r := e.do("GET", path, "", nil)
		expect(t, r, http.StatusInternalServerError, "internal")
		if bytes.Contains(r.body, []byte("hunter2")) || bytes.Contains(r.body, []byte("EOF")) {
			t.Fatalf("500 leaks internals: %s", r.body)
		}
	}
	expect(t, e.do("GET", "/health", "", nil), http.StatusOK)
}

func TestRequestTimeout(t *testing.T) {
	db := storagetest.Open(t, "sqlite")
	e := web.New(web.Config{RequestTimeout: 50 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))},
		web.Deps{Tokens: webtest.Tokens(t), Ready: db.Ping})
	e.GET("/slow", func(c echo.Context) error {
		select {
		case <-c.Request().Context().Done():
			return c.Request().Context().Err()
		case <-time.After(5 * time.Second):
			return c.NoContent(http.StatusOK)
		}
	})
	srv := httptest.NewServer(checked(t, e))
	defer srv.Close()
	env := &env{t: t, srv: srv}
	expect(t, env.do("GET", "/slow", "", nil), http.StatusServiceUnavailable, "timeout")
}
