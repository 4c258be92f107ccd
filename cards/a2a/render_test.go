package a2a_test

import (
	"errors"
	"testing"

	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/cards/a2a"
	"github.com/agentcards/agentcards/cards/a2a/a2atest"
	"github.com/agentcards/agentcards/web/webtest"
)

// TestA2ARendersRESTCards writes small REST-native cards and compares their whole 1.0 and 0.3 forms,
// unsigned, with documents written by hand from docs/a2a.md's "Field mapping" table; and the
// default card: the 1.0 one with every declared interface, or, for a card with a 0.3 interface,
// the hybrid whose halves are those two documents. A form the card has no interface for is
// fault.VersionNotSupported.
func TestA2ARendersRESTCards(t *testing.T) {
	const endpoint = "https://e.example/a2a"
	const endpoint03 = "https://e.example/a2a-v03"
	flows := map[string]any{"clientCredentials": map[string]any{"tokenUrl": "https://auth.example/token", "scopes": map[string]any{"read": "Read"}}}
	oidc := "https://id.example/.well-known/openid-configuration"
	// base is what every case but the first adds to its card: it declares a 1.0 and a 0.3
	// interface (added to a case's own a2a block too); v10 and v03 are its renderings.
	i10 := map[string]any{"url": endpoint, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
	i03 := map[string]any{"url": endpoint03, "protocolBinding": "JSONRPC", "protocolVersion": "0.3"}
	declared := []any{i10, i03}
	base := map[string]any{"name": "R", "description": "D", "version": "1.0.0", "a2a": map[string]any{"interfaces": declared}}
	v10 := map[string]any{"name": "R", "description": "D", "version": "1.0.0", "supportedInterfaces": []any{i10},
		"capabilities": map[string]any{}, "defaultInputModes": []any{"text/plain"}, "defaultOutputModes": []any{"text/plain"}, "skills": []any{}}
	v03 := map[string]any{"protocolVersion": "0.3.0", "name": "R", "description": "D", "version": "1.0.0", "url": endpoint03, "preferredTransport": "JSONRPC",
		"additionalInterfaces": []any{map[string]any{"url": endpoint03, "transport": "JSONRPC"}},
		"capabilities":         map[string]any{}, "defaultInputModes": []any{"text/plain"}, "defaultOutputModes": []any{"text/plain"}, "skills": []any{}}
	for _, tc := range []struct {
		name   string
		card   map[string]any // the REST card, with base's members unless it sets them
		want10 map[string]any // members changed in v10
		want03 map[string]any // members changed in v03
		// no10, no03: the card has no interface of that version, and its form is the version error.
		no10, no03 bool
		// declared are the card's interfaces, all listed by the default card; nil: base's.
		declared []any
		// noBaseline: the card is exactly card, it declares no interface, and wantDefault is
		// its whole default card (both explicit forms are the version error).
		noBaseline  bool
		wantDefault map[string]any
	}{
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
			card:     map[string]any{"endpoint": endpoint, "a2a": nil},
			declared: []any{i10}, no03: true},
		{name: "interfaces listing the endpoint",
			card: map[string]any{"endpoint": endpoint, "a2a": map[string]any{"interfaces": []any{
				map[string]any{"url": "https://e.example/grpc", "protocolBinding": "GRPC", "protocolVersion": "1.0", "tenant": "t1"},
				map[string]any{"url": endpoint, "protocolBinding": "HTTP+JSON", "protocolVersion": "0.3.0"}}}},
			declared: []any{
				map[string]any{"url": "https://e.example/grpc", "protocolBinding": "GRPC", "protocolVersion": "1.0", "tenant": "t1"},
				map[string]any{"url": endpoint, "protocolBinding": "HTTP+JSON", "protocolVersion": "0.3.0"}},
			want10: map[string]any{"supportedInterfaces": []any{
				map[string]any{"url": "https://e.example/grpc", "protocolBinding": "GRPC", "protocolVersion": "1.0", "tenant": "t1"}}},
			want03: map[string]any{"url": endpoint, "preferredTransport": "HTTP+JSON", "additionalInterfaces": []any{
				map[string]any{"url": endpoint, "transport": "HTTP+JSON"}}}},
		// Listed interfaces are the whole declaration: the endpoint is not added to them.
		{name: "interfaces without the endpoint",
			card: map[string]any{"endpoint": endpoint, "a2a": map[string]any{"interfaces": []any{
				map[string]any{"url": "https://e.example/grpc", "protocolBinding": "GRPC", "protocolVersion": "1.0"}}}},
			declared: []any{map[string]any{"url": "https://e.example/grpc", "protocolBinding": "GRPC", "protocolVersion": "1.0"}}, no03: true,
			want10: map[string]any{"supportedInterfaces": []any{
				map[string]any{"url": "https://e.example/grpc", "protocolBinding": "GRPC", "protocolVersion": "1.0"}}}},
		{name: "two 0.3 interfaces",
			card: map[string]any{"a2a": map[string]any{"interfaces": []any{i03, i10,
				map[string]any{"url": "https://e.example/rest03", "protocolBinding": "HTTP+JSON", "protocolVersion": "0.3"}}}},
			declared: []any{i03, i10, map[string]any{"url": "https://e.example/rest03", "protocolBinding": "HTTP+JSON", "protocolVersion": "0.3"}},
			want03: map[string]any{"additionalInterfaces": []any{map[string]any{"url": endpoint03, "transport": "JSONRPC"},
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
			card: map[string]any{"authRequirements": map[string]any{"type": "oauth2", "scopes": []any{"read"}, "flows": flows}},
			want10: map[string]any{"securitySchemes": map[string]any{"oauth2": map[string]any{"oauth2SecurityScheme": map[string]any{"flows": flows}}},
				"securityRequirements": []any{map[string]any{"schemes": map[string]any{"oauth2": map[string]any{"list": []any{"read"}}}}}},
			want03: map[string]any{"securitySchemes": map[string]any{"oauth2": map[string]any{"type": "oauth2", "flows": flows}},
				"security": []any{map[string]any{"oauth2": []any{"read"}}}}},
		{name: "none",
			card: map[string]any{"authRequirements": map[string]any{"type": "none"}}},
		{name: "a2a security wins over authRequirements",
			card: map[string]any{"authRequirements": map[string]any{"type": "bearer"}, "a2a": map[string]any{
				"securitySchemes":      map[string]any{"g": map[string]any{"openIdConnectSecurityScheme": map[string]any{"openIdConnectUrl": oidc}}},
				"securityRequirements": []any{map[string]any{"schemes": map[string]any{"g": map[string]any{"list": []any{"openid"}}}}}}},
			want10: map[string]any{"securitySchemes": map[string]any{"g": map[string]any{"openIdConnectSecurityScheme": map[string]any{"openIdConnectUrl": oidc}}},
				"securityRequirements": []any{map[string]any{"schemes": map[string]any{"g": map[string]any{"list": []any{"openid"}}}}}},
			want03: map[string]any{"securitySchemes": map[string]any{"g": map[string]any{"type": "openIdConnect", "openIdConnectUrl": oidc}},
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
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, "sqlite")
			card, want10, want03 := patched(base, tc.card), patched(v10, tc.want10), patched(v03, tc.want03)
			if block, ok := card["a2a"].(map[string]any); ok && block["interfaces"] == nil && tc.card["endpoint"] == nil {
				card["a2a"] = patched(block, map[string]any{"interfaces": declared})
			}
			all := tc.declared
			if all == nil {
				all = declared
			}
			if tc.noBaseline {
				card, want10, want03 = tc.card, nil, nil
			}
			if tc.no10 {
				want10 = nil
			}
			if tc.no03 {
				want03 = nil
			}
			card["agentId"], card["visibility"] = "r", "public"
			f.put("r", card)

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

			// The default card: with a 0.3 interface the hybrid, whose 1.0 half lists every
			// declared interface and whose 0.3 half is the 0.3 card (additionalInterfaces only
			// when there are several); else the 1.0 card with every declared interface.
			got := f.mustRender("r", a2a.VersionDefault)
			switch {
			case tc.noBaseline:
				webtest.JSONEqual(t, "default card", got, jsonOf(t, tc.wantDefault))
			case want03 == nil:
				webtest.JSONEqual(t, "default card", got, jsonOf(t, patched(want10, map[string]any{"supportedInterfaces": all})))
			default:
				if want10 == nil {
					want10 = patched(v10, tc.want10)
				}
				webtest.SameJSON(t, "1.0 half of the hybrid", a2atest.Only10(t, got), patched(want10, map[string]any{"supportedInterfaces": all}))
				if len(want03["additionalInterfaces"].([]any)) < 2 {
					want03 = patched(want03, map[string]any{"additionalInterfaces": nil})
				}
				webtest.SameJSON(t, "0.3 half of the hybrid", a2atest.Only03(t, got), want03)
			}
		})
	}
}
