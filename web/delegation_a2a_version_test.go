package web_test

import (
	"context"
	"iter"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/agentcards/agentcards/cards/agenttest"
	"github.com/agentcards/agentcards/cards/delegation"
	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/web/webtest"
)

// Delegation over A2A in the version and binding of the interface the card declares, to agents
// served by a2a-go's own servers: a2asrv for 1.0, its a2av0 compat server for 0.3.

// label names a request an agent received: its JSON-RPC method, or its HTTP method and path
// (HTTP+JSON).
func label(r agenttest.Request) string {
	if r.RPC != "" {
		return r.RPC
	}
	return r.Method + " " + r.Path
}

// received is what reached the agent: for each request its label and the A2A-Version header
// it carried, and how many came without the delegation's credentials (a bearer Authorization and
// the X-Delegation-Token).
func received(a *agenttest.Agent) (calls, versions []string, uncredited int) {
	for _, r := range a.Requests() {
		calls = append(calls, label(r))
		versions = append(versions, r.Header.Get("A2A-Version"))
		if !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") || r.Header.Get("X-Delegation-Token") == "" {
			uncredited++
		}
	}
	return calls, versions, uncredited
}

// labelled is how many requests the agent received whose label starts with prefix.
func labelled(a *agenttest.Agent, prefix string) int {
	return a.Count(func(r agenttest.Request) bool { return strings.HasPrefix(label(r), prefix) })
}

// taskAgent is an a2a-go agent that takes each message on as a task and completes it with an
// artifact quoting the text it received; a task whose text starts with "hold" stays working
// until released.
type taskAgent struct {
	release chan struct{}
	mu      sync.Mutex
	texts   []string
}

func newTaskAgent() *taskAgent { return &taskAgent{release: make(chan struct{}, 1)} }

func (a *taskAgent) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		text := ""
		if ec.Message != nil && len(ec.Message.Parts) > 0 {
			text = ec.Message.Parts[0].Text()
		}
		a.mu.Lock()
		a.texts = append(a.texts, text)
		a.mu.Unlock()
		if !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) ||
			!yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, nil), nil) {
			return
		}
		if strings.HasPrefix(text, "hold") {
			select {
			case <-a.release:
			case <-ctx.Done():
				return
			}
		}
		if !yield(a2a.NewArtifactEvent(ec, a2a.NewTextPart("done: "+text)), nil) {
			return
		}
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
	}
}

func (*taskAgent) Cancel(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

// received is the texts the agent has been sent.
func (a *taskAgent) received() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.texts)
}

// sdkServer is one kind of server a2a-go builds: its interface, the protocolVersion a card
// declares for it, the interface a delegation record names, and the labels (see label) of a send
// and of a task query in that binding and version.
type sdkServer struct {
	iface     agenttest.Interface
	declared  string
	record    delegation.Interface
	send, get string
}

var sdkServers = []sdkServer{
	{agenttest.JSONRPC10, "1.0", delegation.Interface{Binding: "JSONRPC", Version: "1.0"}, "SendMessage", "GetTask"},
	{agenttest.JSONRPC03, "0.3.0", delegation.Interface{Binding: "JSONRPC", Version: "0.3"}, "message/send", "tasks/get"},
	{agenttest.REST10, "1.0", delegation.Interface{Binding: "HTTP+JSON", Version: "1.0"}, "POST /message:send", "GET /tasks/"},
	{agenttest.REST03, "0.3.0", delegation.Interface{Binding: "HTTP+JSON", Version: "0.3"}, "POST /message:send", "GET /tasks/"},
}

// serve starts the server kind s for agent on loopback.
func (s sdkServer) serve(t *testing.T, agent a2asrv.AgentExecutor) *agenttest.Agent {
	t.Helper()
	return agenttest.NewA2A(t, s.iface, agent)
}

// interfaceAt is an a2a.interfaces entry of kind s at url.
func (s sdkServer) interfaceAt(url string) map[string]any {
	return map[string]any{"url": url, "protocolBinding": s.iface.Binding, "protocolVersion": s.declared}
}

// a2aTeam makes tenant acme (admin alice, orchestrator olga) and returns their tokens.
func (e *env) a2aTeam(t *testing.T) (alice, olga string) {
	t.Helper()
	e.mkTenant("acme", "alice")
	alice, olga = e.token("alice", "acme", false), e.token("olga", "acme", false)
	expect(t, e.do("POST", "/v1/tenants/acme/roles", alice, map[string]string{"subject": "olga", "role": "orchestrator"}), http.StatusCreated)
	return alice, olga
}

