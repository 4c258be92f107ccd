package metrics_test

import (
	"database/sql"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	_ "github.com/mattn/go-sqlite3" // the "sqlite3" database/sql driver
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/agentcards/agentcards/cards/agenttest"
	"github.com/agentcards/agentcards/cmd/agentcards/app/metrics"
)

// TestNew: a new registry holds the build's info (always 1, with the version and Go's), Go's
// and the process's collectors, and nothing of the request families until something is
// recorded; each Metrics has a registry of its own, so two never clash. Its handler serves the
// registry in Prometheus's text format.
func TestNew(t *testing.T) {
	m := metrics.New("1.2.3")
	_ = metrics.New("1.2.3") // a second one registers nothing twice
	got := gather(t, m)
	if want := []string{"goversion=" + runtime.Version() + ",version=1.2.3 1"}; !slices.Equal(series(got, "agentcards_build_info"), want) {
		t.Errorf("build info %v, want %v", series(got, "agentcards_build_info"), want)
	}
	for _, family := range []string{"go_goroutines", "go_memstats_alloc_bytes", "process_cpu_seconds_total", "process_open_fds"} {
		if len(got[family]) == 0 {
			t.Errorf("no %s", family)
		}
	}
	for _, family := range []string{"agentcards_http_request_duration_seconds", "agentcards_delegations_total", "agentcards_index_tenants"} {
		if len(got[family]) != 0 {
			t.Errorf("%s before anything was recorded or registered: %v", family, got[family])
		}
	}

	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the scrape: %d, %v", resp.StatusCode, err)
	}
	if f := families["agentcards_build_info"]; f == nil || f.GetHelp() != "The server's version and Go version; always 1." {
		t.Errorf("the scrape's build info: %v", f)
	}
}

// TestMiddleware: every request is timed under its route's template (one series for every card,
// never the path), its method (any but the standard ones as "other") and its status class, as
// the error handler answered it; an error nothing answered counts as a 5xx; a path no route
// matches is "unmatched".
func TestMiddleware(t *testing.T) {
	m := metrics.New("test")
	e := echo.New()
	e.Use(m.Middleware())
	// As the server's own middleware does, the error handler answers within.
	e.Use(func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if err := next(c); err != nil {
				c.Error(err)
			}
			return nil
		}
	})
	e.GET("/v1/tenants/:tenant/cards/:agentId", func(c echo.Context) error {
		if c.Param("agentId") == "missing" {
			return echo.NewHTTPError(http.StatusNotFound)
		}
		if c.Param("agentId") == "slow" {
			time.Sleep(50 * time.Millisecond)
		}
		return c.String(http.StatusOK, "card")
	})
	e.POST("/v1/tenants/:tenant/cards", func(c echo.Context) error { return c.NoContent(http.StatusCreated) })
	e.Add("BREW", "/v1/tenants/:tenant/cards", func(c echo.Context) error { return c.NoContent(http.StatusTeapot) })
	srv := httptest.NewServer(e)
	defer srv.Close()
	send := func(method, path string, want int) {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("%s %s: %d, want %d", method, path, resp.StatusCode, want)
		}
	}
	send("GET", "/v1/tenants/acme/cards/rev", 200)
	send("GET", "/v1/tenants/beta/cards/other", 200)
	send("GET", "/v1/tenants/acme/cards/slow", 200)
	send("GET", "/v1/tenants/acme/cards/missing", 404)
	send("POST", "/v1/tenants/acme/cards", 201)
	send("BREW", "/v1/tenants/acme/cards", 418)
	send("GET", "/nowhere/near", 404)

	// A handler's error that nothing answered: the middleware counts the 500 Echo answers after it.
	bare := echo.New()
	bare.Use(m.Middleware())
	bare.GET("/v1/fails", func(echo.Context) error { return errors.New("a bug") })
	srv2 := httptest.NewServer(bare)
	defer srv2.Close()
	if resp, err := http.Get(srv2.URL + "/v1/fails"); err != nil || resp.StatusCode != 500 {
		t.Fatalf("the failing handler: %v, %v", resp, err)
	} else {
		_ = resp.Body.Close()
	}

	got := gather(t, m)
	want := []string{
		"code=2xx,method=GET,route=/v1/tenants/:tenant/cards/:agentId 3",
		"code=2xx,method=POST,route=/v1/tenants/:tenant/cards 1",
		"code=4xx,method=GET,route=/v1/tenants/:tenant/cards/:agentId 1",
		"code=4xx,method=GET,route=unmatched 1",
		"code=4xx,method=other,route=/v1/tenants/:tenant/cards 1",
		"code=5xx,method=GET,route=/v1/fails 1",
	}
	if s := series(got, "agentcards_http_request_duration_seconds"); !slices.Equal(s, want) {
		t.Errorf("requests:\n%s\nwant\n%s", strings.Join(s, "\n"), strings.Join(want, "\n"))
	}
	for _, s := range got["agentcards_http_request_duration_seconds"] {
		if s.labels == "code=2xx,method=GET,route=/v1/tenants/:tenant/cards/:agentId" && s.sum < 0.05 {
			t.Errorf("the three card reads took %gs in all, one of them 50ms at least", s.sum)
		}
	}
}

