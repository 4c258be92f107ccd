package a2a_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/a2a"
	"github.com/agentcards/agentcards/cards/a2a/a2atest"
	"github.com/agentcards/agentcards/web/webtest"
)

// TestA2AImportServesEverySampleBackLosslessly imports each sample card, 1.0, 0.3 and hybrid,
// and compares its default A2A card (the 1.0 half, for a card with a 0.3 interface) with the
// sample itself (1.0) or the 1.0 card written by hand for it (v03SampleWant, hybridSampleWant).
func TestA2AImportServesEverySampleBackLosslessly(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(a2atest.SamplesDir(t), "*.json"))
	if err != nil || len(files) != 7 {
		t.Fatalf("samples: %v %v", files, err)
	}
	v1 := schemaV1(t)
	forEachDialect(t, func(t *testing.T, f *fixture) {
		for i, file := range files {
			raw, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			want := a2atest.DecodeCard(t, raw)
			format := a2a.Version10
			if _, ok := want["supportedInterfaces"]; !ok {
				format = a2a.Version03
				want = v03SampleWant(t, filepath.Base(file))
			} else if filepath.Base(file) == hybridSample {
				want = hybridSampleWant()
			}
			id := "sample-" + string(rune('a'+i))
			c := f.mustImport(map[string]any{"agentId": id, "card": json.RawMessage(raw), "visibility": "public"})
			if c.A2A.Import == nil || c.A2A.Import.Format != format || c.Protocols[0] != "a2a" || c.A2A.Import.Signature.Status != cards.SignatureUnverified {
				t.Fatalf("%s: registry card %s", file, jsonOf(t, c))
			}

			// A card with a 0.3 interface is served as the hybrid default: its 1.0 half is checked.
			served := a2atest.Only10(t, f.mustRender(id, a2a.VersionDefault))
			a2atest.ValidateJSON(t, v1, jsonOf(t, served))
			// The original's signatures are not served: the service signs what it serves.
			delete(want, "signatures")
			webtest.SameJSON(t, filepath.Base(file), served, want)
		}
	})
}

// hybridSampleWant is the 1.0 card that importing the a2a-sdk 1.1 hybrid sample serves back,
// written by hand: the sample without its 0.3 members (url, preferredTransport, protocolVersion,
// security, and the OpenAPI-style members of its scheme), which describe the 0.3 interface it
// already lists.
func hybridSampleWant() map[string]any {
	return map[string]any{
		"name": "PyEcho Agent", "description": "Echoes text back; a real A2A agent built with the a2a-sdk Python SDK.",
		"supportedInterfaces": []any{
			map[string]any{"url": "https://echo.example.com/a2a/jsonrpc", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
			map[string]any{"url": "https://echo.example.com/a2a/jsonrpc", "protocolBinding": "JSONRPC", "protocolVersion": "0.3"}},
		"provider": map[string]any{"url": "https://example.com/a2apy", "organization": "A2A Interop Tests"},
		"version":  "1.2.3", "documentationUrl": "https://example.com/a2apy/docs", "iconUrl": "https://example.com/a2apy/icon.png",
		"capabilities": map[string]any{"streaming": true, "pushNotifications": false},
		"securitySchemes": map[string]any{"bearer": map[string]any{"httpAuthSecurityScheme": map[string]any{
			"description": "agentcards delegation JWT", "scheme": "Bearer", "bearerFormat": "JWT"}}},
		"securityRequirements": []any{map[string]any{"schemes": map[string]any{"bearer": map[string]any{}}}},
		"defaultInputModes":    []any{"text/plain"}, "defaultOutputModes": []any{"text/plain", "application/json"},
		"skills": []any{
			map[string]any{"id": "echo", "name": "Echo", "description": "Echoes the text it is sent.", "tags": []any{"echo", "test"},
				"examples": []any{"hello there", "msg: reply as a message"}, "inputModes": []any{"text/plain"}, "outputModes": []any{"text/plain"}},
			map[string]any{"id": "summarize", "name": "Summarize text", "description": "Pretends to summarize (echoes).",
				"tags": []any{"text", "summary"}, "examples": []any{"summarize this paragraph"}}},
	}
}

const hybridSample = "a2a-python-1.1-hybrid-agent-card.json"

// schemaV1 compiles the 1.0 Agent Card schema as the repository carries it, with a validator of
// its own rather than the product's.
func schemaV1(t *testing.T) *jsonschema.Schema {
	t.Helper()
	const name = "a2a-v1.schema.json"
	f, err := os.Open(filepath.Join("a2aschema", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(name, doc); err != nil {
		t.Fatal(err)
	}
	return c.MustCompile(name + "#/$defs/AgentCard")
}

// TestA2AImportRefusesInvalidInput: a card the schema or the 1.0 required fields refuse, 1.0 or
// 0.3, is fault.Invalid naming each problem's path; so is an import request that is not one:
// neither or both of card and url, an agent ID the registry refuses, a card that is not an
// object, an unknown member, a URL that is not http(s). That an invalid card is a 400 whose body
// names the problems is web's (TestA2AImportRejectsBadInput).
func TestA2AImportRefusesInvalidInput(t *testing.T) {
	f := newFixture(t, "sqlite")
	f.guardAsDefault() // as the server has it: a URL is checked before anything is fetched
	imp := func(name string, body map[string]any) string {
		t.Helper()
		_, err := f.importCard(body)
		wantKind(t, name, err, fault.Invalid)
		return fault.MessageOf(err)
	}
	missing := a2atest.SampleV1(t)
	delete(missing, "version")
	delete(missing["skills"].([]any)[0].(map[string]any), "tags")
	if msg := imp("missing", map[string]any{"agentId": "x", "card": missing}); !strings.Contains(msg, "/version: is required") || !strings.Contains(msg, "/skills/0/tags: is required") {
		t.Errorf("missing fields not named: %s", msg)
	}
	old := map[string]any{"name": "Old", "url": "https://a.example", "skills": "none"}
	if msg := imp("0.3", map[string]any{"agentId": "x", "card": old}); !strings.Contains(msg, "/skills") {
		t.Errorf("0.3 problem not named: %s", msg)
	}
	for name, body := range map[string]map[string]any{
		"neither card nor url": {"agentId": "x"},
		"both card and url":    {"agentId": "x", "card": a2atest.SampleV1(t), "url": "https://a.example/card"},
		"agent ID":             {"agentId": "x y", "card": a2atest.SampleV1(t)},
		"card not an object":   {"agentId": "x", "card": "text"},
		"unknown member":       {"agentId": "x", "card": a2atest.SampleV1(t), "extra": 1},
		"url not http":         {"agentId": "x", "url": "file:///etc/passwd"},
	} {
		imp(name, body)
	}
	f.absent("x")
}
