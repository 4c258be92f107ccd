package a2a_test

import (
	"slices"
	"testing"

	"github.com/agentcards/agentcards/cards/a2a"
	"github.com/agentcards/agentcards/cards/a2a/a2atest"
	"github.com/agentcards/agentcards/web/webtest"
)

// v03Base is the smallest 0.3 card the 0.3 schema accepts; each case of
// TestA2AImportV03Members changes a few of its members.
func v03Base() map[string]any {
	return map[string]any{
		"protocolVersion": "0.3.0", "name": "Base", "description": "d", "url": "https://a.example/rpc", "version": "1.0.0",
		"capabilities": map[string]any{}, "defaultInputModes": []any{"text/plain"}, "defaultOutputModes": []any{"text/plain"},
		"skills": []any{map[string]any{"id": "s1", "name": "Skill One", "description": "sd", "tags": []any{"t"}}},
	}
}

// v10OfBase is v03Base in 1.0 form, written by hand from the spec's "what 1.0 changed" list: url,
// preferredTransport (JSONRPC when absent, 0.3's default) and protocolVersion became one
// supportedInterfaces entry.
func v10OfBase() map[string]any {
	return map[string]any{
		"name": "Base", "description": "d", "version": "1.0.0",
		"supportedInterfaces": []any{map[string]any{"url": "https://a.example/rpc", "protocolBinding": "JSONRPC", "protocolVersion": "0.3.0"}},
		"capabilities":        map[string]any{}, "defaultInputModes": []any{"text/plain"}, "defaultOutputModes": []any{"text/plain"},
		"skills": []any{map[string]any{"id": "s1", "name": "Skill One", "description": "sd", "tags": []any{"t"}}},
	}
}

// v03OAuthFlows are the OAuth 2 flows of the 0.3 cases that declare an oauth2 scheme.
var v03OAuthFlows = map[string]any{"clientCredentials": map[string]any{"tokenUrl": "https://auth.example/token", "scopes": map[string]any{"read": "r"}}}

// v03MemberCase is one case of TestA2AImportV03Members: a 0.3 card that differs from v03Base in
// a few members, and what importing it must give.
type v03MemberCase struct {
	name string
	in   map[string]any // members changed in v03Base
	want map[string]any // members changed in v10OfBase: the served 1.0 card
	// auth is the registry card's authRequirements; nil means absent.
	auth any
	// capabilities are the registry card's; nil means the one of v03Base's skill.
	capabilities []any
}