// registerA2A registers card agentID of tenant acme with the given a2a.interfaces.
func (e *env) registerA2A(t *testing.T, alice, agentID string, ifaces ...map[string]any) {
	t.Helper()
	card := sampleCard(agentID)
	card["a2a"] = map[string]any{"interfaces": ifaces}
	expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, card), http.StatusCreated)
}

// TestDelegationA2AVersions: for each binding and version a2a-go serves (JSON-RPC and HTTP+JSON,
// in 1.0 and 0.3), an agent whose card declares only that interface is reached in it, sync and
// async: the agent runs on the task's text, the requests it gets are those of that binding and
// version (SendMessage and GetTask in 1.0, message/send and tasks/get in 0.3, each with the
// version's A2A-Version), and the record, as the API and the store return it, names the binding
// and version.
func TestDelegationA2AVersions(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		alice, olga := e.a2aTeam(t)
		for _, s := range sdkServers {
			name := s.record.Binding + " " + s.record.Version
			agent := newTaskAgent()
			a := s.serve(t, agent)
			id := "rev-" + strings.NewReplacer("+", "", ".", "").Replace(strings.ToLower(name))
			id = strings.ReplaceAll(id, " ", "-")
			e.registerA2A(t, alice, id, s.interfaceAt(a.URL))

			req := delegate(id, "sync")
			req["transport"], req["task"] = "a2a", "review "+name
			r := e.do("POST", "/v1/tenants/acme/delegations", olga, req)
			expect(t, r, http.StatusOK)
			d := decodeDelegation(t, r)
			if d.Status != delegation.StatusCompleted || string(d.Result) != `"done: review `+name+`"` || d.A2A != s.record {
				t.Fatalf("%s: sync %+v (%s)", name, d, d.Result)
			}
			if !strings.Contains(string(r.body), `"a2a":{"protocolBinding":"`+s.record.Binding+`","protocolVersion":"`+s.record.Version+`"}`) {
				t.Fatalf("%s: the answer does not show the interface: %s", name, r.body)
			}

			req["mode"], req["task"] = "async", "hold "+name
			r = e.do("POST", "/v1/tenants/acme/delegations", olga, req)
			expect(t, r, http.StatusAccepted)
			async := decodeDelegation(t, r)
			e.waitStatus("acme", async.ID, olga, delegation.StatusAccepted)
			webtest.Eventually(t, patience, name+": the server asks the agent for the working task", func() bool {
				return labelled(a, s.get) >= 1
			})
			agent.release <- struct{}{}
			done := e.waitStatus("acme", async.ID, olga, delegation.StatusCompleted)
			if string(done.Result) != `"done: hold `+name+`"` || done.A2A != s.record {
				t.Fatalf("%s: async %+v (%s)", name, done, done.Result)
			}

			if got := agent.received(); !slices.Equal(got, []string{"review " + name, "hold " + name}) {
				t.Fatalf("%s: the agent ran on %q", name, got)
			}
			calls, versions, uncredited := received(a)
			for i, c := range calls {
				if !strings.HasPrefix(c, s.send) && !strings.HasPrefix(c, s.get) || versions[i] != s.record.Version {
					t.Fatalf("%s: the agent got %q with A2A-Version %q", name, calls, versions)
				}
			}
			if n := labelled(a, s.send); n != 2 {
				t.Fatalf("%s: %d sends in %q", name, n, calls)
			}
			if uncredited > 0 {
				t.Fatalf("%s: %d of %d requests came without the delegation's credentials", name, uncredited, len(calls))
			}
			for _, id := range []string{d.ID, async.ID} {
				if got := e.storedDelegation("acme", id); got.A2A != s.record {
					t.Fatalf("%s: stored %+v", name, got)
				}
			}
		}
		for _, d := range e.listDelegations("acme", olga).Items {
			if d.A2A.Binding == "" || d.A2A.Version == "" {
				t.Fatalf("listed without its interface: %+v", d)
			}
		}
	})
}

