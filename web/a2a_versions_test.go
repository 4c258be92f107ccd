package web_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/agentcards/agentcards/cards/a2a/a2atest"
	"github.com/agentcards/agentcards/web"
	"github.com/agentcards/agentcards/web/webtest"
)

// TestA2AVersionForms: the version error over HTTP. ?version= is an explicit choice: a form the
// card has no interface for is 400 version_not_supported, with the service's message in the
// error body and no cache headers; an unknown version is 400 invalid; a card the caller may not
// see is 404 whatever the version. Which form lists what, and the message for each case, are
// cards/a2a's (TestA2ARenderVersionForms).
func TestA2AVersionForms(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		e.mkTenant("acme", "alice")
		alice := e.token("alice", "acme", false)
		put := func(id, vis string) {
			c := map[string]any{"agentId": id, "name": "N", "visibility": vis, "endpoint": "https://agents.example.com/v10"}
			expect(t, e.do("PUT", "/v1/tenants/acme/cards/"+id, alice, c), http.StatusCreated)
		}
		put("only10", "public") // the endpoint alone: one 1.0 JSON-RPC interface
		put("secret10", "private")
		card := func(id string) string { return "/a2a/acme/" + id + "/.well-known/agent-card.json" }

		r := e.do("GET", card("only10")+"?version=0.3", "", nil)
		expect(t, r, http.StatusBadRequest, "version_not_supported")
		if msg := errMessage(t, r); !strings.Contains(msg, "has no A2A 0.3 interface") || !strings.Contains(msg, "its card declares A2A 1.0") {
			t.Errorf("message %q", msg)
		}
		if r.header.Get("ETag") != "" || r.header.Get("Cache-Control") != "" || r.header.Get(web.HeaderA2ACardVersion) != "" {
			t.Errorf("the error carries card headers %v", r.header)
		}
		// ?version= is the explicit choice: the header does not change it.
		expect(t, e.do("GET", card("only10")+"?version=0.3", "", nil, "A2A-Version", "1.0"), http.StatusBadRequest, "version_not_supported")
		expect(t, e.do("GET", card("secret10")+"?version=0.3", "", nil), http.StatusNotFound, "not_found")
		expect(t, e.do("GET", card("secret10")+"?version=0.3", alice, nil), http.StatusBadRequest, "version_not_supported")
		expect(t, e.do("GET", card("only10")+"?version=2.0", "", nil), http.StatusBadRequest, "invalid")
		// The header never makes a card visible.
		expect(t, e.do("GET", card("secret10"), "", nil, "A2A-Version", "1.0"), http.StatusNotFound, "not_found")
	})
}

