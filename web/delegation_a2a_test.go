package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"iter"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/agentcards/agentcards/cards/delegation"
	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/web/webtest"
)

// rpcCounter serves an a2a-go JSON-RPC handler and counts the requests of each JSON-RPC method
// (SendMessage, GetTask, ...) it receives, so tests can see what the server asked the agent.
type rpcCounter struct {
	next http.Handler
	mu   sync.Mutex
	n    map[string]int
}

func countRPC(next http.Handler) *rpcCounter { return &rpcCounter{next: next, n: map[string]int{}} }

func (c *rpcCounter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var call struct {
		Method string `json:"method"`
	}
	_ = json.Unmarshal(body, &call)
	c.mu.Lock()
	c.n[call.Method]++
	c.mu.Unlock()
	r.Body = io.NopCloser(bytes.NewReader(body))
	c.next.ServeHTTP(w, r)
}

// count is how many requests of the JSON-RPC method arrived.
func (c *rpcCounter) count(method string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[method]
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
	var mu sync.Mutex
	var auth string
	rpc := a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(reviewer{}))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auth = r.Header.Get("Authorization")
		mu.Unlock()
		rpc.ServeHTTP(w, r)
	}))
	defer srv.Close()

	e.mkTenant("acme", "alice")
	alice, olga := e.token("alice", "acme", false), e.token("olga", "acme", false)
	expect(t, e.do("POST", "/v1/tenants/acme/roles", alice, map[string]string{"subject": "olga", "role": "orchestrator"}), http.StatusCreated)
	card := sampleCard("rev")
	card["endpoint"] = "https://agents.example.com/not-used-by-a2a"
	card["a2a"] = map[string]any{"interfaces": []any{map[string]any{"url": srv.URL, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}}}
	expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, card), http.StatusCreated)

	req := delegate("rev", "sync")
	req["transport"] = "a2a"
	r := e.do("POST", "/v1/tenants/acme/delegations", olga, req)
	expect(t, r, http.StatusOK)
	d := decodeDelegation(t, r)
	if d.Status != delegation.StatusCompleted || d.Transport != "a2a" || string(d.Result) != `"reviewed: Review PR 12 of acme/web"` {
		t.Fatalf("A2A outcome %+v (%s)", d, d.Result)
	}
	mu.Lock()
	got := auth
	mu.Unlock()
	if c := e.verifyWithJWKS(strings.TrimPrefix(got, "Bearer ")); c.DelegationID != d.ID || c.Audience[0] != srv.URL {
		t.Fatalf("A2A call token %+v", c)
	}

	// A card that does not speak a2a cannot be reached that way.
	plain := sampleCard("plain")
	plain["protocols"] = []string{"http"}
	expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, plain), http.StatusCreated)
	req["agentId"] = "plain"
	expect(t, e.do("POST", "/v1/tenants/acme/delegations", olga, req), http.StatusBadRequest, "invalid")
}

// slowReviewer is an a2a-go agent that takes on a task at once and finishes it only when
// released, as long-running agents do.
type slowReviewer struct {
	release chan struct{}
	// artifact is the text the finished task carries; empty means "reviewed later".
	artifact string
}

func (s slowReviewer) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		if !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) ||
			!yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, nil), nil) {
			return
		}
		select {
		case <-s.release:
		case <-ctx.Done():
			return
		}
		text := s.artifact
		if text == "" {
			text = "reviewed later"
		}
		if !yield(a2a.NewArtifactEvent(ec, a2a.NewTextPart(text)), nil) {
			return
		}
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
	}
}

func (slowReviewer) Cancel(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

// TestDelegationA2AFollowsTasks: an async A2A delegation asks the agent to answer at once; while
// the task is working the record is accepted (as for an agent answering 202), and the server
// follows the task with GetTask (the agent counts them) until it ends, and records its result.
func TestDelegationA2AFollowsTasks(t *testing.T) {
	e := newEnv(t, storagetest.Open(t, "sqlite"), 1<<20)
	agent := slowReviewer{release: make(chan struct{})}
	rpc := countRPC(a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(agent)))
	srv := httptest.NewServer(rpc)
	defer srv.Close()
	e.mkTenant("acme", "alice")
	alice, olga := e.token("alice", "acme", false), e.token("olga", "acme", false)
	expect(t, e.do("POST", "/v1/tenants/acme/roles", alice, map[string]string{"subject": "olga", "role": "orchestrator"}), http.StatusCreated)
	card := sampleCard("slow")
	card["a2a"] = map[string]any{"interfaces": []any{map[string]any{"url": srv.URL, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}}}
	expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, card), http.StatusCreated)

	req := delegate("slow", "async")
	req["transport"] = "a2a"
	r := e.do("POST", "/v1/tenants/acme/delegations", olga, req)
	expect(t, r, http.StatusAccepted)
	d := decodeDelegation(t, r)
	e.waitStatus("acme", d.ID, olga, delegation.StatusAccepted)
	webtest.Eventually(t, patience, "the server asks the agent for the working task twice", func() bool {
		return rpc.count("GetTask") >= 2
	})
	r = e.do("GET", "/v1/tenants/acme/delegations/"+d.ID, olga, nil)
	expect(t, r, http.StatusOK)
	if got := decodeDelegation(t, r); got.Status != delegation.StatusAccepted || got.Result != nil {
		t.Fatalf("after %d follow-ups of a working task: %+v", rpc.count("GetTask"), got)
	}
	close(agent.release)
	done := e.waitStatus("acme", d.ID, olga, delegation.StatusCompleted)
	if string(done.Result) != `"reviewed later"` {
		t.Fatalf("result %s", done.Result)
	}
	if n := rpc.count("SendMessage"); n != 1 {
		t.Fatalf("the agent got %d SendMessage requests, want 1", n)
	}
}
