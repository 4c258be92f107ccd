package a2a_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/go-jose/go-jose/v4"

	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/a2a"
	"github.com/agentcards/agentcards/cards/a2a/a2atest"
	"github.com/agentcards/agentcards/cards/agenttest"
	"github.com/agentcards/agentcards/web/webtest"
)

// unknownMarker starts the name of every member the tests add that no A2A schema describes.
const unknownMarker = "zzUnknown"

// withUnknownMembers is the spec's 1.0 sample with an extension whose free-form params hold
// zzKeep, and a member no schema describes at each level: the card, a skill, an interface, a
// security scheme and its body, a requirement and its scope list, the provider, the
// capabilities and the extension.
func withUnknownMembers(t *testing.T) map[string]any {
	c := a2atest.SampleV1(t)
	delete(c, "signatures")
	c[unknownMarker+"Top"] = map[string]any{"nested": 1}
	c["skills"].([]any)[0].(map[string]any)[unknownMarker+"Skill"] = "x"
	c["supportedInterfaces"].([]any)[1].(map[string]any)[unknownMarker+"Interface"] = true
	google := c["securitySchemes"].(map[string]any)["google"].(map[string]any)
	google[unknownMarker+"Scheme"] = "openIdConnect"
	google["openIdConnectSecurityScheme"].(map[string]any)[unknownMarker+"Inner"] = 1
	req := c["securityRequirements"].([]any)[0].(map[string]any)
	req[unknownMarker+"Requirement"] = []any{}
	req["schemes"].(map[string]any)["google"].(map[string]any)[unknownMarker+"List"] = "x"
	c["provider"].(map[string]any)[unknownMarker+"Provider"] = "x"
	caps := c["capabilities"].(map[string]any)
	caps[unknownMarker+"Capability"] = false
	caps["extensions"] = []any{map[string]any{"uri": "https://x.example/ext", "params": map[string]any{"zzKeep": 1}, unknownMarker + "Extension": 1}}
	return c
}

// TestA2AImportIgnoresUnknownMembers: members no schema describes are accepted and left out of
// the card (docs/a2a.md, Import), wherever they are; the free-form params of an extension are the
// card's own and kept. A signature is checked over the card as it came, unknown members included.
func TestA2AImportIgnoresUnknownMembers(t *testing.T) {
	forEachDialect(t, func(t *testing.T, f *fixture) {
		pub, priv, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		keys := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: pub, KeyID: "k1", Algorithm: "EdDSA"}}}
		card := a2atest.SignEd25519(t, priv, "k1", "", withUnknownMembers(t))
		c := f.mustImport(map[string]any{"agentId": "lenient", "card": card, "keys": keys, "visibility": "public"})
		if c.A2A.Import == nil || c.A2A.Import.Signature.Status != cards.SignatureVerified {
			t.Fatalf("signature over the card as sent: %s", jsonOf(t, c.A2A.Import))
		}

		// Only the publisher's signed content, kept as it was sent, holds them.
		var doc map[string]any
		if err := json.Unmarshal(f.stored("lenient"), &doc); err != nil {
			t.Fatal(err)
		}
		record := doc["a2a"].(map[string]any)["import"].(map[string]any)
		if signed, _ := json.Marshal(record["signed"]); !strings.Contains(string(signed), unknownMarker) {
			t.Fatalf("the signed content is not the card as sent: %s", signed)
		}
		delete(record, "signed")
		if stored, _ := json.Marshal(doc); strings.Contains(string(stored), unknownMarker) || !strings.Contains(string(stored), "zzKeep") {
			t.Fatalf("stored card: %s", stored)
		}
		// The sample declares only 1.0 interfaces, so it has no 0.3 form (TestA2ARenderVersionForms).
		if got := f.mustRender("lenient", a2a.VersionDefault); strings.Contains(string(got), unknownMarker) {
			t.Fatalf("default card carries an unknown member: %s", got)
		}
		want := a2atest.SampleV1(t)
		delete(want, "signatures")
		want["capabilities"].(map[string]any)["extensions"] = []any{map[string]any{"uri": "https://x.example/ext", "params": map[string]any{"zzKeep": 1}}}
		webtest.SameJSON(t, "1.0 card", a2atest.DecodeCard(t, f.mustRender("lenient", a2a.Version10)), want)
	})
}