// TestDelegationA2AChoosesInterface: a card that declares several interfaces is reached at the
// first 1.0 JSON-RPC one, else the first 0.3 JSON-RPC one, else HTTP+JSON in 1.0 then 0.3,
// whatever the order it lists them in; the others get nothing. A card registered with only an
// endpoint is reached there in 1.0 JSON-RPC. A card with no interface the service speaks (gRPC,
// 0.2) is refused with a 400 that names what it declares, before anything is sent or recorded;
// and a delegation over plain HTTP records no interface.
func TestDelegationA2AChoosesInterface(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		alice, olga := e.a2aTeam(t)
		agents := make([]*agenttest.Agent, len(sdkServers))
		for i, s := range sdkServers {
			agents[i] = s.serve(t, newTaskAgent())
		}
		at := func(i int) map[string]any { return sdkServers[i].interfaceAt(agents[i].URL) }
		grpc := map[string]any{"url": "https://agents.example.com/grpc", "protocolBinding": "GRPC", "protocolVersion": "1.0"}
		old := map[string]any{"url": "https://agents.example.com/v02", "protocolBinding": "JSONRPC", "protocolVersion": "0.2.5"}

		for _, c := range []struct {
			name   string
			ifaces []map[string]any
			want   int // index in sdkServers
		}{
			{"1.0 JSON-RPC listed last", []map[string]any{at(3), at(2), at(1), at(0)}, 0},
			{"0.3 JSON-RPC before HTTP+JSON", []map[string]any{grpc, at(3), at(2), at(1)}, 1},
			{"1.0 HTTP+JSON before 0.3", []map[string]any{old, at(3), at(2)}, 2},
			{"0.3 HTTP+JSON", []map[string]any{grpc, old, at(3)}, 3},
		} {
			id := "multi-" + string(rune('a'+c.want))
			e.registerA2A(t, alice, id, c.ifaces...)
			before := make([]int, len(agents))
			for i, a := range agents {
				before[i] = a.Calls()
			}
			req := delegate(id, "sync")
			req["transport"] = "a2a"
			r := e.do("POST", "/v1/tenants/acme/delegations", olga, req)
			expect(t, r, http.StatusOK)
			if d := decodeDelegation(t, r); d.Status != delegation.StatusCompleted || d.A2A != sdkServers[c.want].record {
				t.Fatalf("%s: %+v", c.name, d)
			}
			for i, a := range agents {
				if got, want := a.Calls()-before[i], map[bool]int{true: 1}[i == c.want]; got != want {
					t.Fatalf("%s: server %d got %d requests, want %d", c.name, i, got, want)
				}
			}
		}

		// Only an endpoint: one 1.0 JSON-RPC interface there.
		plain := sampleCard("plain")
		plain["endpoint"] = agents[0].URL
		expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, plain), http.StatusCreated)
		req := delegate("plain", "sync")
		req["transport"] = "a2a"
		r := e.do("POST", "/v1/tenants/acme/delegations", olga, req)
		expect(t, r, http.StatusOK)
		if d := decodeDelegation(t, r); d.Status != delegation.StatusCompleted || d.A2A != sdkServers[0].record {
			t.Fatalf("endpoint only: %+v", d)
		}

		// Nothing it can speak: refused, naming what the card declares.
		e.registerA2A(t, alice, "grpc-only", grpc, old)
		sent := 0
		for _, a := range agents {
			sent += a.Calls()
		}
		listed := len(e.listDelegations("acme", olga).Items)
		req["agentId"] = "grpc-only"
		r = e.do("POST", "/v1/tenants/acme/delegations", olga, req)
		expect(t, r, http.StatusBadRequest, "invalid")
		if !strings.Contains(string(r.body), "it declares GRPC 1.0, JSONRPC 0.2.5") {
			t.Fatalf("the refusal does not name the interfaces: %s", r.body)
		}
		now := 0
		for _, a := range agents {
			now += a.Calls()
		}
		if now != sent || len(e.listDelegations("acme", olga).Items) != listed {
			t.Fatal("a card with no interface spoken was called or recorded")
		}

		// Plain HTTP: no interface in the record, nor in the answer.
		a := agenttest.New(t, agenttest.Answer(http.StatusOK, `{"result": "ok"}`))
		httpCard := sampleCard("http-agent")
		httpCard["endpoint"] = a.Endpoint()
		expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, httpCard), http.StatusCreated)
		r = e.do("POST", "/v1/tenants/acme/delegations", olga, delegate("http-agent", "sync"))
		expect(t, r, http.StatusOK)
		d := decodeDelegation(t, r)
		if d.Status != delegation.StatusCompleted || d.A2A != (delegation.Interface{}) || strings.Contains(string(r.body), `"a2a":`) {
			t.Fatalf("http delegation: %s", r.body)
		}
		if s := e.storedDelegation("acme", d.ID); s.A2A != (delegation.Interface{}) {
			t.Fatalf("http delegation stored with %+v", s.A2A)
		}
	})
}

