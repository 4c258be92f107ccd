package web_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentcards/agentcards/cards/agenttest"
	"github.com/agentcards/agentcards/cards/delegation"
	"github.com/agentcards/agentcards/storage/storagetest"
)

// meshClient is a client of agentkit-mesh's HTTP control plane, written as that registry's
// clients are: a base URL and a bearer token, its bodies and answers as plain JSON.
type meshClient struct {
	e     *env
	base  string
	token string
}

func (m meshClient) call(method, path string, body any) response {
	m.e.t.Helper()
	return m.e.do(method, m.base+path, m.token, body)
}

// meshError reads agentkit-mesh's error body, {"error": message}, with the code and request id
// beside it, and fails unless the answer has the status and the code.
func meshError(t testing.TB, r response, status int, code string) string {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, r.body)
	}
	if got := meshCode(t, r); got != code {
		t.Fatalf("code %q, want %q: %s", got, code, r.body)
	}
	var b struct {
		Error string `json:"error"`
	}
	r.json(t, &b)
	return b.Error
}

// meshAgent is agentkit-mesh's agent record as its clients read it.
type meshAgent struct {
	Name         string   `json:"name"`
	Description  string   `json:"description"`
	Capabilities []string `json:"capabilities"`
	Resources    []struct {
		URI    string `json:"uri"`
		Access string `json:"access"`
	} `json:"resources"`
	Endpoint     string           `json:"endpoint"`
	Protocol     string           `json:"protocol"`
	Auth         *json.RawMessage `json:"auth"`
	RegisteredAt string           `json:"registered_at"`
	LastSeen     string           `json:"last_seen"`
}

var jsISOTime = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)

func (a meshAgent) check(t testing.TB, name, endpoint, auth string) {
	t.Helper()
	if a.Name != name || a.Endpoint != endpoint || a.Protocol != "http" || a.Capabilities == nil || a.Resources == nil ||
		!jsISOTime.MatchString(a.RegisteredAt) || !jsISOTime.MatchString(a.LastSeen) {
		t.Fatalf("agent %+v", a)
	}
	switch {
	case auth == "" && a.Auth != nil:
		t.Fatalf("agent %s: auth %s, want none", name, *a.Auth)
	case auth != "" && (a.Auth == nil || string(*a.Auth) != `{"type":"`+auth+`"}`):
		t.Fatalf("agent %s: auth %v, want {type: %s}", name, a.Auth, auth)
	}
}

