// Package app is the composition root of agentcards: the one place that builds the object graph
// (stores, enforcers, the search index and its follower, the delegation dispatcher, the tenant
// gate and the HTTP API) and wires the cross-invalidations between them. serve uses it, and so do
// the tests, so that what they exercise is what ships.
package app

import (
	"context"
	"errors"
	"log/slog"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/agentcards/agentcards/authz/policy"
	"github.com/agentcards/agentcards/authz/token"
	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/a2a"
	"github.com/agentcards/agentcards/cards/delegation"
	"github.com/agentcards/agentcards/cards/follow"
	"github.com/agentcards/agentcards/cards/liveness"
	"github.com/agentcards/agentcards/cards/search"
	"github.com/agentcards/agentcards/cards/webhooks"
	"github.com/agentcards/agentcards/cmd/agentcards/app/metrics"
	"github.com/agentcards/agentcards/migrations"
	"github.com/agentcards/agentcards/storage"
	"github.com/agentcards/agentcards/tenants"
	"github.com/agentcards/agentcards/tenants/audit"
	"github.com/agentcards/agentcards/web"
	"github.com/agentcards/agentcards/web/outbound"
)

// Options are the settings of one server, resolved from the configuration into the types the
// services take: serve fills them from the configuration file, tests from what they test.
type Options struct {
	// DB is open and migrated; the caller closes it after Close.
	DB     *storage.DB
	Tokens *token.Tokens
	// Keys sign delegation tokens and A2A cards.
	Keys *token.ServiceKeys
	// SecretKey seals static endpoint secrets and the tokens of followed sources (32 bytes); nil
	// leaves the secret routes out and refuses sources with a token.
	SecretKey []byte
	Log       *slog.Logger
	// Web is the HTTP API's configuration; its Logger is Log.
	Web web.Config
	// TenantCacheTTL is how long a tenant row read by one request may serve the next
	// (server.tenantCacheTtl); negative reads it on every request.
	TenantCacheTTL time.Duration
	// NoIndex answers every search by reading the tenant's cards (search.index: none).
	NoIndex bool
	Search  SearchOptions
	// Delegation bounds what is sent to agents.
	Delegation delegation.Config
	// Outbound allows private addresses to calls to user-registered URLs (outbound.allow) and
	// bounds imports (outbound.timeout); a delegation is bounded by Delegation.MaxTimeout.
	Outbound outbound.Config
	// Version is the server's version, which the MCP door announces.
	Version string
	// MCPToolsets are the toolsets the MCP door serves (mcp.toolsets; none: its default).
	MCPToolsets []string
	// Now is the clock of the MCP door's old names; time.Now when nil.
	Now      func() time.Time
	Liveness LivenessOptions
	// Refresh schedules refreshes of cards imported by URL (a2a.refreshInterval; off while 0).
	Refresh RefreshOptions
	// Metrics, when set, is told of requests, searches, delegations, breakers, outbound calls,
	// the database pools and the indexes (serve's metrics listener serves it).
	Metrics *metrics.Metrics
	// Fetch, when set, is the client of imports instead of one built from Outbound (tests
	// confine it to loopback).
	Fetch a2a.Doer
	// AuditRetention is how long audit entries are kept (audit.retention; 0 keeps them).
	AuditRetention time.Duration
	// Webhooks says how webhook events are delivered (webhooks.*); Start runs the deliverer.
	Webhooks WebhookOptions
	// Follow tunes the follower of the sources the tenants follow.
	Follow FollowOptions
	// MaxJSONDepth bounds how deeply free-form JSON nests in cards, imports and delegations
	// (server.maxJsonDepth); 0 is cards.DefaultMaxJSONDepth. Delegation.MaxJSONDepth, when set,
	// bounds delegations instead.
	MaxJSONDepth int
}

