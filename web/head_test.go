package web_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/agentcards/agentcards/web/api"
	"github.com/agentcards/agentcards/web/catalog"
)

// headAndGet sends GET and then HEAD of the same path and headers (each followed, on its
// connection, by GET /health, which must then read back cleanly) and returns both answers.
func (f routeFixture) headAndGet(t *testing.T, path, token string, headers ...string) (get, head response) {
	t.Helper()
	var got [2]response
	for i, m := range []string{http.MethodGet, http.MethodHead} {
		req, err := http.NewRequest(m, f.srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		for j := 0; j+1 < len(headers); j += 2 {
			req.Header.Set(headers[j], headers[j+1])
		}
		health, _ := http.NewRequest(http.MethodGet, f.srv.URL+"/health", nil)
		raw := append(wire(t, req), wire(t, health)...)
		rs := f.exchange(t, raw, m, http.MethodGet)
		if rs[1].status != http.StatusOK || !strings.Contains(string(rs[1].body), `"ok"`) {
			t.Fatalf("%s %s: the next answer on the connection is %d %q: the first one was not framed right", m, path, rs[1].status, rs[1].body)
		}
		got[i] = rs[0]
	}
	return got[0], got[1]
}

// sameAnswer fails unless head has get's status and headers (all but Date) and no body. A
// signature (api.SignatureHeader) is of the same bytes, not the same string: ES256 signatures
// are randomized, and each names when it was made; both answers have one or neither has.
func sameAnswer(t *testing.T, what string, get, head response) {
	t.Helper()
	if head.status != get.status {
		t.Errorf("%s: HEAD %d, GET %d (%s)", what, head.status, get.status, get.body)
	}
	if len(head.body) != 0 {
		t.Errorf("%s: HEAD has a body: %q", what, head.body)
	}
	names := map[string]bool{}
	for k := range get.header {
		names[k] = true
	}
	for k := range head.header {
		names[k] = true
	}
	for k := range names {
		if k == "Date" {
			continue
		}
		if k == http.CanonicalHeaderKey(api.SignatureHeader) {
			if (get.header.Get(k) == "") != (head.header.Get(k) == "") {
				t.Errorf("%s: signature: HEAD %q, GET %q", what, head.header.Get(k), get.header.Get(k))
			}
			continue
		}
		if !slices.Equal(get.header[k], head.header[k]) {
			t.Errorf("%s: header %s: HEAD %q, GET %q", what, k, head.header[k], get.header[k])
		}
	}
}

// TestHeadOnEveryGetRoute: every route that answers GET answers HEAD (RFC 9110 §9.3.2) through
// the same gates, with the same status and headers and no body; If-None-Match gives the same
// 304; a wrong method's Allow lists HEAD. The routes are read from the server, so one added later
// is covered without touching this test.
func TestHeadOnEveryGetRoute(t *testing.T) {
	f := newRouteFixture(t)
	missing := map[string]string{"tenant": "nope", "agentId": "nope", "name": "nope", "id": "00000000-0000-0000-0000-000000000000", "domain": "nope.example", "*": "nope.js"}
	// The query a GET route needs to answer 200.
	needs := map[string]string{catalog.MeshBase + "/v1/discover": "?query=review"}
	var gets []string
	for _, r := range f.echo.Routes() {
		if r.Method == http.MethodGet {
			gets = append(gets, r.Path)
		}
	}
	slices.Sort(gets)
	for _, want := range []string{"/health", "/ready", "/.well-known/jwks.json", "/v1/tenants", "/v1/tenants/:tenant",
		"/v1/tenants/:tenant/cards/:agentId", "/a2a/:tenant/:agentId/.well-known/agent-card.json", "/a2a/:tenant/agents",
		"/a2a/:tenant/.well-known/ai-catalog.json",
		"/v1/tenants/:tenant/delegations/:id"} {
		if !slices.Contains(gets, want) {
			t.Fatalf("GET %s is not among the routes read from the server: %q", want, gets)
		}
	}
	n := 0
	for _, route := range gets {
		path := fill(t, route, f.params) + needs[route]
		rid := func(what string) []string { n++; return []string{"X-Request-Id", fmt.Sprintf("head-%d-%s", n, what)} }

		get, head := f.headAndGet(t, path, f.root, rid("ok")...)
		// 200, or a redirect to where the resource is (/console to /console/).
		if get.status != http.StatusOK && (get.status != http.StatusMovedPermanently || get.header.Get("Location") == "") {
			t.Fatalf("GET %s: %d, want 200: %s", path, get.status, get.body)
		}
		sameAnswer(t, "HEAD "+path, get, head)

		if tag := get.header.Get("ETag"); tag != "" {
			get, head := f.headAndGet(t, path, f.root, append(rid("inm"), "If-None-Match", tag)...)
			if get.status != http.StatusNotModified {
				t.Errorf("GET %s with If-None-Match %s: %d, want 304", path, tag, get.status)
			}
			sameAnswer(t, "HEAD "+path+" with If-None-Match", get, head)
		}
		get, head = f.headAndGet(t, path, "", rid("anon")...)
		sameAnswer(t, "HEAD "+path+" without a token", get, head)
		get, head = f.headAndGet(t, path, "not-a-token", rid("badtoken")...)
		sameAnswer(t, "HEAD "+path+" with a bad token", get, head)
		zz := path + "?zz=1"
		if needs[route] != "" {
			zz = path + "&zz=1"
		}
		get, head = f.headAndGet(t, zz, f.root, rid("query")...)
		sameAnswer(t, "HEAD "+zz, get, head)
		if p := fill(t, route, missing) + needs[route]; p != path {
			get, head = f.headAndGet(t, p, f.root, rid("missing")...)
			sameAnswer(t, "HEAD "+p, get, head)
		}

		if strings.Contains(route, "/delegations") {
			// The agent's delegation token opens these GETs, and so their HEADs (it reads only
			// the delegations the agent made: none, so the one made to it is a 404).
			get, head = f.headAndGet(t, path, f.agent.Last().Header.Get("X-Delegation-Token"), rid("agent")...)
			if get.status == http.StatusUnauthorized {
				t.Errorf("GET %s with the agent's delegation token: %d: %s", path, get.status, get.body)
			}
			sameAnswer(t, "HEAD "+path+" with the agent's delegation token", get, head)
		}

		r := f.do("TRACE", path, f.root, nil)
		expect(t, r, http.StatusMethodNotAllowed, "method_not_allowed")
		allow := strings.Split(r.header.Get("Allow"), ", ")
		if !slices.Contains(allow, http.MethodGet) || !slices.Contains(allow, http.MethodHead) {
			t.Errorf("TRACE %s: Allow %q, want GET and HEAD in it", path, r.header.Get("Allow"))
		}
	}
}
