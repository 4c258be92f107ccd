// Package metrics is what the service tells Prometheus: requests by route, searches by the
// shape of their query, the search indexes, the change-feed follower, delegations, circuit
// breakers, outbound calls, the database pools and the build. It is served on a listener of its
// own (server.metricsAddr), never on the API's.
package metrics

import (
	"database/sql"
	"net/http"
	"runtime/debug"
	"sort"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

const namespace = "agentcards"

// Metrics holds the service's collectors in a registry of its own.
type Metrics struct {
	Registry *prometheus.Registry

	requests    *prometheus.HistogramVec
	searches    *prometheus.HistogramVec
	delegations *prometheus.CounterVec
	breakers    *prometheus.CounterVec
	outbound    *prometheus.HistogramVec
	webhooks    *prometheus.CounterVec
}

// New returns the metrics of a server of version.
func New(version string) *Metrics {
	m := &Metrics{Registry: prometheus.NewRegistry()}
	m.requests = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace, Name: "http_request_duration_seconds",
		Help:    "HTTP requests by route (the catalogue's path template), method and status class.",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
	}, []string{"route", "method", "code"})
	m.searches = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace, Name: "search_duration_seconds",
		Help:    "Searches by the shape of their query: the filters given, joined by +, or list.",
		Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, 1},
	}, []string{"shape"})
	m.delegations = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "delegations_total",
		Help: "Delegation statuses recorded, by status and transport (a delegation counts once per status it reaches).",
	}, []string{"status", "transport"})
	m.breakers = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "breaker_transitions_total",
		Help: "Changes of endpoints' circuit breakers, by the state left and the state entered.",
	}, []string{"from", "to"})
	m.outbound = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace, Name: "outbound_request_duration_seconds",
		Help:    "Calls to URLs users registered, by purpose (import, delegation, probe) and outcome (status class, or error).",
		Buckets: []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
	}, []string{"purpose", "outcome"})
	m.webhooks = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "webhook_deliveries_total",
		Help: "Webhook delivery attempts by outcome: ok (answered 2xx) or failed; retried counts the attempts made after a failure as well.",
	}, []string{"outcome"})
	build := prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: namespace, Name: "build_info", Help: "The server's version and Go version; always 1.",
		ConstLabels: prometheus.Labels{"version": version, "goversion": goVersion()},
	})
	build.Set(1)
	m.Registry.MustRegister(m.requests, m.searches, m.delegations, m.breakers, m.outbound, m.webhooks, build,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

func goVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		return bi.GoVersion
	}
	return "unknown"
}

// Handler serves the registry in Prometheus's text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{Registry: m.Registry})
}

// Middleware times every request by its route's template (never the path itself, whose ids
// would make a series per card), method (the standard ones; any other as "other") and status
// class. It must be the outermost middleware: the status is read once the error handler has
// answered.
func (m *Metrics) Middleware() echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			start := time.Now()
			err := next(c)
			status := c.Response().Status
			if err != nil && !c.Response().Committed {
				status = http.StatusInternalServerError // answered by Echo after us; errors are caught within
			}
			route := c.Path()
			if route == "" {
				route = "unmatched"
			}
			method := c.Request().Method
			if !knownMethods[method] {
				method = "other" // a client may send any token: it must not make series
			}
			m.requests.WithLabelValues(route, method, strconv.Itoa(status/100)+"xx").Observe(time.Since(start).Seconds())
			return err
		}
	}
}

var knownMethods = map[string]bool{
	http.MethodGet: true, http.MethodHead: true, http.MethodPost: true, http.MethodPut: true, http.MethodPatch: true,
	http.MethodDelete: true, http.MethodOptions: true,
}

// Search records one search's duration by its shape.
func (m *Metrics) Search(shape string, d time.Duration) {
	m.searches.WithLabelValues(shape).Observe(d.Seconds())
}

// Delegation counts a status a delegation was recorded in.
func (m *Metrics) Delegation(transport, status string) {
	if transport == "" {
		transport = "http"
	}
	m.delegations.WithLabelValues(status, transport).Inc()
}

// Webhook counts a webhook delivery attempt's outcome (webhooks.OutcomeOK, OutcomeFailed,
// OutcomeRetried).
func (m *Metrics) Webhook(outcome string) { m.webhooks.WithLabelValues(outcome).Inc() }

// Breaker counts a change of a breaker's state.
func (m *Metrics) Breaker(from, to string) { m.breakers.WithLabelValues(from, to).Inc() }

// Doer is an HTTP client.
type Doer interface {
	Do(*http.Request) (*http.Response, error)
}

// Outbound wraps a client of user-registered URLs so that each call is timed under purpose.
func (m *Metrics) Outbound(purpose string, d Doer) Doer {
	return timedDoer{m: m, purpose: purpose, d: d}
}

type timedDoer struct {
	m       *Metrics
	purpose string
	d       Doer
}

