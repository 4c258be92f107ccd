package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// revokePath is the DELETE of subject's role in tenant.
func revokePath(tenant, subject, role string) string {
	return "/v1/tenants/" + tenant + "/roles?" + url.Values{"subject": {subject}, "role": {role}}.Encode()
}

// removePath is the DELETE of a policy of tenant.
func removePath(tenant, subject, object, action, effect string) string {
	return "/v1/tenants/" + tenant + "/policies?" +
		url.Values{"subject": {subject}, "object": {object}, "action": {action}, "effect": {effect}}.Encode()
}

// expectLockout fails unless r is the lockout refusal, whose message says what to do instead.
func expectLockout(t *testing.T, r response, remedy string) {
	t.Helper()
	expect(t, r, http.StatusConflict, "lockout")
	var body struct{ Error struct{ Message string } }
	r.json(t, &body)
	if m := body.Error.Message; !strings.Contains(m, "would leave no one who may manage the tenant's roles and policies") ||
		!strings.Contains(m, remedy) {
		t.Errorf("lockout message %q does not say why, or %q", m, remedy)
	}
}

// TestLockout: a member cannot take the right to manage the tenant's roles and policies from its
// last holders, by revoking a role, removing an allow, adding a deny or granting a role that
// carries one; each is refused with 409 lockout and changes nothing, while the same changes pass
// when someone else keeps the right. A platform admin may make them, and repair the tenant.
func TestLockout(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		e.mkTenant("acme", "alice")
		alice, bob, carol, root := e.token("alice", "acme", false), e.token("bob", "acme", false), e.token("carol", "acme", false), e.admin()
		base := "/v1/tenants/acme"
		manage := policyRule("alice", "policies", "policies:manage", "deny")

		expectLockout(t, e.do("DELETE", revokePath("acme", "alice", "admin"), alice, nil), "give another subject the admin role first")
		expectLockout(t, e.do("DELETE", base+"/roles", alice, map[string]string{"subject": "alice", "role": "admin"}), "admin role")
		expectLockout(t, e.do("DELETE", removePath("acme", "admin", "policies", "policies:manage", "allow"), alice, nil),
			"first allow policies:manage on policies to a subject")
		expectLockout(t, e.do("POST", base+"/policies", alice, manage), "deny a narrower subject")
		expectLockout(t, e.do("POST", base+"/policies", alice, policyRule("admin", "policies", "policies:manage", "deny")), "deny a narrower subject")
		// Nothing changed: alice still manages, with her role and the admin role's allow.
		r := e.do("GET", base+"/roles", alice, nil)
		expect(t, r, http.StatusOK)
		var roles roleList
		r.json(t, &roles)
		if !roles.has("alice", "admin") {
			t.Fatalf("a refused revoke revoked: %+v", roles)
		}
		if d := e.ask("acme", alice, map[string]string{"subject": "alice", "object": "policies", "action": "policies:manage"}); !d.Allowed {
			t.Fatalf("a refused change took the right away: %+v", d)
		}

		// What leaves someone the right passes: a deny of a subject who does not hold it, and
		// alice's own revoke once bob is an admin.
		expect(t, e.do("POST", base+"/policies", alice, policyRule("dave", "policies", "policies:manage", "deny")), http.StatusCreated)
		expect(t, e.do("POST", base+"/roles", alice, map[string]string{"subject": "bob", "role": "admin"}), http.StatusCreated)
		expect(t, e.do("DELETE", revokePath("acme", "alice", "admin"), alice, nil), http.StatusNoContent)
		expectLockout(t, e.do("DELETE", revokePath("acme", "bob", "admin"), bob, nil), "admin role")

		// A grant of a role that carries a deny of the right, to its last holder, is refused too.
		expect(t, e.do("POST", base+"/policies", bob, policyRule("reader", "policies", "policies:manage", "deny")), http.StatusCreated)
		expectLockout(t, e.do("POST", base+"/roles", bob, map[string]string{"subject": "bob", "role": "reader"}), "remove the deny first")
		expect(t, e.do("DELETE", removePath("acme", "reader", "policies", "policies:manage", "deny"), bob, nil), http.StatusNoContent)

		// A policy naming carol keeps the tenant managed without the admin role.
		expect(t, e.do("POST", base+"/policies", bob, policyRule("carol", "policies", "policies:manage", "allow")), http.StatusCreated)
		expect(t, e.do("DELETE", removePath("acme", "admin", "policies", "policies:manage", "allow"), carol, nil), http.StatusNoContent)
		expectLockout(t, e.do("DELETE", removePath("acme", "carol", "policies", "policies:manage", "allow"), carol, nil), "first allow")

		// A platform admin may make the change, and repair it.
		expect(t, e.do("DELETE", removePath("acme", "carol", "policies", "policies:manage", "allow"), root, nil), http.StatusNoContent)
		expect(t, e.do("GET", base+"/roles", carol, nil), http.StatusForbidden, "forbidden")
		expect(t, e.do("GET", base+"/roles", bob, nil), http.StatusForbidden, "forbidden")
		expect(t, e.do("POST", base+"/policies", root, policyRule("admin", "policies", "policies:manage", "allow")), http.StatusCreated)
		expect(t, e.do("GET", base+"/roles", bob, nil), http.StatusOK)
	})
}

