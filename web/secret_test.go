package web_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
)

// TestEndpointSecret: a card's static endpoint secret is sent as the bearer credential of
// delegated calls (the delegation token moves to X-Delegation-Token), is stored sealed, and is
// returned by no API.
func TestEndpointSecret(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		a := newAgent(t, reply(http.StatusOK, `{"result": "ok"}`))
		alice, olga := e.delegationSetup("acme", "agt1", a.endpoint())
		const secret = "s3cr3t-Endpoint-Key"
		expect(t, e.do("PUT", "/v1/tenants/acme/cards/agt1/secret", olga, map[string]string{"secret": secret}), http.StatusForbidden, "forbidden")
		expect(t, e.do("PUT", "/v1/tenants/acme/cards/agt9/secret", alice, map[string]string{"secret": secret}), http.StatusNotFound, "not_found")
		expect(t, e.do("PUT", "/v1/tenants/acme/cards/agt1/secret", alice, map[string]string{"secret": "two words"}), http.StatusBadRequest, "invalid")
		r := e.do("PUT", "/v1/tenants/acme/cards/agt1/secret", alice, map[string]string{"secret": secret})
		expect(t, r, http.StatusNoContent)

		expect(t, e.do("POST", "/v1/tenants/acme/delegations", olga, delegate("agt1", "sync")), http.StatusOK)
		if _, auth := a.received(); auth != "Bearer "+secret {
			t.Fatalf("agent got Authorization %q", auth)
		}
		for _, path := range []string{"/v1/tenants/acme/cards/agt1", "/v1/tenants/acme/cards", "/v1/tenants/acme/delegations"} {
			if body := e.do("GET", path, alice, nil).body; bytes.Contains(body, []byte(secret)) {
				t.Fatalf("%s returns the secret", path)
			}
		}
		var sealed string
		if err := e.db.SQL().QueryRow("SELECT sealed FROM endpoint_secrets").Scan(&sealed); err != nil || strings.Contains(sealed, secret) || sealed == "" {
			t.Fatalf("stored %q (%v)", sealed, err)
		}

		expect(t, e.do("DELETE", "/v1/tenants/acme/cards/agt1/secret", alice, nil), http.StatusNoContent)
		expect(t, e.do("DELETE", "/v1/tenants/acme/cards/agt1/secret", alice, nil), http.StatusNotFound, "not_found")
		expect(t, e.do("POST", "/v1/tenants/acme/delegations", olga, delegate("agt1", "sync")), http.StatusOK)
		if _, auth := a.received(); !strings.HasPrefix(auth, "Bearer ey") {
			t.Fatalf("without a secret the agent got %q", auth)
		}
	})
}
