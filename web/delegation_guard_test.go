package web_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentcards/agentcards/cards/delegation"
	"github.com/agentcards/agentcards/storage/storagetest"
)

// TestDelegationDepth: an agent delegating further with the token it was called with acts one
// level deeper, and the server refuses a chain longer than its maximum, whatever the caller says.
func TestDelegationDepth(t *testing.T) {
	e := newEnvWith(t, storagetest.Open(t, "sqlite"), envOptions{allowLoopback: true, delegation: delegation.Config{MaxDepth: 2}})
	a := newAgent(t, reply(http.StatusOK, `{"result": "ok"}`))
	alice, olga := e.delegationSetup("acme", "agt1", a.endpoint())
	expect(t, e.do("POST", "/v1/tenants/acme/policies", alice, policy("agent:agt1", "cards/*/capabilities/review_pr", "delegate", "allow")), http.StatusCreated)

	expect(t, e.do("POST", "/v1/tenants/acme/delegations", olga, delegate("agt1", "sync")), http.StatusOK)
	_, auth := a.received()
	hop1 := strings.TrimPrefix(auth, "Bearer ")
	req := delegate("agt1", "sync")
	req["context"] = map[string]any{"depth": 0} // the caller's word on depth counts for nothing
	r := e.do("POST", "/v1/tenants/acme/delegations", hop1, req)
	expect(t, r, http.StatusOK)
	if d := decodeDelegation(t, r); d.Depth != 2 || d.Caller != "agent:agt1" || d.Status != delegation.StatusCompleted {
		t.Fatalf("second hop %+v", d)
	}
	_, auth = a.received()
	hop2 := strings.TrimPrefix(auth, "Bearer ")
	if c := e.verifyWithJWKS(hop2); c.Depth != 2 || c.Caller != "agent:agt1" {
		t.Fatalf("second hop token %+v", c)
	}
	calls := a.calls.Load()
	expect(t, e.do("POST", "/v1/tenants/acme/delegations", hop2, req), http.StatusForbidden, "depth_exceeded")
	if a.calls.Load() != calls {
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
		delegation: delegation.Config{BreakerFailures: 2, BreakerCooldown: 100 * time.Millisecond}})
	a := newAgent(t, reply(http.StatusInternalServerError, `overloaded`))
	_, olga := e.delegationSetup("acme", "agt1", a.endpoint())
	for i := 0; i < 2; i++ {
		r := e.do("POST", "/v1/tenants/acme/delegations", olga, delegate("agt1", "sync"))
		expect(t, r, http.StatusOK)
		if d := decodeDelegation(t, r); d.Status != delegation.StatusFailed || !strings.Contains(d.Error, "overloaded") {
			t.Fatalf("failure %d: %+v", i, d)
		}
	}
	calls := a.calls.Load()
	expect(t, e.do("POST", "/v1/tenants/acme/delegations", olga, delegate("agt1", "sync")), http.StatusServiceUnavailable, "agent_unavailable")
	if a.calls.Load() != calls {
		t.Fatal("an open breaker let a call through")
	}
	a.setAnswer(reply(http.StatusOK, `{"result": "back"}`))
	time.Sleep(150 * time.Millisecond) // past the cooldown: the breaker lets one trial call through
	r := e.do("POST", "/v1/tenants/acme/delegations", olga, delegate("agt1", "sync"))
	expect(t, r, http.StatusOK)
	if d := decodeDelegation(t, r); d.Status != delegation.StatusCompleted {
		t.Fatalf("after recovery %+v", d)
	}
	expect(t, e.do("POST", "/v1/tenants/acme/delegations", olga, delegate("agt1", "sync")), http.StatusOK)
}