func (t timedDoer) Do(req *http.Request) (*http.Response, error) {
	start := time.Now()
	resp, err := t.d.Do(req)
	outcome := "error"
	if err == nil {
		outcome = strconv.Itoa(resp.StatusCode/100) + "xx"
	}
	t.m.outbound.WithLabelValues(t.purpose, outcome).Observe(time.Since(start).Seconds())
	return resp, err
}

// DB registers the statistics of a database pool, named (read, write).
func (m *Metrics) DB(pool *sql.DB, name string) {
	m.Registry.MustRegister(collectors.NewDBStatsCollector(pool, name))
}

// NotificationsDropped registers the count of change notifications the database layer did not
// send (storage.DB.NotificationsDropped), read at each scrape.
func (m *Metrics) NotificationsDropped(count func() uint64) {
	m.Registry.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
		Namespace: namespace, Name: "notifications_dropped_total",
		Help: "Change notifications of card writes not sent to other replicas (Postgres; they then see the writes at their next full feed read, within seconds).",
	}, func() float64 { return float64(count()) }))
}

// IndexMemory is the memory budget's view of the loaded indexes (search.MemoryUse).
type IndexMemory struct {
	Bytes, Budget      int64
	Evictions, Reloads uint64
}

// IndexMemory registers the memory budget's gauges and counters, read at each scrape.
func (m *Metrics) IndexMemory(use func() IndexMemory) {
	m.Registry.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: namespace, Name: "index_memory_bytes",
			Help: "Bytes of the loaded search indexes with their cached answers and outage copies, as the memory budget last counted them (after each load and every search.pollInterval); 0 without a budget.",
		}, func() float64 { return float64(use().Bytes) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: namespace, Name: "index_memory_budget_bytes",
			Help: "The memory budget of the loaded search indexes (search.memoryBudget); 0: none.",
		}, func() float64 { return float64(use().Budget) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Namespace: namespace, Name: "index_evictions_total",
			Help: "Search indexes dropped from memory, the least recently searched first, to stay within search.memoryBudget.",
		}, func() float64 { return float64(use().Evictions) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Namespace: namespace, Name: "index_reloads_total",
			Help: "Search indexes loaded again, at a search, after their eviction.",
		}, func() float64 { return float64(use().Reloads) }),
	)
}

// Encoder is what the re-ranking's sentence encoder has done (search.EncoderStats).
type Encoder struct {
	QueryHits, CardHits     uint64
	QueryEmbeds, CardEmbeds uint64
	EmbeddingSeconds        float64
	QueriesKept, CardsKept  int
}

// Encoder registers a collector that reads the encoder's counts at each scrape.
func (m *Metrics) Encoder(stats func() Encoder) {
	m.Registry.MustRegister(encoderCollector(stats))
}

var (
	encoderEmbeds = prometheus.NewDesc(namespace+"_encoder_embeddings_total",
		"Embeddings the re-ranking's sentence encoder worked out, of queries and of card versions (kind).", []string{"kind"}, nil)
	encoderHits = prometheus.NewDesc(namespace+"_encoder_kept_hits_total",
		"Embeddings re-ranked searches found kept, not worked out, of queries and of card versions (kind).", []string{"kind"}, nil)
	encoderTime = prometheus.NewDesc(namespace+"_encoder_embedding_seconds_total",
		"Time the sentence encoder spent working out embeddings: each embedding's, summed (those worked out at once each count).", nil, nil)
	encoderKept = prometheus.NewDesc(namespace+"_encoder_kept_embeddings",
		"Embeddings the re-ranking keeps (kind): of queries at most 4,096, of card versions at most search.encoder.cards.", []string{"kind"}, nil)
)

type encoderCollector func() Encoder

func (c encoderCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- encoderEmbeds
	ch <- encoderHits
	ch <- encoderTime
	ch <- encoderKept
}

func (c encoderCollector) Collect(ch chan<- prometheus.Metric) {
	e := c()
	for _, kind := range []struct {
		name         string
		embeds, hits uint64
		kept         int
	}{{"query", e.QueryEmbeds, e.QueryHits, e.QueriesKept}, {"card", e.CardEmbeds, e.CardHits, e.CardsKept}} {
		ch <- prometheus.MustNewConstMetric(encoderEmbeds, prometheus.CounterValue, float64(kind.embeds), kind.name)
		ch <- prometheus.MustNewConstMetric(encoderHits, prometheus.CounterValue, float64(kind.hits), kind.name)
		ch <- prometheus.MustNewConstMetric(encoderKept, prometheus.GaugeValue, float64(kind.kept), kind.name)
	}
	ch <- prometheus.MustNewConstMetric(encoderTime, prometheus.CounterValue, e.EmbeddingSeconds)
}

// TenantSize is one tenant's search index: its cards and the bytes it holds, about.
type TenantSize struct {
	Tenant string
	Cards  int
	Bytes  int64
	// CachedCards and CachedBytes are the encoded cards the index keeps for answers, and the
	// memory they hold, about.
	CachedCards int
	CachedBytes int64
	// CopyCards and CopyBytes are the cards of the outage copy the index keeps for reads during
	// a database outage, and the bytes counted for them.
	CopyCards int
	CopyBytes int64
}

