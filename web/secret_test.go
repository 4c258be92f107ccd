package web_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentcards/agentcards/cards/agenttest"
	"github.com/agentcards/agentcards/cards/delegation"
	"github.com/agentcards/agentcards/storage/storagetest"
)

// TestEndpointSecret: a card's static endpoint secret is sent as the bearer credential of
// delegated calls (the delegation token moves to X-Delegation-Token), is stored sealed, and is
// returned by no API.
func TestEndpointSecret(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		a := agenttest.New(t, agenttest.Answer(http.StatusOK, `{"result": "ok"}`))
		alice, olga := e.delegationSetup("acme", "agt1", a.Endpoint())
		const secret = "s3cr3t-Endpoint-Key"
		expect(t, e.do("PUT", "/v1/tenants/acme/cards/agt1/secret", olga, map[string]string{"secret": secret}), http.StatusForbidden, "forbidden")
		expect(t, e.do("PUT", "/v1/tenants/acme/cards/agt9/secret", alice, map[string]string{"secret": secret}), http.StatusNotFound, "not_found")
		expect(t, e.do("PUT", "/v1/tenants/acme/cards/agt1/secret", alice, map[string]string{"secret": "two words"}), http.StatusBadRequest, "invalid")
		r := e.do("PUT", "/v1/tenants/acme/cards/agt1/secret", alice, map[string]string{"secret": secret})
		expect(t, r, http.StatusNoContent)

		expect(t, e.do("POST", "/v1/tenants/acme/delegations", olga, delegate("agt1", "sync")), http.StatusOK)
		if auth := a.Last().Header.Get("Authorization"); auth != "Bearer "+secret {
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
		if auth := a.Last().Header.Get("Authorization"); !strings.HasPrefix(auth, "Bearer ey") {
			t.Fatalf("without a secret the agent got %q", auth)
		}
	})
}

// TestEndpointSecretInHeader: a secret set with a header goes in that header as its whole value,
// Authorization then carrying the delegation token; in Authorization itself it goes as it is,
// without Bearer. A header the call sets itself, or no header name, is refused, and the secret
// held stays as it was.
func TestEndpointSecretInHeader(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		a := agenttest.New(t, agenttest.Answer(http.StatusOK, `{"result": "ok"}`))
		alice, olga := e.delegationSetup("acme", "agt1", a.Endpoint())
		const secret = "s3cr3t-Endpoint-Key"
		set := func(header string) response {
			return e.do("PUT", "/v1/tenants/acme/cards/agt1/secret", alice, map[string]string{"secret": secret, "header": header})
		}
		expect(t, set("X-Api-Key"), http.StatusNoContent)
		for _, bad := range []string{"Host", "content-length", "X-Delegation-Token", "A2A-Version", "Proxy-Authorization", "Sec-Fetch-Site",
			"Transfer-Encoding", "two words", "X:Key", strings.Repeat("x", 65)} {
			expect(t, set(bad), http.StatusBadRequest, "invalid")
		}
		expect(t, e.do("POST", "/v1/tenants/acme/delegations", olga, delegate("agt1", "sync")), http.StatusOK)
		got := a.Last().Header
		if got.Get("X-Api-Key") != secret || got.Get("Authorization") != "Bearer "+got.Get("X-Delegation-Token") || got.Get("X-Delegation-Token") == "" {
			t.Fatalf("agent got X-Api-Key %q, Authorization %q, X-Delegation-Token %q", got.Get("X-Api-Key"), got.Get("Authorization"), got.Get("X-Delegation-Token"))
		}
		expect(t, set("Authorization"), http.StatusNoContent)
		expect(t, e.do("POST", "/v1/tenants/acme/delegations", olga, delegate("agt1", "sync")), http.StatusOK)
		if got := a.Last().Header; got.Get("Authorization") != secret || got.Get("X-Api-Key") != "" {
			t.Fatalf("in Authorization: %q, X-Api-Key %q", got.Get("Authorization"), got.Get("X-Api-Key"))
		}
		var detail string
		if err := e.db.SQL().QueryRow("SELECT detail FROM audit_entries WHERE action = 'secrets.set' ORDER BY seq DESC LIMIT 1").Scan(&detail); err != nil ||
			!strings.HasSuffix(detail, "; header Authorization") || strings.Contains(detail, secret) {
			t.Errorf("audit detail %q (%v)", detail, err)
		}
	})
}

