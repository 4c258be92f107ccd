package web_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/web"
	"github.com/agentcards/agentcards/web/api"
)

// mcpInit is an MCP initialize request, as a browser page would post it.
const mcpInit = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"page","version":"1"}}}`

// mcpPost posts mcpInit to /mcp with token and the extra headers.
func mcpPost(e *env, token string, headers ...string) response {
	return e.do("POST", "/mcp", token, mcpInit, slices.Concat([]string{"Accept", "application/json, text/event-stream"}, headers)...)
}

// preflight is a browser's CORS preflight of method on path from origin.
func preflight(e *env, path, origin, method, headers string) response {
	return e.do("OPTIONS", path, "", nil, "Origin", origin, "Access-Control-Request-Method", method,
		"Access-Control-Request-Headers", headers)
}

// TestBrowsersOffByDefault: without server.corsOrigins no page of another origin is granted a
// preflight or an answer it may read, and /mcp refuses any request with an Origin, token or
// not, with the one error body (the MCP transport's rule against DNS rebinding); requests without
// Origin, as programs send them, pass. Every answer carries X-Content-Type-Options: nosniff.
func TestBrowsersOffByDefault(t *testing.T) {
	e := newEnv(t, storagetest.Open(t, "sqlite"), 1<<20)
	e.mkTenant("acme", "alice")
	alice := e.token("alice", "acme", false)

	r := preflight(e, "/v1/tenants/acme/cards", "https://app.example", "GET", "authorization")
	expect(t, r, http.StatusForbidden, "forbidden")
	if r.header.Get("Access-Control-Allow-Origin") != "" || r.header.Get("Access-Control-Allow-Methods") != "" {
		t.Errorf("a preflight was granted: %v", r.header)
	}
	r = e.do("GET", "/v1/tenants/acme/cards", alice, nil, "Origin", "https://app.example")
	expect(t, r, http.StatusOK)
	if r.header.Get("Access-Control-Allow-Origin") != "" || slices.Contains(r.header.Values("Vary"), "Origin") {
		t.Errorf("CORS headers while off: %v", r.header)
	}

	for _, origin := range []string{"http://evil.example", "null", "http://127.0.0.1:1"} {
		r := mcpPost(e, alice, "Origin", origin)
		expect(t, r, http.StatusForbidden, "forbidden")
		if msg := errMessage(t, r); !strings.Contains(msg, "server.corsOrigins") {
			t.Errorf("Origin %s: message %q", origin, msg)
		}
	}
	expect(t, mcpPost(e, "", "Origin", "http://evil.example"), http.StatusForbidden, "forbidden")
	expect(t, mcpPost(e, alice), http.StatusOK)
	// A client of the go-sdk sends no Origin; one made to send a foreign one cannot connect.
	mustSession(t, e, alice)
	c := sdk.NewClient(&sdk.Implementation{Name: "page", Version: "1"}, nil)
	if s, err := c.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: e.srv.URL + "/mcp", MaxRetries: -1,
		HTTPClient: &http.Client{Transport: bearer{alice, originHeader{"Origin", "http://evil.example", e.srv.Client().Transport}}}}, nil); err == nil {
		s.Close()
		t.Error("a session was opened from a foreign origin")
	}

	// nosniff on every answer: JSON, an error, a card, a 304, a preflight's refusal.
	card := map[string]any{"agentId": "x", "name": "X", "visibility": "public", "endpoint": "https://agents.example.com/x"}
	expect(t, e.do("PUT", "/v1/tenants/acme/cards/x", alice, card), http.StatusCreated)
	a2aCard := e.do("GET", "/a2a/acme/x/.well-known/agent-card.json", "", nil)
	for name, r := range map[string]response{
		"health": e.do("GET", "/health", "", nil), "404": e.do("GET", "/v1/nope", "", nil),
		"401": e.do("GET", "/v1/tenants/acme/cards", "", nil), "card": e.do("GET", "/v1/tenants/acme/cards/x", alice, nil),
		"a2a card": a2aCard, "304": e.do("GET", "/a2a/acme/x/.well-known/agent-card.json", "", nil, "If-None-Match", a2aCard.header.Get("ETag")),
		"preflight": preflight(e, "/health", "https://app.example", "GET", ""), "mcp": mcpPost(e, alice),
	} {
		if got := r.header.Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("%s (%d): X-Content-Type-Options %q", name, r.status, got)
		}
	}
}

// TestBrowsersFromListedOrigins: a listed origin's preflights are granted with the route's
// methods and the headers the API reads (and MCP's own at /mcp); its answers may be read,
// with the headers a client needs exposed; another origin is granted nothing and is refused at
// /mcp, where the server's own origin (delegation.publicUrl) is admitted too.
func TestBrowsersFromListedOrigins(t *testing.T) {
	const app, evil, self = "https://app.example", "https://evil.example", "https://cards.example"
	e := newEnvWith(t, storagetest.Open(t, "sqlite"), envOptions{corsOrigins: []string{"https://APP.example:443/"}, publicURL: self})
	e.mkTenant("acme", "alice")
	alice := e.token("alice", "acme", false)
	card := map[string]any{"agentId": "x", "name": "X", "visibility": "public", "endpoint": "https://agents.example.com/x"}
	expect(t, e.do("PUT", "/v1/tenants/acme/cards/x", alice, card), http.StatusCreated)

	list := func(h http.Header, name string) []string {
		var out []string
		for _, v := range h.Values(name) {
			for p := range strings.SplitSeq(v, ",") {
				out = append(out, strings.ToLower(strings.TrimSpace(p)))
			}
		}
		return out
	}
	has := func(h http.Header, name string, want ...string) bool {
		got := list(h, name)
		for _, w := range want {
			if !slices.Contains(got, strings.ToLower(w)) {
				return false
			}
		}
		return true
	}

	r := preflight(e, "/v1/tenants/acme/cards/x", app, "PUT", "authorization, content-type, if-match")
	expect(t, r, http.StatusNoContent)
	if r.header.Get("Access-Control-Allow-Origin") != app || !has(r.header, "Access-Control-Allow-Methods", "GET", "PUT", "PATCH", "DELETE") ||
		has(r.header, "Access-Control-Allow-Methods", "OPTIONS") ||
		!has(r.header, "Access-Control-Allow-Headers", "Authorization", "Content-Type", "If-Match", "If-None-Match", "A2A-Version") ||
		has(r.header, "Access-Control-Allow-Headers", "Mcp-Session-Id") || r.header.Get("Access-Control-Max-Age") == "" ||
		!has(r.header, "Vary", "Origin", "Access-Control-Request-Method", "Access-Control-Request-Headers") {
		t.Errorf("the preflight of a listed origin: %v", r.header)
	}
	r = preflight(e, "/mcp", app, "POST", "authorization, content-type, mcp-protocol-version")
	expect(t, r, http.StatusNoContent)
	if got := r.header.Get("Access-Control-Allow-Methods"); got != "POST" ||
		!has(r.header, "Access-Control-Allow-Headers", "Authorization", "Mcp-Session-Id", "MCP-Protocol-Version") {
		t.Errorf("the preflight of /mcp: %v", r.header)
	}
	for _, origin := range []string{evil, self, "null"} {
		r := preflight(e, "/v1/tenants/acme/cards", origin, "GET", "authorization")
		expect(t, r, http.StatusForbidden, "forbidden")
		if r.header.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("a preflight from %s was granted: %v", origin, r.header)
		}
	}
	expect(t, preflight(e, "/v1/nope", app, "GET", ""), http.StatusNotFound, "not_found")

	// Answers: readable by the listed origin, with the headers a client reads exposed.
	r = e.do("GET", "/v1/tenants/acme/cards/x", alice, nil, "Origin", app)
	expect(t, r, http.StatusOK)
	if r.header.Get("Access-Control-Allow-Origin") != app ||
		!has(r.header, "Access-Control-Expose-Headers", "ETag", "Location", "X-Request-Id", "Retry-After", web.HeaderA2ACardVersion, api.SignatureHeader) ||
		!has(r.header, "Vary", "Origin") {
		t.Errorf("an answer to a listed origin: %v", r.header)
	}
	r = e.do("GET", "/a2a/acme/x/.well-known/agent-card.json", "", nil, "Origin", app)
	if r.header.Get("Access-Control-Allow-Origin") != app || !has(r.header, "Vary", "A2A-Version", "Authorization", "Origin") {
		t.Errorf("an A2A card to a listed origin: %v", r.header)
	}
	r = e.do("GET", "/v1/nope", alice, nil, "Origin", app)
	if r.header.Get("Access-Control-Allow-Origin") != app {
		t.Errorf("an error to a listed origin cannot be read: %v", r.header)
	}
	r = e.do("GET", "/v1/tenants/acme/cards/x", alice, nil, "Origin", evil)
	expect(t, r, http.StatusOK)
	if r.header.Get("Access-Control-Allow-Origin") != "" || r.header.Get("Access-Control-Expose-Headers") != "" || !has(r.header, "Vary", "Origin") {
		t.Errorf("an answer to another origin: %v", r.header)
	}
	// Without Origin, as programs call: the answer may vary by Origin all the same.
	if r := e.do("GET", "/health", "", nil); !has(r.header, "Vary", "Origin") || r.header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("an answer without Origin: %v", r.header)
	}

	// /mcp: the listed origin and the server's own pass; any other is refused.
	if r := mcpPost(e, alice, "Origin", app); r.status != http.StatusOK || r.header.Get("Access-Control-Allow-Origin") != app {
		t.Errorf("/mcp from a listed origin: %d %v", r.status, r.header)
	}
	expect(t, mcpPost(e, alice, "Origin", self), http.StatusOK)
	expect(t, mcpPost(e, alice, "Origin", evil), http.StatusForbidden, "forbidden")
}

// originHeader is a transport that sets one header on every request.
type originHeader struct {
	name, value string
	next        http.RoundTripper
}

func (w originHeader) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(w.name, w.value)
	return w.next.RoundTrip(r)
}