// TestMeshControlPlane replays agentkit-mesh's documented flows against its control plane, as a
// client of that registry changed to our base URL and token: register (with bearer and header
// credentials, never read back), list, get, discover (ranked, with the matched capabilities),
// delegate sync and async (the agent posting its result to the control plane, as agentkit-mesh's
// bridge does), heartbeat, the delegation log, unregister; each refusal in agentkit-mesh's error
// body, and nothing written by a refused registration.
func TestMeshControlPlane(t *testing.T) {
	e := newEnvWith(t, storagetest.Open(t, "sqlite"), envOptions{allowLoopback: true, delegation: delegation.Config{RecordTaskBytes: 4096}})
	e.mkTenant("acme", "alice")
	alice := e.token("alice", "acme", false)
	m := meshClient{e: e, base: "/compat/agentkit-mesh/acme", token: alice}
	finance := agenttest.New(t, agenttest.Answer(http.StatusOK, `{"result": "Engineering: 1.2M"}`))
	hr := agenttest.New(t, agenttest.Answer(http.StatusOK, `{"result": "ok"}`))

	if r := e.do("GET", m.base+"/health", "", nil); r.status != http.StatusOK || strings.TrimSpace(string(r.body)) != `{"status":"ok"}` {
		t.Fatalf("health: %d %s", r.status, r.body)
	}
	meshError(t, e.do("GET", m.base+"/v1/agents", "", nil), http.StatusUnauthorized, "unauthorized")
	meshError(t, e.do("GET", m.base+"/v1/agents", "garbage", nil), http.StatusUnauthorized, "unauthorized")

	// Registration, as agentkit-mesh's README has it, with its credentials.
	r := m.call("POST", "/v1/agents", map[string]any{"name": "finance-agent", "description": "Budget management and expense approval",
		"capabilities": []string{"budget", "cost_center", "expense_approval"}, "endpoint": finance.Endpoint(),
		"auth": map[string]string{"type": "header", "headerName": "X-Key", "token": "fin-key-1"}})
	expect(t, r, http.StatusCreated)
	var fin meshAgent
	r.json(t, &fin)
	registered := r.body
	fin.check(t, "finance-agent", finance.Endpoint(), "header")
	if strings.Join(fin.Capabilities, ",") != "budget,cost_center,expense_approval" || fin.Description != "Budget management and expense approval" {
		t.Fatalf("registered %+v", fin)
	}
	r = m.call("POST", "/v1/agents", map[string]any{"name": "hr-agent", "description": "Employee records and onboarding",
		"capabilities": []string{"onboarding"}, "resources": []map[string]string{{"type": "filesystem", "uri": "file://hr-host/records/*", "description": "HR records", "access": "read"}},
		"endpoint": hr.Endpoint(), "protocol": "http", "auth": map[string]string{"type": "bearer", "token": "hr-token-1"}})
	expect(t, r, http.StatusCreated)

	// Refusals: nothing of them is written.
	if msg := meshError(t, m.call("POST", "/v1/agents", map[string]any{"name": "nameless"}), http.StatusBadRequest, "invalid"); msg != "name and endpoint are required" {
		t.Fatalf("message %q", msg)
	}
	meshError(t, m.call("POST", "/v1/agents", `{"name": "x",`), http.StatusBadRequest, "malformed_json")
	meshError(t, m.call("POST", "/v1/agents", map[string]any{"name": "hosty", "endpoint": hr.Endpoint(),
		"auth": map[string]string{"type": "header", "headerName": "Host", "token": "t"}}), http.StatusBadRequest, "invalid")
	meshError(t, m.call("GET", "/v1/agents/hosty", nil), http.StatusNotFound, "not_found")
	meshError(t, m.call("POST", "/v1/agents", map[string]any{"name": "bad id!", "endpoint": hr.Endpoint()}), http.StatusBadRequest, "invalid")

	r = m.call("GET", "/v1/agents", nil)
	expect(t, r, http.StatusOK)
	var list []meshAgent
	r.json(t, &list)
	if len(list) != 2 || list[0].Name != "finance-agent" || list[1].Name != "hr-agent" {
		t.Fatalf("list %+v", list)
	}
	list[1].check(t, "hr-agent", hr.Endpoint(), "bearer")
	if len(list[1].Resources) != 1 || list[1].Resources[0].URI != "file://hr-host/records/*" || list[1].Resources[0].Access != "read" {
		t.Fatalf("resources %+v", list[1].Resources)
	}
	for _, secret := range []string{"fin-key-1", "hr-token-1"} {
		if bytes.Contains(r.body, []byte(secret)) {
			t.Fatalf("the list shows the secret %s: %s", secret, r.body)
		}
	}
	r = m.call("GET", "/v1/agents/finance-agent", nil)
	expect(t, r, http.StatusOK)
	if !bytes.Equal(r.body, registered) {
		t.Fatalf("retrieved %s, registered %s", r.body, registered)
	}
	var got meshAgent
	r.json(t, &got)
	got.check(t, "finance-agent", finance.Endpoint(), "header")
	if msg := meshError(t, m.call("GET", "/v1/agents/ghost", nil), http.StatusNotFound, "not_found"); msg != "not found" {
		t.Fatalf("message %q", msg)
	}

	// Discovery, ranked, with what matched; filtered by the resources the agent must cover.
	r = m.call("GET", "/v1/discover?query="+url.QueryEscape("budget cost center"), nil)
	expect(t, r, http.StatusOK)
	var found []struct {
		Agent               meshAgent `json:"agent"`
		Score               float64   `json:"score"`
		MatchedCapabilities []string  `json:"matchedCapabilities"`
		MatchedResources    []any     `json:"matchedResources"`
	}
	r.json(t, &found)
	if len(found) != 1 || found[0].Agent.Name != "finance-agent" || found[0].Score <= 0 || len(found[0].MatchedCapabilities) == 0 ||
		found[0].MatchedResources == nil || bytes.Contains(r.body, []byte("fin-key-1")) {
		t.Fatalf("discover: %s", r.body)
	}
	r = m.call("GET", "/v1/discover?query=onboarding&limit=5&resources="+url.QueryEscape(`[{"uri":"file://hr-host/records/2026"}]`), nil)
	expect(t, r, http.StatusOK)
	r.json(t, &found)
	if len(found) != 1 || found[0].Agent.Name != "hr-agent" || len(found[0].MatchedResources) != 1 {
		t.Fatalf("discover with resources: %s", r.body)
	}
	r = m.call("GET", "/v1/discover?query=onboarding&resources="+url.QueryEscape(`[{"uri":"file://other-host/records/2026"}]`), nil)
	expect(t, r, http.StatusOK)
	if strings.TrimSpace(string(r.body)) != "[]" {
		t.Fatalf("discover, resources not covered: %s", r.body)
	}
	if msg := meshError(t, m.call("GET", "/v1/discover", nil), http.StatusBadRequest, "invalid"); msg != "query parameter required" {
		t.Fatalf("message %q", msg)
	}
	if msg := meshError(t, m.call("GET", "/v1/discover?query=x&resources=%5Bnope", nil), http.StatusBadRequest, "invalid"); msg != "Invalid resources JSON" {
		t.Fatalf("message %q", msg)
	}

	// A sync delegation by name: the agent gets agentkit-mesh's POST /task with its header
	// credential, and its answer is the result.
	r = m.call("POST", "/v1/delegate", map[string]any{"targetName": "finance-agent", "task": "Get Engineering budget",
		"context": map[string]any{"quarter": "Q3"}})
	expect(t, r, http.StatusOK)
	var sync struct {
		ID          string          `json:"id"`
		TargetAgent string          `json:"targetAgent"`
		Success     bool            `json:"success"`
		Status      string          `json:"status"`
		Result      json.RawMessage `json:"result"`
		Error       string          `json:"error"`
		LatencyMS   *int64          `json:"latencyMs"`
	}
	r.json(t, &sync)
	if sync.ID == "" || sync.TargetAgent != "finance-agent" || !sync.Success || sync.Status != "completed" ||
		string(sync.Result) != `"Engineering: 1.2M"` || sync.LatencyMS == nil {
		t.Fatalf("sync delegation: %s", r.body)
	}
	call := waitCall(t, finance, sync.ID)
	if call.Header.Get("X-Key") != "fin-key-1" || strings.Contains(call.Header.Get("Authorization"), "fin-key-1") ||
		call.Task.Task != "Get Engineering budget" || call.Task.CallbackURL != "" || string(call.Task.Context) != `{"depth":1,"quarter":"Q3"}` {
		t.Fatalf("the agent got %+v (context %s)", call, call.Task.Context)
	}

	// An async delegation to the best match of a query: answered once the agent accepted it; the
	// agent posts its result to the control plane, as agentkit-mesh's agents do.
	finance.SetReply(agenttest.Answer(http.StatusAccepted, `{"status": "accepted"}`))
	r = m.call("POST", "/v1/delegate", map[string]any{"query": "expense approval", "task": "Approve expense 42", "async": true})
	expect(t, r, http.StatusOK)
	var async struct {
		ID          string `json:"id"`
		TargetAgent string `json:"targetAgent"`
		Success     bool   `json:"success"`
		Status      string `json:"status"`
		Result      string `json:"result"`
	}
	r.json(t, &async)
	if async.TargetAgent != "finance-agent" || !async.Success || async.Status != "accepted" || async.Result != "Task accepted, awaiting async result" {
		t.Fatalf("async delegation: %s", r.body)
	}
	if call := waitCall(t, finance, async.ID); call.Task.CallbackURL == "" || string(call.Task.Context) != `{"depth":1}` {
		t.Fatalf("the async call has no callback URL, or not its context: %+v (%s)", call.Task, call.Task.Context)
	}
	// Its result may come as long as the server allows an async delegation (a day), and until it
	// does the record says agentkit-mesh's words.
	if d := e.storedDelegation("acme", async.ID); d.Deadline.Sub(d.CreatedAt) != delegation.Defaults.MaxAsyncTimeout {
		t.Fatalf("async deadline %s after creation, want delegation.maxAsyncTimeout", d.Deadline.Sub(d.CreatedAt))
	}
	r = m.call("GET", "/v1/delegations/"+async.ID, nil)
	expect(t, r, http.StatusOK)
	if !bytes.Contains(r.body, []byte(`"status":"accepted","result":"Task accepted, awaiting async result"`)) {
		t.Fatalf("accepted record: %s", r.body)
	}
	result := "/v1/delegations/" + async.ID + "/result"
	meshError(t, e.do("POST", m.base+result, "", map[string]string{"status": "completed"}), http.StatusUnauthorized, "unauthorized")
	expect(t, e.do("POST", "/v1/tenants/acme/roles", alice, map[string]string{"subject": "rita", "role": "reader"}), http.StatusCreated)
	meshError(t, e.do("POST", m.base+result, e.token("rita", "acme", false), map[string]string{"status": "completed"}), http.StatusNotFound, "not_found")
	r = m.call("POST", result, map[string]string{"status": "completed", "result": "approved"})
	expect(t, r, http.StatusOK)
	if strings.TrimSpace(string(r.body)) != `{"ok":true}` {
		t.Fatalf("result: %s", r.body)
	}
	if msg := meshError(t, m.call("POST", result, map[string]string{"status": "completed", "result": "again"}), http.StatusConflict, "conflict"); msg != "Delegation already finalized" {
		t.Fatalf("message %q", msg)
	}
	meshError(t, m.call("POST", "/v1/delegations/"+sync.ID+"/result", map[string]string{"status": "failed"}), http.StatusConflict, "conflict")
	if msg := meshError(t, m.call("POST", "/v1/delegations/00000000-0000-4000-8000-000000000000/result", map[string]string{"status": "failed"}),
		http.StatusNotFound, "not_found"); msg != "Delegation not found" {
		t.Fatalf("message %q", msg)
	}
	// The agent itself may post with the delegation token it was called with.
	r = m.call("POST", "/v1/delegate", map[string]any{"targetName": "finance-agent", "task": "Approve expense 43", "async": true})
	expect(t, r, http.StatusOK)
	var third struct {
		ID string `json:"id"`
	}
	r.json(t, &third)
	own := waitCall(t, finance, third.ID).Header.Get("X-Delegation-Token")
	expect(t, e.do("POST", m.base+"/v1/delegations/"+third.ID+"/result", own, map[string]string{"status": "failed", "error": "over budget"}), http.StatusOK)
	if d := e.storedDelegation("acme", third.ID); d.Status != delegation.StatusFailed || d.Error != "over budget" {
		t.Fatalf("the agent's own result: %+v", d)
	}
	// An editor, who may write the agent's card, may post its result (as agentkit-mesh's bridge
	// does); another agent's delegation token finds no such delegation; a status agentkit-mesh's
	// agents do not send is refused.
	r = m.call("POST", "/v1/delegate", map[string]any{"targetName": "finance-agent", "task": "Approve expense 44", "async": true})
	expect(t, r, http.StatusOK)
	var fourth struct {
		ID string `json:"id"`
	}
	r.json(t, &fourth)
	waitCall(t, finance, fourth.ID)
	r = m.call("POST", "/v1/delegate", map[string]any{"targetName": "hr-agent", "task": "Onboard Ada"})
	expect(t, r, http.StatusOK)
	var toHR struct {
		ID string `json:"id"`
	}
	r.json(t, &toHR)
	hrToken := waitCall(t, hr, toHR.ID).Header.Get("X-Delegation-Token")
	fourthResult := m.base + "/v1/delegations/" + fourth.ID + "/result"
	meshError(t, e.do("POST", fourthResult, hrToken, map[string]string{"status": "completed"}), http.StatusNotFound, "not_found")
	meshError(t, m.call("POST", "/v1/delegations/"+fourth.ID+"/result", map[string]string{"status": "done"}), http.StatusBadRequest, "invalid")
	expect(t, e.do("POST", "/v1/tenants/acme/roles", alice, map[string]string{"subject": "eddie", "role": "editor"}), http.StatusCreated)
	expect(t, e.do("POST", fourthResult, e.token("eddie", "acme", false), map[string]string{"status": "completed", "result": "ok"}), http.StatusOK)

	r = m.call("GET", "/v1/delegations/"+async.ID, nil)
	expect(t, r, http.StatusOK)
	var rec struct {
		ID          string  `json:"id"`
		SourceAgent string  `json:"source_agent"`
		TargetAgent string  `json:"target_agent"`
		Task        *string `json:"task"`
		Status      string  `json:"status"`
		Result      *string `json:"result"`
		Error       *string `json:"error"`
		LatencyMS   *int64  `json:"latency_ms"`
		CreatedAt   string  `json:"created_at"`
		UpdatedAt   string  `json:"updated_at"`
	}
	r.json(t, &rec)
	if rec.ID != async.ID || rec.SourceAgent != "alice" || rec.TargetAgent != "finance-agent" || rec.Task == nil || *rec.Task != "Approve expense 42" ||
		rec.Status != "completed" || rec.Result == nil || *rec.Result != "approved" || rec.Error != nil || rec.LatencyMS == nil ||
		!jsISOTime.MatchString(rec.CreatedAt) || !jsISOTime.MatchString(rec.UpdatedAt) {
		t.Fatalf("delegation record: %s", r.body)
	}
	meshError(t, m.call("GET", "/v1/delegations/00000000-0000-4000-8000-000000000000", nil), http.StatusNotFound, "not_found")

	// The delegation log, newest first, paged by limit and offset.
	var log []struct {
		ID string `json:"id"`
	}
	r = m.call("GET", "/v1/delegations", nil)
	expect(t, r, http.StatusOK)
	r.json(t, &log)
	if len(log) != 5 || log[0].ID != toHR.ID || log[1].ID != fourth.ID || log[2].ID != third.ID || log[3].ID != async.ID || log[4].ID != sync.ID {
		t.Fatalf("delegations: %s", r.body)
	}
	// limit and offset are read as parseInt reads them.
	r = m.call("GET", "/v1/delegations?limit=1abc&offset=+4", nil)
	expect(t, r, http.StatusOK)
	r.json(t, &log)
	if len(log) != 1 || log[0].ID != sync.ID {
		t.Fatalf("delegations, limit 1 offset 1: %s", r.body)
	}

	// Delegation refusals, in agentkit-mesh's words.
	if msg := meshError(t, m.call("POST", "/v1/delegate", map[string]any{"task": "x"}), http.StatusBadRequest, "invalid"); msg != "targetName or query is required" {
		t.Fatalf("message %q", msg)
	}
	if msg := meshError(t, m.call("POST", "/v1/delegate", map[string]any{"targetName": "x"}), http.StatusBadRequest, "invalid"); msg != "task is required" {
		t.Fatalf("message %q", msg)
	}
	if msg := meshError(t, m.call("POST", "/v1/delegate", map[string]any{"targetName": "ghost", "task": "x"}), http.StatusNotFound, "not_found"); msg != `Agent "ghost" not found` {
		t.Fatalf("message %q", msg)
	}
	meshError(t, m.call("POST", "/v1/delegate", map[string]any{"targetName": "hr-agent", "task": "x",
		"resources": []map[string]string{{"uri": "file://other-host/x"}}}), http.StatusForbidden, "forbidden")
	if msg := meshError(t, m.call("POST", "/v1/delegate", map[string]any{"query": "astronomy", "task": "x"}), http.StatusNotFound, "not_found"); msg != "No agent found matching query" {
		t.Fatalf("message %q", msg)
	}

	// Heartbeat, then unregister.
	before := list[1].LastSeen
	time.Sleep(2 * time.Millisecond)
	r = m.call("POST", "/v1/agents/hr-agent/heartbeat", nil)
	expect(t, r, http.StatusOK)
	if strings.TrimSpace(string(r.body)) != `{"ok":true}` {
		t.Fatalf("heartbeat: %s", r.body)
	}
	r = m.call("GET", "/v1/agents/hr-agent", nil)
	r.json(t, &got)
	if got.LastSeen <= before {
		t.Fatalf("last_seen %s after a heartbeat, was %s", got.LastSeen, before)
	}
	meshError(t, m.call("POST", "/v1/agents/ghost/heartbeat", nil), http.StatusNotFound, "not_found")
	r = m.call("DELETE", "/v1/agents/hr-agent", nil)
	expect(t, r, http.StatusOK)
	if strings.TrimSpace(string(r.body)) != `{"ok":true}` {
		t.Fatalf("unregister: %s", r.body)
	}
	meshError(t, m.call("DELETE", "/v1/agents/hr-agent", nil), http.StatusNotFound, "not_found")
}