// SearchOptions say how each replica follows the others' writes (see Start).
type SearchOptions struct {
	PollInterval  time.Duration
	Listen        bool
	FeedRetention time.Duration
	// WarmWindow: at start, the indexes of the tenants searched within it are built in the
	// background (0: none). WarmReady makes /ready answer 503 until they are.
	WarmWindow time.Duration
	WarmReady  bool
	// BuildOnWrite is the most cards a tenant written before its first search may have for the
	// write to build its index, in the background (search.Index.BuildOnWrite); 0: never.
	BuildOnWrite int
	// SnapshotDir, when set, is where each index of at least 1,000 cards is written out (after
	// its build, every search.SnapshotEvery if a tenth of its cards changed, and as the server
	// stops) and read back at its next build, which then reads only the cards that changed.
	SnapshotDir string
	// OutageCopyBytes, when positive, bounds the copy of its cards each loaded index keeps to
	// answer reads while the database does not answer (search.OutageCopy); 0: no copy.
	OutageCopyBytes int64
	// MemoryBudget, when positive, bounds the bytes of the loaded indexes with their cached
	// answers and outage copies (search.Index.MemoryBudget): past it the least recently
	// searched are dropped, and load again (from their snapshot, if any) at their next search.
	MemoryBudget int64
	// Streams bound the live streams of the change feed (search.streams); zero bounds are
	// search.DefaultStreamLimits.
	Streams search.StreamLimits
	// Rerank, when set, orders the first matches of each q search again by a sentence
	// encoder (search.encoder).
	Rerank *search.Reranker
}

// LivenessOptions say how long a heartbeat keeps a card online (liveness.ttl; 0 is the
// default) and, for tests, the tracker's clock.
type LivenessOptions struct {
	TTL time.Duration
	Now func() time.Time
	// Probe says how agents are probed (liveness.probe); off while its Interval is 0.
	Probe liveness.ProbeConfig
}

// WebhookOptions say how webhooks are delivered and, for tests, the deliverer's clock (time.Now
// when nil) and its client (the guarded client of Outbound when nil).
type WebhookOptions struct {
	webhooks.Config
	Now  func() time.Time
	Doer webhooks.Doer
}

// RefreshOptions say how often cards imported by URL are refreshed from their source (0: only
// when asked), and, for tests, the clock that decides which are due.
type RefreshOptions struct {
	Interval time.Duration
	Now      func() time.Time
}

// The tenant service is the one gate every service admits its callers through.
var (
	_ cards.Gate      = (*tenants.Service)(nil)
	_ search.Gate     = (*tenants.Service)(nil)
	_ delegation.Gate = (*tenants.Service)(nil)
	_ policy.Gate     = (*tenants.Service)(nil)

	_ search.SynonymStore = (*storage.TenantStore)(nil)
)

// App is the built graph.
type App struct {
	Handler *echo.Echo
	Tenants *tenants.Service
	Cards   *cards.Service
	A2A     *a2a.Service
	Search  *search.Service
	// Changes answers the change feed (cards.changes), and Streams its live streams.
	Changes *search.Changes
	Streams *search.Streams
	// Synonyms manages the tenants' search synonym sets.
	Synonyms *search.Synonyms
	// Trust manages the tenants' trust policies, which imports weigh cards against.
	Trust *a2a.Trust
	// Webhooks manages the tenants' webhook subscriptions; Deliverer delivers their events (Start
	// runs it).
	Webhooks  *webhooks.Service
	Deliverer *webhooks.Deliverer
	// Sources manages the registries the tenants follow; Follower syncs them (Start runs it).
	Sources  *follow.Service
	Follower *follow.Follower
	Index    *search.Index // nil with NoIndex
	// Warmer remembers which tenants are searched and warms their indexes at start (nil with
	// NoIndex).
	Warmer    *search.Warmer
	Enforcers *policy.Enforcers
	// Audit reads the tenants' audit trails and records refused writes (the stores record the
	// writes themselves).
	Audit      *audit.Service
	Dispatcher *delegation.Dispatcher
	Secrets    *delegation.EndpointSecrets // nil without SecretKey
	Liveness   *liveness.Tracker
	// Prober probes the cards this replica claims (Start runs it when probes are on).
	Prober *liveness.Prober
	// Refresher refreshes cards from their source on schedule (Start runs it when on).
	Refresher *a2a.Refresher

	opts       Options
	background sync.WaitGroup
	stop       context.CancelFunc
}

