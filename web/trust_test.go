package web_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/go-jose/go-jose/v4"

	"github.com/agentcards/agentcards/cards/a2a/a2atest"
	"github.com/agentcards/agentcards/cards/agenttest"
	"github.com/agentcards/agentcards/tenants"
)

// trustOf is the a2a.import.trust of a card as the API answers it.
func trustOf(t *testing.T, r response) (status, issuer, kid string) {
	t.Helper()
	var c struct {
		A2A struct {
			Import struct {
				Trust struct{ Status, Issuer, Kid string }
			}
		}
	}
	r.json(t, &c)
	tr := c.A2A.Import.Trust
	return tr.Status, tr.Issuer, tr.Kid
}

// TestTrustOverHTTP: a tenant admin trusts an issuer's keys for a domain; a card imported signed by
// them is trusted, found by trusted=true, with the issuer and kid in its import record; a key
// served at the issuer's JWKS URL vouches alike; revoking the pinned key un-trusts the card at
// once, and the answers say how many cards each change weighed. Readers read the policy; the
// other routes answer as they say.
func TestTrustOverHTTP(t *testing.T) {
	forEachDialectAndIndex(t, func(t *testing.T, e *env) {
		e.mkTenant("acme", "alice")
		alice, bob := e.token("alice", "acme", false), e.token("bob", "acme", false)
		expect(t, e.do("POST", "/v1/tenants/acme/roles", alice, map[string]string{"subject": "bob", "role": "reader"}), http.StatusCreated)
		e.allowLoopback()
		pub, priv, _ := ed25519.GenerateKey(rand.Reader)
		pinned := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: pub, KeyID: "pub-1", Algorithm: "EdDSA"}}}
		keys := agenttest.New(t, nil)
		keys.ServeJSON("/jwks.json", http.StatusOK, mustJSON(t, pinned))

		if r := e.do("GET", "/v1/tenants/acme/trust", alice, nil); r.status != http.StatusOK || string(r.body) != `{"items":[],"total":0}`+"\n" {
			t.Fatalf("empty policy: %d %s", r.status, r.body)
		}
		// Imported before any issuer: signed, untrusted.
		card := a2atest.SignEd25519(t, priv, "pub-1", "", a2atest.SampleV1(t))
		r := e.do("POST", "/v1/tenants/acme/cards/import", alice, map[string]any{"agentId": "geo", "card": card})
		expect(t, r, http.StatusCreated)
		if st, _, _ := trustOf(t, r); st != "untrusted" {
			t.Fatalf("imported with no issuer: %s", st)
		}
		e.do("POST", "/v1/tenants/acme/cards", alice, sampleCard("plain"))

		r = e.do("PUT", "/v1/tenants/acme/trust/*.Example.COM", alice, map[string]any{"keys": pinned})
		expect(t, r, http.StatusOK)
		var put struct {
			Issuer tenants.TrustIssuer
			Cards  struct{ Weighed, Trusted, Changed int }
		}
		r.json(t, &put)
		if put.Issuer.Domain != "*.example.com" || put.Cards.Weighed != 1 || put.Cards.Trusted != 1 || put.Cards.Changed != 1 {
			t.Errorf("put answered %+v", put)
		}
		r = e.getCard("acme", "geo")
		if st, issuer, kid := trustOf(t, r); st != "trusted" || issuer != "*.example.com" || kid != "pub-1" {
			t.Errorf("after the issuer was added: %s %s %s", st, issuer, kid)
		}
		if got := e.search(bob, "acme", "trusted=true").ids(); !slices.Equal(got, []string{"geo"}) {
			t.Errorf("trusted=true found %q", got)
		}
		if got := e.search(bob, "acme", "trusted=false").ids(); !slices.Equal(got, []string{"plain"}) {
			t.Errorf("trusted=false found %q", got)
		}
		expect(t, e.do("GET", "/v1/tenants/acme/cards?trusted=yes", bob, nil), http.StatusBadRequest, "invalid")

		// The same key served at the issuer's URL for the card's own host: the host's entry speaks.
		r = e.do("PUT", "/v1/tenants/acme/trust/georoute-agent.example.com", alice, map[string]any{"jwksUrl": keys.URL + "/jwks.json"})
		expect(t, r, http.StatusOK)
		r = e.getCard("acme", "geo")
		if st, issuer, _ := trustOf(t, r); st != "trusted" || issuer != "georoute-agent.example.com" {
			t.Errorf("after the host's own issuer was added: %s %s", st, issuer)
		}
		expect(t, e.do("DELETE", "/v1/tenants/acme/trust/georoute-agent.example.com", alice, nil), http.StatusOK)

		// Each card written by a change of the policy is in the trail under that change.
		var trail struct {
			Items []struct{ Principal, Action, Object, Outcome string }
		}
		e.do("GET", "/v1/tenants/acme/audit?object=cards/geo", alice, nil).json(t, &trail)
		if len(trail.Items) == 0 || trail.Items[0].Action != "trust.remove" || trail.Items[0].Principal != "alice" {
			t.Errorf("the trail of the card: %+v", trail.Items)
		}

		// Reading: a reader lists and gets; a name in any case finds its entry.
		var list struct {
			Items []tenants.TrustIssuer
			Total int
		}
		e.do("GET", "/v1/tenants/acme/trust", bob, nil).json(t, &list)
		if list.Total != 1 || list.Items[0].Domain != "*.example.com" || !strings.Contains(string(list.Items[0].Keys), `"kid":"pub-1"`) {
			t.Errorf("list: %+v", list)
		}
		if r := e.do("GET", "/v1/tenants/acme/trust/*.EXAMPLE.com", bob, nil); r.status != http.StatusOK || !strings.Contains(string(r.body), `"kid":"pub-1"`) {
			t.Errorf("get in another case: %d %s", r.status, r.body)
		}

		// The key revoked: another pinned in its place.
		other, _, _ := ed25519.GenerateKey(rand.Reader)
		r = e.do("PUT", "/v1/tenants/acme/trust/*.example.com", alice,
			map[string]any{"keys": jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: other, KeyID: "pub-2", Algorithm: "EdDSA"}}}})
		expect(t, r, http.StatusOK)
		r.json(t, &put)
		if put.Cards.Weighed != 1 || put.Cards.Trusted != 0 || put.Cards.Changed != 1 {
			t.Errorf("revoked: %+v", put.Cards)
		}
		if got := e.search(bob, "acme", "trusted=true").ids(); len(got) != 0 {
			t.Errorf("trusted=true after the revocation found %q", got)
		}
		// Still untrusted, now for another reason: a new record.
		if r := e.do("DELETE", "/v1/tenants/acme/trust/*.example.com", alice, nil); r.status != http.StatusOK || string(r.body) != `{"cards":{"weighed":1,"trusted":0,"changed":1}}`+"\n" {
			t.Errorf("remove: %d %s", r.status, r.body)
		}
	})
}