// TestMeshRegisterKeepsTheCard: registering again replaces what agentkit-mesh's record holds and
// keeps the rest of the card (its tags, its capabilities' descriptions, its other protocols);
// registering without auth removes the credential, so the next call carries none.
func TestMeshRegisterKeepsTheCard(t *testing.T) {
	e := newEnv(t, storagetest.Open(t, "sqlite"), 1<<20)
	e.mkTenant("acme", "alice")
	alice := e.token("alice", "acme", false)
	a := agenttest.New(t, agenttest.Answer(http.StatusOK, `{"result": "ok"}`))
	card := sampleCard("reviewer")
	card["endpoint"], card["tags"] = a.Endpoint(), []string{"code"}
	expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, card), http.StatusCreated)
	m := meshClient{e: e, base: "/compat/agentkit-mesh/acme", token: alice}

	expect(t, m.call("POST", "/v1/agents", map[string]any{"name": "reviewer", "description": "Reviews code", "endpoint": a.Endpoint(),
		"capabilities": []string{"review_pr", "lint"}, "auth": map[string]string{"type": "bearer", "token": "rev-1"}}), http.StatusCreated)
	// The trail names the control plane's request, for the card and for its secret.
	r := e.do("GET", "/v1/tenants/acme/audit?action=mesh.agents_register", alice, nil)
	expect(t, r, http.StatusOK)
	var trail struct {
		Items []struct{ Principal, Action, Object string } `json:"items"`
	}
	r.json(t, &trail)
	if len(trail.Items) != 2 || trail.Items[0].Object != "cards/reviewer/secret" || trail.Items[1].Object != "cards/reviewer" ||
		trail.Items[1].Principal != "alice" {
		t.Fatalf("the audit trail: %s", r.body)
	}
	r = e.do("GET", "/v1/tenants/acme/cards/reviewer", alice, nil)
	expect(t, r, http.StatusOK)
	var stored struct {
		Description  string   `json:"description"`
		Protocols    []string `json:"protocols"`
		Tags         []string `json:"tags"`
		Capabilities []struct {
			Name, Description string
		} `json:"capabilities"`
	}
	r.json(t, &stored)
	if stored.Description != "Reviews code" || strings.Join(stored.Protocols, ",") != "http,a2a" || strings.Join(stored.Tags, ",") != "code" ||
		len(stored.Capabilities) != 2 || stored.Capabilities[0].Description != "Review a pull request" || stored.Capabilities[1].Name != "lint" {
		t.Fatalf("the card after a registration: %s", r.body)
	}
	r = m.call("POST", "/v1/delegate", map[string]any{"targetName": "reviewer", "task": "review PR 1"})
	expect(t, r, http.StatusOK)
	if got := a.Last().Header.Get("Authorization"); got != "Bearer rev-1" {
		t.Fatalf("Authorization %q", got)
	}

	r = m.call("POST", "/v1/agents", map[string]any{"name": "reviewer", "description": "Reviews code", "endpoint": a.Endpoint(),
		"capabilities": []string{"review_pr"}})
	expect(t, r, http.StatusCreated)
	var ag meshAgent
	r.json(t, &ag)
	ag.check(t, "reviewer", a.Endpoint(), "")
	r = m.call("POST", "/v1/delegate", map[string]any{"targetName": "reviewer", "task": "review PR 2"})
	expect(t, r, http.StatusOK)
	if got := a.Last().Header.Get("Authorization"); strings.Contains(got, "rev-1") {
		t.Fatalf("Authorization %q after the credential was removed", got)
	}
}