// New builds the graph, one step after another: each service holds those built before it, and
// the tenant gate's and the enforcers' callbacks reach the services built after them. It starts
// nothing: Start runs the background work.
func New(o Options) (*App, error) {
	if o.Log == nil {
		o.Log = slog.Default()
	}
	a := &App{opts: o, stop: func() {}}
	a.buildTenants()
	a.buildPolicy()
	cardStore := storage.NewCardStore(o.DB)
	a.buildIndex(cardStore)
	fetch := a.importClient()
	if err := a.buildSecrets(cardStore); err != nil {
		return nil, err
	}
	livenessStore := storage.NewLivenessStore(o.DB)
	a.buildLiveness(livenessStore, cardStore)
	a.buildCards(cardStore)
	a.buildWebhooks()
	a.buildA2A(cardStore, livenessStore, fetch)
	if err := a.buildSources(); err != nil {
		return nil, err
	}
	deps := a.delegationDeps(cardStore)
	a.observe(&deps)
	a.buildDispatcher(deps)
	// A rule written here makes the next request re-read the tenant row (and its revision).
	a.Enforcers.Changed = func(t string) { a.Tenants.Forget(tenants.ID(t)) }
	if err := a.buildHandler(); err != nil {
		return nil, err
	}
	return a, nil
}

// buildTenants builds the tenant gate: every service entry point scoped to a tenant passes it.
// A tenant written through it drops what was derived from it elsewhere: its rules, its index
// and its cards' liveness.
func (a *App) buildTenants() {
	db := a.opts.DB
	a.Tenants = &tenants.Service{
		Store:    storage.NewTenantStore(db),
		CacheTTL: a.opts.TenantCacheTTL,
		Ping: func(ctx context.Context) error {
			ctx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			return db.Alive(ctx)
		},
		Reconnect: db.DropIdle,
		Changed: func(id tenants.ID) {
			a.Enforcers.Invalidate(string(id))
			if a.Index != nil {
				a.Index.Drop(id)
			}
			a.Liveness.Forget(id)
		},
	}
	if db.Dialect() == migrations.SQLite {
		// A local file is never down as a server behind a network is: its only "ping" would
		// wait for the read pool, which a burst of reads can hold past the ping's second, and
		// take a busy database for a dead one (refusing writes). A request that fails, fails.
		a.Tenants.Ping = nil
	}
}

// buildPolicy builds the tenants' rule enforcers and the audit trail, which records the writes
// the enforcers refuse.
func (a *App) buildPolicy() {
	db := a.opts.DB
	a.Enforcers = policy.NewEnforcers(storage.NewRuleStore(db), a.Tenants)
	a.Audit = &audit.Service{Store: storage.NewAuditStore(db), Gate: a.Tenants, Authz: a.Enforcers, Log: a.opts.Log}
	a.Enforcers.Refused = a.Audit.Refused
}

// trustSettleInterval is how often a replica looks for changes of trust policies whose pass over
// the cards did not end.
const trustSettleInterval = 30 * time.Second

// importClient returns the client that fetches cards imported by URL: Fetch when set, otherwise
// the guarded client, which follows redirects only within the same host.
func (a *App) importClient() a2a.Doer {
	fetch := a.opts.Fetch
	if fetch == nil {
		o := a.opts.Outbound
		fetch = outbound.New(outbound.Config{Allow: o.Allow, Timeout: o.Timeout, FollowSameHostRedirects: true})
	}
	return a.timed("import", fetch)
}

