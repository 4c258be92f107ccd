package web_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestA2AVersionForms: the version error over HTTP. A form the card has no interface for is 400
// version_not_supported, asked by ?version= or A2A-Version alike, with the service's message in
// the error body and no cache headers; an unknown version is 400 invalid; a card the caller may
// not see is 404 whatever the version. Which form lists what, and the message for each case, are
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

		for _, r := range []response{
			e.do("GET", card("only10")+"?version=0.3", "", nil),
			e.do("GET", card("only10"), "", nil, "A2A-Version", "0.3"),
		} {
			expect(t, r, http.StatusBadRequest, "version_not_supported")
			if msg := errMessage(t, r); !strings.Contains(msg, "has no A2A 0.3 interface") || !strings.Contains(msg, "its card declares A2A 1.0") {
				t.Errorf("message %q", msg)
			}
			if r.header.Get("ETag") != "" || r.header.Get("Cache-Control") != "" {
				t.Errorf("the error carries cache headers %v", r.header)
			}
		}
		expect(t, e.do("GET", card("secret10")+"?version=0.3", "", nil), http.StatusNotFound, "not_found")
		expect(t, e.do("GET", card("secret10")+"?version=0.3", alice, nil), http.StatusBadRequest, "version_not_supported")
		expect(t, e.do("GET", card("only10")+"?version=2.0", "", nil), http.StatusBadRequest, "invalid")
	})
}
