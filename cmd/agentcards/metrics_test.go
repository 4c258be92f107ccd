package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/agentcards/agentcards/cards/agenttest"
	"github.com/agentcards/agentcards/migrations"
	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/web/webtest"
)

// TestServeMetrics: serve answers Prometheus on server.metricsAddr, a listener of its own (the
// API's has no /metrics). After a search, a card read and a delegation to a loopback agent, a
// scrape parses with Prometheus's text parser and carries each family: requests by route
// template, searches by shape, delegations by status and transport, outbound calls, webhook
// deliveries, the index
// by tenant, the follower's age, the database pools, the build. On every database.
func TestServeMetrics(t *testing.T) {
	storagetest.ForEachDialect(t, testServeMetrics)
}

func testServeMetrics(t *testing.T, dialect string) {
	agent := agenttest.New(t, agenttest.Answer(http.StatusOK, `{"result": "ok"}`))
	dir := t.TempDir()
	database := ""
	if dialect != migrations.SQLite {
		_, dsn := storagetest.EmptyDatabase(t, dialect)
		database = fmt.Sprintf("database:\n  driver: %s\n  dsn: %q\n", dialect, dsn)
	}
	s := startServe(t, fmt.Sprintf("dataDir: %q\nserver:\n  addr: 127.0.0.1:0\n  metricsAddr: 127.0.0.1:0\nauth:\n  secret: %q\noutbound:\n  allow: [\"127.0.0.0/8\"]\n",
		dir, webtest.Secret)+database)
	base := metricsBase(t, s)
	metricsTraffic(t, s, agent.URL)

	var families map[string]*dto.MetricFamily
	// The follower reports its first round within its interval (500 ms); the outage copy is
	// filled in the background once the index is built; the webhook is delivered in the
	// background too.
	webtest.Eventually(t, 10*time.Second, "the follower's age, the outage copy and the webhook", func() bool {
		families = scrapeMetrics(t, base)
		_, ok := metricSample(families, "agentcards_feed_sync_age_seconds", nil)
		kept, _ := metricSample(families, "agentcards_index_copy_cards", map[string]string{"tenant": "acme"})
		indexed, _ := metricSample(families, "agentcards_index_cards", map[string]string{"tenant": "acme"})
		delivered, _ := metricSample(families, "agentcards_webhook_deliveries_total", map[string]string{"outcome": "ok"})
		return ok && kept >= 1 && kept == indexed && delivered >= 1
	})
	for _, c := range metricMinimums {
		if v, ok := metricSample(families, c.family, c.labels); !ok || v < c.min {
			t.Errorf("%s%v: %v (present %v), want at least %v", c.family, c.labels, v, ok, c.min)
		}
	}
	// The database pools: SQLite's read pool and writing connection; one pool elsewhere.
	pools := []string{"read", "write"}
	if dialect != migrations.SQLite {
		pools = []string{"pool"}
	}
	for _, name := range pools {
		if _, ok := metricSample(families, "go_sql_open_connections", map[string]string{"db_name": name}); !ok {
			t.Errorf("no go_sql_open_connections of the pool %q", name)
		}
	}
	// Profiles are off unless server.pprof turns them on (TestServePprof).
	if resp, err := http.Get(base + "/debug/pprof/heap?debug=1"); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("profiles served without server.pprof: %v %v", resp, err)
	} else {
		_ = resp.Body.Close()
	}
	if v, ok := metricSample(families, "agentcards_http_request_duration_seconds", map[string]string{"code": "5xx"}); ok {
		t.Errorf("%v requests counted as server errors, none failed", v)
	}
	// A card's id never becomes a label: routes are templates.
	for _, m := range families["agentcards_http_request_duration_seconds"].Metric {
		for _, l := range m.Label {
			if l.GetName() == "route" && regexp.MustCompile(`/rev\b`).MatchString(l.GetValue()) {
				t.Errorf("a route label holds an id: %s", l.GetValue())
			}
		}
	}
}

// metricsTraffic sends what testServeMetrics finds counted: a tenant acme whose card rev has
// its endpoint at agentURL (and a webhook that receives its creation), a search, a card read, a
// sync delegation to rev, and two 404s (the
// API's listener has no /metrics; a missing card).
func metricsTraffic(t *testing.T, s served, agentURL string) {
	t.Helper()
	root := webtest.Mint(t, webtest.Tokens(t), "root", "", true)
	webtest.Expect(t, s.api.Do(t, http.MethodPost, "/v1/tenants", root, map[string]any{"id": "acme", "name": "Acme", "admins": []string{"alice"}}), http.StatusCreated)
	alice := webtest.Mint(t, webtest.Tokens(t), "alice", "acme", false)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	t.Cleanup(receiver.Close)
	webtest.Expect(t, s.api.Do(t, http.MethodPost, "/v1/tenants/acme/webhooks", alice, map[string]any{"url": receiver.URL}), http.StatusCreated)
	webtest.Expect(t, s.api.Do(t, http.MethodPost, "/v1/tenants/acme/cards", alice, map[string]any{
		"agentId": "rev", "name": "Reviewer", "protocols": []string{"http"}, "endpoint": agentURL + "/task",
		"capabilities": []any{map[string]any{"name": "review_pr"}},
	}), http.StatusCreated)
	webtest.Expect(t, s.api.Do(t, http.MethodGet, "/v1/tenants/acme/cards?q=reviewer", alice, nil), http.StatusOK)
	webtest.Expect(t, s.api.Do(t, http.MethodGet, "/v1/tenants/acme/cards/rev", alice, nil), http.StatusOK)
	webtest.Expect(t, s.api.Do(t, http.MethodPost, "/v1/tenants/acme/delegations", alice, map[string]any{
		"agentId": "rev", "capability": "review_pr", "task": "review", "mode": "sync"}), http.StatusOK)
	webtest.Expect(t, s.api.Do(t, http.MethodGet, "/metrics", "", nil), http.StatusNotFound)
	webtest.Expect(t, s.api.Do(t, http.MethodGet, "/v1/tenants/acme/cards/nope", alice, nil), http.StatusNotFound)
}