// TestDelegationRateLimit: a tenant's delegations beyond its rate are refused with 429 and
// recorded as rejected; attempts refused by policy do not spend the rate.
func TestDelegationRateLimit(t *testing.T) {
	e := newEnvWith(t, storagetest.Open(t, "sqlite"), envOptions{allowLoopback: true,
		delegation: delegation.Config{RatePerSecond: 0.001, RateBurst: 2}})
	a := newAgent(t, reply(http.StatusOK, `{"result": "ok"}`))
	alice, olga := e.delegationSetup("acme", "agt1", a.endpoint())
	rita := e.token("rita", "acme", false)
	for i := 0; i < 3; i++ {
		expect(t, e.do("POST", "/v1/tenants/acme/delegations", rita, delegate("agt1", "sync")), http.StatusForbidden, "forbidden")
	}
	expect(t, e.do("POST", "/v1/tenants/acme/delegations", olga, delegate("agt1", "sync")), http.StatusOK)
	expect(t, e.do("POST", "/v1/tenants/acme/delegations", olga, delegate("agt1", "async")), http.StatusAccepted)
	expect(t, e.do("POST", "/v1/tenants/acme/delegations", olga, delegate("agt1", "sync")), http.StatusTooManyRequests, "rate_limited")
	if a.calls.Load() > 2 {
		t.Fatalf("the agent got %d calls", a.calls.Load())
	}
	var page struct {
		Items []delegation.Delegation `json:"items"`
	}
	e.do("GET", "/v1/tenants/acme/delegations?status=rejected", alice, nil).json(t, &page)
	if len(page.Items) != 4 || page.Items[0].Caller != "olga" || !strings.Contains(page.Items[0].Error, "too many delegations") {
		t.Fatalf("rejected records %+v", page.Items)
	}
}

// TestDelegationSuspendedTenant: a suspended tenant's delegations are refused before anything
// is looked up or sent.
func TestDelegationSuspendedTenant(t *testing.T) {
	e := newEnv(t, storagetest.Open(t, "sqlite"), 1<<20)
	a := newAgent(t, reply(http.StatusOK, `{"result": "ok"}`))
	_, olga := e.delegationSetup("acme", "agt1", a.endpoint())
	expect(t, e.do("PATCH", "/v1/tenants/acme", e.admin(), map[string]string{"status": "suspended"}), http.StatusOK)
	expect(t, e.do("POST", "/v1/tenants/acme/delegations", olga, delegate("agt1", "sync")), http.StatusForbidden, "tenant_suspended")
	if a.calls.Load() != 0 {
		t.Fatal("a suspended tenant's delegation reached the agent")
	}
}