// timed wraps a client of user-registered URLs so its calls are timed, when metrics are on.
func (a *App) timed(purpose string, d metrics.Doer) metrics.Doer {
	if a.opts.Metrics == nil {
		return d
	}
	return a.opts.Metrics.Outbound(purpose, d)
}

// buildLiveness builds the tracker of the cards' heartbeats and the prober of agents. Probes go
// through the guarded client, as every call to a URL users registered does, and carry the
// card's endpoint secret, when there are secrets, as delegations do.
func (a *App) buildLiveness(livenessStore *storage.LivenessStore, cardStore *storage.CardStore) {
	o := a.opts
	a.Liveness = liveness.New(livenessStore, o.Liveness.TTL, o.Liveness.Now)
	probeCfg := o.Liveness.Probe.WithDefaults()
	a.Prober = liveness.NewProber(probeCfg, livenessStore, cardStore,
		a.timed("probe", outbound.New(outbound.Config{Allow: o.Outbound.Allow, Timeout: probeCfg.Timeout})), a.Liveness)
	if a.Secrets != nil {
		a.Prober.Secrets = probeSecrets{a.Secrets.Opener()}
		failed := quiet(o.Log, "endpoint secret not read for a probe; probed without it")
		a.Prober.SecretFailed = func(tenant tenants.ID, agentID string, err error) {
			failed("tenant", tenant, "agentId", agentID, "err", err)
		}
	}
}

// buildCards builds the card and search services, and the service of the tenants' synonym
// sets. With an index, the card service keeps it current as cards are written, and the warmer
// remembers which tenants search, to warm their indexes at the next start.
func (a *App) buildCards(cardStore *storage.CardStore) {
	a.Cards = &cards.Service{Store: cardStore, Gate: a.Tenants, Authz: a.Enforcers, Liveness: a.Liveness, MaxJSONDepth: a.opts.MaxJSONDepth}
	if a.Index != nil { // a nil *search.Index in the interface would not compare nil
		a.Cards.Index = a.Index
		a.Cards.Memory = a.Index
	}
	a.Search = &search.Service{Store: cardStore, Gate: a.Tenants, Authz: a.Enforcers, Index: a.Index, Liveness: a.Liveness,
		Rerank: a.opts.Search.Rerank}
	a.Changes = &search.Changes{Store: cardStore, Feed: cardStore, Gate: a.Tenants, Authz: a.Enforcers,
		Window: changesWindow(a.opts), Retention: a.opts.Search.FeedRetention}
	streamFailed := quiet(a.opts.Log, "reading the change feed for its live streams failed; retrying at the next write or poll")
	a.Streams = &search.Streams{Changes: a.Changes, Limits: a.opts.Search.Streams,
		OnError: func(t tenants.ID, err error) { streamFailed("tenant", t, "err", err) }}
	a.Cards.Committed = a.Streams.Wake
	// A write of the sets drops this replica's cached tenant row, so that its next search reads
	// the new ones; other replicas read them within TenantCacheTTL.
	a.Synonyms = &search.Synonyms{Store: storage.NewTenantStore(a.opts.DB), Gate: a.Tenants, Authz: a.Enforcers, Forget: a.Tenants.Forget}
	if a.Index != nil {
		a.Warmer = &search.Warmer{Store: storage.NewActivityStore(a.opts.DB), Index: a.Index, Log: a.opts.Log, Rerank: a.opts.Search.Rerank}
		a.Search.Activity = a.Warmer
	}
}

