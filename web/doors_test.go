package web_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/agenttest"
	"github.com/agentcards/agentcards/cards/follow"
	"github.com/agentcards/agentcards/cards/webhooks"
	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/tenants"
	"github.com/agentcards/agentcards/web/api"
	"github.com/agentcards/agentcards/web/catalog"
	"github.com/agentcards/agentcards/web/client"
	"github.com/agentcards/agentcards/web/mcp"
)

// step is one request of the doors' scenario: the request, its arguments as a door takes them
// (JSON; {{delegation}} stands for the id of the delegation made before), and who sends it.
type step struct {
	request string
	args    string
	admin   bool // sent by the platform admin, else by alice, admin of acme
}

// scenario calls every request of the catalogue's doors once, each succeeding, in an order that
// gives each what it needs: tenant acme (admin alice) holds nothing else at the start, and the
// agent at endpoint answers tasks.
func scenario(t *testing.T, endpoint string) []step {
	t.Helper()
	imported, err := os.ReadFile(samplesDir + "/a2a-python-1.1-hybrid-agent-card.json")
	if err != nil {
		t.Fatal(err)
	}
	// The agent's own card, served where a card imported by URL is fetched (and refreshed) from.
	source := agenttest.New(t, agenttest.Answer(http.StatusOK, string(imported)))
	// A public key a tenant admin pins for example.com.
	pinned, err := json.Marshal(pinnedKeys(t))
	if err != nil {
		t.Fatal(err)
	}
	card := func(id, name string) string {
		return `"agentId": "` + id + `", "name": "` + name + `", "description": "Reviews pull requests", "protocols": ["http"],
			"capabilities": [{"name": "review_pr", "title": "Review a pull request"}], "tags": ["code"],
			"endpoint": "` + endpoint + `", "visibility": "public"`
	}
	return []step{
		{"tenants.create", `{"id": "beta", "name": "Beta", "admins": ["alice"]}`, true},
		{"tenants.list", `{}`, true},
		{"tenants.get", `{"tenant": "beta"}`, true},
		{"tenants.update", `{"tenant": "beta", "name": "Beta Two"}`, true},
		{"cards.register", `{` + card("rev", "Code Reviewer") + `}`, false},
		{"cards.register_batch", `{"cards": [{` + card("b1", "Batch One") + `}, {` + card("b2", "Batch Two") + `}]}`, false},
		{"cards.import", `{"agentId": "imp", "card": ` + string(imported) + `}`, false},
		{"cards.import", `{"agentId": "byurl", "url": "` + source.URL + `/.well-known/agent-card.json"}`, false},
		{"cards.refresh", `{"agentId": "byurl"}`, false},
		{"cards.get", `{"agentId": "rev"}`, false},
		{"cards.heartbeat", `{"agentId": "rev"}`, false},
		{"cards.search", `{"q": "review", "protocol": ["http"], "limit": 2}`, false},
		{"cards.changes", `{"limit": 5}`, false},
		{"cards.replace", `{` + card("b1", "Batch One, replaced") + `, "ifRevision": 1}`, false},
		{"cards.update", `{"agentId": "b2", "patch": {"description": "patched", "tags": null}}`, false},
		{"secrets.set", `{"agentId": "rev", "secret": "s3cret"}`, false},
		{"secrets.remove", `{"agentId": "rev"}`, false},
		{"roles.grant", `{"subject": "bob", "role": "reader"}`, false},
		{"roles.list", `{}`, false},
		{"roles.revoke", `{"subject": "bob", "role": "reader"}`, false},
		{"policies.add", `{"subject": "bob", "object": "cards/rev", "action": "cards:read", "effect": "allow"}`, false},
		{"policies.list", `{}`, false},
		{"policies.remove", `{"subject": "bob", "object": "cards/rev", "action": "cards:read", "effect": "allow"}`, false},
		{"access.check", `{"subject": "bob", "action": "cards:read", "object": "cards/rev"}`, false},
		{"synonyms.put", `{"id": "review", "words": ["review", "code review"]}`, false},
		{"synonyms.list", `{}`, false},
		{"synonyms.remove", `{"id": "review"}`, false},
		{"trust.put", `{"domain": "Example.com", "keys": ` + string(pinned) + `}`, false},
		{"trust.list", `{}`, false},
		{"trust.get", `{"domain": "example.com"}`, false},
		{"trust.remove", `{"domain": "example.com"}`, false},
		{"sources.create", `{"kind": "a2a-urls", "urls": ["` + source.URL + `/.well-known/agent-card.json"], "intervalSeconds": 60}`, false},
		{"sources.list", `{}`, false},
		{"sources.get", `{"id": "{{source}}"}`, false},
		{"sources.update", `{"id": "{{source}}", "intervalSeconds": 120}`, false},
		{"sources.remove", `{"id": "{{source}}"}`, false},
		{"webhooks.create", `{"url": "` + endpoint + `/hooks", "types": ["agentcards.card.removed"], "agentIds": ["b*"]}`, false},
		{"webhooks.list", `{}`, false},
		{"webhooks.get", `{"id": "{{webhook}}"}`, false},
		{"webhooks.update", `{"id": "{{webhook}}", "state": "disabled"}`, false},
		{"webhooks.deliveries", `{"id": "{{webhook}}", "limit": 10}`, false},
		{"webhooks.remove", `{"id": "{{webhook}}"}`, false},
		{"delegations.create", `{"agentId": "rev", "capability": "review_pr", "task": "review PR 7", "context": {"pr": 7}}`, false},
		{"delegations.list", `{"agentId": "rev"}`, false},
		{"delegations.get", `{"id": "{{delegation}}"}`, false},
		{"delegations.import", `{"source": "agentkit-mesh", "records": [{"id": "f47ac10b-58cc-4372-a567-0e02b2c3d479", "caller": "api",
			"agentId": "rev", "task": "review PR 6", "status": "completed", "result": "looks fine", "latencyMs": 900,
			"createdAt": "2026-03-01T10:00:00.000Z", "updatedAt": "2026-03-01T10:00:01.000Z"}]}`, false},
		{"audit.list", `{"object": "roles/", "action": "roles.revoke", "limit": 5}`, false},
		{"a2a.agents", `{"limit": 10}`, false},
		{"a2a.card", `{"agentId": "imp", "version": "0.3"}`, false},
		{"a2a.catalog", `{"limit": 2}`, false},
		{"keys.list", `{}`, false},
		{"cards.remove", `{"agentId": "b2"}`, false},
		{"tenants.delete", `{"tenant": "beta"}`, true},
	}
}

