package a2a_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/a2a"
	"github.com/agentcards/agentcards/cards/a2a/a2atest"
	"github.com/agentcards/agentcards/web/webtest"
)

// TestA2ARenderVersionForms: each explicit form lists only the interfaces of its version, and a
// version the card declares no interface of is fault.VersionNotSupported naming the versions it
// has; the default card lists every interface, with the 0.3 members only when one speaks 0.3.
func TestA2ARenderVersionForms(t *testing.T) {
	i10 := map[string]any{"url": "https://agents.example.com/v10", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
	i03 := map[string]any{"url": "https://agents.example.com/v03", "protocolBinding": "JSONRPC", "protocolVersion": "0.3"}
	forEachDialect(t, func(t *testing.T, f *fixture) {
		put := func(id string, a2aBlock map[string]any) {
			c := map[string]any{"agentId": id, "name": "N", "visibility": "public", "endpoint": "https://agents.example.com/v10"}
			if a2aBlock != nil {
				c["a2a"] = a2aBlock
			}
			f.put(id, c)
		}
		put("only10", nil) // the endpoint alone: one 1.0 JSON-RPC interface
		put("only03", map[string]any{"interfaces": []any{i03}})
		put("both", map[string]any{"interfaces": []any{i10, i03}})
		f.put("none", map[string]any{"agentId": "none", "name": "N", "visibility": "public"})

		for _, tc := range []struct {
			id, version, names string
		}{
			{"only10", a2a.Version03, "its card declares A2A 1.0"},
			{"only03", a2a.Version10, "its card declares A2A 0.3"},
			{"none", a2a.Version10, "its card declares no A2A interface"},
			{"none", a2a.Version03, "its card declares no A2A interface"},
		} {
			_, err := f.render(tc.id, tc.version)
			if !errors.Is(err, fault.VersionNotSupported) {
				t.Errorf("%s asked for %s: %v, want version not supported", tc.id, tc.version, err)
				continue
			}
			msg := fault.MessageOf(err)
			if !strings.Contains(msg, "has no A2A "+tc.version+" interface") || !strings.Contains(msg, tc.names) {
				t.Errorf("%s asked for %s: message %q", tc.id, tc.version, msg)
			}
		}

		// A card with both: each explicit form lists only its own interface.
		c03 := a2atest.DecodeCard(t, f.mustRender("both", a2a.Version03))
		webtest.SameJSON(t, "0.3 interfaces", map[string]any{"url": c03["url"], "preferredTransport": c03["preferredTransport"], "additionalInterfaces": c03["additionalInterfaces"]},
			map[string]any{"url": "https://agents.example.com/v03", "preferredTransport": "JSONRPC",
				"additionalInterfaces": []any{map[string]any{"url": "https://agents.example.com/v03", "transport": "JSONRPC"}}})
		webtest.SameJSON(t, "1.0 interfaces", a2atest.DecodeCard(t, f.mustRender("both", a2a.Version10))["supportedInterfaces"], []any{i10})
		// ... and the default card lists both, with the 0.3 members of the 0.3 one.
		cd := a2atest.DecodeCard(t, f.mustRender("both", a2a.VersionDefault))
		webtest.SameJSON(t, "default interfaces", map[string]any{"supportedInterfaces": cd["supportedInterfaces"], "url": cd["url"], "protocolVersion": cd["protocolVersion"]},
			map[string]any{"supportedInterfaces": []any{i10, i03}, "url": "https://agents.example.com/v03", "protocolVersion": "0.3.0"})
		// A card without a 0.3 interface has the pure 1.0 card as its default.
		plain := a2atest.DecodeCard(t, f.mustRender("only10", a2a.VersionDefault))
		for _, k := range a2atest.Members03 {
			if _, ok := plain[k]; ok {
				t.Errorf("the default card of a 1.0-only agent has the 0.3 member %s", k)
			}
		}
	})
}

// TestA2AHybridDefaultCard compares the whole default card of an agent with a 1.0 and a 0.3
// interface, unsigned, with the hybrid written by hand after the reference SDK's
// (shared/a2a/samples, a2a-python-1.1-hybrid-agent-card.json). That the served card's signature
// covers all of it is web's (TestA2AServedCardsValidateAndVerify).
func TestA2AHybridDefaultCard(t *testing.T) {
	const rpc = "https://echo.example.com/a2a/jsonrpc"
	forEachDialect(t, func(t *testing.T, f *fixture) {
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
		f.put("echo", card)
		webtest.SameJSON(t, "hybrid card", a2atest.DecodeCard(t, f.mustRender("echo", a2a.VersionDefault)), map[string]any{
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

// TestA2APreferredForm: the version a client prefers (the A2A-Version header) picks its pure
// form when the card declares an interface of it; any other version, one the card lacks or one
// not served at all, gets the default card, which is never refused. FormVersions names what
// each form is read as.
func TestA2APreferredForm(t *testing.T) {
	iface := func(v string) string {
		return `{"url": "https://agents.example.com/v` + v + `", "protocolBinding": "JSONRPC", "protocolVersion": "` + v + `"}`
	}
	card := func(ifaces ...string) cards.Card {
		c := cards.Card{AgentID: "a", Endpoint: "https://agents.example.com/endpoint"}
		if len(ifaces) > 0 {
			c.A2A = &cards.A2A{Interfaces: json.RawMessage("[" + strings.Join(ifaces, ",") + "]")}
		}
		return c
	}
	only10, only03, both := card(), card(iface("0.3.0")), card(iface("1.0"), iface("0.3"))
	none := cards.Card{AgentID: "a"}
	for _, tc := range []struct {
		name     string
		card     cards.Card
		prefers  string
		form     string
		readAsIs string
	}{
		{"1.0 agent, 1.0", only10, a2a.Version10, a2a.Version10, "1.0"},
		{"1.0 agent, 0.3", only10, a2a.Version03, a2a.VersionDefault, "1.0"},
		{"0.3 agent, 1.0 (the JS SDK's header)", only03, a2a.Version10, a2a.VersionDefault, "1.0, 0.3"},
		{"0.3 agent, 0.3", only03, a2a.Version03, a2a.Version03, "0.3"},
		{"both, 1.0", both, a2a.Version10, a2a.Version10, "1.0"},
		{"both, 0.3", both, a2a.Version03, a2a.Version03, "0.3"},
		{"both, 2.0", both, "2.0", a2a.VersionDefault, "1.0, 0.3"},
		{"both, none", both, a2a.VersionDefault, a2a.VersionDefault, "1.0, 0.3"},
		{"no interface, 1.0", none, a2a.Version10, a2a.VersionDefault, "1.0"},
	} {
		form := a2a.Preferred(tc.card, tc.prefers)
		if form != tc.form {
			t.Errorf("%s: form %q, want %q", tc.name, form, tc.form)
		}
		if got := strings.Join(a2a.FormVersions(tc.card, form), ", "); got != tc.readAsIs {
			t.Errorf("%s: read as %q, want %q", tc.name, got, tc.readAsIs)
		}
		if _, err := a2a.Render(tc.card, form); err != nil {
			t.Errorf("%s: the preferred form is refused: %v", tc.name, err)
		}
	}
}
