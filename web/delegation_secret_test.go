package web_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/agentcards/agentcards/cards/agenttest"
	"github.com/agentcards/agentcards/cards/delegation"
	"github.com/agentcards/agentcards/storage/storagetest"
)

// TestDelegationTokenBesideEndpointSecret: a card with a static endpoint secret gets it as the
// bearer, and the delegation token still travels in X-Delegation-Token, where the agent verifies
// it with the published JWKS as this delegation's token and can use it to delegate further and
// to read the delegations it made, and no one else's; without the secret both headers carry the
// same token.
func TestDelegationTokenBesideEndpointSecret(t *testing.T) {
	e := newEnv(t, storagetest.Open(t, "sqlite"), 1<<20)
	a := agenttest.New(t, agenttest.Answer(http.StatusOK, `{"result": "ok"}`))
	alice, olga := e.delegationSetup("acme", "agt1", a.Endpoint())
	const secret = "s3cr3t-Endpoint-Key"
	expect(t, e.do("PUT", "/v1/tenants/acme/cards/agt1/secret", alice, map[string]string{"secret": secret}), http.StatusNoContent)

	r := e.do("POST", "/v1/tenants/acme/delegations", olga, delegate("agt1", "sync"))
	expect(t, r, http.StatusOK)
	d := decodeDelegation(t, r)
	if d.Status != delegation.StatusCompleted {
		t.Fatalf("with a secret: %+v", d)
	}
	if auth := waitCall(t, a, d.ID).Header.Get("Authorization"); auth != "Bearer "+secret {
		t.Fatalf("Authorization %q, want the secret", auth)
	}
	token := a.Last().Header.Get("X-Delegation-Token")
	if token == "" || strings.Contains(token, secret) {
		t.Fatalf("X-Delegation-Token %q", token)
	}
	c := e.verifyWithJWKS(token)
	if c.DelegationID != d.ID || c.Subject != "agt1" || c.Tenant != "acme" || c.Caller != "olga" ||
		c.Capability != "review_pr" || c.Depth != 1 || len(c.Audience) != 1 || c.Audience[0] != a.Endpoint() {
		t.Fatalf("X-Delegation-Token claims %+v", c)
	}
	// The agent's delegations are those it makes with the token: it lists the one it makes, and
	// not olga's, the one it was called for.
	expect(t, e.do("POST", "/v1/tenants/acme/policies", alice, policyRule("agent:agt1", "cards/*/capabilities/review_pr", "delegate", "allow")), http.StatusCreated)
	r = e.do("POST", "/v1/tenants/acme/delegations", token, delegate("agt1", "sync"))
	expect(t, r, http.StatusOK)
	hop := decodeDelegation(t, r)
	if hop.Caller != "agent:agt1" || hop.Depth != 2 || hop.Status != delegation.StatusCompleted {
		t.Fatalf("the agent's own delegation %+v", hop)
	}
	if page := e.listDelegations("acme", token); len(page.Items) != 1 || page.Items[0].ID != hop.ID || page.Items[0].Caller != "agent:agt1" {
		t.Fatalf("with its delegation token the agent lists %+v, want only %s", page.Items, hop.ID)
	}
	expect(t, e.do("GET", "/v1/tenants/acme/delegations/"+hop.ID, token, nil), http.StatusOK)
	expect(t, e.do("GET", "/v1/tenants/acme/delegations/"+d.ID, token, nil), http.StatusNotFound, "not_found")
	if s := e.storedDelegation("acme", d.ID); s.Status != delegation.StatusCompleted || s.Caller != "olga" {
		t.Fatalf("stored %+v", s)
	}

	expect(t, e.do("DELETE", "/v1/tenants/acme/cards/agt1/secret", alice, nil), http.StatusNoContent)
	r = e.do("POST", "/v1/tenants/acme/delegations", olga, delegate("agt1", "sync"))
	expect(t, r, http.StatusOK)
	d = decodeDelegation(t, r)
	auth := waitCall(t, a, d.ID).Header.Get("Authorization")
	if token := a.Last().Header.Get("X-Delegation-Token"); auth != "Bearer "+token || e.verifyWithJWKS(token).DelegationID != d.ID {
		t.Fatalf("without a secret: Authorization %q, X-Delegation-Token %q", auth, token)
	}
}
