package web_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/agentcards/agentcards/cards/a2a/a2atest"
)

// allowLoopback lets the env's imports reach 127.0.0.0/8, as outbound.allow would.
func (e *env) allowLoopback() {
	e.a2a.Fetch = a2atest.LoopbackFetch()
}

// sampleV1 and signEd25519 are a2atest's, under the names the web tests call them by.
var (
	sampleV1    = a2atest.SampleV1
	signEd25519 = a2atest.SignEd25519
)

// schemaDir holds the spec's schemas as the repository carries them.
const schemaDir = "../cards/a2a/a2aschema"

// cardSchemas compiles the Agent Card schemas of 1.0 and 0.3, independently of the product.
func cardSchemas(t *testing.T) (v1, v03 *jsonschema.Schema) {
	t.Helper()
	c := jsonschema.NewCompiler()
	for _, name := range []string{"a2a-v1.schema.json", "a2a-v0.3.0.schema.json"} {
		f, err := os.Open(filepath.Join(schemaDir, name))
		if err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if err := c.AddResource(name, doc); err != nil {
			t.Fatal(err)
		}
	}
	return c.MustCompile("a2a-v1.schema.json#/$defs/AgentCard"), c.MustCompile("a2a-v0.3.0.schema.json#/definitions/AgentCard")
}

// requireV1 checks the 1.0 required fields the JSON Schema does not list.
func requireV1(t *testing.T, body []byte) {
	t.Helper()
	var c map[string]any
	if err := json.Unmarshal(body, &c); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"name", "description", "version", "supportedInterfaces", "capabilities", "defaultInputModes", "defaultOutputModes", "skills"} {
		if _, ok := c[k]; !ok {
			t.Fatalf("1.0 card lacks %s: %s", k, body)
		}
	}
	for _, s := range c["skills"].([]any) {
		for _, k := range []string{"id", "name", "description", "tags"} {
			if v, ok := s.(map[string]any)[k]; !ok || v == "" {
				t.Fatalf("skill lacks %s: %v", k, s)
			}
		}
	}
	for _, i := range c["supportedInterfaces"].([]any) {
		for _, k := range []string{"url", "protocolBinding", "protocolVersion"} {
			if v, ok := i.(map[string]any)[k]; !ok || v == "" {
				t.Fatalf("interface lacks %s: %v", k, i)
			}
		}
	}
}

// jwks returns the JWKS document the env's server publishes, for webtest.VerifyCard and
// webtest.VerifyJWT.
func (e *env) jwks() []byte {
	e.t.Helper()
	r := e.do("GET", "/.well-known/jwks.json", "", nil)
	expect(e.t, r, http.StatusOK)
	return r.body
}
