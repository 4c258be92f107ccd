package web_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
)

type roleList struct {
	Items []struct{ Subject, Role string } `json:"items"`
	Total int                              `json:"total"`
}

func (l roleList) has(subject, role string) bool {
	for _, a := range l.Items {
		if a.Subject == subject && a.Role == role {
			return true
		}
	}
	return false
}

func TestRoleBoundaries(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		e.mkTenant("acme", "alice")
		alice := e.token("alice", "acme", false)
		base := "/v1/tenants/acme"
		expect(t, e.do("POST", base+"/cards", alice, sampleCard("agt1")), http.StatusCreated)

		for _, g := range []struct{ subject, role string }{{"rita", "reader"}, {"ed", "editor"}, {"olga", "orchestrator"}} {
			expect(t, e.do("POST", base+"/roles", alice, map[string]string{"subject": g.subject, "role": g.role}), http.StatusCreated)
		}
		expect(t, e.do("POST", base+"/roles", alice, map[string]string{"subject": "rita", "role": "reader"}), http.StatusOK)
		r := e.do("GET", base+"/roles", alice, nil)
		expect(t, r, http.StatusOK)
		var roles roleList
		r.json(t, &roles)
		if roles.Total != 4 || !roles.has("alice", "admin") || !roles.has("rita", "reader") || !roles.has("ed", "editor") {
			t.Fatalf("roles %+v", roles)
		}

		rita, ed, olga, nobody := e.token("rita", "acme", false), e.token("ed", "acme", false), e.token("olga", "acme", false), e.token("nobody", "acme", false)
		// Readers read.
		expect(t, e.do("GET", base+"/cards/agt1", rita, nil), http.StatusOK)
		expect(t, e.do("GET", base+"/cards", rita, nil), http.StatusOK)
		expect(t, e.do("GET", base+"/cards/agt1", olga, nil), http.StatusOK)
		// ... and cannot write.
		expect(t, e.do("POST", base+"/cards", rita, sampleCard("agt2")), http.StatusForbidden, "forbidden")
		expect(t, e.do("PATCH", base+"/cards/agt1", rita, map[string]any{"name": "x"}), http.StatusForbidden, "forbidden")
		expect(t, e.do("DELETE", base+"/cards/agt1", olga, nil), http.StatusForbidden, "forbidden")
		// Editors write and delete, but cannot grant.
		expect(t, e.do("POST", base+"/cards", ed, sampleCard("agt2")), http.StatusCreated)
		expect(t, e.do("PATCH", base+"/cards/agt2", ed, map[string]any{"name": "x"}), http.StatusOK)
		expect(t, e.do("DELETE", base+"/cards/agt2", ed, nil), http.StatusNoContent)
		expect(t, e.do("POST", base+"/roles", ed, map[string]string{"subject": "ed", "role": "admin"}), http.StatusForbidden, "forbidden")
		expect(t, e.do("GET", base+"/roles", ed, nil), http.StatusForbidden, "forbidden")
		expect(t, e.do("DELETE", base+"/roles?subject=rita&role=reader", rita, nil), http.StatusForbidden, "forbidden")
		// A subject with no role may do nothing.
		expect(t, e.do("GET", base+"/cards/agt1", nobody, nil), http.StatusForbidden, "forbidden")
		r = e.do("GET", base+"/cards", nobody, nil)
		expect(t, r, http.StatusOK)
		var page struct{ Total int }
		r.json(t, &page)
		if page.Total != 0 {
			t.Fatalf("a subject with no role lists %d cards", page.Total)
		}

		// A revoked role stops working on the next request.
		expect(t, e.do("DELETE", base+"/roles?subject=ed&role=editor", alice, nil), http.StatusNoContent)
		expect(t, e.do("POST", base+"/cards", ed, sampleCard("agt3")), http.StatusForbidden, "forbidden")
		expect(t, e.do("DELETE", base+"/roles", alice, map[string]string{"subject": "rita", "role": "reader"}), http.StatusNoContent)
		expect(t, e.do("GET", base+"/cards/agt1", rita, nil), http.StatusForbidden, "forbidden")
		expect(t, e.do("DELETE", base+"/roles?subject=rita&role=reader", alice, nil), http.StatusNotFound, "not_found")

		// Bad assignments.
		for _, body := range []any{map[string]string{"subject": "x", "role": "owner"}, map[string]string{"subject": "", "role": "reader"},
			map[string]string{"subject": "role:admin", "role": "reader"}, map[string]string{"subject": "a*", "role": "reader"},
			map[string]any{"subject": "x", "role": "reader", "extra": 1}, `{"subject":`} {
			r := e.do("POST", base+"/roles", alice, body)
			if r.status != http.StatusBadRequest {
				t.Fatalf("grant %v: %d %s", body, r.status, r.body)
			}
		}
	})
}