// TestMeshTakesWhatAgentkitMeshTook: bodies whatever their Content-Type says; a credential
// missing its token, which agentkit-mesh kept and never sent, is none; a protocol in any case; a
// capability named twice; a query with no word, which finds nothing; a record imported from
// agentkit-mesh, which answers its own source_agent; and a server without endpoint secrets,
// which refuses a credential and takes the rest.
func TestMeshTakesWhatAgentkitMeshTook(t *testing.T) {
	e := newEnv(t, storagetest.Open(t, "sqlite"), 1<<20)
	e.mkTenant("acme", "alice")
	alice := e.token("alice", "acme", false)
	m := meshClient{e: e, base: "/compat/agentkit-mesh/acme", token: alice}
	a := agenttest.New(t, agenttest.Answer(http.StatusOK, `{"result": "ok"}`))

	body := `{"name": "notes", "endpoint": "` + a.Endpoint() + `", "capabilities": ["notes", "notes"], "protocol": "HTTP",
		"auth": {"type": "bearer"}}`
	r := e.do("POST", m.base+"/v1/agents", alice, body, "Content-Type", "text/plain")
	expect(t, r, http.StatusCreated)
	var ag meshAgent
	r.json(t, &ag)
	ag.check(t, "notes", a.Endpoint(), "")
	if strings.Join(ag.Capabilities, ",") != "notes" {
		t.Fatalf("capabilities %v", ag.Capabilities)
	}
	r = m.call("POST", "/v1/delegate", map[string]any{"targetName": "notes", "task": "take a note"})
	expect(t, r, http.StatusOK)
	if auth := a.Last().Header.Get("Authorization"); !strings.HasPrefix(auth, "Bearer ey") {
		t.Fatalf("Authorization %q: want the delegation token, as for an agent with no secret", auth)
	}

	r = m.call("GET", "/v1/discover?query="+url.QueryEscape("?!"), nil)
	expect(t, r, http.StatusOK)
	if strings.TrimSpace(string(r.body)) != "[]" {
		t.Fatalf("a query with no word: %s", r.body)
	}
	if msg := meshError(t, m.call("POST", "/v1/delegate", map[string]any{"query": "...", "task": "x"}), http.StatusNotFound, "not_found"); msg != "No agent found matching query" {
		t.Fatalf("message %q", msg)
	}

	const id = "3f1c2b7e-8a4d-4c5e-9f60-7a8b9c0d1e2f"
	expect(t, e.do("POST", "/v1/tenants/acme/delegations:import", alice, map[string]any{"source": "agentkit-mesh",
		"records": []map[string]any{{"id": id, "caller": "api", "agentId": "notes", "task": "old", "status": "completed",
			"result": "done", "latencyMs": 12, "createdAt": "2026-03-01T10:00:00.000Z", "updatedAt": "2026-03-01T10:00:00.012Z"}}}), http.StatusOK)
	r = m.call("GET", "/v1/delegations/"+id, nil)
	expect(t, r, http.StatusOK)
	if !bytes.Contains(r.body, []byte(`"source_agent":"api"`)) || !bytes.Contains(r.body, []byte(`"created_at":"2026-03-01T10:00:00.000Z"`)) {
		t.Fatalf("an imported record: %s", r.body)
	}

	bare := newEnvWith(t, storagetest.Open(t, "sqlite"), envOptions{allowLoopback: true, noSecrets: true})
	bare.mkTenant("acme", "alice")
	bm := meshClient{e: bare, base: "/compat/agentkit-mesh/acme", token: bare.token("alice", "acme", false)}
	meshError(t, bm.call("POST", "/v1/agents", map[string]any{"name": "notes", "endpoint": a.Endpoint(),
		"auth": map[string]string{"type": "bearer", "token": "t0k"}}), http.StatusBadRequest, "invalid")
	meshError(t, bm.call("GET", "/v1/agents/notes", nil), http.StatusNotFound, "not_found")
	expect(t, bm.call("POST", "/v1/agents", map[string]any{"name": "notes", "endpoint": a.Endpoint()}), http.StatusCreated)
	expect(t, bm.call("GET", "/v1/agents", nil), http.StatusOK)
}