// v03MemberCases are the cases of TestA2AImportV03Members, one member (or one group of
// members that go together) each.
var v03MemberCases = []v03MemberCase{
	{name: "base", auth: map[string]any{"type": "none"}},
	{name: "preferredTransport",
		in:   map[string]any{"preferredTransport": "GRPC"},
		want: map[string]any{"supportedInterfaces": []any{map[string]any{"url": "https://a.example/rpc", "protocolBinding": "GRPC", "protocolVersion": "0.3.0"}}},
		auth: map[string]any{"type": "none"}},
	{name: "protocolVersion is each interface's",
		in: map[string]any{"protocolVersion": "0.2.9", "additionalInterfaces": []any{map[string]any{"url": "https://a.example/grpc", "transport": "GRPC"}}},
		want: map[string]any{"supportedInterfaces": []any{
			map[string]any{"url": "https://a.example/rpc", "protocolBinding": "JSONRPC", "protocolVersion": "0.2.9"},
			map[string]any{"url": "https://a.example/grpc", "protocolBinding": "GRPC", "protocolVersion": "0.2.9"}}},
		auth: map[string]any{"type": "none"}},
	{name: "0.2-era, without protocolVersion",
		in: map[string]any{"protocolVersion": nil},
		// Read as 0.3 (docs/a2a.md); the interface says "0.3", the version a2av0 converts from.
		want: map[string]any{"supportedInterfaces": []any{map[string]any{"url": "https://a.example/rpc", "protocolBinding": "JSONRPC", "protocolVersion": "0.3"}}},
		auth: map[string]any{"type": "none"}},
	{name: "additionalInterfaces repeating url",
		in: map[string]any{"additionalInterfaces": []any{
			map[string]any{"url": "https://a.example/rpc", "transport": "JSONRPC"},
			map[string]any{"url": "https://a.example/rest", "transport": "HTTP+JSON"}}},
		want: map[string]any{"supportedInterfaces": []any{
			map[string]any{"url": "https://a.example/rpc", "protocolBinding": "JSONRPC", "protocolVersion": "0.3.0"},
			map[string]any{"url": "https://a.example/rest", "protocolBinding": "HTTP+JSON", "protocolVersion": "0.3.0"}}},
		auth: map[string]any{"type": "none"}},
	{name: "provider, icon, documentation",
		in: map[string]any{"provider": map[string]any{"organization": "Acme", "url": "https://acme.example"},
			"iconUrl": "https://acme.example/i.png", "documentationUrl": "https://acme.example/doc"},
		want: map[string]any{"provider": map[string]any{"organization": "Acme", "url": "https://acme.example"},
			"iconUrl": "https://acme.example/i.png", "documentationUrl": "https://acme.example/doc"},
		auth: map[string]any{"type": "none"}},
	{name: "capabilities true",
		in: map[string]any{"capabilities": map[string]any{"streaming": true, "pushNotifications": true, "stateTransitionHistory": true},
			"supportsAuthenticatedExtendedCard": true},
		// stateTransitionHistory is gone in 1.0; supportsAuthenticatedExtendedCard moved.
		want: map[string]any{"capabilities": map[string]any{"streaming": true, "pushNotifications": true, "extendedAgentCard": true}},
		auth: map[string]any{"type": "none"}},
	{name: "capabilities explicit false",
		in: map[string]any{"capabilities": map[string]any{"streaming": false, "pushNotifications": false},
			"supportsAuthenticatedExtendedCard": false},
		// The 1.0 proto's capability flags are optional (they have presence), so a false
		// said is kept, as for a 1.0 card or a registry card (docs/api.md, field presence).
		want: map[string]any{"capabilities": map[string]any{"streaming": false, "pushNotifications": false, "extendedAgentCard": false}},
		auth: map[string]any{"type": "none"}},
	{name: "extensions",
		in:   map[string]any{"capabilities": map[string]any{"extensions": []any{map[string]any{"uri": "https://x.example/ext", "required": true}}}},
		want: map[string]any{"capabilities": map[string]any{"extensions": []any{map[string]any{"uri": "https://x.example/ext", "required": true}}}},
		auth: map[string]any{"type": "none"}},
	{name: "http bearer",
		in: map[string]any{"securitySchemes": map[string]any{"b": map[string]any{"type": "http", "scheme": "bearer", "bearerFormat": "JWT", "description": "tok"}},
			"security": []any{map[string]any{"b": []any{}}}},
		want: map[string]any{"securitySchemes": map[string]any{"b": map[string]any{"httpAuthSecurityScheme": map[string]any{"scheme": "bearer", "bearerFormat": "JWT", "description": "tok"}}},
			"securityRequirements": []any{map[string]any{"schemes": map[string]any{"b": map[string]any{}}}}},
		auth: map[string]any{"type": "bearer"}},
	{name: "api key",
		in: map[string]any{"securitySchemes": map[string]any{"k": map[string]any{"type": "apiKey", "in": "query", "name": "key"}},
			"security": []any{map[string]any{"k": []any{}}}},
		want: map[string]any{"securitySchemes": map[string]any{"k": map[string]any{"apiKeySecurityScheme": map[string]any{"location": "query", "name": "key"}}},
			"securityRequirements": []any{map[string]any{"schemes": map[string]any{"k": map[string]any{}}}}},
		auth: map[string]any{"type": "api-key"}},
	{name: "oauth2 with scopes",
		in: map[string]any{"securitySchemes": map[string]any{"o": map[string]any{"type": "oauth2", "flows": v03OAuthFlows}},
			"security": []any{map[string]any{"o": []any{"read"}}}},
		want: map[string]any{"securitySchemes": map[string]any{"o": map[string]any{"oauth2SecurityScheme": map[string]any{"flows": v03OAuthFlows}}},
			"securityRequirements": []any{map[string]any{"schemes": map[string]any{"o": map[string]any{"list": []any{"read"}}}}}},
		auth: map[string]any{"type": "oauth2", "scopes": []any{"read"}, "flows": v03OAuthFlows}},
	{name: "first requirement decides",
		in: map[string]any{"securitySchemes": map[string]any{
			"o": map[string]any{"type": "oauth2", "flows": v03OAuthFlows},
			"k": map[string]any{"type": "apiKey", "in": "header", "name": "X-Key"}},
			"security": []any{map[string]any{"k": []any{}}, map[string]any{"o": []any{"read"}}}},
		want: map[string]any{"securitySchemes": map[string]any{
			"o": map[string]any{"oauth2SecurityScheme": map[string]any{"flows": v03OAuthFlows}},
			"k": map[string]any{"apiKeySecurityScheme": map[string]any{"location": "header", "name": "X-Key"}}},
			"securityRequirements": []any{
				map[string]any{"schemes": map[string]any{"k": map[string]any{}}},
				map[string]any{"schemes": map[string]any{"o": map[string]any{"list": []any{"read"}}}}}},
		auth: map[string]any{"type": "api-key"}},
	{name: "openIdConnect leaves auth unset",
		in: map[string]any{"securitySchemes": map[string]any{"g": map[string]any{"type": "openIdConnect", "openIdConnectUrl": "https://id.example/.well-known/openid-configuration"}},
			"security": []any{map[string]any{"g": []any{"openid"}}}},
		want: map[string]any{"securitySchemes": map[string]any{"g": map[string]any{"openIdConnectSecurityScheme": map[string]any{"openIdConnectUrl": "https://id.example/.well-known/openid-configuration"}}},
			"securityRequirements": []any{map[string]any{"schemes": map[string]any{"g": map[string]any{"list": []any{"openid"}}}}}}},
	{name: "mutualTLS leaves auth unset",
		in: map[string]any{"securitySchemes": map[string]any{"m": map[string]any{"type": "mutualTLS", "description": "certs"}},
			"security": []any{map[string]any{"m": []any{}}}},
		want: map[string]any{"securitySchemes": map[string]any{"m": map[string]any{"mtlsSecurityScheme": map[string]any{"description": "certs"}}},
			"securityRequirements": []any{map[string]any{"schemes": map[string]any{"m": map[string]any{}}}}}},
	{name: "http basic leaves auth unset",
		in: map[string]any{"securitySchemes": map[string]any{"b": map[string]any{"type": "http", "scheme": "basic"}},
			"security": []any{map[string]any{"b": []any{}}}},
		want: map[string]any{"securitySchemes": map[string]any{"b": map[string]any{"httpAuthSecurityScheme": map[string]any{"scheme": "basic"}}},
			"securityRequirements": []any{map[string]any{"schemes": map[string]any{"b": map[string]any{}}}}}},
	{name: "schemes without any requirement",
		in:   map[string]any{"securitySchemes": map[string]any{"b": map[string]any{"type": "http", "scheme": "bearer"}}},
		want: map[string]any{"securitySchemes": map[string]any{"b": map[string]any{"httpAuthSecurityScheme": map[string]any{"scheme": "bearer"}}}},
		// No requirement names the scheme, so the card requires nothing: "none declared → none".
		auth: map[string]any{"type": "none"}},
	{name: "skill members",
		in: map[string]any{"securitySchemes": map[string]any{"b": map[string]any{"type": "http", "scheme": "Bearer"}},
			"skills": []any{
				map[string]any{"id": "s1", "name": "Skill One", "description": "sd", "tags": []any{"t"}, "examples": []any{"ex"},
					"inputModes": []any{"application/json"}, "outputModes": []any{"image/png"}, "security": []any{map[string]any{"b": []any{"x"}}}},
				map[string]any{"id": "same", "name": "same", "description": "named as its id", "tags": []any{"u"}}}},
		want: map[string]any{"securitySchemes": map[string]any{"b": map[string]any{"httpAuthSecurityScheme": map[string]any{"scheme": "Bearer"}}},
			"skills": []any{
				map[string]any{"id": "s1", "name": "Skill One", "description": "sd", "tags": []any{"t"}, "examples": []any{"ex"},
					"inputModes": []any{"application/json"}, "outputModes": []any{"image/png"},
					"securityRequirements": []any{map[string]any{"schemes": map[string]any{"b": map[string]any{"list": []any{"x"}}}}}},
				map[string]any{"id": "same", "name": "same", "description": "named as its id", "tags": []any{"u"}}}},
		capabilities: []any{
			map[string]any{"name": "s1", "title": "Skill One", "description": "sd", "tags": []any{"t"}, "examples": []any{"ex"},
				"inputModes": []any{"application/json"}, "outputModes": []any{"image/png"}},
			// A title equal to the name is not repeated.
			map[string]any{"name": "same", "description": "named as its id", "tags": []any{"u"}}}},
}