// TestTenantIsolation: a valid token of tenant B gets 404 on every card and role endpoint of tenant
// A, exactly like a missing tenant, and changes nothing.
func TestTenantIsolation(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		e.mkTenant("tenant-a", "alice")
		e.mkTenant("tenant-b", "bob")
		alice, bob := e.token("alice", "tenant-a", false), e.token("bob", "tenant-b", false)
		// bob also claims to be alice's namesake in B: a subject's name grants nothing across tenants.
		aliceInB := e.token("alice", "tenant-b", false)
		expect(t, e.do("POST", "/v1/tenants/tenant-a/cards", alice, sampleCard("agt1")), http.StatusCreated)
		beforeCard := e.getCard("tenant-a", "agt1")
		beforeRoles := e.do("GET", "/v1/tenants/tenant-a/roles", alice, nil)

		requests := []struct {
			method, path string
			body         any
		}{
			{"GET", "/cards", nil},
			{"POST", "/cards", sampleCard("agt2")},
			{"GET", "/cards/agt1", nil},
			{"PUT", "/cards/agt1", sampleCard("agt1")},
			{"PATCH", "/cards/agt1", map[string]any{"name": "pwned"}},
			{"DELETE", "/cards/agt1", nil},
			{"GET", "/roles", nil},
			{"POST", "/roles", map[string]string{"subject": "bob", "role": "admin"}},
			{"DELETE", "/roles?subject=alice&role=admin", nil},
		}
		for _, rq := range requests {
			for _, tok := range []string{bob, aliceInB} {
				got := e.do(rq.method, "/v1/tenants/tenant-a"+rq.path, tok, rq.body)
				missing := e.do(rq.method, "/v1/tenants/no-such-tenant"+rq.path, tok, rq.body)
				expect(t, got, http.StatusNotFound, "not_found")
				expect(t, missing, http.StatusNotFound, "not_found")
				gotMsg, missingMsg := errMessage(t, got), errMessage(t, missing)
				if gotMsg != strings.ReplaceAll(missingMsg, "no-such-tenant", "tenant-a") {
					t.Fatalf("%s %s: message %q differs from a missing tenant's %q", rq.method, rq.path, gotMsg, missingMsg)
				}
			}
		}
		if after := e.getCard("tenant-a", "agt1"); !bytes.Equal(beforeCard.body, after.body) {
			t.Fatalf("card changed:\n%s\n%s", beforeCard.body, after.body)
		}
		if after := e.do("GET", "/v1/tenants/tenant-a/roles", alice, nil); !bytes.Equal(beforeRoles.body, after.body) {
			t.Fatalf("roles changed:\n%s\n%s", beforeRoles.body, after.body)
		}
		// B's own data is B's alone.
		r := e.do("GET", "/v1/tenants/tenant-b/cards", bob, nil)
		var page struct{ Total int }
		r.json(t, &page)
		if page.Total != 0 {
			t.Fatalf("tenant-b sees %d cards", page.Total)
		}
	})
}

func errMessage(t *testing.T, r response) string {
	t.Helper()
	var b struct {
		Error struct{ Message string } `json:"error"`
	}
	r.json(t, &b)
	return b.Error.Message
}