// TestA2AImportKnownMemberOfWrongType: ignoring unknown members does not loosen the known ones:
// a wrong type is fault.Invalid naming its path, and the unknown members next to it are not
// reported.
func TestA2AImportKnownMemberOfWrongType(t *testing.T) {
	f := newFixture(t, "sqlite")
	imp := func(card map[string]any) error {
		t.Helper()
		_, err := f.importCard(map[string]any{"agentId": "typed", "card": card})
		if !errors.Is(err, fault.Invalid) {
			t.Fatalf("import: %v, want invalid", err)
		}
		return err
	}

	bad := withUnknownMembers(t)
	bad["supportedInterfaces"].([]any)[1].(map[string]any)["url"] = 5
	bad["securitySchemes"].(map[string]any)["google"].(map[string]any)["openIdConnectSecurityScheme"].(map[string]any)["openIdConnectUrl"] = true
	bad["skills"].([]any)[0].(map[string]any)["tags"] = "maps"
	bad["capabilities"].(map[string]any)["extensions"].([]any)[0].(map[string]any)["required"] = "yes"
	msg := fault.MessageOf(imp(bad))
	for _, path := range []string{"/supportedInterfaces/1/url", "/securitySchemes/google/openIdConnectSecurityScheme/openIdConnectUrl", "/skills/0/tags", "/capabilities/extensions/0/required"} {
		if !strings.Contains(msg, path) {
			t.Errorf("message does not name %s: %s", path, msg)
		}
	}
	if strings.Contains(msg, unknownMarker) {
		t.Errorf("message reports an unknown member: %s", msg)
	}

	// The 0.3 members of a 1.0 card are read (they may add an interface), so their types count.
	for name, value := range map[string]any{"url": 5, "preferredTransport": []any{"JSONRPC"}, "protocolVersion": 0.3} {
		c := withUnknownMembers(t)
		c["url"], c["preferredTransport"], c["protocolVersion"] = "https://a.example/v03", "JSONRPC", "0.3"
		c[name] = value
		if msg := fault.MessageOf(imp(c)); !strings.Contains(msg, "/"+name+": must be a string") {
			t.Errorf("%s: message does not name it: %s", name, msg)
		}
	}
	if _, err := f.cards.Get(alice, acme, "typed"); !errors.Is(err, cards.ErrNotFound) {
		t.Fatalf("a refused import left a card: %v", err)
	}
}

// TestA2AImportHybridCard imports the card an a2a-sdk 1.1 agent with a 0.3 interface serves, by
// body and by URL: it is read as 1.0, its interfaces are the 1.0 and the 0.3 one it lists, and
// its 0.3 members are neither stored nor served.
func TestA2AImportHybridCard(t *testing.T) {
	raw := a2atest.ReadSample(t, hybridSample)
	agent := agenttest.New(t, nil)
	agent.ServeJSON(agenttest.CardPath, http.StatusOK, raw)
	forEachDialect(t, func(t *testing.T, f *fixture) {
		f.allowLoopback()
		for id, body := range map[string]map[string]any{
			"by-body": {"card": json.RawMessage(raw)},
			"by-url":  {"url": agent.URL + "/.well-known/agent-card.json"},
		} {
			body["agentId"], body["visibility"] = id, "public"
			c := f.mustImport(body)
			if c.Endpoint != "https://echo.example.com/a2a/jsonrpc" || c.AuthRequirements == nil || c.AuthRequirements.Type != cards.AuthBearer ||
				c.A2A.Import == nil || c.A2A.Import.Format != a2a.Version10 {
				t.Fatalf("%s: registry card %s", id, jsonOf(t, c))
			}
			webtest.SameJSON(t, id+": a2a.interfaces", c.A2A.Interfaces, hybridSampleWant()["supportedInterfaces"])
			var stored struct{ A2A json.RawMessage }
			if err := json.Unmarshal(f.stored(id), &stored); err != nil {
				t.Fatal(err)
			}
			for _, member := range []string{`"preferredTransport"`, `"security"`, `"type"`} {
				if strings.Contains(string(stored.A2A), member) {
					t.Fatalf("%s: stored a2a block has %s: %s", id, member, stored.A2A)
				}
			}

			// The default card of an agent with a 0.3 interface is the hybrid: its 1.0 half.
			got := f.mustRender(id, a2a.VersionDefault)
			webtest.SameJSON(t, id+": served 1.0 card", a2atest.Only10(t, got), hybridSampleWant())
			// Its 0.3 half gives a 0.3 client what the agent's own card gave it; the version is
			// written 0.3.0, as 0.3 cards write it, where the SDK wrote 0.3.
			served03, sample03 := a2atest.Only03(t, got), a2atest.Only03(t, raw)
			if served03["protocolVersion"] != "0.3.0" {
				t.Fatalf("%s: served 0.3 protocolVersion %v", id, served03["protocolVersion"])
			}
			served03["protocolVersion"] = sample03["protocolVersion"]
			webtest.SameJSON(t, id+": served 0.3 half", served03, sample03)
		}
	})
}