// TestOutbound: a timed client times each call under its purpose and outcome (the status class,
// or error when there was no answer) and hands back the answer or the error as it was.
func TestOutbound(t *testing.T) {
	m := metrics.New("test")
	agent := agenttest.New(t, func(w http.ResponseWriter, _ *http.Request, got agenttest.Request) {
		switch got.Path {
		case "/gone":
			w.WriteHeader(http.StatusNotFound)
		case "/down":
			w.WriteHeader(http.StatusServiceUnavailable)
		default:
			_, _ = io.WriteString(w, "fine")
		}
	})
	probe, delegation := m.Outbound("probe", http.DefaultClient), m.Outbound("delegation", http.DefaultClient)
	do := func(d metrics.Doer, url string) (*http.Response, error) {
		req, _ := http.NewRequest("GET", url, nil)
		return d.Do(req)
	}
	resp, err := do(probe, agent.URL+"/ok")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "fine" {
		t.Errorf("the answer handed back: %d %q", resp.StatusCode, body)
	}
	for _, path := range []string{"/gone", "/down", "/down"} {
		if resp, err := do(delegation, agent.URL+path); err == nil {
			_ = resp.Body.Close()
		}
	}
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	if _, err := do(probe, closed.URL); err == nil {
		t.Error("a call to a closed server answered")
	}
	want := []string{"outcome=2xx,purpose=probe 1", "outcome=4xx,purpose=delegation 1", "outcome=5xx,purpose=delegation 2", "outcome=error,purpose=probe 1"}
	if s := series(gather(t, m), "agentcards_outbound_request_duration_seconds"); !slices.Equal(s, want) {
		t.Errorf("outbound calls %v, want %v", s, want)
	}
}

// TestCounters: searches by shape, delegations by status and transport (http when none is
// named), breaker changes; the count of dropped notifications and the database pool's statistics
// are read at each scrape.
func TestCounters(t *testing.T) {
	m := metrics.New("test")
	m.Search("q+tag", 30*time.Millisecond)
	m.Search("q+tag", 10*time.Millisecond)
	m.Search("list", time.Millisecond)
	m.Delegation("", "completed")
	m.Delegation("http", "completed")
	m.Delegation("a2a", "failed")
	m.Breaker("closed", "open")
	m.Breaker("closed", "open")
	m.Breaker("open", "half-open")
	var dropped atomic.Uint64
	dropped.Store(3)
	m.NotificationsDropped(dropped.Load)
	db, err := sql.Open("sqlite3", filepath.Join(t.TempDir(), "pool.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Ping(); err != nil {
		t.Fatal(err)
	}
	m.DB(db, "read")

	got := gather(t, m)
	for family, want := range map[string][]string{
		"agentcards_search_duration_seconds":     {"shape=list 1", "shape=q+tag 2"},
		"agentcards_delegations_total":           {"status=completed,transport=http 2", "status=failed,transport=a2a 1"},
		"agentcards_breaker_transitions_total":   {"from=closed,to=open 2", "from=open,to=half-open 1"},
		"agentcards_notifications_dropped_total": {" 3"},
		"go_sql_open_connections":                {"db_name=read 1"},
	} {
		if s := series(got, family); !slices.Equal(s, want) {
			t.Errorf("%s: %v, want %v", family, s, want)
		}
	}
	for _, s := range got["agentcards_search_duration_seconds"] {
		if s.labels == "shape=q+tag" && (s.sum < 0.0399 || s.sum > 0.0401) {
			t.Errorf("q+tag searches: %gs in all, want 0.04", s.sum)
		}
	}
	dropped.Store(5)
	if s := series(gather(t, m), "agentcards_notifications_dropped_total"); !slices.Equal(s, []string{" 5"}) {
		t.Errorf("dropped notifications at the next scrape: %v, want 5", s)
	}
}