// checkScenarioCovers fails unless the scenario calls every request of the door.
func checkScenarioCovers(t *testing.T, steps []step, door catalog.Door) {
	t.Helper()
	for _, r := range catalog.Requests {
		if r.Doors&door != 0 && !slices.ContainsFunc(steps, func(s step) bool { return s.request == r.Name }) {
			t.Errorf("%s is on the door but the scenario never calls it", r.Name)
		}
	}
}

// doorsEnv is a server with tenant acme (admin alice) and an agent that answers every task.
func doorsEnv(t *testing.T, o envOptions) (e *env, alice, root, endpoint string) {
	t.Helper()
	o.allowLoopback = true
	e = newEnvWith(t, storagetest.Open(t, "sqlite"), o)
	e.allowLoopback() // imports by URL fetch the scenario's card from loopback
	e.mkTenant("acme", "alice")
	a := agenttest.New(t, agenttest.Answer(http.StatusOK, `{"result": "looks good"}`))
	return e, e.token("alice", "acme", false), e.admin(), a.Endpoint()
}

// TestGoClientEveryRequest: every request of the Go client door, sent with its typed method
// against the real server, succeeds and answers its output type; refusals come back as
// *client.Error with the REST error code.
func TestGoClientEveryRequest(t *testing.T) {
	e, alice, root, endpoint := doorsEnv(t, envOptions{})
	ctx := context.Background()
	steps := scenario(t, endpoint)
	checkScenarioCovers(t, steps, catalog.GoClient)
	as := map[bool]*client.Client{}
	for admin, tok := range map[bool]string{false: alice, true: root} {
		c, err := client.New(e.srv.URL, client.WithToken(tok), client.WithTenant("acme"), client.WithRetry(2))
		if err != nil {
			t.Fatal(err)
		}
		as[admin] = c
	}
	made := map[string]string{}
	for _, s := range steps {
		goClientStep(t, ctx, as[s.admin], s, made)
	}
	if made["delegation"] == "" || made["webhook"] == "" {
		t.Fatalf("no delegation or no webhook made: %v", made)
	}

	// Paging: the iterator reads every page.
	var ids []string
	for h, err := range as[false].Cards.SearchAll(ctx, api.CardsSearch{Limit: 1, Tag: []string{"code"}}) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, h.Card.AgentID)
	}
	if slices.Sort(ids); !slices.Equal(ids, []string{"b1", "rev"}) {
		t.Errorf("SearchAll by one: %v, want b1 rev", ids)
	}
	// The catalog's iterator follows each page's nested entry, and yields the cards' entries.
	var listed []string
	for en, err := range as[false].A2A.CatalogAll(ctx, api.A2ACatalog{Limit: 1}) {
		if err != nil {
			t.Fatal(err)
		}
		listed = append(listed, en.Identifier)
	}
	if want := []string{"urn:agentcards:acme:b1", "urn:agentcards:acme:rev"}; !slices.Equal(listed, want) {
		t.Errorf("CatalogAll by one: %v, want %v", listed, want)
	}
	goClientRefusals(t, ctx, e, as[false])
}