// TestDelegationA2AGuardsEveryVersion: whatever the interface's binding and version, the call
// goes through the guarded client: under the default guard a loopback agent is refused before
// anything reaches it, and an answer over delegation.maxResultBytes fails the delegation without
// counting against the breaker (one counted failure would open it here).
func TestDelegationA2AGuardsEveryVersion(t *testing.T) {
	const limit = 4096
	guarded := newEnvWith(t, storagetest.Open(t, "sqlite"), envOptions{allowLoopback: false})
	gAlice, gOlga := guarded.a2aTeam(t)
	limited := newEnvWith(t, storagetest.Open(t, "sqlite"), envOptions{allowLoopback: true,
		delegation: delegation.Config{MaxResultBytes: limit, BreakerFailures: 1}})
	lAlice, lOlga := limited.a2aTeam(t)
	for i, s := range sdkServers {
		name := s.record.Binding + " " + s.record.Version
		id := "rev" + string(rune('a'+i))
		req := delegate(id, "sync")
		req["transport"] = "a2a"

		a := s.serve(t, newTaskAgent())
		guarded.registerA2A(t, gAlice, id, s.interfaceAt(a.URL))
		expect(t, guarded.do("POST", "/v1/tenants/acme/delegations", gOlga, req), http.StatusForbidden, "endpoint_blocked")
		if calls, _, _ := received(a); len(calls) != 0 {
			t.Fatalf("%s: the guard let %q through", name, calls)
		}

		a = s.serve(t, agenttest.Verbose{N: 2 * limit})
		limited.registerA2A(t, lAlice, id, s.interfaceAt(a.URL))
		for call := range 2 {
			r := limited.do("POST", "/v1/tenants/acme/delegations", lOlga, req)
			expect(t, r, http.StatusOK)
			d := decodeDelegation(t, r)
			if d.Status != delegation.StatusFailed || d.Error != "the agent's answer is over 4096 bytes" || d.Result != nil || d.A2A != s.record {
				t.Fatalf("%s, call %d: %+v", name, call, d)
			}
		}
		if n := labelled(a, s.send); n != 2 {
			t.Fatalf("%s: the agent got %d sends, want 2", name, n)
		}
	}
}

// TestDelegationA2AImportedAgents: the cards a2a-go's servers publish for a 1.0 agent (the pure
// 1.0 card) and for a 0.3 one (a2av0's card, 1.0 and 0.3 members together) are imported by URL,
// and delegations to each, sync and async, reach the agent in its version: the record names it,
// and the agent ran on the task's text.
func TestDelegationA2AImportedAgents(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		e.allowLoopback()
		alice, olga := e.a2aTeam(t)
		for _, c := range []struct {
			id     string
			server sdkServer
		}{{"imported-10", sdkServers[0]}, {"imported-03", sdkServers[1]}} {
			agent := newTaskAgent()
			a := agenttest.New(t, nil)
			a.Handle("/rpc", c.server.iface.Handler(agent))
			// a2av0's card producer finds the 0.3 interface by its version written exactly "0.3".
			version := a2a.Version
			if c.server.record.Version == "0.3" {
				version = a2av0.Version
			}
			card := &a2a.AgentCard{Name: "Reviewer", Description: "Reviews pull requests", Version: "2.1.0",
				SupportedInterfaces: []*a2a.AgentInterface{{URL: a.URL + "/rpc", ProtocolBinding: a2a.TransportProtocolJSONRPC,
					ProtocolVersion: version}},
				DefaultInputModes: []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"},
				Skills: []a2a.AgentSkill{{ID: "review_pr", Name: "Review", Description: "Review a pull request", Tags: []string{"code"}}}}
			a.ServeCard(card)
			expect(t, e.do("POST", "/v1/tenants/acme/cards/import", alice,
				map[string]any{"agentId": c.id, "url": a.URL + "/.well-known/agent-card.json"}), http.StatusCreated)

			for _, mode := range []string{"sync", "async"} {
				req := delegate(c.id, mode)
				req["transport"], req["task"] = "a2a", mode+" review for "+c.id
				r := e.do("POST", "/v1/tenants/acme/delegations", olga, req)
				d := decodeDelegation(t, r)
				if mode == "async" {
					expect(t, r, http.StatusAccepted)
					d = e.waitStatus("acme", d.ID, olga, delegation.StatusCompleted)
				} else {
					expect(t, r, http.StatusOK)
				}
				if d.Status != delegation.StatusCompleted || d.A2A != c.server.record || string(d.Result) != `"done: `+mode+` review for `+c.id+`"` {
					t.Fatalf("%s, %s: %+v (%s)", c.id, mode, d, d.Result)
				}
			}
			if got := agent.received(); !slices.Equal(got, []string{"sync review for " + c.id, "async review for " + c.id}) {
				t.Fatalf("%s: the agent ran on %q", c.id, got)
			}
			if n := labelled(a, c.server.send); n != 2 {
				calls, _, _ := received(a)
				t.Fatalf("%s: %d sends in %q", c.id, n, calls)
			}
		}
	})
}
