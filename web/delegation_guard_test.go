package web_test

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentcards/agentcards/cards/agenttest"
	"github.com/agentcards/agentcards/cards/delegation"
	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/web/webtest"
)

// breakerCooldown is the cooldown of the breaker tests: long enough that an open breaker is
// still open at the next request on a loaded machine (two shared cores, the race detector),
// short enough to wait out, and well within patience, which bounds each wait for a trial.
const breakerCooldown = 5 * time.Second

// newestRejected is the id of the newest rejected delegation of tenant that token may read, or
// "" if there is none.
func (e *env) newestRejected(tenant, token string) string {
	e.t.Helper()
	var page delegationPage
	r := e.do("GET", "/v1/tenants/"+tenant+"/delegations?status=rejected&limit=1", token, nil)
	expect(e.t, r, http.StatusOK)
	r.json(e.t, &page)
	if len(page.Items) == 0 {
		return ""
	}
	return page.Items[0].ID
}

// untilTrial delegates to agt1 until the endpoint's open breaker, its cooldown over, lets one
// call through as its half-open trial, and returns that call's answer; each refusal before it
// must be 503 agent_unavailable and reach no agent.
func (e *env) untilTrial(t *testing.T, tenant, token string, a *agenttest.Agent) response {
	t.Helper()
	var r response
	webtest.Eventually(t, patience, "the breaker lets a trial call through after its cooldown", func() bool {
		calls := a.Calls()
		r = e.do("POST", "/v1/tenants/"+tenant+"/delegations", token, delegate("agt1", "sync"))
		if r.status != http.StatusServiceUnavailable {
			return true
		}
		expect(t, r, http.StatusServiceUnavailable, "agent_unavailable")
		if a.Calls() != calls {
			t.Fatal("an open breaker let a call through")
		}
		return false
	})
	return r
}

// TestDelegationDepth: an agent delegating further with the token it was called with acts one
// level deeper, and the server refuses a chain longer than its maximum, whatever the caller says.
func TestDelegationDepth(t *testing.T) {
	e := newEnvWith(t, storagetest.Open(t, "sqlite"), envOptions{allowLoopback: true, delegation: delegation.Config{MaxDepth: 2}})
	a := agenttest.New(t, agenttest.Answer(http.StatusOK, `{"result": "ok"}`))
	alice, olga := e.delegationSetup("acme", "agt1", a.Endpoint())
	expect(t, e.do("POST", "/v1/tenants/acme/policies", alice, policyRule("agent:agt1", "cards/*/capabilities/review_pr", "delegate", "allow")), http.StatusCreated)

	expect(t, e.do("POST", "/v1/tenants/acme/delegations", olga, delegate("agt1", "sync")), http.StatusOK)
	auth := a.Last().Header.Get("Authorization")
	hop1 := strings.TrimPrefix(auth, "Bearer ")
	req := delegate("agt1", "sync")
	req["context"] = map[string]any{"depth": 0} // the caller's word on depth counts for nothing
	r := e.do("POST", "/v1/tenants/acme/delegations", hop1, req)
	expect(t, r, http.StatusOK)
	if d := decodeDelegation(t, r); d.Depth != 2 || d.Caller != "agent:agt1" || d.Status != delegation.StatusCompleted {
		t.Fatalf("second hop %+v", d)
	}
	auth = a.Last().Header.Get("Authorization")
	hop2 := strings.TrimPrefix(auth, "Bearer ")
	if c := e.verifyWithJWKS(hop2); c.Depth != 2 || c.Caller != "agent:agt1" {
		t.Fatalf("second hop token %+v", c)
	}
	calls := a.Calls()
	expect(t, e.do("POST", "/v1/tenants/acme/delegations", hop2, req), http.StatusForbidden, "depth_exceeded")
	if a.Calls() != calls {
		t.Fatal("a too deep delegation reached the agent")
	}
	// A delegation token acts only in its tenant, and only to delegate.
	e.mkTenant("other", "zed")
	expect(t, e.do("POST", "/v1/tenants/other/delegations", hop1, req), http.StatusNotFound, "not_found")
	expect(t, e.do("GET", "/v1/tenants/acme/policies", hop1, nil), http.StatusUnauthorized, "unauthorized")
}

