package web_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestPolicyObjectTooLong: an object whose segments are each within bounds but whose whole text
// does not fit the policy table is refused with 400 naming the limit, never a 500 from storage.
func TestPolicyObjectTooLong(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		e.mkTenant("acme", "alice")
		alice := e.token("alice", "acme", false)
		long := "cards/" + strings.Repeat("a", 128) + "/capabilities/" + strings.Repeat("b", 128)
		r := e.do("POST", "/v1/tenants/acme/policies", alice, policyRule("bob", long, "delegate", "allow"))
		expect(t, r, http.StatusBadRequest, "invalid")
		if !strings.Contains(string(r.body), "255") {
			t.Fatalf("the refusal does not name the limit: %s", r.body)
		}
		expect(t, e.do("POST", "/v1/tenants/acme/authorize", alice, map[string]string{"object": long, "action": "delegate"}), http.StatusBadRequest, "invalid")
		// Just under the limit is stored.
		fits := "cards/" + strings.Repeat("a", 128) + "/capabilities/" + strings.Repeat("b", 255-len("cards//capabilities/")-128)
		expect(t, e.do("POST", "/v1/tenants/acme/policies", alice, policyRule("bob", fits, "delegate", "allow")), http.StatusCreated)
	})
}

// TestAuthorizeRoleSubject: asking about a built-in role answers for the role (as a policy naming
// the role means it), not for a user who happens to bear its name.
func TestAuthorizeRoleSubject(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		e.mkTenant("acme", "alice")
		alice := e.token("alice", "acme", false)
		q := map[string]string{"subject": "orchestrator", "object": "cards/agt1/capabilities/review_pr", "action": "delegate"}
		if d := e.ask("acme", alice, q); !d.Allowed || !strings.Contains(d.Reason, `"orchestrator"`) {
			t.Fatalf("orchestrator role on a capability: %+v", d)
		}
		expect(t, e.do("POST", "/v1/tenants/acme/policies", alice, policyRule("orchestrator", "cards/agt1/capabilities/review_pr", "delegate", "deny")), http.StatusCreated)
		if d := e.ask("acme", alice, q); d.Allowed {
			t.Fatalf("the role's deny is not seen: %+v", d)
		}
		if d := e.ask("acme", alice, map[string]string{"subject": "reader", "object": "policies", "action": "policies:manage"}); d.Allowed {
			t.Fatalf("reader manages policies: %+v", d)
		}
	})
}