// maxTenantSeries bounds the tenants that get series of their own; the others are summed as
// "other", so a registry of thousands of tenants does not make thousands of series.
const maxTenantSeries = 20

// otherTenants labels the sum of the tenants beyond maxTenantSeries.
const otherTenants = "_other"

// Indexes registers a collector that reads the loaded indexes' sizes at each scrape, and the
// age of the follower's last successful round.
func (m *Metrics) Indexes(sizes func() []TenantSize, lastSynced func() time.Time) {
	m.Registry.MustRegister(indexCollector{sizes: sizes, lastSynced: lastSynced})
}

var (
	indexCards  = prometheus.NewDesc(namespace+"_index_cards", "Cards in the loaded search index, by tenant (the largest 20; the rest as _other).", []string{"tenant"}, nil)
	indexBytes  = prometheus.NewDesc(namespace+"_index_bytes", "Approximate memory of the loaded search index, by tenant (as index_cards).", []string{"tenant"}, nil)
	cachedCards = prometheus.NewDesc(namespace+"_index_cached_cards", "Encoded cards the loaded search index keeps for answers, by tenant (as index_cards).", []string{"tenant"}, nil)
	cachedBytes = prometheus.NewDesc(namespace+"_index_cached_bytes", "Approximate memory of the encoded cards the loaded search index keeps (their JSON, the decoded cards and their capabilities' tokens), by tenant (as index_cards).", []string{"tenant"}, nil)
	copyCards   = prometheus.NewDesc(namespace+"_index_copy_cards", "Cards of the outage copy the loaded search index keeps for reads while the database does not answer, by tenant (as index_cards).", []string{"tenant"}, nil)
	copyBytes   = prometheus.NewDesc(namespace+"_index_copy_bytes", "Bytes of the outage copy (documents and an allowance per card), by tenant (as index_cards); at most search.outageCopyBytes each. Fewer copy cards than index cards: past the bound, or a fill under way.", []string{"tenant"}, nil)
	indexes     = prometheus.NewDesc(namespace+"_index_tenants", "Tenants whose search index is loaded.", nil, nil)
	feedAge     = prometheus.NewDesc(namespace+"_feed_sync_age_seconds", "Time since the change-feed follower last brought every loaded index up to date.", nil, nil)
)

type indexCollector struct {
	sizes      func() []TenantSize
	lastSynced func() time.Time
}

func (c indexCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- indexCards
	ch <- indexBytes
	ch <- cachedCards
	ch <- cachedBytes
	ch <- copyCards
	ch <- copyBytes
	ch <- indexes
	ch <- feedAge
}

func (c indexCollector) Collect(ch chan<- prometheus.Metric) {
	sizes := c.sizes()
	sort.Slice(sizes, func(i, j int) bool {
		if sizes[i].Cards != sizes[j].Cards {
			return sizes[i].Cards > sizes[j].Cards
		}
		return sizes[i].Tenant < sizes[j].Tenant
	})
	var other TenantSize
	for i, s := range sizes {
		if i >= maxTenantSeries {
			other.Cards += s.Cards
			other.Bytes += s.Bytes
			other.CachedCards += s.CachedCards
			other.CachedBytes += s.CachedBytes
			other.CopyCards += s.CopyCards
			other.CopyBytes += s.CopyBytes
			continue
		}
		s.collect(ch, s.Tenant)
	}
	if len(sizes) > maxTenantSeries {
		// "_other" is no tenant id (they start with a letter or digit), so it never clashes.
		other.collect(ch, otherTenants)
	}
	ch <- prometheus.MustNewConstMetric(indexes, prometheus.GaugeValue, float64(len(sizes)))
	if t := c.lastSynced(); !t.IsZero() {
		ch <- prometheus.MustNewConstMetric(feedAge, prometheus.GaugeValue, time.Since(t).Seconds())
	}
}

// collect sends s's gauges, labelled tenant.
func (s TenantSize) collect(ch chan<- prometheus.Metric, tenant string) {
	ch <- prometheus.MustNewConstMetric(indexCards, prometheus.GaugeValue, float64(s.Cards), tenant)
	ch <- prometheus.MustNewConstMetric(indexBytes, prometheus.GaugeValue, float64(s.Bytes), tenant)
	ch <- prometheus.MustNewConstMetric(cachedCards, prometheus.GaugeValue, float64(s.CachedCards), tenant)
	ch <- prometheus.MustNewConstMetric(cachedBytes, prometheus.GaugeValue, float64(s.CachedBytes), tenant)
	ch <- prometheus.MustNewConstMetric(copyCards, prometheus.GaugeValue, float64(s.CopyCards), tenant)
	ch <- prometheus.MustNewConstMetric(copyBytes, prometheus.GaugeValue, float64(s.CopyBytes), tenant)
}
