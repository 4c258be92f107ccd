package web_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/agentcards/agentcards/cards/agenttest"
	"github.com/agentcards/agentcards/cards/delegation"
	"github.com/agentcards/agentcards/storage/storagetest"
)

// The outcomes of the POST /task transport that the agent's answer or callback decides.

// TestDelegationResultOverLimitFails: a 200 answer over delegation.maxResultBytes fails the
// delegation without keeping any of it; an answer of exactly the limit completes it.
func TestDelegationResultOverLimitFails(t *testing.T) {
	const limit = 1024
	// One counted failure would open the breaker: an answer too large must not count.
	e := newEnvWith(t, storagetest.Open(t, "sqlite"), envOptions{allowLoopback: true,
		delegation: delegation.Config{MaxResultBytes: limit, BreakerFailures: 1}})
	exact := `"` + strings.Repeat("x", limit-2) + `"` // a JSON string of exactly limit bytes
	a := agenttest.New(t, agenttest.Answer(http.StatusOK, exact))
	_, olga := e.delegationSetup("acme", "agt1", a.Endpoint())

	r := e.do("POST", "/v1/tenants/acme/delegations", olga, delegate("agt1", "sync"))
	expect(t, r, http.StatusOK)
	if d := decodeDelegation(t, r); d.Status != delegation.StatusCompleted || string(d.Result) != exact {
		t.Fatalf("an answer of exactly the limit: %+v", d)
	}

	a.SetReply(agenttest.Answer(http.StatusOK, `"`+strings.Repeat("x", limit)+`"`))
	for i := range 2 {
		r = e.do("POST", "/v1/tenants/acme/delegations", olga, delegate("agt1", "sync"))
		expect(t, r, http.StatusOK)
		d := decodeDelegation(t, r)
		if d.Status != delegation.StatusFailed || d.Result != nil || d.Error != "the agent's answer is over 1024 bytes" {
			t.Fatalf("an answer over the limit, call %d: %+v", i, d)
		}
		if s := e.storedDelegation("acme", d.ID); s.Status != delegation.StatusFailed || s.Result != nil || s.Error != d.Error {
			t.Fatalf("stored %+v", s)
		}
	}
}

// TestDelegationSyncAnswered202Fails: an agent that answers a sync delegation with 202 has
// nowhere to send its result (a sync call carries no callback URL): the delegation fails, saying so.
func TestDelegationSyncAnswered202Fails(t *testing.T) {
	e := newEnv(t, storagetest.Open(t, "sqlite"), 1<<20)
	a := agenttest.New(t, agenttest.Answer(http.StatusAccepted, `{}`))
	_, olga := e.delegationSetup("acme", "agt1", a.Endpoint())
	r := e.do("POST", "/v1/tenants/acme/delegations", olga, delegate("agt1", "sync"))
	expect(t, r, http.StatusOK)
	d := decodeDelegation(t, r)
	const want = "the agent answered 202, but a sync delegation offers no callback"
	if d.Status != delegation.StatusFailed || d.Error != want {
		t.Fatalf("sync answered 202: %+v", d)
	}
	if got := waitCall(t, a, d.ID).Task; got.CallbackURL != "" {
		t.Fatalf("a sync call carried a callback URL %q", got.CallbackURL)
	}
	if s := e.storedDelegation("acme", d.ID); s.Status != delegation.StatusFailed || s.Error != want {
		t.Fatalf("stored %+v", s)
	}
}

// TestDelegationAsyncNon2xxFails: an async delegation whose agent answers with a non-2xx
// status instead of 202 is failed with the status and the agent's body as its error.
func TestDelegationAsyncNon2xxFails(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		a := agenttest.New(t, agenttest.Answer(http.StatusUnprocessableEntity, `cannot review a draft`))
		_, olga := e.delegationSetup("acme", "agt1", a.Endpoint())
		r := e.do("POST", "/v1/tenants/acme/delegations", olga, delegate("agt1", "async"))
		expect(t, r, http.StatusAccepted)
		d := decodeDelegation(t, r)
		done := e.waitStatus("acme", d.ID, olga, delegation.StatusFailed)
		if done.Error != "the agent answered 422: cannot review a draft" || done.Result != nil {
			t.Fatalf("async answered 422: %+v", done)
		}
		if s := e.storedDelegation("acme", d.ID); s.Status != delegation.StatusFailed || s.Error != done.Error {
			t.Fatalf("stored %+v", s)
		}
	})
}