// TestLockoutMCP: the MCP door refuses what REST refuses, with the same code.
func TestLockoutMCP(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		e.mkTenant("acme", "alice")
		s := mustSession(t, e, e.token("alice", "acme", false))
		for _, c := range []struct{ tool, args string }{
			{"roles_revoke", `{"subject": "alice", "role": "admin"}`},
			{"policies_remove", `{"subject": "admin", "object": "policies", "action": "policies:manage", "effect": "allow"}`},
			{"policies_add", `{"subject": "alice", "object": "policies", "action": "policies:manage", "effect": "deny"}`},
		} {
			res := callTool(t, s, c.tool, c.args)
			if code := toolErrCode(t, res); code != "lockout" {
				t.Errorf("%s %s: %s, want lockout", c.tool, c.args, code)
			}
			if !strings.Contains(text(res), "would leave no one who may manage") {
				t.Errorf("%s: the message says not why: %s", c.tool, text(res))
			}
		}
		r := e.do("GET", "/v1/tenants/acme/roles", e.admin(), nil)
		var roles roleList
		r.json(t, &roles)
		if !roles.has("alice", "admin") {
			t.Errorf("a refused tool call revoked: %+v", roles)
		}
	})
}

// TestLockoutConcurrent: the last two admins revoking their own admin role at once: exactly one
// revoke passes, the other is refused as a lockout, and one admin is left. The check runs in the
// transaction of the write, so both cannot see the other still an admin.
func TestLockoutConcurrent(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		e.mkTenant("acme", "alice", "bob")
		root := e.admin()
		for round := range 3 {
			subjects := []string{"alice", "bob"}
			statuses := make([]response, len(subjects))
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i, s := range subjects {
				tok := e.token(s, "acme", false)
				wg.Go(func() {
					<-start
					statuses[i] = e.do("DELETE", revokePath("acme", s, "admin"), tok, nil)
				})
			}
			close(start)
			wg.Wait()
			var passed, refused []string
			for i, r := range statuses {
				switch {
				case r.status == http.StatusNoContent:
					passed = append(passed, subjects[i])
				case r.status == http.StatusConflict && r.errCode(t) == "lockout":
					refused = append(refused, subjects[i])
				default:
					t.Fatalf("round %d: %s's revoke answered %d %s", round, subjects[i], r.status, r.body)
				}
			}
			if len(passed) != 1 || len(refused) != 1 {
				t.Fatalf("round %d: passed %v, refused %v; want one each", round, passed, refused)
			}
			r := e.do("GET", "/v1/tenants/acme/roles", root, nil)
			var roles roleList
			r.json(t, &roles)
			if roles.has(passed[0], "admin") || !roles.has(refused[0], "admin") {
				t.Fatalf("round %d: roles %+v after %s's revoke passed", round, roles, passed[0])
			}
			expect(t, e.do("POST", "/v1/tenants/acme/roles", root, map[string]string{"subject": passed[0], "role": "admin"}), http.StatusCreated)
		}
	})
}