// TestA2AImportHybridInterface: the 0.3 members of a 1.0 card (url, preferredTransport,
// protocolVersion) add a 0.3 interface when they describe one the card does not list: same URL,
// binding and 0.3 version, "0.3" and "0.3.x" being the same version. The interface keeps the
// version as the card wrote it (docs/a2a.md, Import).
func TestA2AImportHybridInterface(t *testing.T) {
	const u, other = "https://echo.example.com/a2a/jsonrpc", "https://echo.example.com/a2a/v03"
	iface := func(url, binding, version string) map[string]any {
		return map[string]any{"url": url, "protocolBinding": binding, "protocolVersion": version}
	}
	v10 := iface(u, "JSONRPC", "1.0")
	for _, tc := range []struct {
		name   string
		listed []any          // the card's supportedInterfaces
		legacy map[string]any // its 0.3 members; nil removes one
		want   []any          // the served supportedInterfaces
	}{
		{name: "listed, written 0.3.0 at the top",
			listed: []any{v10, iface(u, "JSONRPC", "0.3")},
			legacy: map[string]any{"url": u, "protocolVersion": "0.3.0"},
			want:   []any{v10, iface(u, "JSONRPC", "0.3")}},
		{name: "listed as 0.3.0, written 0.3 at the top",
			listed: []any{v10, iface(u, "jsonrpc", "0.3.0")},
			legacy: map[string]any{"url": u, "protocolVersion": "0.3"},
			want:   []any{v10, iface(u, "jsonrpc", "0.3.0")}},
		{name: "not listed",
			listed: []any{v10},
			legacy: map[string]any{"url": u, "protocolVersion": "0.3"},
			want:   []any{v10, iface(u, "JSONRPC", "0.3")}},
		{name: "listed with another binding",
			listed: []any{v10, iface(u, "GRPC", "0.3")},
			legacy: map[string]any{"url": u, "protocolVersion": "0.3"},
			want:   []any{v10, iface(u, "GRPC", "0.3"), iface(u, "JSONRPC", "0.3")}},
		{name: "another URL, no preferredTransport, version as written",
			listed: []any{v10, iface(u, "JSONRPC", "0.3")},
			legacy: map[string]any{"url": other, "preferredTransport": nil, "protocolVersion": "0.3.0"},
			want:   []any{v10, iface(u, "JSONRPC", "0.3"), iface(other, "JSONRPC", "0.3.0")}},
		{name: "preferredTransport is the binding",
			listed: []any{v10},
			legacy: map[string]any{"url": other, "preferredTransport": "HTTP+JSON", "protocolVersion": "0.3.1"},
			want:   []any{v10, iface(other, "HTTP+JSON", "0.3.1")}},
		{name: "a version that is not 0.3 describes nothing",
			listed: []any{v10},
			legacy: map[string]any{"url": other, "protocolVersion": "1.0"},
			want:   []any{v10}},
		{name: "no protocolVersion describes nothing",
			listed: []any{v10},
			legacy: map[string]any{"url": other, "protocolVersion": nil},
			want:   []any{v10}},
		{name: "no url describes nothing",
			listed: []any{v10},
			legacy: map[string]any{"url": nil, "protocolVersion": "0.3"},
			want:   []any{v10}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, "sqlite")
			card := a2atest.DecodeCard(t, a2atest.ReadSample(t, hybridSample))
			card["supportedInterfaces"] = tc.listed
			card = patched(card, tc.legacy)
			f.mustImport(map[string]any{"agentId": "h", "card": card, "visibility": "public"})
			// The default card lists every declared interface (the hybrid's 1.0 half).
			webtest.SameJSON(t, "supportedInterfaces", a2atest.Only10(t, f.mustRender("h", a2a.VersionDefault))["supportedInterfaces"], tc.want)
		})
	}
}

