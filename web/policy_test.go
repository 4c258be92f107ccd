package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/agentcards/agentcards/storage/storagetest"
)

type decision struct {
	Allowed bool   `json:"allowed"`
	Reason  string `json:"reason"`
}

// ask posts an authorize question and returns the decision.
func (e *env) ask(tenant, token string, q map[string]string) decision {
	e.t.Helper()
	r := e.do("POST", "/v1/tenants/"+tenant+"/authorize", token, q)
	expect(e.t, r, http.StatusOK)
	var d decision
	r.json(e.t, &d)
	return d
}

func policyRule(subject, object, action, effect string) map[string]string {
	return map[string]string{"subject": subject, "object": object, "action": action, "effect": effect}
}

// TestPolicySemantics: deny beats allow, "*" matches one segment and never crosses "/", a grant on
// one capability allows only that capability, a revoked grant is refused on the next request,
// and the authorize answer names the deciding policy.
func TestPolicySemantics(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		e.mkTenant("acme", "alice")
		alice, bob := e.token("alice", "acme", false), e.token("bob", "acme", false)
		base := "/v1/tenants/acme"
		can := func(subject, obj, act string) decision {
			t.Helper()
			return e.ask("acme", alice, map[string]string{"subject": subject, "object": obj, "action": act})
		}

		expect(t, e.do("POST", base+"/policies", alice, policyRule("bob", "cards/*/capabilities/review_pr", "delegate", "allow")), http.StatusCreated)
		expect(t, e.do("POST", base+"/policies", alice, policyRule("bob", "cards/*/capabilities/review_pr", "delegate", "allow")), http.StatusOK)
		if d := can("bob", "cards/agt1/capabilities/review_pr", "delegate"); !d.Allowed || !strings.Contains(d.Reason, "review_pr") {
			t.Fatalf("granted capability: %+v", d)
		}
		for _, obj := range []string{"cards/agt1/capabilities/deploy", "cards/agt1", "cards/agt1/capabilities/review_pr2"} {
			if d := can("bob", obj, "delegate"); d.Allowed || d.Reason != "no policy matched" {
				t.Fatalf("%s: %+v", obj, d)
			}
		}
		// "*" does not cross "/": cards/* grants no capability.
		expect(t, e.do("POST", base+"/policies", alice, policyRule("carol", "cards/*", "delegate", "allow")), http.StatusCreated)
		if d := can("carol", "cards/agt1/capabilities/review_pr", "delegate"); d.Allowed {
			t.Fatalf("cards/* crossed a slash: %+v", d)
		}
		// Deny beats allow, including an allow that comes from a role.
		expect(t, e.do("POST", base+"/roles", alice, map[string]string{"subject": "bob", "role": "orchestrator"}), http.StatusCreated)
		expect(t, e.do("POST", base+"/policies", alice, policyRule("bob", "cards/agt1/capabilities/review_pr", "delegate", "deny")), http.StatusCreated)
		if d := can("bob", "cards/agt1/capabilities/review_pr", "delegate"); d.Allowed || !strings.Contains(d.Reason, `denied by policy`) {
			t.Fatalf("deny lost: %+v", d)
		}
		if d := can("bob", "cards/agt2/capabilities/review_pr", "delegate"); !d.Allowed {
			t.Fatalf("deny spread to another card: %+v", d)
		}
		// A role subject: deny the orchestrator role a capability for every member.
		expect(t, e.do("POST", base+"/policies", alice, policyRule("orchestrator", "cards/*/capabilities/deploy", "delegate", "deny")), http.StatusCreated)
		if d := can("bob", "cards/agt2/capabilities/deploy", "delegate"); d.Allowed || !strings.Contains(d.Reason, `"orchestrator"`) {
			t.Fatalf("role deny: %+v", d)
		}
		// The caller asks about itself without policies:manage; not about others.
		if d := e.ask("acme", bob, map[string]string{"object": "cards/agt2/capabilities/review_pr", "action": "delegate"}); !d.Allowed {
			t.Fatalf("self question: %+v", d)
		}
		expect(t, e.do("POST", base+"/authorize", bob, map[string]string{"subject": "carol", "object": "cards/x", "action": "delegate"}), http.StatusForbidden, "forbidden")
		expect(t, e.do("GET", base+"/policies", bob, nil), http.StatusForbidden, "forbidden")
		expect(t, e.do("POST", base+"/policies", bob, policyRule("bob", "policies", "policies:manage", "allow")), http.StatusForbidden, "forbidden")

		// A revoked grant is refused on the very next request.
		if d := e.ask("acme", bob, map[string]string{"object": "cards/agt2", "action": "cards:read"}); !d.Allowed {
			t.Fatalf("role grant: %+v", d)
		}
		expect(t, e.do("DELETE", base+"/roles?subject=bob&role=orchestrator", alice, nil), http.StatusNoContent)
		if d := e.ask("acme", bob, map[string]string{"object": "cards/agt2", "action": "cards:read"}); d.Allowed {
			t.Fatalf("revoked role still honoured: %+v", d)
		}
		q := url.Values{"subject": {"bob"}, "object": {"cards/*/capabilities/review_pr"}, "action": {"delegate"}, "effect": {"allow"}}
		expect(t, e.do("DELETE", base+"/policies?"+q.Encode(), alice, nil), http.StatusNoContent)
		if d := e.ask("acme", bob, map[string]string{"object": "cards/agt3/capabilities/review_pr", "action": "delegate"}); d.Allowed {
			t.Fatalf("revoked policy still honoured: %+v", d)
		}
		expect(t, e.do("DELETE", base+"/policies?"+q.Encode(), alice, nil), http.StatusNotFound, "not_found")

		r := e.do("GET", base+"/policies", alice, nil)
		expect(t, r, http.StatusOK)
		var list struct {
			Items []map[string]string `json:"items"`
		}
		r.json(t, &list)
		found := false
		for _, p := range list.Items {
			found = found || (p["subject"] == "orchestrator" && p["object"] == "cards/*/capabilities/deploy" && p["effect"] == "deny")
		}
		if !found {
			t.Fatalf("policy list lacks the role deny: %s", r.body)
		}

		// Validation: unknown kinds, empty segments, glob metacharacters, bad actions and effects.
		for _, p := range []map[string]string{
			policyRule("bob", "secrets/x", "delegate", "allow"),
			policyRule("bob", "cards//capabilities/x", "delegate", "allow"),
			policyRule("bob", "cards/a*b", "delegate", "allow"),
			policyRule("bob", "cards/**", "delegate", "allow"),
			policyRule("bob", "cards/x/capabilities/[ab]", "delegate", "allow"),
			policyRule("bob", "cards/x/skills/y", "delegate", "allow"),
			policyRule("bob", "cards/x/", "delegate", "allow"),
			policyRule("bob", "policies/x", "policies:manage", "allow"),
			policyRule("bob", "cards/x", "fly", "allow"),
			policyRule("bob", "cards/x", "delegate", "maybe"),
			policyRule("b*b", "cards/x", "delegate", "allow"),
		} {
			expect(t, e.do("POST", base+"/policies", alice, p), http.StatusBadRequest, "invalid")
		}
		expect(t, e.do("POST", base+"/authorize", alice, map[string]string{"object": "cards/*", "action": "delegate"}), http.StatusBadRequest, "invalid")
	})
}