// TestDelegationBreaker: consecutive failures open the endpoint's breaker, which then fails fast
// with 503 agent_unavailable without calling the agent; after the cooldown a good answer closes it.
func TestDelegationBreaker(t *testing.T) {
	e := newEnvWith(t, storagetest.Open(t, "sqlite"), envOptions{allowLoopback: true,
		delegation: delegation.Config{BreakerFailures: 2, BreakerCooldown: breakerCooldown}})
	a := agenttest.New(t, agenttest.Answer(http.StatusInternalServerError, `overloaded`))
	_, olga := e.delegationSetup("acme", "agt1", a.Endpoint())
	for i := 0; i < 2; i++ {
		r := e.do("POST", "/v1/tenants/acme/delegations", olga, delegate("agt1", "sync"))
		expect(t, r, http.StatusOK)
		if d := decodeDelegation(t, r); d.Status != delegation.StatusFailed || !strings.Contains(d.Error, "overloaded") {
			t.Fatalf("failure %d: %+v", i, d)
		}
	}
	calls := a.Calls()
	expect(t, e.do("POST", "/v1/tenants/acme/delegations", olga, delegate("agt1", "sync")), http.StatusServiceUnavailable, "agent_unavailable")
	if a.Calls() != calls {
		t.Fatal("an open breaker let a call through")
	}
	a.SetReply(agenttest.Answer(http.StatusOK, `{"result": "back"}`))
	calls = a.Calls()
	r := e.untilTrial(t, "acme", olga, a)
	expect(t, r, http.StatusOK)
	if d := decodeDelegation(t, r); d.Status != delegation.StatusCompleted || a.Calls() != calls+1 {
		t.Fatalf("the trial call: %+v, %d calls", d, a.Calls()-calls)
	}
	// The good trial closed the breaker: the next call goes through at once.
	r = e.do("POST", "/v1/tenants/acme/delegations", olga, delegate("agt1", "sync"))
	expect(t, r, http.StatusOK)
	if d := decodeDelegation(t, r); d.Status != delegation.StatusCompleted || a.Calls() != calls+2 {
		t.Fatalf("after recovery %+v", d)
	}
}

// TestDelegationBreakerReopensAfterFailedTrial: a half-open trial call that fails opens the
// breaker again at once (one failure, where a closed breaker needs two): the next call is refused
// and recorded as rejected without reaching the agent; a trial after the next cooldown closes it.
func TestDelegationBreakerReopensAfterFailedTrial(t *testing.T) {
	e := newEnvWith(t, storagetest.Open(t, "sqlite"), envOptions{allowLoopback: true,
		delegation: delegation.Config{BreakerFailures: 2, BreakerCooldown: breakerCooldown}})
	a := agenttest.New(t, agenttest.Answer(http.StatusInternalServerError, `overloaded`))
	alice, olga := e.delegationSetup("acme", "agt1", a.Endpoint())
	for range 2 {
		expect(t, e.do("POST", "/v1/tenants/acme/delegations", olga, delegate("agt1", "sync")), http.StatusOK)
	}
	expect(t, e.do("POST", "/v1/tenants/acme/delegations", olga, delegate("agt1", "sync")), http.StatusServiceUnavailable, "agent_unavailable")

	calls := a.Calls()
	r := e.untilTrial(t, "acme", olga, a)
	expect(t, r, http.StatusOK)
	if d := decodeDelegation(t, r); d.Status != delegation.StatusFailed || !strings.Contains(d.Error, "overloaded") || a.Calls() != calls+1 {
		t.Fatalf("the failing trial: %+v, %d calls", d, a.Calls()-calls)
	}
	// The refusals before the trial are recorded as rejected too: this refusal must add exactly
	// one record, after the newest of those.
	before := e.newestRejected("acme", alice)
	if before == "" {
		t.Fatal("the refusals before the trial left no rejected record")
	}
	expect(t, e.do("POST", "/v1/tenants/acme/delegations", olga, delegate("agt1", "sync")), http.StatusServiceUnavailable, "agent_unavailable")
	if a.Calls() != calls+1 {
		t.Fatal("the breaker let a call through after a failed trial")
	}
	var page delegationPage
	r = e.do("GET", "/v1/tenants/acme/delegations?status=rejected&limit=2", alice, nil)
	expect(t, r, http.StatusOK)
	r.json(t, &page)
	if len(page.Items) != 2 || page.Items[1].ID != before || page.Items[0].ID == before {
		t.Fatalf("the refusal after the failed trial added %+v after rejected record %s, want exactly one", page.Items, before)
	}
	if d := page.Items[0]; d.Caller != "olga" || d.AgentID != "agt1" || d.Status != delegation.StatusRejected ||
		d.Error != "the endpoint's circuit breaker is open: agent unavailable" {
		t.Fatalf("the refusal after the failed trial is recorded as %+v", d)
	}

	a.SetReply(agenttest.Answer(http.StatusOK, `{"result": "back"}`))
	r = e.untilTrial(t, "acme", olga, a)
	expect(t, r, http.StatusOK)
	if d := decodeDelegation(t, r); d.Status != delegation.StatusCompleted || a.Calls() != calls+2 {
		t.Fatalf("the good trial: %+v", d)
	}
	r = e.do("POST", "/v1/tenants/acme/delegations", olga, delegate("agt1", "sync"))
	expect(t, r, http.StatusOK)
	if d := decodeDelegation(t, r); d.Status != delegation.StatusCompleted || a.Calls() != calls+3 {
		t.Fatalf("after the good trial: %+v", d)
	}
}