// TestA2AImportV03Members imports small 0.3 cards, one member at a time, and compares the registry
// card made of each and its default A2A card with answers written by hand (docs/a2a.md, Import:
// converted to 1.0, mapped onto the registry card, served back as that 1.0 card).
func TestA2AImportV03Members(t *testing.T) {
	for _, tc := range v03MemberCases {
		t.Run(tc.name, func(t *testing.T) { checkV03Member(t, tc) })
	}
}

// checkV03Member imports tc's card on SQLite and compares the registry card made of it (endpoint,
// protocols, import record, authRequirements, capabilities) and the 1.0 half of its default A2A
// card with tc's answers.
func checkV03Member(t *testing.T, tc v03MemberCase) {
	t.Helper()
	f := newFixture(t, "sqlite")
	c := f.mustImport(map[string]any{"agentId": "v03", "card": patched(v03Base(), tc.in), "visibility": "public"})
	if c.Endpoint != "https://a.example/rpc" || !slices.Equal(c.Protocols, []string{"a2a"}) || c.A2A.Import == nil || c.A2A.Import.Format != "0.3" {
		t.Fatalf("registry card: %s", jsonOf(t, c))
	}
	webtest.SameJSON(t, "authRequirements", c.AuthRequirements, tc.auth)
	capabilities := tc.capabilities
	if capabilities == nil {
		capabilities = []any{map[string]any{"name": "s1", "title": "Skill One", "description": "sd", "tags": []any{"t"}}}
	}
	webtest.SameJSON(t, "capabilities", c.Capabilities, capabilities)

	// The default card of a 0.3 agent is the hybrid: its 1.0 half is the conversion.
	served := a2atest.Only10(t, f.mustRender("v03", a2a.VersionDefault))
	webtest.SameJSON(t, "served 1.0 card", served, patched(v10OfBase(), tc.want))
}