// TestRevokedGrantRefusedOnOtherReplica: two servers share one Postgres database, each with its
// own enforcer cache and tenant-row cache (server.tenantCacheTtl at its default). A change made
// through A applies on A at once, and on B to every request that starts once the TTL has passed
// since the change: B's copy of the tenant row was read before the change, so it is older than
// the TTL by then. That is checked on the first such request, however loaded the machine is.
func TestRevokedGrantRefusedOnOtherReplica(t *testing.T) {
	dbs := storagetest.OpenShared(t, "postgres", 2)
	a, b := newEnv(t, dbs[0], 1<<20), newEnv(t, dbs[1], 1<<20)
	// afterTTL checks cond on B's next request once the TTL has passed: the sleep is the
	// promise under test (at most tenantCacheTtl), not a guess at how long something takes.
	afterTTL := func(what string, cond func() bool) {
		t.Helper()
		time.Sleep(defaultTenantCacheTTL + 20*time.Millisecond)
		if !cond() {
			t.Fatalf("%s: not on the first request after server.tenantCacheTtl (%s)", what, defaultTenantCacheTTL)
		}
	}
	a.mkTenant("acme", "alice")
	alice, bob := a.token("alice", "acme", false), a.token("bob", "acme", false)
	question := map[string]string{"object": "cards/agt1/capabilities/review_pr", "action": "delegate"}
	allowedOn := func(e *env, tenant, token string, q map[string]string) func() bool {
		return func() bool { return e.ask(tenant, token, q).Allowed }
	}
	refusedOn := func(e *env, tenant, token string, q map[string]string) func() bool {
		return func() bool { return !e.ask(tenant, token, q).Allowed }
	}
	if allowedOn(b, "acme", bob, question)() {
		t.Fatal("allowed before the grant")
	}
	expect(t, a.do("POST", "/v1/tenants/acme/policies", alice, policyRule("bob", "cards/*/capabilities/review_pr", "delegate", "allow")), http.StatusCreated)
	if !allowedOn(a, "acme", bob, question)() {
		t.Fatal("grant not seen at once on A")
	}
	afterTTL("grant seen on B", allowedOn(b, "acme", bob, question))
	// B's caches now hold the grant; A revokes it.
	expect(t, a.do("DELETE", "/v1/tenants/acme/policies", alice, policyRule("bob", "cards/*/capabilities/review_pr", "delegate", "allow")), http.StatusNoContent)
	if allowedOn(a, "acme", bob, question)() {
		t.Fatal("A honours the grant it just revoked")
	}
	afterTTL("revocation seen on B", refusedOn(b, "acme", bob, question))
	// Role revocations travel the same way.
	expect(t, a.do("POST", "/v1/tenants/acme/roles", alice, map[string]string{"subject": "bob", "role": "orchestrator"}), http.StatusCreated)
	afterTTL("role seen on B", allowedOn(b, "acme", bob, question))
	// The request path (Check, whose decisions are memoised) too: allowed means the missing card
	// is 404, refused is 403.
	expect(t, b.do("GET", "/v1/tenants/acme/cards/agt1", bob, nil), http.StatusNotFound, "not_found")
	expect(t, a.do("DELETE", "/v1/tenants/acme/roles?subject=bob&role=orchestrator", alice, nil), http.StatusNoContent)
	expect(t, a.do("GET", "/v1/tenants/acme/cards/agt1", bob, nil), http.StatusForbidden, "forbidden")
	afterTTL("role revocation seen by B's request path", func() bool {
		return b.do("GET", "/v1/tenants/acme/cards/agt1", bob, nil).status == http.StatusForbidden
	})
	if allowedOn(b, "acme", bob, question)() {
		t.Fatal("B's authorize answer disagrees with its request path")
	}
	// A suspension made on A shuts B's door within the TTL too.
	expect(t, a.do("PATCH", "/v1/tenants/acme", a.admin(), map[string]string{"status": "suspended"}), http.StatusOK)
	expect(t, a.do("GET", "/v1/tenants/acme/cards", alice, nil), http.StatusForbidden, "tenant_suspended")
	afterTTL("suspension seen on B", func() bool {
		return b.do("GET", "/v1/tenants/acme/cards", alice, nil).status == http.StatusForbidden
	})
	// A tenant deleted and created again with the same id starts from its own seed on B.
	a.mkTenant("beta", "alice")
	aliceBeta := a.token("alice", "beta", false)
	manage := map[string]string{"object": "policies", "action": "policies:manage"}
	if !allowedOn(b, "beta", aliceBeta, manage)() {
		t.Fatal("alice is not admin of beta on B")
	}
	expect(t, a.do("DELETE", "/v1/tenants/beta", a.admin(), nil), http.StatusNoContent)
	a.mkTenant("beta", "zed")
	afterTTL("B drops the deleted tenant's rules", refusedOn(b, "beta", aliceBeta, manage))
}
