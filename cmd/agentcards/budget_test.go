package main

import (
	"fmt"
	"net/http"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/web/webtest"
)

// loadedFrom is the Server-Timing of a search that waited for its index to load.
var loadedFrom = regexp.MustCompile(`^index-load;dur=[0-9]+\.[0-9];desc="(cards|snapshot)"$`)

// TestServeMemoryBudget: with search.memoryBudget below any index, serve keeps one index loaded
// (the one searched last): a search of another tenant evicts it, and its next search loads it
// again, from the snapshot written as it was evicted. Serve sets the Go runtime's memory limit to the budget and a margin, and restores it as
// it stops. A search that waited for its index says so in Server-Timing (index-load), one that
// found it loaded does not, and the metrics count the evictions and the reloads. (Writes load
// no index: search.buildOnWrite 0.)
func TestServeMemoryBudget(t *testing.T) {
	_, dsn := storagetest.EmptyDatabase(t, "sqlite")
	t.Setenv("GOMEMLIMIT", "") // the limit is serve's to set
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { // after serve stopped
		if limit := debug.SetMemoryLimit(-1); limit != before {
			t.Errorf("after serve stopped the Go memory limit is %d, want %d as before", limit, before)
		}
	})
	s := startServe(t, serveConfig(t, "sqlite", dsn, "memoryBudget: 1", "buildOnWrite: 0"))
	if limit := debug.SetMemoryLimit(-1); limit != 1+memoryMargin {
		t.Errorf("the Go memory limit while serving with a budget of 1 byte: %d, want %d", limit, 1+memoryMargin)
	}
	base := metricsBase(t, s)
	root := webtest.Mint(t, webtest.Tokens(t), "root", "", true)
	search := func(tenant string) string {
		t.Helper()
		tok := webtest.Mint(t, webtest.Tokens(t), "alice", tenant, false)
		r := s.api.Do(t, http.MethodGet, "/v1/tenants/"+tenant+"/cards?q=reviewer", tok, nil)
		webtest.Expect(t, r, http.StatusOK)
		if !strings.Contains(string(r.Body), `"agentId":"rev-`+tenant+`"`) {
			t.Fatalf("%s's search: %s", tenant, r.Body)
		}
		return r.Header.Get("Server-Timing")
	}
	tenantsOf := []string{"t1", "t2", "t3"}
	for _, tenant := range tenantsOf {
		webtest.Expect(t, s.api.Do(t, http.MethodPost, "/v1/tenants", root, map[string]any{"id": tenant, "name": tenant, "admins": []string{"alice"}}), http.StatusCreated)
		tok := webtest.Mint(t, webtest.Tokens(t), "alice", tenant, false)
		webtest.Expect(t, s.api.Do(t, http.MethodPost, "/v1/tenants/"+tenant+"/cards", tok, map[string]any{
			"agentId": "rev-" + tenant, "name": "Reviewer", "protocols": []string{"http"}, "endpoint": "http://127.0.0.1:1/task",
		}), http.StatusCreated)
	}
	loaded := func(want float64) {
		t.Helper()
		webtest.Eventually(t, 10*time.Second, fmt.Sprintf("%v index loaded", want), func() bool {
			v, _ := metricSample(scrapeMetrics(t, base), "agentcards_index_tenants", nil)
			return v == want
		})
	}
	for _, tenant := range tenantsOf {
		if st := search(tenant); !loadedFrom.MatchString(st) || !strings.HasSuffix(st, `desc="cards"`) {
			t.Fatalf("%s's first search: Server-Timing %q, want index-load from the cards", tenant, st)
		}
		loaded(1)
		if st := search(tenant); st != "" {
			t.Fatalf("%s's search with its index loaded: Server-Timing %q, want none", tenant, st)
		}
	}
	// t1 was evicted by t2's search: it loads again.
	if st := search("t1"); !loadedFrom.MatchString(st) || !strings.HasSuffix(st, `desc="snapshot"`) {
		t.Fatalf("t1's search after its eviction: Server-Timing %q, want index-load from its snapshot", st)
	}
	loaded(1)
	families := scrapeMetrics(t, base)
	for family, want := range map[string]float64{
		"agentcards_index_evictions_total":     3,
		"agentcards_index_reloads_total":       1,
		"agentcards_index_memory_budget_bytes": 1,
	} {
		if v, ok := metricSample(families, family, nil); !ok || v != want {
			t.Errorf("%s: %v (present %v), want %v", family, v, ok, want)
		}
	}
	if v, _ := metricSample(families, "agentcards_index_memory_bytes", nil); v <= 1 {
		t.Errorf("agentcards_index_memory_bytes %v: the index loaded counts nothing", v)
	}
}