// buildA2A builds the A2A service, which imports cards with fetch and writes them through the
// card service, and the refresher that imports them again from their source on schedule.
func (a *App) buildA2A(cardStore *storage.CardStore, livenessStore *storage.LivenessStore, fetch a2a.Doer) {
	tenantStore := storage.NewTenantStore(a.opts.DB)
	allow := a.opts.Outbound.Allow
	keys := &a2a.KeySets{Fetch: fetch, PlainHTTP: func(host string) bool {
		ip, err := netip.ParseAddr(host)
		return err == nil && slices.ContainsFunc(allow, func(p netip.Prefix) bool { return p.Contains(ip.Unmap()) })
	}}
	a.A2A = &a2a.Service{Store: cardStore, Authz: a.Enforcers, Cards: a.Cards, Search: a.Search, Tenants: a.Tenants, Fetch: fetch, Trust: tenantStore, TrustKeys: keys}
	a.Trust = &a2a.Trust{Store: tenantStore, Cards: a.Cards, CardStore: cardStore, Gate: a.Tenants, Authz: a.Enforcers, Keys: keys}
	a.Refresher = a2a.NewRefresher(a.opts.Refresh.Interval, a.A2A, livenessStore, cardStore, a.opts.Refresh.Now)
}

// observe tells the metrics, when they are on, of delegations and breakers (through deps), of
// searches, and of the database pools and the search indexes, which they read when scraped.
func (a *App) observe(deps *delegation.Deps) {
	m, db := a.opts.Metrics, a.opts.DB
	if m == nil {
		return
	}
	deps.Observe = func(transport string, s delegation.Status) { m.Delegation(transport, string(s)) }
	deps.BreakerChanged = m.Breaker
	a.Search.Observe = m.Search
	if db.ReadSQL() != db.SQL() {
		m.DB(db.ReadSQL(), "read")
		m.DB(db.SQL(), "write")
	} else {
		m.DB(db.SQL(), "pool")
	}
	m.NotificationsDropped(db.NotificationsDropped)
	if a.Index != nil {
		m.Indexes(a.indexSizes, a.Index.LastSynced)
		m.IndexMemory(a.indexMemory)
	}
	if a.opts.Search.Rerank != nil {
		m.Encoder(a.encoderStats)
	}
}

// followLine is logged when the follower listens on Postgres besides polling.
const followLine = "following the change feed with LISTEN/NOTIFY and polling"

// streamsListenLine is logged when, without an index, only the live streams of the change feed
// listen on Postgres.
const streamsListenLine = "live streams of the change feed hear other replicas' writes with LISTEN/NOTIFY, and poll"

// Start runs the background work until ctx ends or Close: change-feed pruning, and, with an
// index, the follower that applies other replicas' writes (polling every Search.PollInterval,
// and on Postgres with Search.Listen at once on their NOTIFY). It returns once the LISTEN is in
// effect (or failed, and is being retried).
func (a *App) Start(ctx context.Context) {
	ctx, a.stop = context.WithCancel(ctx)
	o, log := a.opts, a.opts.Log
	cardStore, tenantStore := storage.NewCardStore(o.DB), storage.NewTenantStore(o.DB)
	if o.Search.FeedRetention > 0 {
		a.background.Go(func() {
			pruneFeed(ctx, cardStore, tenantStore, storage.NewLivenessStore(o.DB), o.Search.FeedRetention, log)
		})
	}
	if o.AuditRetention > 0 {
		a.background.Go(func() { pruneAudit(ctx, storage.NewAuditStore(o.DB), o.AuditRetention, log) })
	}
	if a.Warmer != nil {
		if o.Search.WarmWindow > 0 {
			a.background.Go(func() { a.Warmer.Warm(ctx, o.Search.WarmWindow) })
		} else {
			a.Warmer.Warm(ctx, 0) // nothing to warm: done at once
		}
	}
	// Heartbeats and probe results taken by other replicas arrive at the same pace as their
	// card writes.
	// A background read that fails asks the tenant gate to ping the database, so that an outage
	// is found while every request is answered from memory.
	liveFailed := quiet(log, "reading other replicas' liveness failed; retrying every interval")
	a.background.Go(func() {
		a.Liveness.Follow(ctx, o.Search.PollInterval, func(err error) {
			liveFailed("err", err)
			a.Tenants.Suspect(ctx)
		})
	})
	// A change of a trust policy whose pass over the cards did not end is run again.
	a.background.Go(func() {
		a.Trust.RunSettle(ctx, trustSettleInterval, func(err error) {
			log.Warn("weighing cards against a changed trust policy failed; retrying", "err", err)
		})
	})
	if o.Refresh.Interval > 0 {
		a.background.Go(func() {
			a.Refresher.Run(ctx, func(err error) { log.Warn("scheduled refresh round failed; retrying next round", "err", err) })
		})
	}
	if o.Liveness.Probe.Interval > 0 {
		a.background.Go(func() {
			a.Prober.Run(ctx, func(err error) { log.Warn("probe round failed; retrying next round", "err", err) })
		})
	}
	if o.Search.PollInterval > 0 {
		a.background.Go(func() { a.Streams.Run(ctx, o.Search.PollInterval) })
	}
	// The sources the tenants follow: each synced by one replica at a time.
	a.background.Go(func() { a.Follower.Run(ctx) })
	hookFailed := quiet(log, "webhook delivery round failed; retrying next round")
	a.background.Go(func() { a.Deliverer.Run(ctx, func(err error) { hookFailed("err", err) }) })
	if a.Index == nil {
		a.listen(ctx, nil, nil)
		return
	}
	if a.Index.Snapshots != nil {
		a.Index.Snapshots.Clean()
		a.background.Go(func() { saveSnapshots(ctx, a.Index, log) })
	}
	notify := make(chan search.Notice, 64)
	indexFailed := quiet(log, "index sync failed; retrying next round")
	syncFailed := func(t tenants.ID, err error) {
		indexFailed("tenant", t, "err", err)
		a.Tenants.Suspect(ctx)
	}
	a.listen(ctx, notify, syncFailed)
	a.background.Go(func() { a.Index.Follow(ctx, o.Search.PollInterval, notify, syncFailed) })
}

