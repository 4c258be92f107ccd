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
)

// The outcomes of the A2A transport that the agent decides, from an a2a-go server.

// a2aAgent serves exec over A2A JSON-RPC on loopback and registers it as card "rev" of tenant
// acme (admin alice, orchestrator olga); it returns olga's token and the agent.
func (e *env) a2aAgent(t *testing.T, exec a2asrv.AgentExecutor) (olga string, a *agenttest.Agent) {
	t.Helper()
	a = agenttest.NewA2A(t, agenttest.JSONRPC10, exec)
	e.mkTenant("acme", "alice")
	alice, olga := e.token("alice", "acme", false), e.token("olga", "acme", false)
	expect(t, e.do("POST", "/v1/tenants/acme/roles", alice, map[string]string{"subject": "olga", "role": "orchestrator"}), http.StatusCreated)
	card := sampleCard("rev")
	card["a2a"] = map[string]any{"interfaces": []any{map[string]any{"url": a.URL, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}}}
	expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, card), http.StatusCreated)
	return olga, a
}

// a2aDelegate is a delegation to card "rev" over A2A.
func a2aDelegate(mode, task string) map[string]any {
	req := delegate("rev", mode)
	req["transport"], req["task"] = "a2a", task
	return req
}

// endingAgent is an a2a-go agent that takes each task on and then puts it in the state the
// task's text names, with a status message giving the reason.
type endingAgent struct{}

func (endingAgent) Execute(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		state := a2a.TaskState(ec.Message.Parts[0].Text())
		if !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
			return
		}
		why := a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart("because "+string(state)))
		yield(a2a.NewStatusUpdateEvent(ec, state, why), nil)
	}
}

func (endingAgent) Cancel(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

// TestDelegationA2ATaskEndStates: an A2A task that ends failed, rejected or canceled fails the
// delegation with the state and the agent's status message; one that stops to ask for input or
// authorization (which a delegation cannot give) fails it naming that state; in sync and async.
func TestDelegationA2ATaskEndStates(t *testing.T) {
	e := newEnv(t, storagetest.Open(t, "sqlite"), 1<<20)
	olga, _ := e.a2aAgent(t, endingAgent{})
	for _, c := range []struct {
		state     a2a.TaskState
		ends      bool // a terminal state, whose status message is the error
		wantError string
	}{
		{a2a.TaskStateFailed, true, "A2A task TASK_STATE_FAILED: because TASK_STATE_FAILED"},
		{a2a.TaskStateRejected, true, "A2A task TASK_STATE_REJECTED: because TASK_STATE_REJECTED"},
		{a2a.TaskStateCanceled, true, "A2A task TASK_STATE_CANCELED: because TASK_STATE_CANCELED"},
		{a2a.TaskStateInputRequired, false, " stopped in state TASK_STATE_INPUT_REQUIRED"},
		{a2a.TaskStateAuthRequired, false, " stopped in state TASK_STATE_AUTH_REQUIRED"},
	} {
		for _, mode := range []string{"sync", "async"} {
			r := e.do("POST", "/v1/tenants/acme/delegations", olga, a2aDelegate(mode, string(c.state)))
			d := decodeDelegation(t, r)
			if mode == "async" {
				expect(t, r, http.StatusAccepted)
				d = e.waitStatus("acme", d.ID, olga, delegation.StatusFailed)
			} else {
				expect(t, r, http.StatusOK)
			}
			ok := d.Error == c.wantError
			if !c.ends {
				ok = strings.HasPrefix(d.Error, "A2A task ") && strings.HasSuffix(d.Error, c.wantError)
			}
			if d.Status != delegation.StatusFailed || !ok || d.Result != nil || d.Transport != "a2a" {
				t.Fatalf("%s task in %s: %+v, want failed with %q", mode, c.state, d, c.wantError)
			}
			if s := e.storedDelegation("acme", d.ID); s.Status != delegation.StatusFailed || s.Error != d.Error {
				t.Fatalf("%s task in %s: stored %+v", mode, c.state, s)
			}
		}
	}
}

// erringAgent is an a2a-go agent that refuses every message with an A2A error, which its server
// sends as a JSON-RPC error.
type erringAgent struct{}

func (erringAgent) Execute(context.Context, *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(nil, a2a.NewError(a2a.ErrUnsupportedContentType, "only pull requests are reviewed"))
	}
}

func (erringAgent) Cancel(context.Context, *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) { yield(nil, a2a.ErrTaskNotCancelable) }
}