// TestDelegationRateLimit: a tenant's delegations beyond its rate are refused with 429 and
// recorded as rejected; attempts refused by policy do not spend the rate.
func TestDelegationRateLimit(t *testing.T) {
	e := newEnvWith(t, storagetest.Open(t, "sqlite"), envOptions{allowLoopback: true,
		delegation: delegation.Config{RatePerSecond: 0.001, RateBurst: 2}})
	a := agenttest.New(t, agenttest.Answer(http.StatusOK, `{"result": "ok"}`))
	alice, olga := e.delegationSetup("acme", "agt1", a.Endpoint())
	rita := e.token("rita", "acme", false)
	for i := 0; i < 3; i++ {
		expect(t, e.do("POST", "/v1/tenants/acme/delegations", rita, delegate("agt1", "sync")), http.StatusForbidden, "forbidden")
	}
	expect(t, e.do("POST", "/v1/tenants/acme/delegations", olga, delegate("agt1", "sync")), http.StatusOK)
	r := e.do("POST", "/v1/tenants/acme/delegations", olga, delegate("agt1", "async"))
	expect(t, r, http.StatusAccepted)
	async := decodeDelegation(t, r).ID
	expect(t, e.do("POST", "/v1/tenants/acme/delegations", olga, delegate("agt1", "sync")), http.StatusTooManyRequests, "rate_limited")
	// Count only once the async call has its outcome, so that it was counted if it was made.
	e.waitStatus("acme", async, olga, delegation.StatusCompleted)
	if a.Calls() != 2 {
		t.Fatalf("the agent got %d calls, want the 2 within the rate", a.Calls())
	}
	var page struct {
		Items []delegation.Delegation `json:"items"`
	}
	e.do("GET", "/v1/tenants/acme/delegations?status=rejected", alice, nil).json(t, &page)
	// rita's three refusals are one record with three attempts.
	if len(page.Items) != 2 || page.Items[0].Caller != "olga" || !strings.Contains(page.Items[0].Error, "too many delegations") ||
		page.Items[1].Caller != "rita" || page.Items[1].Attempts != 3 {
		t.Fatalf("rejected records %+v", page.Items)
	}
}

// TestDelegationSuspendedTenant: a suspended tenant's delegations are refused before anything
// is looked up or sent.
func TestDelegationSuspendedTenant(t *testing.T) {
	e := newEnv(t, storagetest.Open(t, "sqlite"), 1<<20)
	a := agenttest.New(t, agenttest.Answer(http.StatusOK, `{"result": "ok"}`))
	_, olga := e.delegationSetup("acme", "agt1", a.Endpoint())
	expect(t, e.do("PATCH", "/v1/tenants/acme", e.admin(), map[string]string{"status": "suspended"}), http.StatusOK)
	expect(t, e.do("POST", "/v1/tenants/acme/delegations", olga, delegate("agt1", "sync")), http.StatusForbidden, "tenant_suspended")
	if a.Calls() != 0 {
		t.Fatal("a suspended tenant's delegation reached the agent")
	}
}