// metricMinimums are the samples a scrape after metricsTraffic carries, each at least min.
var metricMinimums = []struct {
	family string
	labels map[string]string
	min    float64
}{
	{"agentcards_http_request_duration_seconds", map[string]string{"route": "/v1/tenants/:tenant/cards", "method": "GET", "code": "2xx"}, 1},
	{"agentcards_http_request_duration_seconds", map[string]string{"route": "/v1/tenants/:tenant/cards/:agentId", "method": "GET", "code": "2xx"}, 1},
	{"agentcards_search_duration_seconds", map[string]string{"shape": "q"}, 1},
	{"agentcards_delegations_total", map[string]string{"status": "completed", "transport": "http"}, 1},
	{"agentcards_outbound_request_duration_seconds", map[string]string{"purpose": "delegation", "outcome": "2xx"}, 1},
	{"agentcards_outbound_request_duration_seconds", map[string]string{"purpose": "webhook", "outcome": "2xx"}, 1},
	{"agentcards_webhook_deliveries_total", map[string]string{"outcome": "ok"}, 1},
	{"agentcards_index_cards", map[string]string{"tenant": "acme"}, 1},
	{"agentcards_index_bytes", map[string]string{"tenant": "acme"}, 1},
	// The card read and the search answered: the card is kept encoded.
	{"agentcards_index_cached_cards", map[string]string{"tenant": "acme"}, 1},
	{"agentcards_index_cached_bytes", map[string]string{"tenant": "acme"}, 100},
	// Every card of the loaded index is in the outage copy (search.outageCopyBytes).
	{"agentcards_index_copy_bytes", map[string]string{"tenant": "acme"}, 100},
	{"agentcards_index_tenants", nil, 1},
	// Present on every database; none dropped in this run.
	{"agentcards_notifications_dropped_total", nil, 0},
	{"agentcards_build_info", nil, 1},
	{"go_goroutines", nil, 1},
	// A refusal is counted under its own status class, not as a server error.
	{"agentcards_http_request_duration_seconds", map[string]string{"route": "/v1/tenants/:tenant/cards/:agentId", "method": "GET", "code": "4xx"}, 1},
}

// scrapeMetrics reads base's /metrics and parses it with Prometheus's text parser.
func scrapeMetrics(t *testing.T, base string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("the scrape does not parse: %v", err)
	}
	return families
}

// metricSample finds the sample of family whose labels include want: a counter's or gauge's
// value, a histogram's count.
func metricSample(families map[string]*dto.MetricFamily, family string, want map[string]string) (float64, bool) {
	f := families[family]
	if f == nil {
		return 0, false
	}
metrics:
	for _, m := range f.Metric {
		labels := map[string]string{}
		for _, l := range m.Label {
			labels[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if labels[k] != v {
				continue metrics
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}

// TestServePprof: with server.pprof, serve answers Go's runtime profiles on the metrics listener,
// and the API's listener still has none.
func TestServePprof(t *testing.T) {
	dir := t.TempDir()
	s := startServe(t, fmt.Sprintf("dataDir: %q\nserver:\n  addr: 127.0.0.1:0\n  metricsAddr: 127.0.0.1:0\n  pprof: true\nauth:\n  secret: %q\n",
		dir, webtest.Secret))
	base := metricsBase(t, s)
	for path, want := range map[string]string{
		"/debug/pprof/heap?debug=1":      "heap profile:",
		"/debug/pprof/goroutine?debug=1": "goroutine profile:",
	} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
			t.Errorf("GET %s: %d %.100q, want 200 with %q", path, resp.StatusCode, body, want)
		}
	}
	webtest.Expect(t, s.api.Do(t, http.MethodGet, "/debug/pprof/heap", "", nil), http.StatusNotFound)
}

// metricsBase waits for serve to print its metrics address, and returns its base URL.
func metricsBase(t *testing.T, s served) string {
	t.Helper()
	var base string
	webtest.Eventually(t, 10*time.Second, "the metrics address printed", func() bool {
		m := regexp.MustCompile(`metrics on (http://\S+)/metrics`).FindStringSubmatch(s.out.String())
		if m != nil {
			base = m[1]
		}
		return m != nil
	})
	return base
}
