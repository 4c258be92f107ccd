package a2a_test

import (
	"errors"
	"maps"
	"testing"

	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/cards/a2a"
	"github.com/agentcards/agentcards/cards/a2a/a2atest"
	"github.com/agentcards/agentcards/web/webtest"
)

// The REST cards of TestA2ARendersRESTCards render with these endpoints, OAuth 2 flows and
// OpenID Connect URL.
const (
	restEndpoint   = "https://e.example/a2a"
	restEndpoint03 = "https://e.example/a2a-v03"
	restOIDC       = "https://id.example/.well-known/openid-configuration"
)

var (
	restFlows = map[string]any{"clientCredentials": map[string]any{"tokenUrl": "https://auth.example/token", "scopes": map[string]any{"read": "Read"}}}
	// restBase is what every case but the first adds to its card: it declares a 1.0 and a 0.3
	// interface, restI10 and restI03 (restDeclared, which is added to a case's own a2a block
	// too); restV10 and restV03 are its renderings.
	restI10      = map[string]any{"url": restEndpoint, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
	restI03      = map[string]any{"url": restEndpoint03, "protocolBinding": "JSONRPC", "protocolVersion": "0.3"}
	restDeclared = []any{restI10, restI03}
	restBase     = map[string]any{"name": "R", "description": "D", "version": "1.0.0", "a2a": map[string]any{"interfaces": restDeclared}}
	restV10      = map[string]any{"name": "R", "description": "D", "version": "1.0.0", "supportedInterfaces": []any{restI10},
		"capabilities": map[string]any{}, "defaultInputModes": []any{"text/plain"}, "defaultOutputModes": []any{"text/plain"}, "skills": []any{}}
	restV03 = map[string]any{"protocolVersion": "0.3.0", "name": "R", "description": "D", "version": "1.0.0", "url": restEndpoint03, "preferredTransport": "JSONRPC",
		"additionalInterfaces": []any{map[string]any{"url": restEndpoint03, "transport": "JSONRPC"}},
		"capabilities":         map[string]any{}, "defaultInputModes": []any{"text/plain"}, "defaultOutputModes": []any{"text/plain"}, "skills": []any{}}
)

// restCardCase is one REST card of TestA2ARendersRESTCards and the documents it renders as.
type restCardCase struct {
	name   string
	card   map[string]any // the REST card, with restBase's members unless it sets them
	want10 map[string]any // members changed in restV10
	want03 map[string]any // members changed in restV03
	// no10, no03: the card has no interface of that version, and its form is the version error.
	no10, no03 bool
	// declared are the card's interfaces, all listed by the default card; nil: restBase's.
	declared []any
	// noBaseline: the card is exactly card, it declares no interface, and wantDefault is
	// its whole default card (both explicit forms are the version error).
	noBaseline  bool
	wantDefault map[string]any
}

// restCardCases are the cases of TestA2ARendersRESTCards, after docs/a2a.md's "Field mapping"
// table.
var restCardCases = []restCardCase{
	{name: "defaults", noBaseline: true,
		card: map[string]any{"name": "Min", "capabilities": []any{map[string]any{"name": "do_it"}}},
		wantDefault: map[string]any{"name": "Min", "description": "Min", "version": "0.0.0", "supportedInterfaces": []any{},
			"capabilities": map[string]any{}, "defaultInputModes": []any{"text/plain"}, "defaultOutputModes": []any{"text/plain"},
			"skills": []any{map[string]any{"id": "do_it", "name": "do_it", "description": "do_it", "tags": []any{"do_it"}}}}},
	{name: "skill fallbacks",
		card: map[string]any{"tags": []any{"ct"}, "capabilities": []any{
			map[string]any{"name": "a", "title": "Alpha"},
			map[string]any{"name": "b", "description": "Bee does b", "tags": []any{"own"}, "examples": []any{"do b"},
				"inputModes": []any{"application/json"}, "outputModes": []any{"image/png"}},
			map[string]any{"name": "c"}}},
		want10: map[string]any{"skills": []any{
			map[string]any{"id": "a", "name": "Alpha", "description": "Alpha", "tags": []any{"ct"}},
			map[string]any{"id": "b", "name": "b", "description": "Bee does b", "tags": []any{"own"}, "examples": []any{"do b"},
				"inputModes": []any{"application/json"}, "outputModes": []any{"image/png"}},
			map[string]any{"id": "c", "name": "c", "description": "c", "tags": []any{"ct"}}}},
		want03: map[string]any{"skills": []any{
			map[string]any{"id": "a", "name": "Alpha", "description": "Alpha", "tags": []any{"ct"}},
			map[string]any{"id": "b", "name": "b", "description": "Bee does b", "tags": []any{"own"}, "examples": []any{"do b"},
				"inputModes": []any{"application/json"}, "outputModes": []any{"image/png"}},
			map[string]any{"id": "c", "name": "c", "description": "c", "tags": []any{"ct"}}}}},
	// An endpoint alone declares one 1.0 JSON-RPC interface.
	{name: "endpoint",
		card:     map[string]any{"endpoint": restEndpoint, "a2a": nil},
		declared: []any{restI10}, no03: true},
	{name: "interfaces listing the endpoint",
		card: map[string]any{"endpoint": restEndpoint, "a2a": map[string]any{"interfaces": []any{
			map[string]any{"url": "https://e.example/grpc", "protocolBinding": "GRPC", "protocolVersion": "1.0", "tenant": "t1"},
			map[string]any{"url": restEndpoint, "protocolBinding": "HTTP+JSON", "protocolVersion": "0.3.0"}}}},
		declared: []any{
			map[string]any{"url": "https://e.example/grpc", "protocolBinding": "GRPC", "protocolVersion": "1.0", "tenant": "t1"},
			map[string]any{"url": restEndpoint, "protocolBinding": "HTTP+JSON", "protocolVersion": "0.3.0"}},
		want10: map[string]any{"supportedInterfaces": []any{
			map[string]any{"url": "https://e.example/grpc", "protocolBinding": "GRPC", "protocolVersion": "1.0", "tenant": "t1"}}},
		want03: map[string]any{"url": restEndpoint, "preferredTransport": "HTTP+JSON", "additionalInterfaces": []any{
			map[string]any{"url": restEndpoint, "transport": "HTTP+JSON"}}}},
	// Listed interfaces are the whole declaration: the endpoint is not added to them.
	{name: "interfaces without the endpoint",
		card: map[string]any{"endpoint": restEndpoint, "a2a": map[string]any{"interfaces": []any{
			map[string]any{"url": "https://e.example/grpc", "protocolBinding": "GRPC", "protocolVersion": "1.0"}}}},
		declared: []any{map[string]any{"url": "https://e.example/grpc", "protocolBinding": "GRPC", "protocolVersion": "1.0"}}, no03: true,
		want10: map[string]any{"supportedInterfaces": []any{
			map[string]any{"url": "https://e.example/grpc", "protocolBinding": "GRPC", "protocolVersion": "1.0"}}}},
	{name: "two 0.3 interfaces",
		card: map[string]any{"a2a": map[string]any{"interfaces": []any{restI03, restI10,
			map[string]any{"url": "https://e.example/rest03", "protocolBinding": "HTTP+JSON", "protocolVersion": "0.3"}}}},
		declared: []any{restI03, restI10, map[string]any{"url": "https://e.example/rest03", "protocolBinding": "HTTP+JSON", "protocolVersion": "0.3"}},
		want03: map[string]any{"additionalInterfaces": []any{map[string]any{"url": restEndpoint03, "transport": "JSONRPC"},
			map[string]any{"url": "https://e.example/rest03", "transport": "HTTP+JSON"}}}},
	{name: "bearer",
		card: map[string]any{"authRequirements": map[string]any{"type": "bearer", "scopes": []any{"r", "w"}}},
		want10: map[string]any{"securitySchemes": map[string]any{"bearer": map[string]any{"httpAuthSecurityScheme": map[string]any{"scheme": "Bearer"}}},
			"securityRequirements": []any{map[string]any{"schemes": map[string]any{"bearer": map[string]any{"list": []any{"r", "w"}}}}}},
		want03: map[string]any{"securitySchemes": map[string]any{"bearer": map[string]any{"type": "http", "scheme": "Bearer"}},
			"security": []any{map[string]any{"bearer": []any{"r", "w"}}}}},
	{name: "api-key",
		card: map[string]any{"authRequirements": map[string]any{"type": "api-key"}},
		want10: map[string]any{"securitySchemes": map[string]any{"apiKey": map[string]any{"apiKeySecurityScheme": map[string]any{"location": "header", "name": "X-API-Key"}}},
			"securityRequirements": []any{map[string]any{"schemes": map[string]any{"apiKey": map[string]any{}}}}},
		want03: map[string]any{"securitySchemes": map[string]any{"apiKey": map[string]any{"type": "apiKey", "in": "header", "name": "X-API-Key"}},
			"security": []any{map[string]any{"apiKey": []any{}}}}},
	{name: "oauth2",
		card: map[string]any{"authRequirements": map[string]any{"type": "oauth2", "scopes": []any{"read"}, "flows": restFlows}},
		want10: map[string]any{"securitySchemes": map[string]any{"oauth2": map[string]any{"oauth2SecurityScheme": map[string]any{"flows": restFlows}}},
			"securityRequirements": []any{map[string]any{"schemes": map[string]any{"oauth2": map[string]any{"list": []any{"read"}}}}}},
		want03: map[string]any{"securitySchemes": map[string]any{"oauth2": map[string]any{"type": "oauth2", "flows": restFlows}},
			"security": []any{map[string]any{"oauth2": []any{"read"}}}}},
	{name: "none",
		card: map[string]any{"authRequirements": map[string]any{"type": "none"}}},
	{name: "a2a security wins over authRequirements",
		card: map[string]any{"authRequirements": map[string]any{"type": "bearer"}, "a2a": map[string]any{
			"securitySchemes":      map[string]any{"g": map[string]any{"openIdConnectSecurityScheme": map[string]any{"openIdConnectUrl": restOIDC}}},
			"securityRequirements": []any{map[string]any{"schemes": map[string]any{"g": map[string]any{"list": []any{"openid"}}}}}}},
		want10: map[string]any{"securitySchemes": map[string]any{"g": map[string]any{"openIdConnectSecurityScheme": map[string]any{"openIdConnectUrl": restOIDC}}},
			"securityRequirements": []any{map[string]any{"schemes": map[string]any{"g": map[string]any{"list": []any{"openid"}}}}}},
		want03: map[string]any{"securitySchemes": map[string]any{"g": map[string]any{"type": "openIdConnect", "openIdConnectUrl": restOIDC}},
			"security": []any{map[string]any{"g": []any{"openid"}}}}},
	{name: "explicit false",
		card:   map[string]any{"a2a": map[string]any{"streaming": false, "pushNotifications": false, "extendedAgentCard": false}},
		want10: map[string]any{"capabilities": map[string]any{"streaming": false, "pushNotifications": false, "extendedAgentCard": false}},
		want03: map[string]any{"capabilities": map[string]any{"streaming": false, "pushNotifications": false}, "supportsAuthenticatedExtendedCard": false}},
	{name: "a2a block",
		card: map[string]any{"capabilities": []any{map[string]any{"name": "s", "tags": []any{"x"}}}, "a2a": map[string]any{
			"provider": map[string]any{"organization": "Acme", "url": "https://acme.example"},
			"iconUrl":  "https://acme.example/i.png", "documentationUrl": "https://acme.example/doc",
			"defaultInputModes": []any{"application/json"}, "defaultOutputModes": []any{"image/png"},
			"streaming": true, "extendedAgentCard": true,
			"extensions":                []any{map[string]any{"uri": "https://acme.example/ext", "required": true}},
			"skillSecurityRequirements": map[string]any{"s": []any{map[string]any{"schemes": map[string]any{"bearer": map[string]any{"list": []any{"s:run"}}}}}}}},
		want10: map[string]any{"provider": map[string]any{"organization": "Acme", "url": "https://acme.example"},
			"iconUrl": "https://acme.example/i.png", "documentationUrl": "https://acme.example/doc",
			"defaultInputModes": []any{"application/json"}, "defaultOutputModes": []any{"image/png"},
			"capabilities": map[string]any{"streaming": true, "extendedAgentCard": true,
				"extensions": []any{map[string]any{"uri": "https://acme.example/ext", "required": true}}},
			"skills": []any{map[string]any{"id": "s", "name": "s", "description": "s", "tags": []any{"x"},
				"securityRequirements": []any{map[string]any{"schemes": map[string]any{"bearer": map[string]any{"list": []any{"s:run"}}}}}}}},
		want03: map[string]any{"provider": map[string]any{"organization": "Acme", "url": "https://acme.example"},
			"iconUrl": "https://acme.example/i.png", "documentationUrl": "https://acme.example/doc",
			"defaultInputModes": []any{"application/json"}, "defaultOutputModes": []any{"image/png"},
			"capabilities":                      map[string]any{"streaming": true, "extensions": []any{map[string]any{"uri": "https://acme.example/ext", "required": true}}},
			"supportsAuthenticatedExtendedCard": true,
			"skills": []any{map[string]any{"id": "s", "name": "s", "description": "s", "tags": []any{"x"},
				"security": []any{map[string]any{"bearer": []any{"s:run"}}}}}}},
}

// TestA2ARendersRESTCards writes small REST-native cards and compares their whole 1.0 and 0.3 forms,
// unsigned, with documents written by hand from docs/a2a.md's "Field mapping" table; and the
// default card: the 1.0 one with every declared interface, or, for a card with a 0.3 interface,
// the hybrid whose halves are those two documents. A form the card has no interface for is
// fault.VersionNotSupported.
func TestA2ARendersRESTCards(t *testing.T) {
	for _, tc := range restCardCases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, "sqlite")
			card, want10, want03, all := tc.documents()
			card["agentId"], card["visibility"] = "r", "public"
			f.put("r", card)
			checkExplicitForms(t, f, want10, want03)
			checkDefaultCard(t, f, tc, want10, want03, all)
		})
	}
}

