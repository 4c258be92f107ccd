package web_test

import (
	"context"
	"encoding/json"
	"iter"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/agentcards/agentcards/cards/a2a/a2atest"
)

// allowLoopback lets the env's imports reach 127.0.0.0/8, as outbound.allow would.
func (e *env) allowLoopback() {
	e.a2a.Fetch = a2atest.LoopbackFetch()
	// The trust policies' key sets, shared with the trust requests, over http on loopback too.
	e.a2a.TrustKeys.Fetch, e.a2a.TrustKeys.PlainHTTP = e.a2a.Fetch, a2atest.IsLoopback
}

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

// inbox is an A2A executor that keeps the text of every message it is sent and answers each
// with "<name> got <text>": the agents of TestA2AResolvedCardReachesAgents and of newSDKAgent.
type inbox struct {
	mu   sync.Mutex
	got  []string
	name string
}

func (b *inbox) Execute(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		text := ""
		if ec.Message != nil && len(ec.Message.Parts) > 0 {
			text = ec.Message.Parts[0].Text()
		}
		b.mu.Lock()
		b.got = append(b.got, text)
		b.mu.Unlock()
		yield(a2a.NewMessage(a2a.MessageRoleAgent, a2a.NewTextPart(b.name+" got "+text)), nil)
	}
}

func (b *inbox) Cancel(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

// messages returns the texts received so far, oldest first.
func (b *inbox) messages() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.got...)
}
