package web_test

import (
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentcards/agentcards/cards/agenttest"
	"github.com/agentcards/agentcards/cards/delegation"
	"github.com/agentcards/agentcards/storage/storagetest"
)

// What the server makes of the delegation request itself, whatever the agent would answer.

// TestDelegationTimeoutCappedAtMaxTimeout: the server, not the caller, bounds the wait: a
// timeoutMs above delegation.maxTimeout (for an async delegation over HTTP,
// delegation.maxAsyncTimeout) gets the maximum as its deadline, none gets the default, and one
// below the maximum is kept.
func TestDelegationTimeoutCappedAtMaxTimeout(t *testing.T) {
	e := newEnvWith(t, storagetest.Open(t, "sqlite"), envOptions{allowLoopback: true,
		delegation: delegation.Config{DefaultTimeout: 20 * time.Second, MaxTimeout: 45 * time.Second, MaxAsyncTimeout: 90 * time.Minute}})
	a := agenttest.New(t, agenttest.Answer(http.StatusOK, `{"result": "ok"}`))
	_, olga := e.delegationSetup("acme", "agt1", a.Endpoint())
	for _, c := range []struct {
		timeoutMS   any
		sync, async time.Duration
	}{
		{int64(time.Hour / time.Millisecond), 45 * time.Second, time.Hour},
		// So large that in nanoseconds it would overflow a time.Duration.
		{int64(1e13), 45 * time.Second, 90 * time.Minute},
		{int64(math.MaxInt64), 45 * time.Second, 90 * time.Minute},
		{nil, 20 * time.Second, 20 * time.Second},
		{5000, 5 * time.Second, 5 * time.Second},
	} {
		for _, mode := range []string{"sync", "async"} {
			want := c.sync
			if mode == "async" {
				want = c.async
			}
			req := delegate("agt1", mode)
			if c.timeoutMS != nil {
				req["timeoutMs"] = c.timeoutMS
			}
			r := e.do("POST", "/v1/tenants/acme/delegations", olga, req)
			d := decodeDelegation(t, r)
			if mode == "async" {
				expect(t, r, http.StatusAccepted)
				d = e.waitStatus("acme", d.ID, olga, delegation.StatusCompleted)
			} else {
				expect(t, r, http.StatusOK)
			}
			if d.Status != delegation.StatusCompleted || d.Deadline.Sub(d.CreatedAt) != want {
				t.Fatalf("%s timeoutMs %v: deadline %v after creation, want %v: %+v", mode, c.timeoutMS, d.Deadline.Sub(d.CreatedAt), want, d)
			}
			if s := e.storedDelegation("acme", d.ID); !s.Deadline.Equal(d.Deadline) {
				t.Fatalf("%s timeoutMs %v: stored deadline %v, answered %v", mode, c.timeoutMS, s.Deadline, d.Deadline)
			}
		}
	}
}

// TestDelegationBadRequestRefused: a negative or mistyped timeoutMs, a task over
// delegation.MaxTaskBytes and an unknown transport are each a 400 with the one error body naming
// what is wrong; nothing is recorded and nothing reaches the agent.
func TestDelegationBadRequestRefused(t *testing.T) {
	e := newEnv(t, storagetest.Open(t, "sqlite"), 1<<20)
	a := agenttest.New(t, agenttest.Answer(http.StatusOK, `{"result": "ok"}`))
	alice, olga := e.delegationSetup("acme", "agt1", a.Endpoint())
	for _, c := range []struct {
		name, field string
		value       any
		mentions    string
	}{
		{"negative timeout", "timeoutMs", -1, "timeoutMs"},
		{"timeout as a string", "timeoutMs", "5000", "timeoutMs"},
		{"fractional timeout", "timeoutMs", 1.5, "timeoutMs"},
		{"task over the maximum", "task", strings.Repeat("x", delegation.MaxTaskBytes+1), "task"},
		{"unknown transport", "transport", "grpc", "transport"},
	} {
		for _, mode := range []string{"sync", "async"} {
			req := delegate("agt1", mode)
			req[c.field] = c.value
			r := e.do("POST", "/v1/tenants/acme/delegations", olga, req)
			expect(t, r, http.StatusBadRequest, "invalid")
			if !strings.Contains(string(r.body), c.mentions) {
				t.Fatalf("%s (%s): the error does not name %s: %s", c.name, mode, c.mentions, r.body)
			}
		}
	}
	// A task of exactly the maximum is fine.
	req := delegate("agt1", "sync")
	req["task"] = strings.Repeat("x", delegation.MaxTaskBytes)
	expect(t, e.do("POST", "/v1/tenants/acme/delegations", olga, req), http.StatusOK)
	if page := e.listDelegations("acme", alice); len(page.Items) != 1 || page.Items[0].Status != delegation.StatusCompleted {
		t.Fatalf("records after the refused requests: %+v", page.Items)
	}
	if n := a.Calls(); n != 1 {
		t.Fatalf("the agent got %d calls, want only the valid one", n)
	}
}