// TestDelegationSSRFGuard: under the default guard an endpoint on loopback is refused before
// anything is sent (and the refusal recorded); a test allowlist of 127.0.0.0/8 lets it through,
// as every other delegation test shows.
func TestDelegationSSRFGuard(t *testing.T) {
	e := newEnvWith(t, storagetest.Open(t, "sqlite"), envOptions{allowLoopback: false})
	a := agenttest.New(t, agenttest.Answer(http.StatusOK, `{"result": "ok"}`))
	alice, olga := e.delegationSetup("acme", "agt1", a.Endpoint())
	for i := 0; i < 6; i++ { // more than the breaker's failures: the guard's refusals do not trip it
		expect(t, e.do("POST", "/v1/tenants/acme/delegations", olga, delegate("agt1", "sync")), http.StatusForbidden, "endpoint_blocked")
	}
	if a.Calls() != 0 {
		t.Fatal("the guard let a loopback call through")
	}
	var page struct {
		Items []delegation.Delegation `json:"items"`
	}
	e.do("GET", "/v1/tenants/acme/delegations?status=rejected", alice, nil).json(t, &page)
	if len(page.Items) != 6 {
		t.Fatalf("%d rejected records", len(page.Items))
	}
	allowed := newEnv(t, storagetest.Open(t, "sqlite"), 1<<20)
	_, olga = allowed.delegationSetup("acme", "agt1", a.Endpoint())
	expect(t, allowed.do("POST", "/v1/tenants/acme/delegations", olga, delegate("agt1", "sync")), http.StatusOK)
}

// TestDelegationIsolation: an orchestrator of tenant B can neither delegate to tenant A's agent
// nor read A's delegations: each answers 404 like a missing one.
func TestDelegationIsolation(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		a := agenttest.New(t, agenttest.Answer(http.StatusOK, `{"result": "ok"}`))
		aliceA, olgaA := e.delegationSetup("tenant-a", "agt1", a.Endpoint())
		r := e.do("POST", "/v1/tenants/tenant-a/delegations", olgaA, delegate("agt1", "sync"))
		expect(t, r, http.StatusOK)
		id := decodeDelegation(t, r).ID
		e.mkTenant("tenant-b", "bob")
		bob := e.token("bob", "tenant-b", false)
		expect(t, e.do("POST", "/v1/tenants/tenant-b/roles", bob, map[string]string{"subject": "olga", "role": "orchestrator"}), http.StatusCreated)
		olgaB := e.token("olga", "tenant-b", false)
		calls := a.Calls()
		for _, tok := range []string{bob, olgaB} {
			expect(t, e.do("POST", "/v1/tenants/tenant-a/delegations", tok, delegate("agt1", "sync")), http.StatusNotFound, "not_found")
			expect(t, e.do("POST", "/v1/tenants/tenant-b/delegations", tok, delegate("agt1", "sync")), http.StatusNotFound, "not_found")
			expect(t, e.do("GET", "/v1/tenants/tenant-a/delegations/"+id, tok, nil), http.StatusNotFound, "not_found")
			expect(t, e.do("GET", "/v1/tenants/tenant-b/delegations/"+id, tok, nil), http.StatusNotFound, "not_found")
			expect(t, e.do("GET", "/v1/tenants/tenant-a/delegations", tok, nil), http.StatusNotFound, "not_found")
		}
		if a.Calls() != calls {
			t.Fatal("tenant B reached tenant A's agent")
		}
		var page struct {
			Items []delegation.Delegation `json:"items"`
		}
		e.do("GET", "/v1/tenants/tenant-b/delegations", bob, nil).json(t, &page)
		if len(page.Items) != 0 {
			t.Fatalf("tenant B lists %+v", page.Items)
		}
		expect(t, e.do("GET", "/v1/tenants/tenant-a/delegations/"+id, aliceA, nil), http.StatusOK)
	})
}

