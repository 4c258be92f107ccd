package web_test

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/agentcards/agentcards/cards/agenttest"
	"github.com/agentcards/agentcards/storage/storagetest"
)

// routeFixture is a server with something behind every path parameter its routes take, so that
// a test walking e.echo.Routes() reaches each handler: tenant "acme" (admin alice), the public
// card "pub" and one completed delegation to it.
type routeFixture struct {
	*env
	root, alice string
	// agent is the card's agent; its record holds the delegation token it was called with.
	agent *agenttest.Agent
	// params fills each path parameter (":tenant", ":agentId", ":name", ":id", a webhook's
	// "webhooks/id", a source's "sources/id", ":domain", and the console's "*") with an existing
	// value.
	params map[string]string
}

func newRouteFixture(t *testing.T) routeFixture {
	t.Helper()
	e := newEnv(t, storagetest.Open(t, "sqlite"), 1<<20)
	e.mkTenant("acme", "alice")
	f := routeFixture{env: e, root: e.admin(), alice: e.token("alice", "acme", false)}
	a := agenttest.New(t, agenttest.Answer(http.StatusOK, `{"result": "done"}`))
	card := sampleCard("pub")
	card["visibility"], card["endpoint"] = "public", a.Endpoint()
	expect(t, e.do("POST", "/v1/tenants/acme/cards", f.alice, card), http.StatusCreated)
	r := e.do("POST", "/v1/tenants/acme/delegations", f.alice,
		map[string]any{"agentId": "pub", "capability": "review_pr", "task": "x", "mode": "sync"})
	expect(t, r, http.StatusOK)
	var d struct {
		ID string `json:"id"`
	}
	r.json(t, &d)
	// A webhook to a receiver that takes every event.
	hooked := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	t.Cleanup(hooked.Close)
	r = e.do("POST", "/v1/tenants/acme/webhooks", f.alice, map[string]any{"url": hooked.URL})
	expect(t, r, http.StatusCreated)
	var hook struct {
		ID string `json:"id"`
	}
	r.json(t, &hook)
	// An issuer of the trust policy.
	expect(t, e.do("PUT", "/v1/tenants/acme/trust/example.com", f.alice, map[string]any{"keys": pinnedKeys(t)}), http.StatusOK)
	// A source the tenant follows (the fixture's server syncs nothing: its background is not run).
	r = e.do("POST", "/v1/tenants/acme/sources", f.alice, map[string]any{"kind": "a2a-urls", "urls": []string{a.Endpoint() + "/.well-known/agent-card.json"}})
	expect(t, r, http.StatusCreated)
	var src struct {
		ID string `json:"id"`
	}
	r.json(t, &src)
	f.params = map[string]string{"tenant": "acme", "agentId": "pub", "name": "pub", "id": d.ID, "webhooks/id": hook.ID, "sources/id": src.ID,
		"domain": "example.com", "*": "index.html"}
	f.agent = a
	return f
}

// fill replaces the route's path parameters with values (by the segment before and the name,
// "webhooks/id", or by the name alone, without the colon), failing
// the test on a parameter it has no value for: a new kind of route needs a fixture for it.
func fill(t testing.TB, route string, values map[string]string) string {
	t.Helper()
	segs := strings.Split(route, "/")
	for i, s := range segs {
		if name, ok := strings.CutPrefix(s, ":"); ok {
			v, ok := values[segs[max(i-1, 0)]+"/"+name] // a parameter of one resource: "webhooks/id"
			if !ok {
				v, ok = values[name]
			}
			if !ok {
				t.Fatalf("route %s: no value for its parameter %s", route, s)
			}
			segs[i] = v
		} else if strings.Contains(s, "*") {
			v, ok := values[s]
			if !ok || s != "*" {
				t.Fatalf("route %s: a wildcard route; the test does not know what to put there", route)
			}
			segs[i] = v
		} else {
			segs[i] = strings.ReplaceAll(s, `\:`, ":") // an escaped colon is a colon
		}
	}
	return strings.Join(segs, "/")
}

// snapshot reads, as the platform admin, everything a refused request could have changed in
// tenant acme: the tenants, its cards, roles, policies and delegations.
func (f routeFixture) snapshot(t testing.TB) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, p := range []string{"/v1/tenants", "/v1/tenants/acme", "/v1/tenants/acme/cards",
		"/v1/tenants/acme/roles", "/v1/tenants/acme/policies", "/v1/tenants/acme/delegations"} {
		r := f.do("GET", p, f.root, nil)
		expect(t, r, http.StatusOK)
		out[p] = r.body
	}
	return out
}

// wire is req as it goes over the connection.
func wire(t testing.TB, req *http.Request) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := req.Write(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// exchange writes raw to a new connection to the server and reads one answer per method, in
// order (methods are those of the requests raw holds, which decide how an answer is framed).
// Each answer is read by its own framing, so one that carries stray bytes, such as a HEAD answer
// with a body, spoils the reading of the next.
func (e *env) exchange(t testing.TB, raw []byte, methods ...string) []response {
	t.Helper()
	conn, err := net.Dial("tcp", e.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(patience)); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Write(raw); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	var out []response
	for i, m := range methods {
		out = append(out, readAnswer(t, br, m, fmt.Sprintf("answer %d (%s)", i+1, m)))
	}
	return out
}

// readAnswer reads one answer to a request of the given method from br.
func readAnswer(t testing.TB, br *bufio.Reader, method, what string) response {
	t.Helper()
	res, err := http.ReadResponse(br, &http.Request{Method: method})
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("%s: body: %v", what, err)
	}
	return response{status: res.StatusCode, header: res.Header, body: body}
}

// errCodeAt reads the error code of r, an answer to path: agentkit-mesh's error body under its
// control plane's base URL, the one error body elsewhere.
func errCodeAt(t testing.TB, path string, r response) string {
	t.Helper()
	if !strings.HasPrefix(path, "/compat/agentkit-mesh/") {
		return r.errCode(t)
	}
	return meshCode(t, r)
}

// meshCode reads the code of agentkit-mesh's error body, failing unless r holds one.
func meshCode(t testing.TB, r response) string {
	t.Helper()
	var b struct {
		Error     string `json:"error"`
		Code      string `json:"code"`
		RequestID string `json:"requestId"`
	}
	dec := json.NewDecoder(bytes.NewReader(r.body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil || b.Error == "" || b.Code == "" || b.RequestID != r.header.Get("X-Request-Id") {
		t.Fatalf("not agentkit-mesh's error body: %s (%v)", r.body, err)
	}
	return b.Code
}

// pinnedKeys is a JWKS of one new public key (kid k1), as a tenant admin pins it in a trust policy.
func pinnedKeys(t testing.TB) jose.JSONWebKeySet {
	t.Helper()
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: pub, KeyID: "k1", Algorithm: "EdDSA"}}}
}
