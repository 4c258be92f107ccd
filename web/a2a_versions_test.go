package web_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/agentcards/agentcards/web/webtest"
)

// TestA2AVersionForms: each explicit form lists only the interfaces of its version, a version the
// card declares no interface of is 400 version_not_supported naming the versions it has, and the
// other answers stay as they were (an unknown version is 400 invalid, a card the caller may not
// see is 404 whatever the version).
func TestA2AVersionForms(t *testing.T) {
	i10 := map[string]any{"url": "https://agents.example.com/v10", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
	i03 := map[string]any{"url": "https://agents.example.com/v03", "protocolBinding": "JSONRPC", "protocolVersion": "0.3"}
	forEachDialect(t, func(t *testing.T, e *env) {
		e.mkTenant("acme", "alice")
		alice := e.token("alice", "acme", false)
		put := func(id, vis string, a2aBlock map[string]any) {
			c := map[string]any{"agentId": id, "name": "N", "visibility": vis, "endpoint": "https://agents.example.com/v10"}
			if a2aBlock != nil {
				c["a2a"] = a2aBlock
			}
			expect(t, e.do("PUT", "/v1/tenants/acme/cards/"+id, alice, c), http.StatusCreated)
		}
		put("only10", "public", nil) // the endpoint alone: one 1.0 JSON-RPC interface
		put("only03", "public", map[string]any{"interfaces": []any{i03}})
		put("both", "public", map[string]any{"interfaces": []any{i10, i03}})
		put("secret10", "private", nil)
		expect(t, e.do("PUT", "/v1/tenants/acme/cards/none", alice, map[string]any{"agentId": "none", "name": "N", "visibility": "public"}), http.StatusCreated)
		card := func(id string) string { return "/a2a/acme/" + id + "/.well-known/agent-card.json" }

		for _, tc := range []struct {
			id, version, names string
		}{
			{"only10", "0.3", "its card declares A2A 1.0"},
			{"only03", "1.0", "its card declares A2A 0.3"},
			{"none", "1.0", "its card declares no A2A interface"},
			{"none", "0.3", "its card declares no A2A interface"},
		} {
			for _, r := range []response{
				e.do("GET", card(tc.id)+"?version="+tc.version, "", nil),
				e.do("GET", card(tc.id), "", nil, "A2A-Version", tc.version),
			} {
				expect(t, r, http.StatusBadRequest, "version_not_supported")
				msg := errMessage(t, r)
				if !strings.Contains(msg, "has no A2A "+tc.version+" interface") || !strings.Contains(msg, tc.names) {
					t.Errorf("%s asked for %s: message %q", tc.id, tc.version, msg)
				}
				if r.header.Get("ETag") != "" || r.header.Get("Cache-Control") != "" {
					t.Errorf("%s asked for %s: the error carries cache headers %v", tc.id, tc.version, r.header)
				}
			}
		}
		expect(t, e.do("GET", card("secret10")+"?version=0.3", "", nil), http.StatusNotFound, "not_found")
		expect(t, e.do("GET", card("secret10")+"?version=0.3", alice, nil), http.StatusBadRequest, "version_not_supported")
		expect(t, e.do("GET", card("both")+"?version=2.0", "", nil), http.StatusBadRequest, "invalid")

		// A card with both: each explicit form lists only its own interface.
		r03 := e.do("GET", card("both")+"?version=0.3", "", nil)
		expect(t, r03, http.StatusOK)
		c03 := decodeCard(t, r03.body)
		webtest.SameJSON(t, "0.3 interfaces", map[string]any{"url": c03["url"], "preferredTransport": c03["preferredTransport"], "additionalInterfaces": c03["additionalInterfaces"]},
			map[string]any{"url": "https://agents.example.com/v03", "preferredTransport": "JSONRPC",
				"additionalInterfaces": []any{map[string]any{"url": "https://agents.example.com/v03", "transport": "JSONRPC"}}})
		r10 := e.do("GET", card("both")+"?version=1.0", "", nil)
		expect(t, r10, http.StatusOK)
		webtest.SameJSON(t, "1.0 interfaces", decodeCard(t, r10.body)["supportedInterfaces"], []any{i10})
		// ... and the default card lists both, with the 0.3 members of the 0.3 one.
		def := e.do("GET", card("both"), "", nil)
		expect(t, def, http.StatusOK)
		cd := decodeCard(t, def.body)
		webtest.SameJSON(t, "default interfaces", map[string]any{"supportedInterfaces": cd["supportedInterfaces"], "url": cd["url"], "protocolVersion": cd["protocolVersion"]},
			map[string]any{"supportedInterfaces": []any{i10, i03}, "url": "https://agents.example.com/v03", "protocolVersion": "0.3.0"})
		// A card without a 0.3 interface has the pure 1.0 card as its default.
		plain := decodeCard(t, e.do("GET", card("only10"), "", nil).body)
		for _, k := range members03 {
			if _, ok := plain[k]; ok {
				t.Errorf("the default card of a 1.0-only agent has the 0.3 member %s", k)
			}
		}
	})
}

// TestA2AHybridDefaultCard compares the whole default card of an agent with a 1.0 and a 0.3
// interface with the hybrid written by hand after the reference SDK's (shared/a2a/samples,
// a2a-python-1.1-hybrid-agent-card.json), and checks that its signature, over all of it, verifies.
func TestA2AHybridDefaultCard(t *testing.T) {
	const rpc = "https://echo.example.com/a2a/jsonrpc"
	forEachDialect(t, func(t *testing.T, e *env) {
		e.mkTenant("acme", "alice")
		bearer := map[string]any{"description": "delegation JWT", "scheme": "Bearer", "bearerFormat": "JWT"}
		card := map[string]any{"agentId": "echo", "name": "Echo", "description": "Echoes text.", "version": "1.2.3", "visibility": "public",
			"capabilities": []any{map[string]any{"name": "echo", "title": "Echo", "tags": []any{"echo"}}},
			"a2a": map[string]any{
				"interfaces": []any{
					map[string]any{"url": rpc, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
					map[string]any{"url": rpc, "protocolBinding": "JSONRPC", "protocolVersion": "0.3"}},
				"streaming": true, "extendedAgentCard": true,
				"securitySchemes":           map[string]any{"bearer": map[string]any{"httpAuthSecurityScheme": bearer}},
				"securityRequirements":      []any{map[string]any{"schemes": map[string]any{"bearer": map[string]any{}}}},
				"skillSecurityRequirements": map[string]any{"echo": []any{map[string]any{"schemes": map[string]any{"bearer": map[string]any{"list": []any{"echo"}}}}}},
			}}
		expect(t, e.do("PUT", "/v1/tenants/acme/cards/echo", e.token("alice", "acme", false), card), http.StatusCreated)
		r := e.do("GET", "/a2a/acme/echo/.well-known/agent-card.json", "", nil)
		expect(t, r, http.StatusOK)
		if err := webtest.VerifyCard(e.jwks(), r.body); err != nil {
			t.Fatalf("hybrid signature: %v", err)
		}
		served := decodeCard(t, r.body)
		delete(served, "signatures")
		webtest.SameJSON(t, "hybrid card", served, map[string]any{
			// 1.0
			"name": "Echo", "description": "Echoes text.", "version": "1.2.3",
			"supportedInterfaces": card["a2a"].(map[string]any)["interfaces"],
			"capabilities":        map[string]any{"streaming": true, "extendedAgentCard": true},
			"defaultInputModes":   []any{"text/plain"}, "defaultOutputModes": []any{"text/plain"},
			"securityRequirements": []any{map[string]any{"schemes": map[string]any{"bearer": map[string]any{}}}},
			"skills": []any{map[string]any{"id": "echo", "name": "Echo", "description": "Echo", "tags": []any{"echo"},
				"securityRequirements": []any{map[string]any{"schemes": map[string]any{"bearer": map[string]any{"list": []any{"echo"}}}}},
				// 0.3
				"security": []any{map[string]any{"bearer": []any{"echo"}}}}},
			// both: the 1.0 one-of member, and the 0.3 fields next to it
			"securitySchemes": map[string]any{"bearer": map[string]any{"httpAuthSecurityScheme": bearer,
				"type": "http", "scheme": "Bearer", "bearerFormat": "JWT", "description": "delegation JWT"}},
			// 0.3
			"protocolVersion": "0.3.0", "url": rpc, "preferredTransport": "JSONRPC",
			"security": []any{map[string]any{"bearer": []any{}}}, "supportsAuthenticatedExtendedCard": true,
		})
	})
}