// TestTrustRefusals: every bad request answers the one error body with its status, a refused
// write is in the trail as refusals are, and nothing stored changes.
func TestTrustRefusals(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		e.mkTenant("acme", "alice")
		e.mkTenant("other", "olga")
		alice, bob := e.token("alice", "acme", false), e.token("bob", "acme", false)
		expect(t, e.do("POST", "/v1/tenants/acme/roles", alice, map[string]string{"subject": "bob", "role": "editor"}), http.StatusCreated)
		keys := pinnedKeys(t)
		expect(t, e.do("PUT", "/v1/tenants/acme/trust/example.com", alice, map[string]any{"keys": keys}), http.StatusOK)
		before := e.do("GET", "/v1/tenants/acme/trust", alice, nil)
		private := func() jose.JSONWebKeySet {
			_, priv, _ := ed25519.GenerateKey(rand.Reader)
			return jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: priv, KeyID: "p"}}}
		}()
		const path = "/v1/tenants/acme/trust/"
		for _, c := range []struct {
			name, method, path, tok string
			body                    any
			status                  int
			code                    string
		}{
			{"malformed JSON", "PUT", path + "example.com", alice, `{"keys": {`, http.StatusBadRequest, "malformed_json"},
			{"not an object", "PUT", path + "example.com", alice, `["a"]`, http.StatusBadRequest, ""},
			{"an unknown member", "PUT", path + "example.com", alice, map[string]any{"keys": keys, "domain": "example.com"}, http.StatusBadRequest, ""},
			{"jwksUrl a number", "PUT", path + "example.com", alice, `{"jwksUrl": 7}`, http.StatusBadRequest, ""},
			{"neither", "PUT", path + "example.com", alice, `{}`, http.StatusBadRequest, "invalid"},
			{"both", "PUT", path + "example.com", alice, map[string]any{"keys": keys, "jwksUrl": "https://example.com/jwks.json"}, http.StatusBadRequest, "invalid"},
			{"a private key", "PUT", path + "example.com", alice, map[string]any{"keys": private}, http.StatusBadRequest, "invalid"},
			{"keys not a JWKS", "PUT", path + "example.com", alice, `{"keys": "k"}`, http.StatusBadRequest, "invalid"},
			{"a bad domain", "PUT", path + "exa_mple.com", alice, map[string]any{"keys": keys}, http.StatusBadRequest, "invalid"},
			{"a URL the guard refuses", "PUT", path + "example.com", alice, map[string]any{"jwksUrl": "http://127.0.0.1:9/jwks.json"}, http.StatusBadRequest, "blocked_url"},
			{"not an http URL", "PUT", path + "example.com", alice, map[string]any{"jwksUrl": "file:///etc/passwd"}, http.StatusBadRequest, "invalid"},
			{"no token", "PUT", path + "example.com", "", map[string]any{"keys": keys}, http.StatusUnauthorized, "unauthorized"},
			{"a bad token", "GET", "/v1/tenants/acme/trust", "not.a.token", nil, http.StatusUnauthorized, "unauthorized"},
			{"an unknown tenant", "PUT", "/v1/tenants/nope/trust/example.com", e.admin(), map[string]any{"keys": keys}, http.StatusNotFound, "not_found"},
			{"another's tenant", "GET", "/v1/tenants/other/trust", alice, nil, http.StatusNotFound, "not_found"},
			{"an unknown issuer", "GET", path + "example.org", alice, nil, http.StatusNotFound, "not_found"},
			{"an unknown issuer, to remove", "DELETE", path + "example.org", alice, nil, http.StatusNotFound, "not_found"},
			{"a name no issuer can have", "DELETE", path + "-x-", alice, nil, http.StatusNotFound, "not_found"},
			{"forbidden", "PUT", path + "example.com", bob, map[string]any{"keys": keys}, http.StatusForbidden, "forbidden"},
			{"forbidden remove", "DELETE", path + "example.com", bob, nil, http.StatusForbidden, "forbidden"},
		} {
			r := e.do(c.method, c.path, c.tok, c.body)
			if c.code == "" {
				if r.status != c.status {
					t.Errorf("%s: %d %s, want %d", c.name, r.status, r.body, c.status)
				}
				r.errCode(t) // the one error body
				continue
			}
			if r.status != c.status || r.errCode(t) != c.code {
				t.Errorf("%s: %d %s, want %d %s", c.name, r.status, r.body, c.status, c.code)
			}
		}
		if after := e.do("GET", "/v1/tenants/acme/trust", alice, nil); string(after.body) != string(before.body) {
			t.Errorf("the refusals changed the policy: %s, was %s", after.body, before.body)
		}
		var trail struct {
			Items []struct{ Principal, Action, Object, Detail, Outcome string }
		}
		e.do("GET", "/v1/tenants/acme/audit?object=trust", alice, nil).json(t, &trail)
		var got []string
		for _, it := range trail.Items {
			got = append(got, it.Principal+" "+it.Action+" "+it.Object+" "+it.Detail+" "+it.Outcome)
		}
		want := []string{"bob trust.remove trust trust:manage denied", "bob trust.put trust trust:manage denied",
			"alice trust.put trust/example.com created: 1 pinned keys (kid k1) ok"}
		if !slices.Equal(got, want) {
			t.Errorf("the trail: %q, want %q", got, want)
		}
	})
}

// mustJSON is v as JSON.
func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
