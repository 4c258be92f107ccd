package web_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/agentcards/agentcards/web/webtest"
)

// TestUnknownQueryParameterRefusedEverywhere: every route, whatever its method, refuses a query
// parameter it does not take with 400 naming it, before doing anything; the parameters each
// route documents still work. The routes are read from the server, so one added later is
// covered without touching this test.
func TestUnknownQueryParameterRefusedEverywhere(t *testing.T) {
	f := newRouteFixture(t)
	before := f.snapshot(t)
	card := f.getCard("acme", "pub").body
	for _, r := range f.echo.Routes() {
		path := fill(t, r.Path, f.params)
		for _, q := range []string{"?zz=1", "?zz", "?limit=1&zz=1"} {
			if q == "?limit=1&zz=1" && !(strings.HasPrefix(path, "/a2a/") && (strings.HasSuffix(path, "/agents") || strings.HasSuffix(path, "/ai-catalog.json"))) {
				continue
			}
			var body any
			if r.Method != http.MethodGet && r.Method != http.MethodHead {
				body = "{}"
			}
			res := f.do(r.Method, path+q, f.root, body)
			if res.status != http.StatusBadRequest || (r.Method != http.MethodHead && errCodeAt(t, path, res) != "invalid") {
				t.Errorf("%s %s%s: %d %s, want 400 invalid", r.Method, path, q, res.status, res.body)
				continue
			}
			if r.Method != http.MethodHead && !strings.Contains(string(res.body), `unknown query parameter \"zz\"`) {
				t.Errorf("%s %s%s: the error does not name zz: %s", r.Method, path, q, res.body)
			}
		}
	}
	for p, want := range before {
		webtest.JSONEqual(t, p+" after the refused requests", f.do("GET", p, f.root, nil).body, want)
	}
	webtest.JSONEqual(t, "the card after the refused requests", f.getCard("acme", "pub").body, card)

	// What each route documents it takes is still taken.
	id := f.params["id"]
	for _, c := range []struct {
		method, path string
		status       int
	}{
		{"GET", "/v1/tenants/acme/cards?protocol=a2a&capability=review_pr&tag=code&name=code&q=review&resource=https://github.com/acme/x&limit=1", http.StatusOK},
		{"GET", "/a2a/acme/pub/.well-known/agent-card.json?version=1.0", http.StatusOK},
		{"HEAD", "/a2a/acme/pub/.well-known/agent-card.json?version=1.0", http.StatusOK},
		{"GET", "/a2a/acme/agents?limit=1", http.StatusOK},
		{"GET", "/a2a/acme/.well-known/ai-catalog.json?limit=1", http.StatusOK},
		{"GET", "/v1/tenants/acme/delegations?status=completed&agentId=pub&limit=1", http.StatusOK},
		{"DELETE", "/v1/tenants/acme/roles?subject=zed&role=reader", http.StatusNotFound},
		{"DELETE", "/v1/tenants/acme/policies?subject=zed&object=cards/*&action=cards:read&effect=allow", http.StatusNotFound},
		{"POST", "/callbacks/delegations/acme/" + id + "?token=wrong", http.StatusNotFound},
	} {
		var body any
		if c.method == "POST" {
			body = map[string]any{"status": "completed"}
		}
		expect(t, f.do(c.method, c.path, f.root, body), c.status)
	}
	// Repeated single-valued parameters stay refused, as before.
	for _, p := range []string{"/v1/tenants/acme/cards?limit=1&limit=2", "/v1/tenants/acme/delegations?limit=1&limit=2"} {
		expect(t, f.do("GET", p, f.root, nil), http.StatusBadRequest, "invalid")
	}
}
