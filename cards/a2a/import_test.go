package a2a_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

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