// goClientStep sends step s of the scenario with its typed method of c, {{delegation}} and
// {{webhook}} in its arguments standing for ids["delegation"] and ids["webhook"], and checks the
// answer; it keeps in ids the id of the delegation or webhook the step made, if it made one.
func goClientStep(t *testing.T, ctx context.Context, c *client.Client, s step, ids map[string]string) {
	t.Helper()
	r, _ := catalog.Lookup(s.request)
	in := reflect.New(r.In)
	args := withIDs(s.args, ids)
	if err := json.Unmarshal([]byte(args), in.Interface()); err != nil {
		t.Fatalf("%s: arguments: %v", s.request, err)
	}
	// The typed method of the request: Client.<Resource>.<Verb>(ctx, in).
	resource, verb, _ := strings.Cut(r.GoMethod(), ".")
	method := reflect.ValueOf(c).Elem().FieldByName(resource).MethodByName(verb)
	if !method.IsValid() {
		t.Errorf("%s: the client has no method %s", s.request, r.GoMethod())
		return
	}
	if got := method.Type().In(1); got != r.In {
		t.Errorf("%s: %s takes %v, the catalogue says %v", s.request, r.GoMethod(), got, r.In)
		return
	}
	res := method.Call([]reflect.Value{reflect.ValueOf(ctx), in.Elem()})
	if err, _ := res[1].Interface().(error); err != nil {
		t.Errorf("%s: %v", s.request, err)
		return
	}
	out := res[0]
	if out.Type() != r.Out {
		t.Errorf("%s: %s answers %v, the catalogue says %v", s.request, r.GoMethod(), out.Type(), r.Out)
		return
	}
	switch v := out.Interface().(type) {
	case api.Delegation:
		if v.Status != "completed" || string(v.Result) != `"looks good"` {
			t.Errorf("%s: %s with result %s, want completed with the agent's", s.request, v.Status, v.Result)
		}
		ids["delegation"] = v.ID
	case webhooks.Webhook:
		want := webhooks.StateActive
		if s.request == "webhooks.update" {
			want = webhooks.StateDisabled
		}
		if !strings.HasPrefix(v.ID, "wh_") || v.State != want || !slices.Equal(v.Types, []string{webhooks.TypeRemoved}) {
			t.Errorf("%s: answered %+v", s.request, v)
		}
		ids["webhook"] = v.ID
	case follow.Source:
		want, every := follow.StateSyncing, 60
		switch s.request {
		case "sources.remove":
			want, every = follow.StateRemoving, 120
		case "sources.update":
			every = 120
		}
		if !strings.HasPrefix(v.ID, "src_") || v.Kind != follow.KindA2AURLs || len(v.URLs) != 1 || v.Interval != every || v.State != want {
			t.Errorf("%s: answered %+v", s.request, v)
		}
		ids["source"] = v.ID
	case api.SourceList:
		if v.Total != 1 || len(v.Items) != 1 || v.Items[0].ID != ids["source"] {
			t.Errorf("%s: answered %+v, want the source just made", s.request, v)
		}
	case api.WebhookList:
		if v.Total != 1 || len(v.Items) != 1 || v.Items[0].ID != ids["webhook"] {
			t.Errorf("%s: answered %+v, want the webhook just made", s.request, v)
		}
	case api.SearchResult:
		if v.Total != 3 || len(v.Items) != 2 || v.NextCursor == "" || v.Items[0].Score == nil {
			t.Errorf("%s: %d of %d, next %q; want 2 of 3 ranked, and a cursor", s.request, len(v.Items), v.Total, v.NextCursor)
		}
	case cards.Card:
		if v.AgentID == "" || v.Revision == 0 {
			t.Errorf("%s: answered %+v", s.request, v)
		}
	case api.ChangePage:
		if v.NextCursor == "" || len(v.Changes) != 0 {
			t.Errorf("%s: answered %+v, want the present cursor and no change", s.request, v)
		}
	case tenants.SynonymSet:
		if v.ID != "review" || !slices.Equal(v.Words, []string{"review", "code review"}) || v.UpdatedAt.IsZero() {
			t.Errorf("%s: answered %+v", s.request, v)
		}
	case api.DelegationsImported:
		if !slices.Equal(v.Imported, []string{"f47ac10b-58cc-4372-a567-0e02b2c3d479"}) || len(v.Existing) != 0 {
			t.Errorf("%s: answered %+v, want the one record imported", s.request, v)
		}
	case api.TrustPutted:
		if v.Issuer.Domain != "example.com" || !strings.Contains(string(v.Issuer.Keys), `"kid":"k1"`) || v.Issuer.UpdatedAt.IsZero() || v.Cards.Weighed != 0 {
			t.Errorf("%s: answered %+v", s.request, v)
		}
	case api.TrustIssuerList:
		if v.Total != 1 || len(v.Items) != 1 || v.Items[0].Domain != "example.com" {
			t.Errorf("%s: answered %+v, want the issuer just put", s.request, v)
		}
	case tenants.TrustIssuer:
		if v.Domain != "example.com" || v.JWKSURL != "" || len(v.Keys) == 0 {
			t.Errorf("%s: answered %+v", s.request, v)
		}
	case api.TrustRemoved:
		if v.Cards != (cards.Reweighed{}) {
			t.Errorf("%s: answered %+v, want no card weighed", s.request, v)
		}
	case api.SynonymList:
		if v.Total != 1 || len(v.Items) != 1 || v.Items[0].ID != "review" {
			t.Errorf("%s: answered %+v, want the set just put", s.request, v)
		}
	case api.AICatalog:
		// The public cards b1, b2 and rev, two a page: two cards, then the nested next page.
		if n := len(v.Entries); n != 3 || v.Entries[0].Identifier != "urn:agentcards:acme:b1" || v.Entries[2].Type != "application/ai-catalog+json" ||
			v.Signature == nil || v.Signature.JWS == "" {
			t.Errorf("%s: answered %+v", s.request, v)
		}
	case json.RawMessage:
		if !strings.Contains(string(v), `"protocolVersion":"0.3`) {
			t.Errorf("%s: not the 0.3 card asked for: %.200s", s.request, v)
		}
	}
}