// v03SampleWant is the 1.0 card that importing the 0.3 (or 0.2-era) sample file must serve back,
// written by hand rather than computed by any converter.
func v03SampleWant(t *testing.T, file string) map[string]any {
	t.Helper()
	var want map[string]any
	switch file {
	case "spec-v0.3.0-georoute-agent-card.json":
		// The spec publishes this agent's card in both versions: the 1.0 sample is the
		// expected answer, except that these interfaces speak the protocolVersion the 0.3
		// card declares (0.2.9), where the 1.0 sample's speak 1.0.
		want = a2atest.SampleV1(t)
		for _, i := range want["supportedInterfaces"].([]any) {
			i.(map[string]any)["protocolVersion"] = "0.2.9"
		}
		return want
	case "a2a-samples__adk_currency_agent__agent_card.json":
		want = map[string]any{
			"name": "Currency Conversion Agent", "description": "Currency Conversion Agent", "version": "1.0.0",
			"supportedInterfaces": []any{map[string]any{"url": "http://localhost:10999", "protocolBinding": "JSONRPC", "protocolVersion": "0.3.0"}},
			"provider":            map[string]any{"organization": "Example org", "url": "http://example.com"},
			"capabilities":        map[string]any{"streaming": true},
			"defaultInputModes":   []any{"text", "text/plain", "application/json"},
			"defaultOutputModes":  []any{"text", "text/plain", "application/json"},
			"skills": []any{map[string]any{"id": "currency_conversion", "name": "Perform Currency Conversion",
				"description": "Helps with Currency conversions", "tags": []any{"currency", "conversion"},
				"examples": []any{"Helps with currency conversions"}}},
		}
	case "a2a-python-0.3-agent-card.json":
		// What an a2a-sdk 0.3 agent serves: its OpenAPI-style bearer scheme and its security
		// become the 1.0 wrapper and requirement.
		want = map[string]any{
			"name": "PyEcho 0.3 Agent", "description": "Echoes text back; an A2A 0.3 agent built with a2a-sdk 0.3.x.", "version": "0.3.1",
			"supportedInterfaces":  []any{map[string]any{"url": "https://echo03.example.com/", "protocolBinding": "JSONRPC", "protocolVersion": "0.3.0"}},
			"capabilities":         map[string]any{"streaming": true},
			"securitySchemes":      map[string]any{"bearer": map[string]any{"httpAuthSecurityScheme": map[string]any{"scheme": "bearer", "bearerFormat": "JWT"}}},
			"securityRequirements": []any{map[string]any{"schemes": map[string]any{"bearer": map[string]any{}}}},
			"defaultInputModes":    []any{"text/plain"},
			"defaultOutputModes":   []any{"text/plain"},
			"skills": []any{map[string]any{"id": "echo", "name": "Echo", "description": "Echoes the text it is sent.",
				"tags": []any{"echo"}, "examples": []any{"hello"}}},
		}
	case "a2a-samples__a2a_mcp__air_ticketing_agent.json":
		// A 0.2-era card: no protocolVersion and no preferredTransport. It is read as 0.3
		// (docs/a2a.md), so its one interface is JSONRPC (0.3's default transport) and says "0.3",
		// the version a2av0 converts from; stateTransitionHistory is gone in 1.0.
		want = map[string]any{
			"name": "Air Ticketing Agent", "description": "Helps book air tickets given a criteria", "version": "1.0.0",
			"supportedInterfaces": []any{map[string]any{"url": "http://localhost:10103/", "protocolBinding": "JSONRPC", "protocolVersion": "0.3"}},
			"capabilities":        map[string]any{"streaming": true, "pushNotifications": true},
			"defaultInputModes":   []any{"text", "text/plain"},
			"defaultOutputModes":  []any{"text", "text/plain"},
			"skills": []any{map[string]any{"id": "book_air_tickets", "name": "Book Air Tickets",
				"description": "Helps with booking air tickets given a criteria", "tags": []any{"Book air tickets"},
				"examples": []any{"Book return tickets from SFO to LHR, starting June 24 2025 and returning 30th June 2025"}}},
		}
	default:
		t.Fatalf("%s: no expected 1.0 card written for this 0.3 sample", file)
	}
	return want
}