// TestDelegationSSRFGuard: under the default guard an endpoint on loopback is refused before
// anything is sent (and the refusal recorded); a test allowlist of 127.0.0.0/8 lets it through,
// as every other delegation test shows.
func TestDelegationSSRFGuard(t *testing.T) {
	e := newEnvWith(t, storagetest.Open(t, "sqlite"), envOptions{allowLoopback: false})
	a := newAgent(t, reply(http.StatusOK, `{"result": "ok"}`))
	alice, olga := e.delegationSetup("acme", "agt1", a.endpoint())
	for i := 0; i < 6; i++ { // more than the breaker's failures: the guard's refusals do not trip it
		expect(t, e.do("POST", "/v1/tenants/acme/delegations", olga, delegate("agt1", "sync")), http.StatusForbidden, "endpoint_blocked")
	}
	if a.calls.Load() != 0 {
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
	_, olga = allowed.delegationSetup("acme", "agt1", a.endpoint())
	expect(t, allowed.do("POST", "/v1/tenants/acme/delegations", olga, delegate("agt1", "sync")), http.StatusOK)
}

// TestDelegationIsolation: an orchestrator of tenant B can neither delegate to tenant A's agent
// nor read A's delegations: each answers 404 like a missing one.
func TestDelegationIsolation(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		a := newAgent(t, reply(http.StatusOK, `{"result": "ok"}`))
		aliceA, olgaA := e.delegationSetup("tenant-a", "agt1", a.endpoint())
		r := e.do("POST", "/v1/tenants/tenant-a/delegations", olgaA, delegate("agt1", "sync"))
		expect(t, r, http.StatusOK)
		id := decodeDelegation(t, r).ID
		e.mkTenant("tenant-b", "bob")
		bob := e.token("bob", "tenant-b", false)
		expect(t, e.do("POST", "/v1/tenants/tenant-b/roles", bob, map[string]string{"subject": "olga", "role": "orchestrator"}), http.StatusCreated)
		olgaB := e.token("olga", "tenant-b", false)
		calls := a.calls.Load()
		for _, tok := range []string{bob, olgaB} {
			expect(t, e.do("POST", "/v1/tenants/tenant-a/delegations", tok, delegate("agt1", "sync")), http.StatusNotFound, "not_found")
			expect(t, e.do("POST", "/v1/tenants/tenant-b/delegations", tok, delegate("agt1", "sync")), http.StatusNotFound, "not_found")
			expect(t, e.do("GET", "/v1/tenants/tenant-a/delegations/"+id, tok, nil), http.StatusNotFound, "not_found")
			expect(t, e.do("GET", "/v1/tenants/tenant-b/delegations/"+id, tok, nil), http.StatusNotFound, "not_found")
			expect(t, e.do("GET", "/v1/tenants/tenant-a/delegations", tok, nil), http.StatusNotFound, "not_found")
		}
		if a.calls.Load() != calls {
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
// below the server's default do not count as the agent's failures.
func TestDelegationBreakerPerTenant(t *testing.T) {
	e := newEnvWith(t, storagetest.Open(t, "sqlite"), envOptions{allowLoopback: true,
		delegation: delegation.Config{BreakerFailures: 2, BreakerCooldown: time.Minute}})
	a := newAgent(t, func(w http.ResponseWriter, req taskRequest) {
		if req.Task == "slow" {
			time.Sleep(100 * time.Millisecond)
		}
		reply(http.StatusInternalServerError, `overloaded`)(w, req)
	})
	_, olgaA := e.delegationSetup("tenant-a", "agt1", a.endpoint())
	_, olgaB := e.delegationSetup("tenant-b", "agt1", a.endpoint())
	// Tenant A times out on purpose, with a tiny timeoutMs, more often than the breaker allows.
	slow := delegate("agt1", "sync")
	slow["task"], slow["timeoutMs"] = "slow", 1
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
	expect(t, e.do("POST", "/v1/tenants/tenant-a/delegations", olgaA, delegate("agt1", "sync")), http.StatusServiceUnavailable, "agent_unavailable")
	calls := a.calls.Load()
	expect(t, e.do("POST", "/v1/tenants/tenant-b/delegations", olgaB, delegate("agt1", "sync")), http.StatusOK)
	if a.calls.Load() != calls+1 {
		t.Fatal("tenant B's call did not reach the agent")
	}
}

// TestDelegationAfterShutdownBegan: once the dispatcher waits for async delegations in flight
// (shutdown), a new async delegation is refused with 503 instead of racing the wait; sync ones,
// which finish within their request, still go.
func TestDelegationAfterShutdownBegan(t *testing.T) {
	e := newEnv(t, storagetest.Open(t, "sqlite"), 1<<20)
	a := newAgent(t, reply(http.StatusOK, `{"result": "ok"}`))
	_, olga := e.delegationSetup("acme", "agt1", a.endpoint())
	e.dispatcher.Wait()
	expect(t, e.do("POST", "/v1/tenants/acme/delegations", olga, delegate("agt1", "async")), http.StatusServiceUnavailable, "unavailable")
	if a.calls.Load() != 0 {
		t.Fatal("an async delegation started after the wait")
	}
	expect(t, e.do("POST", "/v1/tenants/acme/delegations", olga, delegate("agt1", "sync")), http.StatusOK)
}