// listen, on Postgres with Search.Listen, hears other replicas' writes at once: each notice
// wakes the tenant's live streams and the webhook deliverer, and goes on to the index's
// follower (on index, when there is one). Each (re)established LISTEN first syncs every loaded
// tenant and wakes every stream: what was notified while none was in effect reached nobody.
func (a *App) listen(ctx context.Context, index chan<- search.Notice, syncFailed func(tenants.ID, error)) {
	o, log := a.opts, a.opts.Log
	if !o.Search.Listen {
		return
	}
	// The follower reads only what is new while LISTEN is in effect (see Index.Listening).
	var listening atomic.Bool
	if a.Index != nil {
		a.Index.Listening = listening.Load
	}
	// The database may have gone back while LISTEN was lost (a failover to a standby that
	// lacked the last writes): an index that no longer agrees with it loads again. Verify reads
	// every loaded tenant's versions, so it runs beside the listener, not in its way; one at a
	// time, and once more when asked meanwhile.
	var verifying sync.Mutex
	var verifyAgain atomic.Bool
	verify := func() {
		verifyAgain.Store(true)
		if !verifying.TryLock() {
			return
		}
		a.background.Go(func() {
			for {
				for verifyAgain.Swap(false) && ctx.Err() == nil {
					if dropped := a.Index.Verify(ctx, syncFailed); len(dropped) > 0 {
						log.Warn("search indexes that no longer agree with the database were dropped; each loads again at its next search",
							"tenants", len(dropped), "first", dropped[0])
					}
				}
				verifying.Unlock()
				if !verifyAgain.Load() || !verifying.TryLock() {
					return
				}
			}
		})
	}
	resync := func() {
		listening.Store(true)
		a.Streams.WakeAll()
		if a.Index != nil {
			a.Index.SyncLoaded(ctx, syncFailed)
			verify()
		}
	}
	listenerFailed := quiet(log, "change-feed listener")
	lost := func(err error) {
		listening.Store(false)
		listenerFailed("err", err)
	}
	heard := make(chan search.Notice, 64)
	switch err := o.DB.Listen(ctx, heard, resync, lost); {
	case err == nil && a.Index == nil:
		log.Info(streamsListenLine, "interval", o.Search.PollInterval)
	case err == nil:
		log.Info(followLine, "interval", o.Search.PollInterval)
	case errors.Is(err, storage.ErrNoListen):
		return
	case ctx.Err() == nil:
		log.Warn("change-feed LISTEN failed; following by polling until a retry (every second) succeeds", "err", err)
	}
	a.background.Go(func() {
		for {
			var n search.Notice
			select {
			case <-ctx.Done():
				return
			case n = <-heard:
			}
			a.Streams.Wake(n.Tenant)
			a.Deliverer.Wake()
			if index == nil {
				continue
			}
			select {
			case index <- n:
			case <-ctx.Done():
				return
			}
		}
	})
}

