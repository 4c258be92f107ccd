package web_test

import (
	"context"
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
)

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