// TestDelegationFailedCallback: an agent that accepted an async delegation and then posts a
// failed result fails the record with the agent's error and no result; the token is then spent.
func TestDelegationFailedCallback(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		a := agenttest.New(t, agenttest.Answer(http.StatusAccepted, `{}`))
		_, olga := e.delegationSetup("acme", "agt1", a.Endpoint())
		r := e.do("POST", "/v1/tenants/acme/delegations", olga, delegate("agt1", "async"))
		expect(t, r, http.StatusAccepted)
		d := decodeDelegation(t, r)
		got := waitCall(t, a, d.ID).Task
		e.waitStored("acme", d.ID, delegation.StatusAccepted)
		path := e.callbackPath(t, "acme", d.ID, got)
		expect(t, e.do("POST", path, "", map[string]any{"status": "failed", "error": "lint crashed on line 3"}), http.StatusNoContent)
		r = e.do("GET", "/v1/tenants/acme/delegations/"+d.ID, olga, nil)
		expect(t, r, http.StatusOK)
		if done := decodeDelegation(t, r); done.Status != delegation.StatusFailed || done.Error != "lint crashed on line 3" || done.Result != nil {
			t.Fatalf("after a failed callback: %+v", done)
		}
		expect(t, e.do("POST", path, "", map[string]any{"status": "completed", "result": "fine after all"}), http.StatusConflict, "conflict")
		if s := e.storedDelegation("acme", d.ID); s.Status != delegation.StatusFailed || s.Result != nil {
			t.Fatalf("stored after a second callback %+v", s)
		}
	})
}

// TestDelegationCallbackBeforeAccepted: an agent that posts its result from inside its handler,
// before it answers 202, has that result stand: the dispatcher's recording of the 202 that
// follows must not turn the completed record back into accepted.
func TestDelegationCallbackBeforeAccepted(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		var mu sync.Mutex
		callback := 0 // the status the agent's early callback got
		a := agenttest.New(t, func(w http.ResponseWriter, r *http.Request, got agenttest.Request) {
			res, err := e.srv.Client().Post(got.Task.CallbackURL, "application/json",
				strings.NewReader(`{"status": "completed", "result": "done early"}`))
			if err == nil {
				_ = res.Body.Close()
				mu.Lock()
				callback = res.StatusCode
				mu.Unlock()
			}
			agenttest.Answer(http.StatusAccepted, `{}`)(w, r, got)
		})
		_, olga := e.delegationSetup("acme", "agt1", a.Endpoint())
		r := e.do("POST", "/v1/tenants/acme/delegations", olga, delegate("agt1", "async"))
		expect(t, r, http.StatusAccepted)
		d := decodeDelegation(t, r)
		waitCall(t, a, d.ID)
		e.dispatcher.Wait() // the dispatcher has recorded whatever it makes of the 202
		mu.Lock()
		status := callback
		mu.Unlock()
		if status != http.StatusNoContent {
			t.Fatalf("the early callback got %d, want 204", status)
		}
		s := e.storedDelegation("acme", d.ID)
		if s.Status != delegation.StatusCompleted || string(s.Result) != `"done early"` || s.Error != "" {
			t.Fatalf("stored after the 202: %+v", s)
		}
		r = e.do("GET", "/v1/tenants/acme/delegations/"+d.ID, olga, nil)
		expect(t, r, http.StatusOK)
		if got := decodeDelegation(t, r); got.Status != delegation.StatusCompleted || string(got.Result) != `"done early"` {
			t.Fatalf("read after the 202: %+v", got)
		}
	})
}