// TestA2AVersionHeaderNeverRefuses: the A2A-Version header, which client libraries send with every
// request, picks among the forms the agent declares and is never refused. A client of
// @a2a-js/sdk 1.3 fetches every card with A2A-Version: 1.0; for an agent that declares only 0.3
// it gets 200 and the default card (the hybrid, whose 0.3 members lead to the 0.3 interface), as
// it gets from the agent itself, with A2A-Card-Version saying which versions the card is read as,
// and the same ETag as the same form fetched without the header.
func TestA2AVersionHeaderNeverRefuses(t *testing.T) {
	v1, v03 := cardSchemas(t)
	forEachDialect(t, func(t *testing.T, e *env) {
		e.mkTenant("acme", "alice")
		alice := e.token("alice", "acme", false)
		jwks := e.jwks()
		iface := func(v string) map[string]any {
			return map[string]any{"url": "https://agents.example.com/v" + v, "protocolBinding": "JSONRPC", "protocolVersion": v}
		}
		for id, ifaces := range map[string][]any{
			"only03": {iface("0.3")},
			"both":   {iface("1.0"), iface("0.3")},
		} {
			c := map[string]any{"agentId": id, "name": "N", "visibility": "public", "a2a": map[string]any{"interfaces": ifaces}}
			expect(t, e.do("PUT", "/v1/tenants/acme/cards/"+id, alice, c), http.StatusCreated)
		}
		expect(t, e.do("PUT", "/v1/tenants/acme/cards/only10", alice,
			map[string]any{"agentId": "only10", "name": "N", "visibility": "public", "endpoint": "https://agents.example.com/v1.0"}), http.StatusCreated)
		card := func(id string) string { return "/a2a/acme/" + id + "/.well-known/agent-card.json" }

		// As @a2a-js/sdk fetches a card.
		js := e.do("GET", card("only03"), "", nil, "A2A-Version", "1.0", "Accept", "application/json")
		expect(t, js, http.StatusOK)
		if err := webtest.VerifyCard(jwks, js.body); err != nil {
			t.Fatalf("signature: %v", err)
		}
		a2atest.ValidateJSON(t, v1, jsonOf(t, a2atest.Only10(t, js.body)))
		a2atest.ValidateJSON(t, v03, jsonOf(t, a2atest.Only03(t, js.body)))
		if got := a2atest.DecodeCard(t, js.body); got["url"] != "https://agents.example.com/v0.3" || got["protocolVersion"] != "0.3.0" {
			t.Errorf("the card does not lead to the 0.3 interface: %s", js.body)
		}
		if js.header.Get(web.HeaderA2ACardVersion) != "1.0, 0.3" || js.header.Get("Vary") != "A2A-Version, Authorization" {
			t.Errorf("headers %v", js.header)
		}
		plain := e.do("GET", card("only03"), "", nil)
		if js.header.Get("ETag") == "" || plain.header.Get("ETag") != js.header.Get("ETag") {
			t.Errorf("ETag %q, without the header %q", js.header.Get("ETag"), plain.header.Get("ETag"))
		}
		notModified := e.do("GET", card("only03"), "", nil, "A2A-Version", "1.0", "If-None-Match", js.header.Get("ETag"))
		expect(t, notModified, http.StatusNotModified)
		if notModified.header.Get(web.HeaderA2ACardVersion) != "1.0, 0.3" {
			t.Errorf("304 headers %v", notModified.header)
		}

		// Each header value, on each agent: the form served, told by A2A-Card-Version, and its
		// tag, which is that of the same form asked for by ?version= or by nothing.
		for _, tc := range []struct {
			id, header, servedAs, sameAs string
		}{
			{"only03", "0.3", "0.3", "?version=0.3"},
			{"only03", "0.3.0", "0.3", "?version=0.3"},
			{"only10", "1.0", "1.0", "?version=1.0"},
			{"only10", "0.3", "1.0", ""},
			{"both", "1.0", "1.0", "?version=1.0"},
			{"both", "0.3", "0.3", "?version=0.3"},
			{"both", "2.0", "1.0, 0.3", ""},
			{"both", "v0.2", "1.0, 0.3", ""},
			{"both", "latest", "1.0, 0.3", ""},
		} {
			r := e.do("GET", card(tc.id), "", nil, "A2A-Version", tc.header)
			expect(t, r, http.StatusOK)
			if got := r.header.Get(web.HeaderA2ACardVersion); got != tc.servedAs {
				t.Errorf("%s with A2A-Version %s: served as %q, want %q", tc.id, tc.header, got, tc.servedAs)
			}
			same := e.do("GET", card(tc.id)+tc.sameAs, "", nil)
			if r.header.Get("ETag") != same.header.Get("ETag") || same.header.Get(web.HeaderA2ACardVersion) != tc.servedAs {
				t.Errorf("%s with A2A-Version %s: ETag %q, %q for %q (served as %q)", tc.id, tc.header,
					r.header.Get("ETag"), same.header.Get("ETag"), tc.sameAs, same.header.Get(web.HeaderA2ACardVersion))
			}
		}
		// ?version= wins over the header.
		r := e.do("GET", card("both")+"?version=1.0", "", nil, "A2A-Version", "0.3")
		expect(t, r, http.StatusOK)
		if r.header.Get(web.HeaderA2ACardVersion) != "1.0" {
			t.Errorf("?version=1.0 with A2A-Version 0.3: served as %q", r.header.Get(web.HeaderA2ACardVersion))
		}
	})
}
