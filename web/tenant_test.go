package web_test

import (
	"net/http"
	"testing"
)

func TestTenantLifecycle(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		root := e.admin()
		r := e.do("POST", "/v1/tenants", root, map[string]any{"id": "acme", "name": "Acme", "admins": []string{"alice"}})
		expect(t, r, http.StatusCreated)
		if got := r.header.Get("Location"); got != "/v1/tenants/acme" {
			t.Fatalf("Location %q", got)
		}
		var created struct{ ID, Name, Status string }
		r.json(t, &created)
		if created.ID != "acme" || created.Name != "Acme" || created.Status != "active" {
			t.Fatalf("created %+v", created)
		}
		expect(t, e.do("POST", "/v1/tenants", root, map[string]any{"id": "acme", "name": "Again"}), http.StatusConflict, "conflict")
		e.mkTenant("beta")

		var list struct {
			Items []struct{ ID string } `json:"items"`
			Total int                   `json:"total"`
		}
		r = e.do("GET", "/v1/tenants", root, nil)
		expect(t, r, http.StatusOK)
		r.json(t, &list)
		if list.Total != 2 || list.Items[0].ID != "acme" || list.Items[1].ID != "beta" {
			t.Fatalf("list %+v", list)
		}

		r = e.do("PATCH", "/v1/tenants/acme", root, map[string]any{"name": "Acme Corp"})
		expect(t, r, http.StatusOK)
		// Like every PATCH, it takes a merge patch by its own media type.
		status, err := send(e, "PATCH", "/v1/tenants/acme", root, `{"name": "Acme Corp"}`, "Content-Type", "application/merge-patch+json")
		if err != nil || status != http.StatusOK {
			t.Fatalf("PATCH as application/merge-patch+json: %d, %v", status, err)
		}
		r = e.do("GET", "/v1/tenants/acme", root, nil)
		expect(t, r, http.StatusOK)
		r.json(t, &created)
		if created.Name != "Acme Corp" || created.Status != "active" {
			t.Fatalf("after rename %+v", created)
		}

		// The tenant's admin works in it; a suspended tenant refuses everyone, keeps its data,
		// and comes back when reactivated.
		alice := e.token("alice", "acme", false)
		expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, sampleCard("agt1")), http.StatusCreated)
		expect(t, e.do("PATCH", "/v1/tenants/acme", root, map[string]any{"status": "suspended"}), http.StatusOK)
		expect(t, e.do("GET", "/v1/tenants/acme/cards/agt1", alice, nil), http.StatusForbidden, "tenant_suspended")
		expect(t, e.do("GET", "/v1/tenants/acme/cards", root, nil), http.StatusForbidden, "tenant_suspended")
		expect(t, e.do("PATCH", "/v1/tenants/acme", root, map[string]any{"status": "active"}), http.StatusOK)
		expect(t, e.do("GET", "/v1/tenants/acme/cards/agt1", alice, nil), http.StatusOK)

		// Deleting removes the tenant with its cards and roles; a new tenant of the same id
		// starts empty and alice is no longer its admin.
		expect(t, e.do("DELETE", "/v1/tenants/acme", root, nil), http.StatusNoContent)
		expect(t, e.do("GET", "/v1/tenants/acme", root, nil), http.StatusNotFound, "not_found")
		expect(t, e.do("GET", "/v1/tenants/acme/cards/agt1", alice, nil), http.StatusNotFound, "not_found")
		expect(t, e.do("DELETE", "/v1/tenants/acme", root, nil), http.StatusNotFound, "not_found")
		e.mkTenant("acme")
		r = e.do("GET", "/v1/tenants/acme/cards", root, nil)
		expect(t, r, http.StatusOK)
		var page struct{ Total int }
		r.json(t, &page)
		if page.Total != 0 {
			t.Fatalf("recreated tenant has %d cards", page.Total)
		}
		expect(t, e.do("POST", "/v1/tenants/acme/cards", root, sampleCard("agt1")), http.StatusCreated)
		expect(t, e.do("GET", "/v1/tenants/acme/cards/agt1", alice, nil), http.StatusForbidden, "forbidden")
		expect(t, e.do("GET", "/v1/tenants/beta", root, nil), http.StatusOK)
	})
}

