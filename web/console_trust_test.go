package web_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/go-jose/go-jose/v4"

	"github.com/agentcards/agentcards/cards/a2a/a2atest"
	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/web/api"
)

// TestConsoleTrust: an admin adds an issuer with a pinned JWKS, sees it listed and what weighing
// the cards did, is told with the server's message why a bad domain or a JWKS URL at a blocked
// address is refused, replaces the issuer's keys through its Edit button, sees on an imported
// card's page whether it is trusted, and removes the issuer, each change seen through the API; a
// reader sees the issuers read-only, with a note that changing them needs trust:manage.
func TestConsoleTrust(t *testing.T) {
	e := newEnv(t, storagetest.Open(t, "sqlite"), 1<<20)
	alice, rita := consoleTenant(t, e)
	apiIssuers := func() string {
		t.Helper()
		r := e.do("GET", "/v1/tenants/acme/trust", alice, nil)
		expect(t, r, http.StatusOK)
		var l api.TrustIssuerList
		r.json(t, &l)
		var out []string
		for _, i := range l.Items {
			var keys jose.JSONWebKeySet
			if len(i.Keys) > 0 {
				if err := json.Unmarshal(i.Keys, &keys); err != nil {
					t.Fatalf("the keys of %s: %v", i.Domain, err)
				}
			}
			out = append(out, i.Domain+"="+i.JWKSURL+strings.Repeat("+key", len(keys.Keys)))
		}
		return strings.Join(out, " ")
	}
	jwksJSON := func(keys jose.JSONWebKeySet) string {
		t.Helper()
		raw, err := json.Marshal(keys)
		if err != nil {
			t.Fatal(err)
		}
		return string(raw)
	}

	// A card imported with the signature of its publisher's key k1; its interfaces live on
	// georoute-agent.example.com, for which the policy has no issuer yet.
	const host = "georoute-agent.example.com"
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	publisher := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: pub, KeyID: "k1", Algorithm: "EdDSA"}}}
	signed := a2atest.SignEd25519(t, priv, "k1", "", a2atest.SampleV1(t))
	expect(t, e.do("POST", "/v1/tenants/acme/cards/import", alice, map[string]any{"agentId": "georoute", "card": signed}), http.StatusCreated)

	b := newBrowser(t, e)
	b.signIn(alice, "", "#/cards")
	b.do("go to the trust policy", chromedp.Click(chromedp.CSS(`#nav a[data-page="trust"]`)))
	b.loaded("#/trust")
	b.waitText("#trust caption", "0 issuers")
	if n := b.count("#trust-readonly"); n != 0 {
		t.Errorf("an admin is told the policy is read-only")
	}

	// A refused domain says why, in the server's words, and adds nothing.
	b.do("pick a pinned JWKS", chromedp.Click(chromedp.ID("trust-source-keys")))
	b.submit("add a bad domain", map[string]string{"#trust-domain": "bad_domain.example", "#trust-keys": jwksJSON(pinnedKeys(t))}, "#trust-save")
	b.waitText("#trust-status", `Not saved: domain "bad_domain.example" must be a host name, *. and a host name, or an IP address`)
	b.waitText("#trust-status", "[400 invalid]")
	// So is a JWKS URL at an address the outbound guard blocks.
	b.do("pick a JWKS URL", chromedp.Click(chromedp.ID("trust-source-url")))
	b.submit("add a blocked URL", map[string]string{"#trust-domain": host, "#trust-jwks-url": "http://127.0.0.1:9/jwks.json"}, "#trust-save")
	b.waitText("#trust-status", "[400 blocked_url]")
	// And a JWKS that is not JSON, before anything is sent.
	b.do("pick a pinned JWKS again", chromedp.Click(chromedp.ID("trust-source-keys")))
	puts := len(b.sent("PUT", "/trust/"+host))
	b.submit("paste no JSON", map[string]string{"#trust-domain": host, "#trust-keys": "{keys: oops"}, "#trust-save")
	b.waitText("#trust-status", "Not saved: the pinned JWKS is not JSON")
	if f := b.focused(); f != "trust-keys" {
		t.Errorf("after JSON that does not parse, the focus is on %q, not the keys", f)
	}
	if n := len(b.sent("PUT", "/trust/"+host)); n != puts {
		t.Errorf("JSON that does not parse was sent")
	}
	if got := apiIssuers(); got != "" {
		t.Fatalf("after refused adds, the API lists %q", got)
	}

	// An issuer with keys that are not the publisher's: the card is weighed again, and still not
	// trusted (why has changed: now an issuer speaks for its host).
	b.submit("add an issuer", map[string]string{"#trust-domain": "GeoRoute-Agent.example.com", "#trust-keys": jwksJSON(pinnedKeys(t))}, "#trust-save")
	b.waitText("#notice", "Saved the issuer "+host+". 1 card weighed: 0 trusted, 1 changed.")
	row := `#trust-table tr[data-domain="` + host + `"]`
	b.waitText("#trust caption", "1 issuer")
	b.waitText(row+" .keys", "1 pinned key (kid k1)")
	if got := apiIssuers(); got != host+"=+key" {
		t.Errorf("after adding, the API lists %q", got)
	}
	b.open("#/cards/georoute")
	b.waitText("#import-trust", "Not trusted: signatures[0] does not match the card under issuer "+host+"'s key")

	// Edit loads the issuer into the form; the publisher's keys replace the pinned ones, and the
	// card is trusted.
	b.open("#/trust")
	b.do("edit", chromedp.Click(chromedp.CSS(row+` button[aria-label="Edit `+host+`"]`)))
	if v := b.value("#trust-domain"); v != host {
		t.Errorf("the form holds the domain %q to edit", v)
	}
	if f := b.focused(); f != "trust-keys" {
		t.Errorf("the focus is on %q, not the keys", f)
	}
	if v := b.value("#trust-keys"); !strings.Contains(v, `"kid": "k1"`) {
		t.Errorf("the form holds the keys %q to edit", v)
	}
	b.submit("replace the keys", map[string]string{"#trust-keys": jwksJSON(publisher)}, "#trust-save")
	b.waitText("#notice", "Saved the issuer "+host+". 1 card weighed: 1 trusted, 1 changed.")
	b.waitText("#trust caption", "1 issuer")
	b.open("#/cards/georoute")
	b.waitText("#import-trust", "Trusted: vouched for by issuer "+host+" (key k1)")
	b.waitText("#import-signature", "its signature is")
	// The catalogue's Trust filter finds it, and the card alone.
	b.open("#/cards")
	b.submit("trusted only", map[string]string{`select[name=trusted]`: "true"}, `form[role=search] button[type=submit]`)
	b.waitText("#total", "1 card matches")

	b.open("#/trust")
	b.do("remove", chromedp.Click(chromedp.CSS(row+` button[aria-label="Remove `+host+`"]`)))
	b.confirmDialog(true)
	b.waitText("#notice", "Removed the issuer "+host+". 1 card weighed: 0 trusted, 1 changed.")
	b.waitText("#trust caption", "0 issuers")
	if got := apiIssuers(); got != "" {
		t.Errorf("after removing, the API lists %q", got)
	}
	b.open("#/cards/georoute")
	b.waitText("#import-trust", "Not trusted: no issuer of the trust policy speaks for "+host)
	b.checkRequests(e)

	// A reader sees the issuers, no control that changes them, and what it takes to.
	expect(t, e.do("PUT", "/v1/tenants/acme/trust/*.example.com", alice, map[string]any{"keys": pinnedKeys(t)}), http.StatusOK)
	r := newBrowser(t, e)
	r.signIn(rita, "", "#/cards")
	r.open("#/trust")
	r.waitText(`#trust-table tr[data-domain="*.example.com"]`, "1 pinned key (kid k1)")
	r.waitText("#trust-readonly", "trust:manage")
	if n := r.count("#trust-save, #trust-table button, #trust form"); n != 0 {
		t.Errorf("a reader sees %d controls that change the policy", n)
	}
}