// documents are the case's REST card to write, its expected 1.0 and 0.3 forms (nil for a form
// that is the version error) and all the interfaces it declares.
func (tc restCardCase) documents() (card, want10, want03 map[string]any, all []any) {
	card, want10, want03 = patched(restBase, tc.card), patched(restV10, tc.want10), patched(restV03, tc.want03)
	if block, ok := card["a2a"].(map[string]any); ok && block["interfaces"] == nil && tc.card["endpoint"] == nil {
		card["a2a"] = patched(block, map[string]any{"interfaces": restDeclared})
	}
	all = tc.declared
	if all == nil {
		all = restDeclared
	}
	if tc.noBaseline {
		// A copy: the test sets the agent's ID and visibility in it.
		card, want10, want03 = maps.Clone(tc.card), nil, nil
	}
	if tc.no10 {
		want10 = nil
	}
	if tc.no03 {
		want03 = nil
	}
	return card, want10, want03, all
}

// checkExplicitForms compares the agent r's 1.0 and 0.3 forms with want10 and want03; a nil want
// is the version error.
func checkExplicitForms(t *testing.T, f *fixture, want10, want03 map[string]any) {
	t.Helper()
	for _, form := range []struct {
		version string
		want    map[string]any
	}{{a2a.Version10, want10}, {a2a.Version03, want03}} {
		got, err := f.render("r", form.version)
		if form.want == nil {
			if !errors.Is(err, fault.VersionNotSupported) {
				t.Errorf("A2A %s card: %v, want version not supported", form.version, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("A2A %s card: %v", form.version, err)
		}
		webtest.JSONEqual(t, "A2A "+form.version+" card", got, jsonOf(t, form.want))
	}
}

// checkDefaultCard compares the agent r's default card: with a 0.3 interface the hybrid, whose 1.0
// half lists every declared interface (all) and whose 0.3 half is the 0.3 card
// (additionalInterfaces only when there are several); else the 1.0 card with every declared
// interface.
func checkDefaultCard(t *testing.T, f *fixture, tc restCardCase, want10, want03 map[string]any, all []any) {
	t.Helper()
	got := f.mustRender("r", a2a.VersionDefault)
	switch {
	case tc.noBaseline:
		webtest.JSONEqual(t, "default card", got, jsonOf(t, tc.wantDefault))
	case want03 == nil:
		webtest.JSONEqual(t, "default card", got, jsonOf(t, patched(want10, map[string]any{"supportedInterfaces": all})))
	default:
		if want10 == nil {
			want10 = patched(restV10, tc.want10)
		}
		webtest.SameJSON(t, "1.0 half of the hybrid", a2atest.Only10(t, got), patched(want10, map[string]any{"supportedInterfaces": all}))
		if len(want03["additionalInterfaces"].([]any)) < 2 {
			want03 = patched(want03, map[string]any{"additionalInterfaces": nil})
		}
		webtest.SameJSON(t, "0.3 half of the hybrid", a2atest.Only03(t, got), want03)
	}
}