// withIDs is a step's arguments with {{delegation}}, {{webhook}} and {{source}} replaced by the
// ids of the delegation, the webhook and the source the scenario made.
func withIDs(args string, ids map[string]string) string {
	return strings.NewReplacer("{{delegation}}", ids["delegation"], "{{webhook}}", ids["webhook"], "{{source}}", ids["source"]).Replace(args)
}

// goClientRefusals: refusals by the server come back as *client.Error with the REST code, and
// those of the client itself (c is alice's, of tenant acme) unsent, as invalid.
func goClientRefusals(t *testing.T, ctx context.Context, e *env, c *client.Client) {
	t.Helper()
	// Refusals carry the REST code, for errors.As.
	refusals := []struct {
		name string
		call func() error
		code string
	}{
		{"missing card", func() error { _, err := c.Cards.Get(ctx, api.CardRef{AgentID: "nope"}); return err }, "not_found"},
		{"not a platform admin", func() error { _, err := c.Tenants.List(ctx, api.TenantsList{}); return err }, "forbidden"},
		{"invalid card", func() error {
			_, err := c.Cards.Register(ctx, api.CardsRegister{CardInput: api.CardInput{AgentID: "x y", Name: "X"}})
			return err
		}, "invalid"},
		{"stale revision", func() error {
			_, err := c.Cards.Replace(ctx, api.CardsReplace{CardInput: api.CardInput{AgentID: "rev", Name: "R"}, IfRevision: 99})
			return err
		}, "precondition_failed"},
		{"another tenant", func() error {
			_, err := c.Cards.Search(ctx, api.CardsSearch{Scope: api.Scope{Tenant: "beta"}})
			return err
		}, "not_found"},
	}
	for _, r := range refusals {
		var ce *client.Error
		if err := r.call(); !errors.As(err, &ce) || ce.Code != r.code {
			t.Errorf("%s: %v, want a *client.Error with code %s", r.name, err, r.code)
		}
	}
	// What the client refuses before sending: a required field left empty (a tenant's id is
	// never the token's tenant: only a scope's is), a value a field does not take.
	rootOfAcme, err := client.New(e.srv.URL, client.WithToken(e.token("root", "acme", true)))
	if err != nil {
		t.Fatal(err)
	}
	unsent := []struct {
		name string
		call func() error
	}{
		{"a tenant deleted without its id", func() error { _, err := rootOfAcme.Tenants.Delete(ctx, api.TenantRef{}); return err }},
		{"a card read without its id", func() error { _, err := c.Cards.Get(ctx, api.CardRef{}); return err }},
		{"a mode not taken", func() error {
			_, err := c.Delegations.Create(ctx, api.DelegationsCreate{AgentID: "rev", Capability: "review", Task: "t", Mode: "later"})
			return err
		}},
	}
	for _, u := range unsent {
		var ce *client.Error
		if err := u.call(); !errors.As(err, &ce) || ce.Code != "invalid" || ce.Status != 0 {
			t.Errorf("%s: %v, want an unsent *client.Error invalid", u.name, err)
		}
	}
	if _, err := rootOfAcme.Tenants.Get(ctx, api.TenantRef{Tenant: "acme"}); err != nil {
		t.Errorf("acme after the refused delete: %v", err)
	}
	bad, err := client.New(e.srv.URL, client.WithToken("not-a-token"), client.WithTenant("acme"))
	if err != nil {
		t.Fatal(err)
	}
	var ce *client.Error
	if _, err := bad.Cards.Get(ctx, api.CardRef{AgentID: "rev"}); !errors.As(err, &ce) || ce.Status != http.StatusUnauthorized {
		t.Errorf("a wrong token: %v, want 401", err)
	}
}