// TestDelegationBreakerPerTenant: breakers are per tenant and endpoint, so failures seen by one
// tenant cannot open another's breaker on the same URL; and timeouts from a caller's timeoutMs
// below the server's default do not count as the agent's failures. The slow task never gets an
// answer before the test ends, so its calls are timeouts however loaded the machine; only the
// other calls are counted (a timed-out call may reach the agent late, or not at all).
func TestDelegationBreakerPerTenant(t *testing.T) {
	e := newEnvWith(t, storagetest.Open(t, "sqlite"), envOptions{allowLoopback: true,
		delegation: delegation.Config{BreakerFailures: 2, BreakerCooldown: time.Minute}})
	var answered atomic.Int64 // calls of tasks other than "slow"
	a := agenttest.New(t, func(w http.ResponseWriter, r *http.Request, got agenttest.Request) {
		if got.Task.Task == "slow" {
			agenttest.Hang(w, r, got)
			return
		}
		answered.Add(1)
		agenttest.Answer(http.StatusInternalServerError, `overloaded`)(w, r, got)
	})
	_, olgaA := e.delegationSetup("tenant-a", "agt1", a.Endpoint())
	_, olgaB := e.delegationSetup("tenant-b", "agt1", a.Endpoint())
	// Tenant A times out on purpose, with a short timeoutMs, more often than the breaker allows.
	slow := delegate("agt1", "sync")
	slow["task"], slow["timeoutMs"] = "slow", 50
	for i := 0; i < 3; i++ {
		r := e.do("POST", "/v1/tenants/tenant-a/delegations", olgaA, slow)
		expect(t, r, http.StatusOK)
		if d := decodeDelegation(t, r); d.Status != delegation.StatusTimeout {
			t.Fatalf("short timeout %d: %+v", i, d)
		}
	}
	r := e.do("POST", "/v1/tenants/tenant-a/delegations", olgaA, delegate("agt1", "sync"))
	expect(t, r, http.StatusOK)
	if d := decodeDelegation(t, r); d.Status != delegation.StatusFailed {
		t.Fatalf("after the caller's own timeouts: %+v", d)
	}
	// A's real failures open A's breaker only.
	expect(t, e.do("POST", "/v1/tenants/tenant-a/delegations", olgaA, delegate("agt1", "sync")), http.StatusOK)
	calls := answered.Load()
	expect(t, e.do("POST", "/v1/tenants/tenant-a/delegations", olgaA, delegate("agt1", "sync")), http.StatusServiceUnavailable, "agent_unavailable")
	if answered.Load() != calls {
		t.Fatal("tenant A's open breaker let a call through")
	}
	r = e.do("POST", "/v1/tenants/tenant-b/delegations", olgaB, delegate("agt1", "sync"))
	expect(t, r, http.StatusOK)
	if d := decodeDelegation(t, r); d.Status != delegation.StatusFailed || answered.Load() != calls+1 {
		t.Fatalf("tenant B's call did not reach the agent: %+v", d)
	}
}

// TestDelegationAfterShutdownBegan: once the dispatcher waits for async delegations in flight
// (shutdown), a new async delegation is refused with 503 instead of racing the wait; sync ones,
// which finish within their request, still go.
func TestDelegationAfterShutdownBegan(t *testing.T) {
	e := newEnv(t, storagetest.Open(t, "sqlite"), 1<<20)
	a := agenttest.New(t, agenttest.Answer(http.StatusOK, `{"result": "ok"}`))
	_, olga := e.delegationSetup("acme", "agt1", a.Endpoint())
	e.dispatcher.Wait()
	expect(t, e.do("POST", "/v1/tenants/acme/delegations", olga, delegate("agt1", "async")), http.StatusServiceUnavailable, "unavailable")
	if a.Calls() != 0 {
		t.Fatal("an async delegation started after the wait")
	}
	expect(t, e.do("POST", "/v1/tenants/acme/delegations", olga, delegate("agt1", "sync")), http.StatusOK)
}

// TestRepeatedRefusalsCounted: a caller refused again in the same way (same agent, capability
// and reason) bumps its record's attempts instead of adding a record per try; another refusal,
// or the first one after it, starts a record of its own. On every database.
func TestRepeatedRefusalsCounted(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		a := agenttest.New(t, agenttest.Answer(http.StatusOK, `{"result": "ok"}`))
		alice, _ := e.delegationSetup("acme", "agt1", a.Endpoint())
		card := sampleCard("agt2")
		card["endpoint"] = a.Endpoint()
		expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, card), http.StatusCreated)
		nobody := e.token("nobody", "acme", false)
		for range 5 {
			expect(t, e.do("POST", "/v1/tenants/acme/delegations", nobody, delegate("agt1", "sync")), http.StatusForbidden, "forbidden")
		}
		page := e.listDelegations("acme", nobody)
		if len(page.Items) != 1 || page.Items[0].Attempts != 5 || page.Items[0].Status != "rejected" {
			t.Fatalf("five refusals: %+v", page.Items)
		}
		expect(t, e.do("POST", "/v1/tenants/acme/delegations", nobody, delegate("agt2", "sync")), http.StatusForbidden, "forbidden")
		expect(t, e.do("POST", "/v1/tenants/acme/delegations", nobody, delegate("agt1", "sync")), http.StatusForbidden, "forbidden")
		page = e.listDelegations("acme", nobody)
		if len(page.Items) != 3 || page.Items[0].Attempts != 0 || page.Items[1].AgentID != "agt2" || page.Items[2].Attempts != 5 {
			t.Errorf("after another refusal and the first again: %+v", page.Items)
		}
		if a.Calls() != 0 {
			t.Errorf("a refused delegation reached the agent (%d calls)", a.Calls())
		}
	})
}