// TestEndpointSecretLocalFailure: a stored secret that will not open (the key changed) is the
// server's failure, not the agent's: nothing is sent, the delegation is recorded as rejected
// without internal text, the answer is an opaque 500, and the endpoint's breaker does not count it.
func TestEndpointSecretLocalFailure(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		e2 := newEnvWith(t, e.db, envOptions{allowLoopback: true, delegation: delegation.Config{BreakerFailures: 1, BreakerCooldown: time.Minute}})
		a := agenttest.New(t, agenttest.Answer(http.StatusOK, `{"result": "ok"}`))
		alice, olga := e2.delegationSetup("acme", "agt1", a.Endpoint())
		expect(t, e2.do("PUT", "/v1/tenants/acme/cards/agt1/secret", alice, map[string]string{"secret": "s3cr3t"}), http.StatusNoContent)
		if _, err := e2.db.SQL().Exec("UPDATE endpoint_secrets SET sealed = 'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA'"); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 3; i++ {
			r := e2.do("POST", "/v1/tenants/acme/delegations", olga, delegate("agt1", "sync"))
			expect(t, r, http.StatusInternalServerError, "internal")
			if bytes.Contains(r.body, []byte("secret")) || bytes.Contains(r.body, []byte("cipher")) {
				t.Fatalf("the answer tells internals: %s", r.body)
			}
		}
		if a.Calls() != 0 {
			t.Fatal("the agent was called without its secret")
		}
		var page struct {
			Items []delegation.Delegation `json:"items"`
		}
		e2.do("GET", "/v1/tenants/acme/delegations?status=rejected", alice, nil).json(t, &page)
		if len(page.Items) != 3 || strings.Contains(page.Items[0].Error, "cipher") || strings.Contains(page.Items[0].Error, "reached") {
			t.Fatalf("rejected records %+v", page.Items)
		}
		expect(t, e2.do("DELETE", "/v1/tenants/acme/cards/agt1/secret", alice, nil), http.StatusNoContent)
		expect(t, e2.do("POST", "/v1/tenants/acme/delegations", olga, delegate("agt1", "sync")), http.StatusOK)
	})
}

// TestEndpointSecretBoundToEndpoint: the secret goes only to the endpoint the card had when it
// was set. Pointing the card elsewhere sends the new URL the delegation token, never the secret;
// deleting the card deletes its secret, so a card created again under its id does not get it.
func TestEndpointSecretBoundToEndpoint(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		a := agenttest.New(t, agenttest.Answer(http.StatusOK, `{"result": "ok"}`))
		evil := agenttest.New(t, agenttest.Answer(http.StatusOK, `{"result": "ok"}`))
		alice, olga := e.delegationSetup("acme", "agt1", a.Endpoint())
		const secret = "s3cr3t-Endpoint-Key"
		expect(t, e.do("PUT", "/v1/tenants/acme/cards/agt1/secret", alice, map[string]string{"secret": secret}), http.StatusNoContent)

		moved := sampleCard("agt1")
		moved["endpoint"] = evil.Endpoint()
		expect(t, e.do("PUT", "/v1/tenants/acme/cards/agt1", alice, moved), http.StatusOK)
		expect(t, e.do("POST", "/v1/tenants/acme/delegations", olga, delegate("agt1", "sync")), http.StatusOK)
		if auth := evil.Last().Header.Get("Authorization"); auth == "Bearer "+secret || !strings.HasPrefix(auth, "Bearer ey") {
			t.Fatalf("the new endpoint got Authorization %q", auth)
		}
		// Back at the URL it was set for, the secret is used again.
		expect(t, e.do("PUT", "/v1/tenants/acme/cards/agt1", alice, sampleCardAt("agt1", a.Endpoint())), http.StatusOK)
		expect(t, e.do("POST", "/v1/tenants/acme/delegations", olga, delegate("agt1", "sync")), http.StatusOK)
		if auth := a.Last().Header.Get("Authorization"); auth != "Bearer "+secret {
			t.Fatalf("the original endpoint got Authorization %q", auth)
		}

		expect(t, e.do("DELETE", "/v1/tenants/acme/cards/agt1", alice, nil), http.StatusNoContent)
		var n int
		if err := e.db.SQL().QueryRow("SELECT COUNT(*) FROM endpoint_secrets").Scan(&n); err != nil || n != 0 {
			t.Fatalf("%d secrets left after the card was deleted (%v)", n, err)
		}
		expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, sampleCardAt("agt1", a.Endpoint())), http.StatusCreated)
		expect(t, e.do("POST", "/v1/tenants/acme/delegations", olga, delegate("agt1", "sync")), http.StatusOK)
		if auth := a.Last().Header.Get("Authorization"); auth == "Bearer "+secret {
			t.Fatal("a card created again inherited the deleted card's secret")
		}
	})
}

func sampleCardAt(agentID, endpoint string) map[string]any {
	c := sampleCard(agentID)
	c["endpoint"] = endpoint
	return c
}

// TestLongerPathIsNoRoute: a path one segment longer than a card's is no route, 404, whatever
// its method; it never reaches a card's handler with "/" in the agentId. A server without
// endpoint secrets has no secret routes, so their paths answer so too.
func TestLongerPathIsNoRoute(t *testing.T) {
	for _, secrets := range []bool{true, false} {
		e := newEnvWith(t, storagetest.Open(t, "sqlite"), envOptions{noSecrets: !secrets})
		e.mkTenant("acme", "alice")
		alice := e.token("alice", "acme", false)
		expect(t, e.do("PUT", "/v1/tenants/acme/cards/agt1", alice, map[string]any{"agentId": "agt1", "name": "A"}), http.StatusCreated)
		for _, method := range []string{"GET", "PUT", "PATCH", "DELETE"} {
			expect(t, e.do(method, "/v1/tenants/acme/cards/agt1/other", alice, nil), http.StatusNotFound, "not_found")
		}
		if !secrets {
			expect(t, e.do("PUT", "/v1/tenants/acme/cards/agt1/secret", alice, map[string]string{"secret": "s"}), http.StatusNotFound, "not_found")
			expect(t, e.do("DELETE", "/v1/tenants/acme/cards/agt1/secret", alice, nil), http.StatusNotFound, "not_found")
		}
		expect(t, e.getCard("acme", "agt1"), http.StatusOK)
	}
}