func TestTenantBadInput(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		root := e.admin()
		e.mkTenant("acme", "alice")
		cases := []struct {
			name   string
			body   any
			status int
			code   string
		}{
			{"uppercase id", map[string]any{"id": "Acme", "name": "x"}, 400, "invalid"},
			{"leading dash", map[string]any{"id": "-acme", "name": "x"}, 400, "invalid"},
			{"too long id", map[string]any{"id": "a234567890123456789012345678901234567890123456789012345678901234", "name": "x"}, 400, "invalid"},
			{"no name", map[string]any{"id": "okid"}, 400, "invalid"},
			{"bad admin", map[string]any{"id": "okid", "name": "x", "admins": []string{"role:admin"}}, 400, "invalid"},
			{"unknown field", map[string]any{"id": "okid", "name": "x", "plan": "gold"}, 400, "invalid"},
			{"wrong type", map[string]any{"id": 7, "name": "x"}, 400, "invalid"},
			{"malformed", `{"id": "okid",`, 400, "malformed_json"},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				expect(t, e.do("POST", "/v1/tenants", root, c.body), c.status, c.code)
			})
		}
		expect(t, e.do("GET", "/v1/tenants/okid", root, nil), http.StatusNotFound, "not_found")
		expect(t, e.do("PATCH", "/v1/tenants/acme", root, map[string]any{"status": "paused"}), 400, "invalid")
		expect(t, e.do("PATCH", "/v1/tenants/acme", root, map[string]any{"name": ""}), 400, "invalid")
		expect(t, e.do("PATCH", "/v1/tenants/nope", root, map[string]any{"name": "x"}), 404, "not_found")
		// A merge patch's null would remove the member: a tenant's name and status stay.
		r := e.do("PATCH", "/v1/tenants/acme", root, map[string]any{"name": nil})
		expect(t, r, 400, "invalid")
		var body struct{ Error struct{ Message string } }
		if r.json(t, &body); body.Error.Message != "name: a tenant's name cannot be removed (null)" {
			t.Errorf("null name: message %q", body.Error.Message)
		}
		expect(t, e.do("PATCH", "/v1/tenants/acme", root, map[string]any{"status": nil, "name": "x"}), 400, "invalid")
		expect(t, e.do("PATCH", "/v1/tenants/acme", root, map[string]any{"plan": "gold"}), 400, "invalid")
		expect(t, e.do("PATCH", "/v1/tenants/acme", root, map[string]any{"name": 7}), 400, "invalid")
		r = e.do("GET", "/v1/tenants/acme", root, nil)
		var got struct{ Name, Status string }
		r.json(t, &got)
		if got.Name != "Tenant acme" || got.Status != "active" {
			t.Fatalf("tenant changed by refused writes: %+v", got)
		}

		// Only platform admins manage tenants, even the tenant's own admin.
		alice := e.token("alice", "acme", false)
		expect(t, e.do("GET", "/v1/tenants", alice, nil), http.StatusForbidden, "forbidden")
		expect(t, e.do("POST", "/v1/tenants", alice, map[string]any{"id": "mine", "name": "x"}), http.StatusForbidden, "forbidden")
		expect(t, e.do("PATCH", "/v1/tenants/acme", alice, map[string]any{"status": "suspended"}), http.StatusForbidden, "forbidden")
		expect(t, e.do("PATCH", "/v1/tenants/acme", alice, map[string]any{"name": nil}), http.StatusForbidden, "forbidden")
		expect(t, e.do("DELETE", "/v1/tenants/acme", alice, nil), http.StatusForbidden, "forbidden")
	})
}