// TestA2AImportV03IgnoresUnknownMembers: a 0.3 card means what the 0.3 schema says. a2a-go's
// converter, which reads 0.3 cards, would take an http scheme's unknown "http" member over the
// scheme's own members: removed first, it cannot turn a bearer scheme into Basic.
func TestA2AImportV03IgnoresUnknownMembers(t *testing.T) {
	card := patched(v03Base(), map[string]any{
		unknownMarker + "Top": 1,
		"securitySchemes": map[string]any{"b": map[string]any{"type": "http", "scheme": "bearer",
			"http": map[string]any{"scheme": "Basic", "description": unknownMarker}, unknownMarker + "Scheme": 1}},
		"security":             []any{map[string]any{"b": []any{}}},
		"additionalInterfaces": []any{map[string]any{"url": "https://a.example/grpc", "transport": "GRPC", unknownMarker + "Interface": 1}},
		"skills":               []any{map[string]any{"id": "s1", "name": "Skill One", "description": "sd", "tags": []any{"t"}, unknownMarker + "Skill": 1}},
	})
	want := patched(v10OfBase(), map[string]any{
		"supportedInterfaces": []any{
			map[string]any{"url": "https://a.example/rpc", "protocolBinding": "JSONRPC", "protocolVersion": "0.3.0"},
			map[string]any{"url": "https://a.example/grpc", "protocolBinding": "GRPC", "protocolVersion": "0.3.0"}},
		"securitySchemes":      map[string]any{"b": map[string]any{"httpAuthSecurityScheme": map[string]any{"scheme": "bearer"}}},
		"securityRequirements": []any{map[string]any{"schemes": map[string]any{"b": map[string]any{}}}},
	})
	forEachDialect(t, func(t *testing.T, f *fixture) {
		c := f.mustImport(map[string]any{"agentId": "v03", "card": card, "visibility": "public"})
		stored := f.stored("v03")
		if c.AuthRequirements == nil || c.AuthRequirements.Type != cards.AuthBearer || strings.Contains(string(stored), unknownMarker) || strings.Contains(string(stored), "Basic") {
			t.Fatalf("stored card: %s", stored)
		}
		served := a2atest.Only10(t, f.mustRender("v03", a2a.VersionDefault)) // the hybrid default's 1.0 half
		webtest.SameJSON(t, "served 1.0 card", served, want)
	})
}

// TestA2AImportProtoFieldNames: ProtoJSON readers accept a field under its proto name
// (icon_url) as well as its JSON name (iconUrl), and the 1.0 schema allows both. A card written
// with proto names imports as the same card written with JSON names; given both, the JSON name's
// value is the one kept.
func TestA2AImportProtoFieldNames(t *testing.T) {
	forEachDialect(t, func(t *testing.T, f *fixture) {
		want := a2atest.SampleV1(t)
		delete(want, "signatures")
		card := a2atest.SampleV1(t)
		delete(card, "signatures")
		for json, proto := range map[string]string{"iconUrl": "icon_url", "documentationUrl": "documentation_url",
			"supportedInterfaces": "supported_interfaces", "defaultInputModes": "default_input_modes"} {
			card[proto] = card[json]
			delete(card, json)
		}
		for _, i := range card["supported_interfaces"].([]any) {
			i := i.(map[string]any)
			i["protocol_binding"], i["protocol_version"] = i["protocolBinding"], i["protocolVersion"]
			delete(i, "protocolBinding")
			delete(i, "protocolVersion")
		}
		card["default_output_modes"] = []any{"application/x-repeat"} // beside defaultOutputModes
		f.mustImport(map[string]any{"agentId": "proto", "card": card, "visibility": "public"})
		webtest.SameJSON(t, "served card", a2atest.DecodeCard(t, f.mustRender("proto", a2a.VersionDefault)), want)
	})
}