// bearer adds a token to every request, as an MCP client configured with a header does.
type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.token != "" {
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return b.base.RoundTrip(r)
}

// mcpSession connects the go-sdk's client to the server's /mcp over streamable HTTP.
func mcpSession(t *testing.T, e *env, token string) (*sdk.ClientSession, error) {
	t.Helper()
	c := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil)
	s, err := c.Connect(context.Background(), &sdk.StreamableClientTransport{
		Endpoint: e.srv.URL + "/mcp", HTTPClient: &http.Client{Transport: bearer{token, e.srv.Client().Transport}}, MaxRetries: -1,
	}, nil)
	if err == nil {
		t.Cleanup(func() { s.Close() })
	}
	return s, err
}

// mustSession is mcpSession that fails the test on an error.
func mustSession(t *testing.T, e *env, token string) *sdk.ClientSession {
	t.Helper()
	s, err := mcpSession(t, e, token)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// tools lists a session's tools by name.
func tools(t *testing.T, s *sdk.ClientSession) map[string]*sdk.Tool {
	t.Helper()
	list, err := s.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*sdk.Tool{}
	for _, tool := range list.Tools {
		byName[tool.Name] = tool
	}
	return byName
}

// callTool calls a tool with arguments given as JSON and returns its result.
func callTool(t *testing.T, s *sdk.ClientSession, name, args string) *sdk.CallToolResult {
	t.Helper()
	res, err := s.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: json.RawMessage(args)})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

// checkOutput fails unless the result is no error and its structuredContent satisfies the
// tool's output schema; it returns the structured content.
func checkOutput(t *testing.T, tool *sdk.Tool, res *sdk.CallToolResult) map[string]any {
	t.Helper()
	if res.IsError {
		t.Errorf("%s: tool error %s", tool.Name, text(res))
		return nil
	}
	raw, err := json.Marshal(tool.OutputSchema)
	if err != nil {
		t.Fatal(err)
	}
	var schema jsonschema.Schema
	if err := json.Unmarshal(raw, &schema); err != nil {
		t.Fatalf("%s: output schema: %v", tool.Name, err)
	}
	resolved, err := schema.Resolve(nil)
	if err != nil {
		t.Fatalf("%s: output schema: %v", tool.Name, err)
	}
	raw, _ = json.Marshal(res.StructuredContent)
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("%s: structuredContent %s is no object", tool.Name, raw)
	}
	if err := resolved.Validate(out); err != nil {
		t.Errorf("%s: structuredContent %.300s does not satisfy the output schema: %v", tool.Name, raw, err)
	}
	return out
}

