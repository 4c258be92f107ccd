package a2aschema

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"
)

func TestPrune(t *testing.T) {
	for _, tc := range []struct {
		name, loc, doc string
		want           string   // the document left
		removed        []string // the paths removed
	}{
		{name: "1.0: unknown members at every depth",
			loc: CardV1,
			doc: `{"name": "n", "x": 1, "provider": {"url": "u", "x": {}},
				"supportedInterfaces": [{"url": "u", "protocolBinding": "JSONRPC", "protocolVersion": "1.0", "x": true}],
				"skills": [{"id": "s", "x": "y"}],
				"securitySchemes": {"b": {"httpAuthSecurityScheme": {"scheme": "Bearer", "x": 1}, "type": "http", "scheme": "Bearer"}},
				"securityRequirements": [{"schemes": {"b": {"list": [], "x": 1}}, "x": 1}]}`,
			want: `{"name": "n", "provider": {"url": "u"},
				"supportedInterfaces": [{"url": "u", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
				"skills": [{"id": "s"}],
				"securitySchemes": {"b": {"httpAuthSecurityScheme": {"scheme": "Bearer"}}},
				"securityRequirements": [{"schemes": {"b": {"list": []}}}]}`,
			removed: []string{"/provider/x", "/securityRequirements/0/schemes/b/x", "/securityRequirements/0/x",
				"/securitySchemes/b/httpAuthSecurityScheme/x", "/securitySchemes/b/scheme", "/securitySchemes/b/type",
				"/skills/0/x", "/supportedInterfaces/0/x", "/x"}},
		{name: "1.0: wrong types and free-form params stay, proto names become JSON names",
			loc: CardV1,
			doc: `{"name": 5, "skills": "none", "icon_url": "i", "a/b": 1, "documentation_url": "d1", "documentationUrl": "d2",
				"capabilities": {"extensions": [{"uri": "u", "params": {"any": {"deep": [1]}, "n": 12345678901234567890}, "x": 1}]}}`,
			want: `{"name": 5, "skills": "none", "iconUrl": "i", "documentationUrl": "d2",
				"capabilities": {"extensions": [{"uri": "u", "params": {"any": {"deep": [1]}, "n": 12345678901234567890}}]}}`,
			removed: []string{"/a~1b", "/capabilities/extensions/0/x", "/documentation_url"}},
		{name: "0.3: the union of a scheme's forms, open maps kept",
			loc: CardV03,
			doc: `{"url": "u", "supportedInterfaces": [], "security": [{"b": ["s"]}],
				"securitySchemes": {"b": {"type": "http", "scheme": "bearer", "httpAuthSecurityScheme": {"scheme": "Bearer"}}},
				"additionalInterfaces": [{"url": "u", "transport": "GRPC", "protocolVersion": "0.3.0"}],
				"capabilities": {"stateTransitionHistory": true, "extensions": [{"uri": "u", "params": {"p": 1}}]}}`,
			want: `{"url": "u", "security": [{"b": ["s"]}],
				"securitySchemes": {"b": {"type": "http", "scheme": "bearer"}},
				"additionalInterfaces": [{"url": "u", "transport": "GRPC"}],
				"capabilities": {"stateTransitionHistory": true, "extensions": [{"uri": "u", "params": {"p": 1}}]}}`,
			removed: []string{"/additionalInterfaces/0/protocolVersion", "/securitySchemes/b/httpAuthSecurityScheme", "/supportedInterfaces"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, removed, err := Prune(tc.loc, []byte(tc.doc))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(removed, tc.removed) {
				t.Errorf("removed %q, want %q", removed, tc.removed)
			}
			var g, w bytes.Buffer
			if err := json.Compact(&g, got); err != nil {
				t.Fatalf("%v: %s", err, got)
			}
			var want any
			d := json.NewDecoder(bytes.NewReader([]byte(tc.want)))
			d.UseNumber()
			if err := d.Decode(&want); err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(want)
			_ = json.Compact(&w, b)
			if g.String() != w.String() {
				t.Errorf("got  %s\nwant %s", g.String(), w.String())
			}
		})
	}
}

// TestPruneKeepsTheBytes: a document with nothing to remove comes back as it was sent.
func TestPruneKeepsTheBytes(t *testing.T) {
	doc := []byte(`{"skills": [{"id": "s", "name": "<b>"}],   "name": "n"}`)
	got, removed, err := Prune(CardV1, doc)
	if err != nil || removed != nil || !bytes.Equal(got, doc) {
		t.Fatalf("%s %q %v", got, removed, err)
	}
}