// Close waits for the async delegations in flight to get their outcome, then stops the
// background work and waits for it; call it once the server takes no more requests, and before
// the database closes (which stops the LISTEN connection).
func (a *App) Close() {
	a.Streams.Drain()
	a.Dispatcher.Wait()
	a.stop()
	a.Tenants.Close()
	if a.Index != nil {
		a.Index.Close() // a warm-up build in progress ends now
	}
	a.background.Wait()
	if a.Index != nil {
		ctx, cancel := context.WithTimeout(context.Background(), snapshotsAtStop)
		defer cancel()
		if err := a.Index.SaveSnapshots(ctx); err != nil {
			a.opts.Log.Warn("search index snapshots not written", "err", err)
		}
	}
}

// pruneFeed deletes change-feed entries older than retention, tenant by tenant, and liveness
// records of cards that are gone, every retention/24 (an hour by default), until ctx ends.
func pruneFeed(ctx context.Context, feed *storage.CardStore, ts *storage.TenantStore, live *storage.LivenessStore, retention time.Duration, log *slog.Logger) {
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
		// Liveness records of cards no longer there (a heartbeat that raced the card's delete).
		if _, err := live.Prune(ctx); err != nil && ctx.Err() == nil {
			log.Warn("liveness pruning", "err", err)
		}
	}
}

// auditPruneEvery is how often entries past audit.retention are deleted (at most).
const auditPruneEvery = time.Hour

// pruneAudit deletes audit entries older than retention: at start, then every hour (or every
// 24th of the retention, if that is shorter).
func pruneAudit(ctx context.Context, store *storage.AuditStore, retention time.Duration, log *slog.Logger) {
	t := time.NewTicker(min(auditPruneEvery, retention/24))
	defer t.Stop()
	for {
		if n, err := store.Prune(ctx, time.Now().Add(-retention)); err != nil && ctx.Err() == nil {
			log.Warn("audit pruning failed; retrying next round", "err", err)
		} else if n > 0 {
			log.Info("audit entries past retention deleted", "entries", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// quietFor is how long a background failure that goes on is not said again.
const quietFor = 30 * time.Second

// quiet returns a warning for a background loop's failures that is said at the first failure,
// then at most once every quietFor while failures go on, with the count of those not said: a
// database outage is not a warning per poll (every 500 ms) and per tenant.
func quiet(log *slog.Logger, msg string) func(args ...any) {
	var mu sync.Mutex
	var said time.Time
	unsaid := 0
	return func(args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if !said.IsZero() && time.Since(said) < quietFor {
			unsaid++
			return
		}
		if unsaid > 0 {
			args = append(args, "failuresNotSaid", unsaid)
		}
		said, unsaid = time.Now(), 0
		log.Warn(msg, args...)
	}
}

// changesWindow is how long a change-feed entry may stay uncommitted (search.Changes.Window):
// a write's transaction lasts at most a request, plus a margin for the replicas' clocks. 0 on
// SQLite, whose entries commit one at a time, in the order of their numbers.
func changesWindow(o Options) time.Duration {
	if o.DB.Dialect() == migrations.SQLite {
		return 0
	}
	return o.Web.WithDefaults().RequestTimeout + 5*time.Second
}
