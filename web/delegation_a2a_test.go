package web_test

import (
	"context"
	"iter"
	"net/http"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/agentcards/agentcards/cards/agenttest"
	"github.com/agentcards/agentcards/cards/delegation"
	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/web/webtest"
)

// rpcCount is how many JSON-RPC requests of method (SendMessage, GetTask, ...) the agent
// received: what the server asked it.
func rpcCount(a *agenttest.Agent, method string) int {
	return a.Count(func(r agenttest.Request) bool { return r.RPC == method })
}

// reviewer is an a2a-go agent that answers each message with a message of its own.
type reviewer struct{}

func (reviewer) Execute(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		text := ""
		if ec.Message != nil && len(ec.Message.Parts) > 0 {
			text = ec.Message.Parts[0].Text()
		}
		yield(a2a.NewMessage(a2a.MessageRoleAgent, a2a.NewTextPart("reviewed: "+text)), nil)
	}
}

func (reviewer) Cancel(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

// TestDelegationA2A: a card that speaks a2a with a JSON-RPC interface is reached with an A2A
// SendMessage (through the a2a-go client, to an a2a-go server): the task is the message, the
// reply the result, and the call carries the delegation token.
func TestDelegationA2A(t *testing.T) {
	e := newEnv(t, storagetest.Open(t, "sqlite"), 1<<20)
	a := agenttest.NewA2A(t, agenttest.JSONRPC10, reviewer{})

	e.mkTenant("acme", "alice")
	alice, olga := e.token("alice", "acme", false), e.token("olga", "acme", false)
	expect(t, e.do("POST", "/v1/tenants/acme/roles", alice, map[string]string{"subject": "olga", "role": "orchestrator"}), http.StatusCreated)
	card := sampleCard("rev")
	card["endpoint"] = "https://agents.example.com/not-used-by-a2a"
	card["a2a"] = map[string]any{"interfaces": []any{map[string]any{"url": a.URL, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}}}
	expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, card), http.StatusCreated)

	req := delegate("rev", "sync")
	req["transport"] = "a2a"
	r := e.do("POST", "/v1/tenants/acme/delegations", olga, req)
	expect(t, r, http.StatusOK)
	d := decodeDelegation(t, r)
	if d.Status != delegation.StatusCompleted || d.Transport != "a2a" || string(d.Result) != `"reviewed: Review PR 12 of acme/web"` {
		t.Fatalf("A2A outcome %+v (%s)", d, d.Result)
	}
	if c := e.verifyWithJWKS(strings.TrimPrefix(a.Last().Header.Get("Authorization"), "Bearer ")); c.DelegationID != d.ID || c.Audience[0] != a.URL {
		t.Fatalf("A2A call token %+v", c)
	}

	// A secret set for a header goes in it over A2A too, the delegation token in Authorization.
	withKey := sampleCard("keyed")
	withKey["endpoint"] = a.URL
	withKey["a2a"] = card["a2a"]
	expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, withKey), http.StatusCreated)
	expect(t, e.do("PUT", "/v1/tenants/acme/cards/keyed/secret", alice, map[string]string{"secret": "k3y", "header": "X-Api-Key"}), http.StatusNoContent)
	req["agentId"] = "keyed"
	r = e.do("POST", "/v1/tenants/acme/delegations", olga, req)
	expect(t, r, http.StatusOK)
	d = decodeDelegation(t, r)
	if got := a.Last().Header; got.Get("X-Api-Key") != "k3y" || e.verifyWithJWKS(strings.TrimPrefix(got.Get("Authorization"), "Bearer ")).DelegationID != d.ID {
		t.Fatalf("A2A call with a header secret: X-Api-Key %q, Authorization %q", got.Get("X-Api-Key"), got.Get("Authorization"))
	}

	// A card that does not speak a2a cannot be reached that way.
	plain := sampleCard("plain")
	plain["protocols"] = []string{"http"}
	expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, plain), http.StatusCreated)
	req["agentId"] = "plain"
	expect(t, e.do("POST", "/v1/tenants/acme/delegations", olga, req), http.StatusBadRequest, "invalid")
}

// TestDelegationA2AFollowsTasks: an async A2A delegation asks the agent to answer at once; while
// the task is working the record is accepted (as for an agent answering 202), and the server
// follows the task with GetTask (the agent counts them) until it ends, and records its result.
func TestDelegationA2AFollowsTasks(t *testing.T) {
	e := newEnv(t, storagetest.Open(t, "sqlite"), 1<<20)
	agent := agenttest.Slow{Release: make(chan struct{}), Artifact: "reviewed later"}
	a := agenttest.NewA2A(t, agenttest.JSONRPC10, agent)
	e.mkTenant("acme", "alice")
	alice, olga := e.token("alice", "acme", false), e.token("olga", "acme", false)
	expect(t, e.do("POST", "/v1/tenants/acme/roles", alice, map[string]string{"subject": "olga", "role": "orchestrator"}), http.StatusCreated)
	card := sampleCard("slow")
	card["a2a"] = map[string]any{"interfaces": []any{map[string]any{"url": a.URL, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}}}
	expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, card), http.StatusCreated)

	req := delegate("slow", "async")
	req["transport"] = "a2a"
	r := e.do("POST", "/v1/tenants/acme/delegations", olga, req)
	expect(t, r, http.StatusAccepted)
	d := decodeDelegation(t, r)
	e.waitStatus("acme", d.ID, olga, delegation.StatusAccepted)
	webtest.Eventually(t, patience, "the server asks the agent for the working task twice", func() bool {
		return rpcCount(a, "GetTask") >= 2
	})
	r = e.do("GET", "/v1/tenants/acme/delegations/"+d.ID, olga, nil)
	expect(t, r, http.StatusOK)
	if got := decodeDelegation(t, r); got.Status != delegation.StatusAccepted || got.Result != nil {
		t.Fatalf("after %d follow-ups of a working task: %+v", rpcCount(a, "GetTask"), got)
	}
	close(agent.Release)
	done := e.waitStatus("acme", d.ID, olga, delegation.StatusCompleted)
	if string(done.Result) != `"reviewed later"` {
		t.Fatalf("result %s", done.Result)
	}
	if n := rpcCount(a, "SendMessage"); n != 1 {
		t.Fatalf("the agent got %d SendMessage requests, want 1", n)
	}
}
