package web_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/agentcards/agentcards/authz/token"
	"github.com/agentcards/agentcards/cards/agenttest"
	"github.com/agentcards/agentcards/cards/delegation"
)

// TestDelegationTokenIsNotAUser: an editor registers a card whose agentId is an admin's user name
// ("alice") and points it at an endpoint they control. The delegation token that endpoint
// receives acts as agent:alice, never as the user alice: it is no credential outside the
// delegation routes (401), it delegates only with a policy naming agent:alice, and it reads only
// its own delegations. No user token can name the agent namespace.
func TestDelegationTokenIsNotAUser(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		a := agenttest.New(t, agenttest.Answer(http.StatusOK, `{"result": "ok"}`))
		alice, olga := e.delegationSetup("acme", "agt1", a.Endpoint())
		expect(t, e.do("POST", "/v1/tenants/acme/roles", alice, map[string]string{"subject": "eve", "role": "editor"}), http.StatusCreated)
		eve := e.token("eve", "acme", false)
		card := sampleCard("alice")
		card["endpoint"] = a.Endpoint()
		expect(t, e.do("POST", "/v1/tenants/acme/cards", eve, card), http.StatusCreated)

		r := e.do("POST", "/v1/tenants/acme/delegations", olga, delegate("alice", "sync"))
		expect(t, r, http.StatusOK)
		olgas := decodeDelegation(t, r).ID
		auth := a.Last().Header.Get("Authorization")
		stolen := strings.TrimPrefix(auth, "Bearer ")

		// Outside the delegation routes the token is no credential at all.
		for _, c := range []struct{ method, path string }{
			{"GET", "/v1/tenants/acme/policies"},
			{"GET", "/v1/tenants/acme/roles"},
			{"GET", "/v1/tenants/acme/cards/agt1"},
			{"DELETE", "/v1/tenants/acme/cards/agt1"},
			{"GET", "/v1/tenants/acme"},
			{"POST", "/v1/tenants/acme/authorize"},
			{"GET", "/a2a/acme/agents"},
		} {
			expect(t, e.do(c.method, c.path, stolen, map[string]string{"object": "policies", "action": "policies:manage"}), http.StatusUnauthorized, "unauthorized")
		}
		expect(t, e.do("POST", "/v1/tenants/acme/policies", stolen, policyRule("agent:alice", "policies", "policies:manage", "allow")), http.StatusUnauthorized, "unauthorized")

		// Delegating needs a grant to agent:alice; alice's admin rights count for nothing.
		calls := a.Calls()
		expect(t, e.do("POST", "/v1/tenants/acme/delegations", stolen, delegate("agt1", "sync")), http.StatusForbidden, "forbidden")
		if a.Calls() != calls {
			t.Fatal("a delegation token without a grant reached the agent")
		}
		expect(t, e.do("POST", "/v1/tenants/acme/policies", alice, policyRule("agent:alice", "cards/agt1/capabilities/review_pr", "delegate", "allow")), http.StatusCreated)
		r = e.do("POST", "/v1/tenants/acme/delegations", stolen, delegate("agt1", "sync"))
		expect(t, r, http.StatusOK)
		own := decodeDelegation(t, r)
		if own.Caller != "agent:alice" || own.Depth != 2 || own.Status != delegation.StatusCompleted {
			t.Fatalf("delegated hop %+v", own)
		}
		// It reads its own delegations only, even with a policy that would show it more.
		expect(t, e.do("POST", "/v1/tenants/acme/policies", alice, policyRule("agent:alice", "delegations/*", "delegations:read", "allow")), http.StatusCreated)
		expect(t, e.do("GET", "/v1/tenants/acme/delegations/"+own.ID, stolen, nil), http.StatusOK)
		expect(t, e.do("GET", "/v1/tenants/acme/delegations/"+olgas, stolen, nil), http.StatusNotFound, "not_found")
		var page struct {
			Items []delegation.Delegation `json:"items"`
		}
		e.do("GET", "/v1/tenants/acme/delegations", stolen, nil).json(t, &page)
		if len(page.Items) != 2 { // the refused one and the completed one
			t.Fatalf("the agent lists %+v", page.Items)
		}
		for _, d := range page.Items {
			if d.Caller != "agent:alice" {
				t.Fatalf("the agent sees %+v", d)
			}
		}
		if d := e.ask("acme", alice, map[string]string{"subject": "agent:alice", "object": "cards/agt1/capabilities/review_pr", "action": "delegate"}); !d.Allowed {
			t.Fatalf("authorize about the agent subject: %+v", d)
		}

		// No user may be called agent:...: not in a token, not in a role assignment as a user.
		if _, err := e.tokens.Mint("agent:alice", "acme", time.Hour, false); err == nil {
			t.Fatal("minted a user token in the agent namespace")
		}
		forged, err := jwt.NewWithClaims(jwt.SigningMethodHS256, token.Claims{
			RegisteredClaims: jwt.RegisteredClaims{Subject: "agent:alice", ExpiresAt: jwt.NewNumericDate(time.Now().Add(time.Hour))},
			Tenant:           "acme",
		}).SignedString(testSecret)
		if err != nil {
			t.Fatal(err)
		}
		expect(t, e.do("GET", "/v1/tenants/acme/delegations/"+own.ID, forged, nil), http.StatusUnauthorized, "unauthorized")
	})
}
