package web_test

import (
	"net/http"
	"testing"

	"github.com/agentcards/agentcards/cards/agenttest"
	"github.com/agentcards/agentcards/cards/delegation"
	"github.com/agentcards/agentcards/storage/storagetest"
)

// TestDelegationReadGrants: delegations:read on delegations/* lets a subject that is neither the
// caller nor a policy manager read and list every delegation of the tenant; a grant on one
// delegations/{id} reads that one only; without a grant another's record is 404 and the list
// holds only one's own; and reading is no right to delegate.
func TestDelegationReadGrants(t *testing.T) {
	e := newEnv(t, storagetest.Open(t, "sqlite"), 1<<20)
	a := agenttest.New(t, agenttest.Answer(http.StatusOK, `{"result": "ok"}`))
	alice, olga := e.delegationSetup("acme", "agt1", a.Endpoint())
	var ids []string
	for range 2 {
		r := e.do("POST", "/v1/tenants/acme/delegations", olga, delegate("agt1", "sync"))
		expect(t, r, http.StatusOK)
		ids = append(ids, decodeDelegation(t, r).ID)
	}
	expect(t, e.do("POST", "/v1/tenants/acme/policies", alice, policyRule("rita", "delegations/*", "delegations:read", "allow")), http.StatusCreated)
	expect(t, e.do("POST", "/v1/tenants/acme/policies", alice, policyRule("pat", "delegations/"+ids[0], "delegations:read", "allow")), http.StatusCreated)
	rita, pat, sam := e.token("rita", "acme", false), e.token("pat", "acme", false), e.token("sam", "acme", false)

	read := func(token, id string) delegation.Delegation {
		t.Helper()
		r := e.do("GET", "/v1/tenants/acme/delegations/"+id, token, nil)
		expect(t, r, http.StatusOK)
		d := decodeDelegation(t, r)
		if d.ID != id || d.Caller != "olga" || d.Status != delegation.StatusCompleted {
			t.Fatalf("read %s: %+v", id, d)
		}
		return d
	}
	// rita, granted delegations/*, reads and lists olga's delegations.
	read(rita, ids[0])
	read(rita, ids[1])
	if page := e.listDelegations("acme", rita); len(page.Items) != 2 || page.Items[0].ID != ids[1] || page.Items[1].ID != ids[0] {
		t.Fatalf("rita lists %+v", page.Items)
	}
	// pat, granted one delegation, reads that one only and lists none.
	read(pat, ids[0])
	expect(t, e.do("GET", "/v1/tenants/acme/delegations/"+ids[1], pat, nil), http.StatusNotFound, "not_found")
	if page := e.listDelegations("acme", pat); len(page.Items) != 0 {
		t.Fatalf("pat lists %+v", page.Items)
	}
	// sam, granted nothing, sees nothing of olga's.
	for _, id := range ids {
		expect(t, e.do("GET", "/v1/tenants/acme/delegations/"+id, sam, nil), http.StatusNotFound, "not_found")
	}
	if page := e.listDelegations("acme", sam); len(page.Items) != 0 {
		t.Fatalf("sam lists %+v", page.Items)
	}
	// Reading delegations does not let rita delegate: refused and recorded as rejected.
	calls := a.Calls()
	expect(t, e.do("POST", "/v1/tenants/acme/delegations", rita, delegate("agt1", "sync")), http.StatusForbidden, "forbidden")
	if a.Calls() != calls {
		t.Fatal("a reader's delegation reached the agent")
	}
	if page := e.listDelegations("acme", rita); len(page.Items) != 3 || page.Items[0].Caller != "rita" || page.Items[0].Status != delegation.StatusRejected {
		t.Fatalf("rita lists after her refused delegation %+v", page.Items)
	}
}