// TestDelegationA2AJSONRPCError: an agent that answers SendMessage with a JSON-RPC error fails the
// delegation with that error's message, in sync and async.
func TestDelegationA2AJSONRPCError(t *testing.T) {
	e := newEnv(t, storagetest.Open(t, "sqlite"), 1<<20)
	olga, a := e.a2aAgent(t, erringAgent{})
	for i, mode := range []string{"sync", "async"} {
		r := e.do("POST", "/v1/tenants/acme/delegations", olga, a2aDelegate(mode, "review"))
		d := decodeDelegation(t, r)
		if mode == "async" {
			expect(t, r, http.StatusAccepted)
			d = e.waitStatus("acme", d.ID, olga, delegation.StatusFailed)
		} else {
			expect(t, r, http.StatusOK)
		}
		if d.Status != delegation.StatusFailed || d.Error != "A2A: only pull requests are reviewed" || d.Result != nil {
			t.Fatalf("%s JSON-RPC error: %+v", mode, d)
		}
		if s := e.storedDelegation("acme", d.ID); s.Status != delegation.StatusFailed || s.Error != d.Error {
			t.Fatalf("%s: stored %+v", mode, s)
		}
		if n := rpcCount(a, "SendMessage"); n != i+1 {
			t.Fatalf("%s: the agent got %d SendMessage requests, want %d", mode, n, i+1)
		}
	}
}

// TestDelegationA2AResultOverLimitFails: an A2A answer over delegation.maxResultBytes fails the
// delegation, saying it is over the limit, and keeps none of it.
func TestDelegationA2AResultOverLimitFails(t *testing.T) {
	const limit = 4096
	// One counted failure would open the breaker: an answer too large must not count, as over HTTP.
	e := newEnvWith(t, storagetest.Open(t, "sqlite"), envOptions{allowLoopback: true,
		delegation: delegation.Config{MaxResultBytes: limit, BreakerFailures: 1}})
	olga, _ := e.a2aAgent(t, agenttest.Verbose{N: 2 * limit})
	for i := range 2 {
		r := e.do("POST", "/v1/tenants/acme/delegations", olga, a2aDelegate("sync", "review"))
		expect(t, r, http.StatusOK)
		d := decodeDelegation(t, r)
		if d.Status != delegation.StatusFailed || d.Error != "the agent's answer is over 4096 bytes" || d.Result != nil {
			t.Fatalf("an A2A answer over the limit, call %d: %+v", i, d)
		}
		if s := e.storedDelegation("acme", d.ID); s.Status != delegation.StatusFailed || s.Result != nil || s.Error != d.Error {
			t.Fatalf("stored %+v", s)
		}
	}
}

// TestDelegationA2AFollowedResultOverLimitFails: an async A2A task that the agent takes on, and
// whose answer to a later GetTask is over delegation.maxResultBytes, fails the delegation saying
// so and keeps none of it; and, as for a SendMessage answer too large, the breaker does not count
// it: a second such delegation still reaches the agent.
func TestDelegationA2AFollowedResultOverLimitFails(t *testing.T) {
	const limit = 4096
	// One counted failure would open the breaker and refuse the second delegation.
	e := newEnvWith(t, storagetest.Open(t, "sqlite"), envOptions{allowLoopback: true,
		delegation: delegation.Config{MaxResultBytes: limit, BreakerFailures: 1}})
	agent := agenttest.Slow{Release: make(chan struct{}), Artifact: strings.Repeat("x", 2*limit)}
	olga, a := e.a2aAgent(t, agent)
	for i := range 2 {
		r := e.do("POST", "/v1/tenants/acme/delegations", olga, a2aDelegate("async", "review"))
		expect(t, r, http.StatusAccepted)
		d := decodeDelegation(t, r)
		// Accepted is recorded only once SendMessage has returned the working task: the answer
		// too large can then come only from following the task up.
		e.waitStatus("acme", d.ID, olga, delegation.StatusAccepted)
		if n := rpcCount(a, "SendMessage"); n != i+1 {
			t.Fatalf("call %d: the agent got %d SendMessage requests, want %d", i, n, i+1)
		}
		asked := rpcCount(a, "GetTask")
		agent.Release <- struct{}{}
		d = e.waitStatus("acme", d.ID, olga, delegation.StatusFailed)
		if d.Error != "the agent's answer is over 4096 bytes" || d.Result != nil || d.Transport != "a2a" {
			t.Fatalf("a followed A2A answer over the limit, call %d: %+v", i, d)
		}
		if s := e.storedDelegation("acme", d.ID); s.Status != delegation.StatusFailed || s.Result != nil || s.Error != d.Error {
			t.Fatalf("call %d: stored %+v", i, s)
		}
		if rpcCount(a, "GetTask") <= asked {
			t.Fatalf("call %d: no GetTask after the task was released", i)
		}
	}
}