// text joins a result's text contents.
func text(res *sdk.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// toolErrCode is the error code of a tool error, whose last text is the REST error body.
func toolErrCode(t *testing.T, res *sdk.CallToolResult) string {
	t.Helper()
	if !res.IsError {
		t.Errorf("want a tool error, got %s", text(res))
		return ""
	}
	last := res.Content[len(res.Content)-1].(*sdk.TextContent).Text
	var body struct {
		Error struct{ Code, Message string }
	}
	if err := json.Unmarshal([]byte(last), &body); err != nil || body.Error.Code == "" {
		t.Errorf("tool error %q is not the REST error body", last)
	}
	return body.Error.Code
}

// TestMCPToolsAreTheCatalogue: the MCP door lists a tool for every request of the catalogue
// on it, named as the catalogue derives it, whose arguments are the request input's fields
// under the same names, with the catalogue's hints; plus the old names; nothing else.
func TestMCPToolsAreTheCatalogue(t *testing.T) {
	e, alice, _, _ := doorsEnv(t, envOptions{})
	listed := tools(t, mustSession(t, e, alice))
	want := map[string]bool{}
	for _, r := range catalog.Requests {
		if r.Doors&catalog.MCP == 0 {
			continue
		}
		want[r.MCPTool()] = true
		tool, ok := listed[r.MCPTool()]
		if !ok {
			t.Errorf("%s: no tool %s", r.Name, r.MCPTool())
			continue
		}
		var schema struct {
			Properties map[string]any `json:"properties"`
		}
		raw, _ := json.Marshal(tool.InputSchema)
		if err := json.Unmarshal(raw, &schema); err != nil {
			t.Fatal(err)
		}
		var fields []string
		for _, f := range client.Fields(r.In) {
			fields = append(fields, f.Name)
		}
		props := slices.Sorted(keysOf(schema.Properties))
		if slices.Sort(fields); !slices.Equal(props, fields) {
			t.Errorf("%s: the tool takes %v, the catalogue's input has %v", tool.Name, props, fields)
		}
		for _, f := range client.Fields(r.In) {
			prop, _ := schema.Properties[f.Name].(map[string]any)
			if items, ok := prop["items"].(map[string]any); ok {
				prop = items // a list's values are its items'
			}
			var enum []string
			if list, ok := prop["enum"].([]any); ok {
				for _, v := range list {
					enum = append(enum, fmt.Sprint(v))
				}
			}
			if !slices.Equal(enum, f.Enum) {
				t.Errorf("%s: %s takes %v, the catalogue's input %v", tool.Name, f.Name, enum, f.Enum)
			}
		}
		a := tool.Annotations
		// destructiveHint is said of the tools that change something only.
		if a == nil || a.ReadOnlyHint != r.ReadOnly() || a.IdempotentHint != r.Idempotent() ||
			(a.DestructiveHint == nil) != r.ReadOnly() || a.DestructiveHint != nil && *a.DestructiveHint != r.Destructive() ||
			a.OpenWorldHint == nil || *a.OpenWorldHint != r.OpenWorld {
			t.Errorf("%s: annotations %+v differ from the catalogue's hints", tool.Name, a)
		}
		if tool.OutputSchema == nil || !strings.Contains(tool.Description, r.Does) {
			t.Errorf("%s: no output schema, or a description without what it does: %q", tool.Name, tool.Description)
		}
	}
	for _, old := range catalog.OldNames {
		want[old.Name] = true
	}
	for name := range listed {
		if !want[name] {
			t.Errorf("tool %s is neither a request of the MCP door nor an old name", name)
		}
	}
	if len(listed) != len(want) {
		t.Errorf("%d tools listed, %d expected", len(listed), len(want))
	}
}

func keysOf(m map[string]any) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// TestMCPEveryTool: every tool of the MCP door, called over streamable HTTP by the go-sdk's
// client as the scenario calls it, succeeds with structuredContent that satisfies its output
// schema; search results are compact unless fields asks for more.
func TestMCPEveryTool(t *testing.T) {
	e, alice, root, endpoint := doorsEnv(t, envOptions{})
	steps := scenario(t, endpoint)
	checkScenarioCovers(t, steps, catalog.MCP)
	sessions := map[bool]*sdk.ClientSession{false: mustSession(t, e, alice), true: mustSession(t, e, root)}
	listed := tools(t, sessions[false])
	ids := map[string]string{}
	for _, s := range steps {
		r, _ := catalog.Lookup(s.request)
		tool := listed[r.MCPTool()]
		if tool == nil {
			t.Errorf("%s: no tool", s.request)
			continue
		}
		// Alice's token names acme; the platform admin's names no tenant, and its requests name theirs.
		out := checkOutput(t, tool, callTool(t, sessions[s.admin], tool.Name, withIDs(s.args, ids)))
		switch s.request {
		case "webhooks.create":
			ids["webhook"], _ = out["id"].(string)
		case "sources.create":
			ids["source"], _ = out["id"].(string)
		case "delegations.create":
			if out["status"] != "completed" || out["result"] != "looks good" {
				t.Errorf("delegation: %v", out)
			}
			ids["delegation"], _ = out["id"].(string)
		case "cards.search":
			items, _ := out["items"].([]any)
			if out["total"] != float64(3) || len(items) != 2 {
				t.Fatalf("search: %v", out)
			}
			first := items[0].(map[string]any)
			keys := slices.Sorted(keysOf(first))
			if !slices.Equal(keys, []string{"agentId", "description", "endpoint", "matchedCapabilities", "name", "score"}) {
				t.Errorf("a compact result holds %v", keys)
			}
		}
	}
	// fields chooses what a result shows.
	out := checkOutput(t, listed["cards_search"], callTool(t, sessions[false], "cards_search", `{"q": "review", "fields": ["agentId", "tags", "card"]}`))
	first := out["items"].([]any)[0].(map[string]any)
	if keys := slices.Sorted(keysOf(first)); !slices.Equal(keys, []string{"agentId", "card", "tags"}) {
		t.Errorf("fields agentId, tags, card gave %v", keys)
	}
	if code := toolErrCode(t, callTool(t, sessions[false], "cards_search", `{"fields": ["secret"]}`)); code != "invalid" {
		t.Errorf("an unknown field: %s, want invalid", code)
	}
}

// TestMCPRefusals: refusals are tool errors carrying the REST codes; a request without a token
// never reaches a tool.
func TestMCPRefusals(t *testing.T) {
	e, alice, root, _ := doorsEnv(t, envOptions{})
	if _, err := mcpSession(t, e, ""); err == nil {
		t.Error("a session without a token was opened")
	}
	if _, err := mcpSession(t, e, "not-a-token"); err == nil {
		t.Error("a session with a wrong token was opened")
	}
	r := e.do("POST", "/mcp", "", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	expect(t, r, http.StatusUnauthorized, "unauthorized")

	s := mustSession(t, e, alice)
	cases := []struct{ name, tool, args, code string }{
		{"missing card", "cards_get", `{"agentId": "nope"}`, "not_found"},
		{"platform admin's request", "tenants_list", `{}`, "forbidden"},
		{"another tenant", "cards_search", `{"tenant": "other"}`, "not_found"},
		{"unknown argument", "cards_get", `{"agentId": "x", "extra": 1}`, "invalid"},
		{"wrong type", "cards_search", `{"limit": "ten"}`, "invalid"},
		{"invalid card", "cards_register", `{"agentId": "a b", "name": "X"}`, "invalid"},
		{"no agentId", "cards_get", `{}`, "invalid"},
		{"a mode not taken", "delegations_create", `{"agentId": "x", "capability": "c", "task": "t", "mode": "later"}`, "invalid"},
	}
	for _, c := range cases {
		if code := toolErrCode(t, callTool(t, s, c.tool, c.args)); code != c.code {
			t.Errorf("%s: %s, want %s", c.name, code, c.code)
		}
	}
	// A suspended tenant's members are refused as on REST.
	expect(t, e.do("PATCH", "/v1/tenants/acme", root, map[string]any{"status": "suspended"}), http.StatusOK)
	if code := toolErrCode(t, callTool(t, s, "cards_search", `{"q": "x"}`)); code != "tenant_suspended" {
		t.Errorf("suspended tenant: %s, want tenant_suspended", code)
	}
}

// TestMCPInMemory: the tool set served over the go-sdk's in-memory transport, each call made by
// the Go client through the server's handler in process, answers as over HTTP.
func TestMCPInMemory(t *testing.T) {
	e, alice, _, endpoint := doorsEnv(t, envOptions{})
	server, err := mcp.NewServer(func(context.Context, *sdk.CallToolRequest) (*client.Client, error) {
		return client.New("http://in-process", client.WithHandler(e.srv.Config.Handler), client.WithToken(alice))
	}, mcp.Options{Toolsets: []string{mcp.All}})
	if err != nil {
		t.Fatal(err)
	}
	st, ct := sdk.NewInMemoryTransports()
	ss, err := server.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	s, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	listed := tools(t, s)
	steps := scenario(t, endpoint)
	checkOutput(t, listed["cards_register"], callTool(t, s, "cards_register", steps[4].args))
	out := checkOutput(t, listed["cards_search"], callTool(t, s, "cards_search", `{"q": "review"}`))
	if out["total"] != float64(1) {
		t.Errorf("search in memory: %v", out)
	}
	if code := toolErrCode(t, callTool(t, s, "cards_get", `{"agentId": "nope"}`)); code != "not_found" {
		t.Errorf("missing card in memory: %s", code)
	}
}

// TestMCPOldNames: the seeds' tool names answer, mapped onto our requests in the shapes their
// registries documented, each answer carrying the notice with the new name and the day, until
// that day; from then on each is refused, naming the new name.
func TestMCPOldNames(t *testing.T) {
	var now atomic.Pointer[time.Time]
	day := catalog.OldNames[0].Until
	before := day.Add(-time.Second)
	now.Store(&before)
	e, alice, _, endpoint := doorsEnv(t, envOptions{now: func() time.Time { return *now.Load() }})
	s := mustSession(t, e, alice)
	listed := tools(t, s)
	notice := func(name string) string {
		for _, o := range catalog.OldNames {
			if o.Name == name {
				return o.Notice()
			}
		}
		t.Fatalf("no old name %s", name)
		return ""
	}
	// call is a client written against the seed: it parses the first text of the answer as the
	// seed's tool wrote it (JSON.parse, or the sentence as it is); the notice comes second, and
	// beside the answer in the structured content.
	call := func(name, args string, seed any) string {
		t.Helper()
		res := callTool(t, s, name, args)
		out := checkOutput(t, listed[name], res)
		if len(res.Content) != 2 || res.Content[1].(*sdk.TextContent).Text != notice(name) || out["notice"] != notice(name) {
			t.Errorf("%s: content %v (structured notice %q), want the notice second", name, res.Content, out["notice"])
		}
		first := res.Content[0].(*sdk.TextContent).Text
		if seed != nil {
			if err := json.Unmarshal([]byte(first), seed); err != nil {
				t.Fatalf("%s: the first text is not the seed's JSON: %v\n%s", name, err, first)
			}
		}
		return first
	}
	// The seed's agent record and discovery result, as its clients read them.
	type agentRecord struct {
		Name         string   `json:"name"`
		Description  string   `json:"description"`
		Capabilities []string `json:"capabilities"`
		Resources    []any    `json:"resources"`
		Endpoint     string   `json:"endpoint"`
		Protocol     string   `json:"protocol"`
		RegisteredAt string   `json:"registered_at"`
		LastSeen     string   `json:"last_seen"`
	}
	type discovered struct {
		Agent               agentRecord `json:"agent"`
		Score               float64     `json:"score"`
		MatchedCapabilities []string    `json:"matchedCapabilities"`
	}
	type listed2 struct {
		Total  int `json:"total"`
		Agents []struct {
			AgentID   string   `json:"agent_id"`
			Offerings []string `json:"offerings"`
		} `json:"agents"`
	}
	if want := "mesh_discover was renamed to cards_search. This name stops working on 2027-03-01; use cards_search."; notice("mesh_discover") != want {
		t.Errorf("notice %q, want %q", notice("mesh_discover"), want)
	}

	var reg agentRecord
	call("mesh_register", `{"name": "finance-agent", "description": "Budget management and expense approval",
		"capabilities": ["budget", "cost_center", "expense_approval"], "endpoint": "`+endpoint+`"}`, &reg)
	if reg.Name != "finance-agent" || len(reg.Capabilities) != 3 || reg.Endpoint != endpoint || reg.Protocol != "http" ||
		reg.Resources == nil || reg.RegisteredAt == "" || reg.LastSeen != reg.RegisteredAt {
		t.Errorf("mesh_register: %+v", reg)
	}
	card := e.getCard("acme", "finance-agent")
	expect(t, card, http.StatusOK)
	// "registers and retrieves an agent": what discovery returns equals what registration did.
	var found []discovered
	call("mesh_discover", `{"query": "budget cost center", "limit": 5}`, &found)
	if len(found) != 1 || !reflect.DeepEqual(found[0].Agent, reg) || found[0].Score <= 0 || len(found[0].MatchedCapabilities) == 0 {
		t.Errorf("mesh_discover: %+v, registered %+v", found, reg)
	}

	// registry_list lists the agents that can be reached: one never heard of, and one online.
	for _, beat := range []bool{false, true} {
		if beat {
			expect(t, e.beat("acme", "finance-agent", alice), http.StatusOK)
		}
		var l listed2
		call("registry_list", `{"offering": "budget", "tags": []}`, &l)
		if l.Total != 1 || len(l.Agents) != 1 || l.Agents[0].AgentID != "finance-agent" || len(l.Agents[0].Offerings) != 3 {
			t.Errorf("registry_list offering budget (heartbeat %t): %+v", beat, l)
		}
	}
	var none listed2
	if call("registry_list", `{"capability": "budget", "offering": "payroll"}`, &none); none.Total != 0 || none.Agents == nil {
		t.Errorf("registry_list with an offering no agent has: %+v", none)
	}

	// Without a capability, the one whose words the task shares the most.
	var d struct {
		ID        string `json:"id"`
		Success   bool   `json:"success"`
		Status    string `json:"status"`
		LatencyMs *int64 `json:"latencyMs"`
	}
	call("mesh_delegate", `{"targetName": "finance-agent", "task": "approve this expense", "context": "{\"depth\": 1}"}`, &d)
	if !d.Success || d.Status != "completed" || d.ID == "" || d.LatencyMs == nil {
		t.Errorf("mesh_delegate: %+v", d)
	}
	expect(t, e.do("GET", "/v1/tenants/acme/delegations/"+d.ID, alice, nil), http.StatusOK)
	if got := call("mesh_unregister", `{"name": "finance-agent"}`, nil); got != "Unregistered finance-agent" {
		t.Errorf("mesh_unregister: %q", got)
	}
	expect(t, e.getCard("acme", "finance-agent"), http.StatusNotFound)
	if got := call("mesh_unregister", `{"name": "finance-agent"}`, nil); got != "Agent finance-agent not found" {
		t.Errorf("mesh_unregister again: %q", got)
	}

	// From the day on, every old name is refused with its new name.
	now.Store(&day)
	for _, old := range catalog.OldNames {
		res := callTool(t, s, old.Name, `{}`)
		if code := toolErrCode(t, res); code != "renamed" || !strings.Contains(text(res), "use "+old.NewName()) {
			t.Errorf("%s on its day: %s %s", old.Name, code, text(res))
		}
	}
}
