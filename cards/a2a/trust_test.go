package a2a_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/agentcards/agentcards/authz"
	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/a2a"
	"github.com/agentcards/agentcards/cards/a2a/a2atest"
	"github.com/agentcards/agentcards/cards/search"
	"github.com/agentcards/agentcards/storage"
	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/tenants"
)

// signer is an Ed25519 key of a publisher, with its kid.
type signer struct {
	kid  string
	priv ed25519.PrivateKey
	pub  ed25519.PublicKey
}

func newSigner(t testing.TB, kid string) signer {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return signer{kid: kid, priv: priv, pub: pub}
}

// jwks is a key set of the signers' public keys.
func jwks(t testing.TB, ss ...signer) json.RawMessage {
	t.Helper()
	set := jose.JSONWebKeySet{}
	for _, s := range ss {
		set.Keys = append(set.Keys, jose.JSONWebKey{Key: s.pub, KeyID: s.kid, Algorithm: "EdDSA"})
	}
	return jsonOf(t, set)
}

// sig is s's signature of card (without its signatures), naming jku unless it is "".
func (s signer) sig(t testing.TB, card map[string]any, jku string) map[string]any {
	t.Helper()
	h := map[string]any{"alg": "EdDSA", "kid": s.kid, "typ": "JOSE"}
	if jku != "" {
		h["jku"] = jku
	}
	return a2atest.JWS(t, card, h, a2atest.EdDSA(s.priv))
}

// signed is card with sigs as its signatures, each made by sign over card as it is.
func signed(t testing.TB, card map[string]any, sign ...func(map[string]any) map[string]any) map[string]any {
	t.Helper()
	var sigs []any
	for _, s := range sign {
		sigs = append(sigs, s(card))
	}
	card["signatures"] = sigs
	return card
}

// keyServer serves a JWKS at /jwks.json on loopback, which the test may change.
type keyServer struct {
	srv  *httptest.Server
	body atomic.Pointer[[]byte]
	hits atomic.Int64
	down atomic.Bool // answer 503
}

func newKeyServer(t testing.TB, set json.RawMessage) *keyServer {
	t.Helper()
	k := &keyServer{}
	k.set(set)
	k.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		k.hits.Add(1)
		if k.down.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(*k.body.Load())
	}))
	t.Cleanup(k.srv.Close)
	return k
}

func (k *keyServer) set(set json.RawMessage) { b := []byte(set); k.body.Store(&b) }
func (k *keyServer) url() string             { return k.srv.URL + "/jwks.json" }

// trustOf is the trust check of the card as stored.
func (f *fixture) trustOf(agentID string) cards.TrustCheck {
	f.t.Helper()
	c, err := f.cards.Get(alice, acme, agentID)
	if err != nil {
		f.t.Fatalf("get %s: %v", agentID, err)
	}
	if c.A2A == nil || c.A2A.Import == nil || c.A2A.Import.Trust == nil {
		f.t.Fatalf("%s: no trust check in %s", agentID, jsonOf(f.t, c.A2A))
	}
	return *c.A2A.Import.Trust
}

// putIssuer puts an issuer in acme's policy, and fails the test if it is refused.
func (f *fixture) putIssuer(e tenants.TrustIssuer) cards.Reweighed {
	f.t.Helper()
	_, w, err := f.trust.Put(alice, acme, e)
	if err != nil {
		f.t.Fatalf("put issuer %s: %v", e.Domain, err)
	}
	return w
}

// sameHost is the host of the sample card's interfaces.
const sampleHost = "georoute-agent.example.com"

// TestTrustCases: the table of cases of what a policy vouches for. Each imports a card under a
// policy and reads its trust check: trusted only when a signature verifies with a key of the one
// issuer that speaks for every host of the card's interfaces, and no signature is invalid.
func TestTrustCases(t *testing.T) {
	pub, rotated, stranger := newSigner(t, "pub-1"), newSigner(t, "pub-2"), newSigner(t, "stranger-1")
	strangerKeys := newKeyServer(t, jwks(t, stranger))
	publisherKeys := newKeyServer(t, jwks(t, pub, rotated))
	pinned := func(domain string, ss ...signer) tenants.TrustIssuer {
		return tenants.TrustIssuer{Domain: domain, Keys: jwks(t, ss...)}
	}
	by := func(s signer, jku string) func(map[string]any) map[string]any {
		return func(c map[string]any) map[string]any { return s.sig(t, c, jku) }
	}
	sample := func(change func(map[string]any)) map[string]any {
		c := a2atest.SampleV1(t)
		if change != nil {
			change(c)
		}
		return c
	}
	tamper := func(c map[string]any) map[string]any { c["name"] = "Someone Else"; return c }
	twoHosts := func(c map[string]any) {
		ifaces := c["supportedInterfaces"].([]any)
		ifaces[1].(map[string]any)["url"] = "https://grpc.example.org/a2a"
	}
	cases := []struct {
		name   string
		policy []tenants.TrustIssuer
		card   map[string]any
		keys   json.RawMessage // the import request's keys
		// want is the trust status; issuer, kid and reason what the check must name.
		want, issuer, kid, reason string
	}{
		{name: "pinned key of the host's issuer", policy: []tenants.TrustIssuer{pinned(sampleHost, pub)},
			card: signed(t, sample(nil), by(pub, "")), want: cards.TrustTrusted, issuer: sampleHost, kid: "pub-1"},
		{name: "wildcard of the host's parent", policy: []tenants.TrustIssuer{pinned("*.example.com", pub)},
			card: signed(t, sample(nil), by(pub, "")), want: cards.TrustTrusted, issuer: "*.example.com", kid: "pub-1"},
		{name: "issuer's JWKS URL", policy: []tenants.TrustIssuer{{Domain: sampleHost, JWKSURL: publisherKeys.url()}},
			card: signed(t, sample(nil), by(rotated, "")), want: cards.TrustTrusted, issuer: sampleHost, kid: "pub-2"},
		{name: "wrong domain", policy: []tenants.TrustIssuer{pinned("example.org", pub), pinned("example.com", pub)},
			card: signed(t, sample(nil), by(pub, "")), want: cards.TrustUntrusted, reason: "no issuer of the trust policy speaks for " + sampleHost},
		{name: "a wildcard does not cover its own name", policy: []tenants.TrustIssuer{pinned("*."+sampleHost, pub)},
			card: signed(t, sample(nil), by(pub, "")), want: cards.TrustUntrusted, reason: "speaks for " + sampleHost},
		{name: "the host's own entry speaks, not the wildcard", policy: []tenants.TrustIssuer{pinned("*.example.com", pub), pinned(sampleHost, stranger)},
			card: signed(t, sample(nil), by(pub, "")), want: cards.TrustUntrusted, issuer: sampleHost, reason: `no signature is by a key of issuer ` + sampleHost + ` (kid "pub-1")`},
		{name: "another issuer's key", policy: []tenants.TrustIssuer{pinned(sampleHost, pub)},
			card: signed(t, sample(nil), by(stranger, "")), want: cards.TrustUntrusted, issuer: sampleHost, reason: `kid "stranger-1"`},
		{name: "jku to an untrusted host: verified, not trusted", policy: []tenants.TrustIssuer{pinned(sampleHost, pub)},
			card: signed(t, sample(nil), by(stranger, strangerKeys.url())), want: cards.TrustUntrusted, issuer: sampleHost, reason: `kid "stranger-1"`},
		{name: "tampered content, issuer's key", policy: []tenants.TrustIssuer{pinned(sampleHost, pub)},
			card: tamper(signed(t, sample(nil), by(pub, ""))), want: cards.TrustUntrusted, issuer: sampleHost, reason: "signatures[0] does not match the card"},
		{name: "tampered content, rejected by the request's keys", policy: []tenants.TrustIssuer{pinned(sampleHost, pub)}, keys: jwks(t, pub),
			card: tamper(signed(t, sample(nil), by(pub, ""))), want: cards.TrustUntrusted, reason: "a signature on the card is invalid"},
		{name: "several signatures, one by the issuer", policy: []tenants.TrustIssuer{pinned(sampleHost, pub)},
			card: signed(t, sample(nil), by(stranger, ""), by(pub, "")), want: cards.TrustTrusted, issuer: sampleHost, kid: "pub-1"},
		{name: "several signatures, one by the issuer's key over other content", policy: []tenants.TrustIssuer{pinned(sampleHost, pub, rotated)},
			card: func() map[string]any {
				c := sample(nil)
				other := rotated.sig(t, tamper(sample(nil)), "")
				c = signed(t, c, by(pub, ""))
				c["signatures"] = append(c["signatures"].([]any), other)
				return c
			}(), want: cards.TrustUntrusted, issuer: sampleHost, reason: "signatures[1] does not match the card"},
		{name: "hosts of two issuers", policy: []tenants.TrustIssuer{pinned("*.example.com", pub), pinned("*.example.org", pub)},
			card: signed(t, sample(twoHosts), by(pub, "")), want: cards.TrustUntrusted, reason: "two issuers, *.example.com and *.example.org"},
		{name: "one issuer for both hosts", policy: []tenants.TrustIssuer{pinned("*.example.com", pub)},
			card: signed(t, sample(twoHosts), by(pub, "")), want: cards.TrustUntrusted, reason: "speaks for grpc.example.org"},
		{name: "no signature", policy: []tenants.TrustIssuer{pinned(sampleHost, pub)},
			card: sample(func(c map[string]any) { delete(c, "signatures") }), want: cards.TrustUntrusted, reason: "the card has no signatures"},
		{name: "no policy", card: signed(t, sample(nil), by(pub, "")), want: cards.TrustUntrusted, reason: "speaks for " + sampleHost},
		{name: "issuer's keys cannot be fetched", policy: []tenants.TrustIssuer{{Domain: sampleHost, JWKSURL: closedPortURL(t, "/jwks.json")}},
			card: signed(t, sample(nil), by(pub, "")), want: cards.TrustUntrusted, issuer: sampleHost, reason: "the keys of issuer " + sampleHost + " could not be read"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, "sqlite")
			f.allowLoopback()
			for _, e := range tc.policy {
				// The issuer whose keys cannot be fetched cannot be put: it is written as stored.
				if _, _, err := f.trust.Put(alice, acme, e); err != nil && !strings.Contains(tc.name, "cannot be fetched") {
					t.Fatalf("put %s: %v", e.Domain, err)
				} else if err != nil {
					writeIssuer(t, f, e)
				}
			}
			body := map[string]any{"agentId": "agt", "card": tc.card, "allowInvalidSignature": true}
			if tc.keys != nil {
				body["keys"] = tc.keys
			}
			f.mustImport(body)
			got := f.trustOf("agt")
			if got.Status != tc.want || got.Issuer != tc.issuer || got.KeyID != tc.kid || !strings.Contains(got.Reason, tc.reason) ||
				(tc.reason == "") != (got.Reason == "") || got.CheckedAt.IsZero() {
				t.Errorf("trust %+v, want %s by %q (kid %q), reason %q", got, tc.want, tc.issuer, tc.kid, tc.reason)
			}
			wantFound(t, f, "agt", tc.want == cards.TrustTrusted)
		})
	}
}

// writeIssuer stores an issuer in acme's policy as given, past the checks of a put.
func writeIssuer(t *testing.T, f *fixture, e tenants.TrustIssuer) {
	t.Helper()
	if _, _, err := f.trust.Store.PutTrustIssuer(context.Background(), acme, e); err != nil {
		t.Fatal(err)
	}
}

// wantFound fails the test unless the search's trusted filter finds agentID as trusted (or not).
func wantFound(t *testing.T, f *fixture, agentID string, trusted bool) {
	t.Helper()
	for _, want := range []bool{true, false} {
		res, err := f.a2a.Search.Search(alice, acme, search.Query{Trusted: &want})
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, it := range res.Items {
			found = found || it.Card.AgentID == agentID
		}
		if found != (want == trusted) {
			t.Errorf("search trusted=%v finds %s: %v", want, agentID, found)
		}
	}
}

// TestTrustPolicyChanges: a change of the policy weighs again the cards it covers before it
// answers: an issuer added vouches for cards imported before it, a key gone from a pinned set
// un-trusts its cards at once, a removed issuer un-trusts them; each change is a new revision,
// and cards it does not cover are not written.
func TestTrustPolicyChanges(t *testing.T) {
	forEachDialect(t, func(t *testing.T, f *fixture) {
		pub, next := newSigner(t, "pub-1"), newSigner(t, "pub-2")
		f.mustImport(map[string]any{"agentId": "geo", "card": signed(t, a2atest.SampleV1(t), func(c map[string]any) map[string]any { return pub.sig(t, c, "") })})
		other := a2atest.SampleV1(t)
		other["supportedInterfaces"] = []any{map[string]any{"url": "https://agent.example.org/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}}
		f.mustImport(map[string]any{"agentId": "elsewhere", "card": signed(t, other, func(c map[string]any) map[string]any { return pub.sig(t, c, "") })})
		f.put("plain", map[string]any{"name": "Plain", "protocols": []string{"a2a"}, "endpoint": "https://" + sampleHost + "/x"})
		if got := f.trustOf("geo"); got.Status != cards.TrustUntrusted {
			t.Fatalf("before any issuer: %+v", got)
		}
		rev := revisionOf(t, f, "geo")
		revElsewhere := revisionOf(t, f, "elsewhere")

		if w := f.putIssuer(tenants.TrustIssuer{Domain: "*.example.com", Keys: jwks(t, pub, next)}); w != (cards.Reweighed{Weighed: 1, Trusted: 1, Changed: 1}) {
			t.Errorf("issuer added: %+v, want the one card it covers weighed, trusted and changed", w)
		}
		if got := f.trustOf("geo"); got.Status != cards.TrustTrusted || got.Issuer != "*.example.com" || revisionOf(t, f, "geo") != rev+1 {
			t.Errorf("after the issuer was added: %+v, revision %d", got, revisionOf(t, f, "geo"))
		}
		wantFound(t, f, "geo", true)
		// Put again unchanged: weighed, not written.
		if w := f.putIssuer(tenants.TrustIssuer{Domain: "*.example.com", Keys: jwks(t, pub, next)}); w != (cards.Reweighed{Weighed: 1, Trusted: 1}) {
			t.Errorf("the same issuer again: %+v", w)
		}
		// The key rotated out of the pinned set: un-trusted before the put answers.
		if w := f.putIssuer(tenants.TrustIssuer{Domain: "*.example.com", Keys: jwks(t, next)}); w != (cards.Reweighed{Weighed: 1, Changed: 1}) {
			t.Errorf("key revoked: %+v", w)
		}
		if got := f.trustOf("geo"); got.Status != cards.TrustUntrusted || !strings.Contains(got.Reason, `kid "pub-1"`) {
			t.Errorf("after the key was revoked: %+v", got)
		}
		wantFound(t, f, "geo", false)
		f.putIssuer(tenants.TrustIssuer{Domain: "*.example.com", Keys: jwks(t, pub)})
		w, err := f.trust.Remove(alice, acme, "*.EXAMPLE.com")
		if err != nil || w != (cards.Reweighed{Weighed: 1, Changed: 1}) {
			t.Errorf("issuer removed: %+v, %v", w, err)
		}
		if got := f.trustOf("geo"); got.Status != cards.TrustUntrusted {
			t.Errorf("after the issuer was removed: %+v", got)
		}
		if revisionOf(t, f, "elsewhere") != revElsewhere {
			t.Errorf("a card on another domain was written")
		}
		if _, err := f.trust.Remove(alice, acme, "*.example.com"); fault.KindOf(err) != fault.NotFound {
			t.Errorf("removed twice: %v", err)
		}
		// A write of the card's content drops its import record, and with it the trust.
		f.putIssuer(tenants.TrustIssuer{Domain: "*.example.com", Keys: jwks(t, pub)})
		wantFound(t, f, "geo", true)
		if _, err := f.cards.Patch(alice, acme, "geo", []byte(`{"name": "Renamed"}`), cards.Precondition{}); err != nil {
			t.Fatal(err)
		}
		wantFound(t, f, "geo", false)
	})
}

// revisionOf is the revision of agentID's card.
func revisionOf(t *testing.T, f *fixture, agentID string) int64 {
	t.Helper()
	c, err := f.cards.Get(alice, acme, agentID)
	if err != nil {
		t.Fatal(err)
	}
	return c.Revision
}

// TestTrustKeyRotationAtTheIssuersURL: an issuer given by its JWKS URL vouches for a card signed
// with a key published there after the set was first read: the refresh that brings the card
// signed anew finds the new key without any change to the policy, and without a new import.
func TestTrustKeyRotationAtTheIssuersURL(t *testing.T) {
	f := newFixture(t, "sqlite")
	f.allowLoopback()
	old, next := newSigner(t, "2026-01"), newSigner(t, "2026-06")
	keys := newKeyServer(t, jwks(t, old))
	var served atomic.Pointer[[]byte]
	serve := func(s signer) {
		b := jsonOf(t, signed(t, a2atest.SampleV1(t), func(c map[string]any) map[string]any { return s.sig(t, c, "") }))
		served.Store(&b)
	}
	serve(old)
	source := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(*served.Load()) }))
	t.Cleanup(source.Close)

	fetches := func(want int64, when string) {
		t.Helper()
		if got := keys.hits.Load(); got != want {
			t.Errorf("%s: the issuer's keys were fetched %d times, want %d", when, got, want)
		}
	}
	f.putIssuer(tenants.TrustIssuer{Domain: sampleHost, JWKSURL: keys.url()})
	fetches(1, "put") // a put reads the keys it is given
	f.mustImport(map[string]any{"agentId": "geo", "url": source.URL + "/.well-known/agent-card.json"})
	if got := f.trustOf("geo"); got.Status != cards.TrustTrusted || got.KeyID != "2026-01" {
		t.Fatalf("imported: %+v", got)
	}
	fetches(1, "imported") // a known kid: the set read by the put
	// The publisher publishes its new key, then signs its card with it.
	keys.set(jwks(t, old, next))
	serve(next)
	if _, err := f.a2a.Refresh(alice, acme, "geo", nil); err != nil {
		t.Fatal(err)
	}
	if got := f.trustOf("geo"); got.Status != cards.TrustTrusted || got.KeyID != "2026-06" {
		t.Errorf("refreshed after the rotation: %+v", got)
	}
	fetches(2, "rotated") // a kid the set lacked: read again
	// Kids the set lacks make it fetch again once per refetch interval, not once a card: within it,
	// they are weighed against the set already read.
	// Signed by a key the issuer never published, the card fetched is neither verified nor
	// trusted: each refresh is refused, and the card stays as the issuer's key vouched for it.
	serve(newSigner(t, "unknown"))
	for range 3 {
		res, err := f.a2a.Refresh(alice, acme, "geo", nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.Outcome != cards.RefreshRefused {
			t.Errorf("a refresh to a card no key vouches for: %+v", res.RefreshOutcome)
		}
	}
	fetches(2, "three refreshes signed by an unknown kid")
	if got := f.trustOf("geo"); got.Status != cards.TrustTrusted || got.KeyID != "2026-06" {
		t.Errorf("after the refused refreshes: %+v", got)
	}
}

// TestTrustPutRefusals: what a put refuses, with nothing stored.
func TestTrustPutRefusals(t *testing.T) {
	f := newFixture(t, "sqlite")
	f.guardAsDefault()
	pub := newSigner(t, "k")
	private := jose.JSONWebKey{Key: pub.priv, KeyID: "k", Algorithm: "EdDSA"}
	for _, tc := range []struct {
		name   string
		issuer tenants.TrustIssuer
		kind   fault.Kind
		says   string
	}{
		{"no domain", tenants.TrustIssuer{Keys: jwks(t, pub)}, fault.Invalid, "must be a host name"},
		{"a URL for a domain", tenants.TrustIssuer{Domain: "https://example.com", Keys: jwks(t, pub)}, fault.Invalid, "must be a host name"},
		{"a wildcard inside", tenants.TrustIssuer{Domain: "a.*.example.com", Keys: jwks(t, pub)}, fault.Invalid, "must be a host name"},
		{"neither keys nor URL", tenants.TrustIssuer{Domain: "example.com"}, fault.Invalid, "exactly one of jwksUrl and keys"},
		{"both", tenants.TrustIssuer{Domain: "example.com", Keys: jwks(t, pub), JWKSURL: "https://example.com/jwks.json"}, fault.Invalid, "exactly one"},
		{"not a JWKS", tenants.TrustIssuer{Domain: "example.com", Keys: json.RawMessage(`[1, 2]`)}, fault.Invalid, "must be a JWKS"},
		{"a private key", tenants.TrustIssuer{Domain: "example.com", Keys: jsonOf(t, jose.JSONWebKeySet{Keys: []jose.JSONWebKey{private}})}, fault.Invalid, "private key"},
		{"a symmetric key", tenants.TrustIssuer{Domain: "example.com", Keys: json.RawMessage(`{"keys": [{"kty": "oct", "k": "c2VjcmV0"}]}`)}, fault.Invalid, "symmetric key"},
		{"no usable key", tenants.TrustIssuer{Domain: "example.com", Keys: p384(t)}, fault.Invalid, "no public key that checks card signatures"},
		{"a wildcard of an address", tenants.TrustIssuer{Domain: "*.0.1", Keys: jwks(t, pub)}, fault.Invalid, "must be a host name"},
		{"a URL the guard refuses", tenants.TrustIssuer{Domain: "example.com", JWKSURL: "https://127.0.0.1:9/jwks.json"}, fault.URLBlocked, "does not fetch"},
		{"plain http", tenants.TrustIssuer{Domain: "example.com", JWKSURL: "http://example.com/jwks.json"}, fault.Invalid, "must be an https URL"},
		{"not an http URL", tenants.TrustIssuer{Domain: "example.com", JWKSURL: "ftp://example.com/jwks.json"}, fault.Invalid, "http or https"},
	} {
		_, _, err := f.trust.Put(alice, acme, tc.issuer)
		if fault.KindOf(err) != tc.kind || !strings.Contains(fault.MessageOf(err), tc.says) {
			t.Errorf("%s: %v, want %s saying %q", tc.name, err, tc.kind, tc.says)
		}
	}
	if policy, err := f.trust.List(alice, acme); err != nil || len(policy) != 0 {
		t.Errorf("after refusals the policy is %+v, %v", policy, err)
	}
	if _, err := f.trust.Get(alice, acme, "example.com"); fault.KindOf(err) != fault.NotFound {
		t.Errorf("get of no issuer: %v", err)
	}
}

// p384 is a JWKS of one P-384 public key: a key no card signature is checked with.
func p384(t *testing.T) json.RawMessage {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return jsonOf(t, jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &k.PublicKey, KeyID: "p384"}}})
}

// TestTrustKeySetsWhileTheIssuerIsDown: an issuer's URL that fails is fetched again at most once
// per refetch interval however many cards ask, and the keys last read from it stand meanwhile.
func TestTrustKeySetsWhileTheIssuerIsDown(t *testing.T) {
	f := newFixture(t, "sqlite")
	f.allowLoopback()
	pub := newSigner(t, "pub-1")
	keys := newKeyServer(t, jwks(t, pub))
	f.putIssuer(tenants.TrustIssuer{Domain: sampleHost, JWKSURL: keys.url()})
	byPub := func(c map[string]any) map[string]any { return pub.sig(t, c, "") }
	f.mustImport(map[string]any{"agentId": "a", "card": signed(t, a2atest.SampleV1(t), byPub)})
	keys.down.Store(true) // the issuer's URL fails
	before := keys.hits.Load()
	stranger := newSigner(t, "unknown")
	for _, id := range []string{"b", "c", "d"} {
		// An unknown kid asks for the keys again: one attempt, which fails, then none.
		f.mustImport(map[string]any{"agentId": id, "card": signed(t, a2atest.SampleV1(t), func(c map[string]any) map[string]any { return stranger.sig(t, c, "") })})
	}
	f.mustImport(map[string]any{"agentId": "e", "card": signed(t, a2atest.SampleV1(t), byPub)})
	if got := keys.hits.Load() - before; got != 1 {
		t.Errorf("four imports while the issuer's URL failed fetched it %d times, want 1", got)
	}
	if got := f.trustOf("e"); got.Status != cards.TrustTrusted {
		t.Errorf("signed by a key read before the issuer went down: %+v", got)
	}
	if got := f.trustOf("b"); got.Status != cards.TrustUntrusted || !strings.Contains(got.Reason, `kid "unknown"`) {
		t.Errorf("signed by a key the issuer never published: %+v", got)
	}
}

// TestTrustSettlesAPolicyChangedDuringAnImport: an import weighs the card against the policy it
// read, and a policy change's own pass may read the cards before the import writes it; the
// import then weighs it again against the policy as it is after its write.
func TestTrustSettlesAPolicyChangedDuringAnImport(t *testing.T) {
	f := newFixture(t, "sqlite")
	pub := newSigner(t, "pub-1")
	// The import reads the policy while it is empty; the issuer is put before the import writes.
	f.a2a.Trust = &changingPolicy{TrustStore: f.a2a.Trust, onFirst: func() {
		f.putIssuer(tenants.TrustIssuer{Domain: sampleHost, Keys: jwks(t, pub)})
	}}
	c := f.mustImport(map[string]any{"agentId": "geo", "card": signed(t, a2atest.SampleV1(t), func(c map[string]any) map[string]any { return pub.sig(t, c, "") })})
	if !c.Trusted() || !f.trustOfTrusted("geo") {
		t.Errorf("the card imported while the issuer was put: %+v", c.A2A.Import.Trust)
	}
}

func (f *fixture) trustOfTrusted(agentID string) bool {
	f.t.Helper()
	return f.trustOf(agentID).Status == cards.TrustTrusted
}

// changingPolicy answers the policy as it is, after calling onFirst once past the first read.
type changingPolicy struct {
	a2a.TrustStore
	onFirst func()
	done    bool
}

func (c *changingPolicy) TrustPolicy(ctx context.Context, tenant tenants.ID) ([]tenants.TrustIssuer, error) {
	p, err := c.TrustStore.TrustPolicy(ctx, tenant)
	if !c.done {
		c.done = true
		c.onFirst()
	}
	return p, err
}

// TestTrustSettleRunsAPassThatDidNotEnd: a change of the policy is stored with its domain marked
// pending; when its pass over the cards did not run (the server stopped at that moment), Settle
// runs it: the cards are weighed against the policy as it is, and the mark is cleared.
func TestTrustSettleRunsAPassThatDidNotEnd(t *testing.T) {
	forEachDialect(t, func(t *testing.T, f *fixture) {
		pub := newSigner(t, "pub-1")
		f.mustImport(map[string]any{"agentId": "geo", "card": signed(t, a2atest.SampleV1(t), func(c map[string]any) map[string]any { return pub.sig(t, c, "") })})
		writeIssuer(t, f, tenants.TrustIssuer{Domain: sampleHost, Keys: jwks(t, pub)}) // stored, not weighed
		if got := f.trustOf("geo"); got.Status != cards.TrustUntrusted {
			t.Fatalf("before Settle: %+v", got)
		}
		n, err := f.trust.Settle(context.Background(), 0)
		if err != nil || n != 1 {
			t.Fatalf("Settle: %d domains, %v", n, err)
		}
		if got := f.trustOf("geo"); got.Status != cards.TrustTrusted {
			t.Errorf("after Settle: %+v", got)
		}
		if pending, err := f.trust.Store.TrustPending(context.Background()); err != nil || len(pending) != 0 {
			t.Errorf("still pending: %+v, %v", pending, err)
		}
		if n, err := f.trust.Settle(context.Background(), 0); err != nil || n != 0 {
			t.Errorf("Settle again: %d domains, %v", n, err)
		}
		// A put's own pass clears its mark.
		f.putIssuer(tenants.TrustIssuer{Domain: "*.example.com", Keys: jwks(t, pub)})
		if pending, _ := f.trust.Store.TrustPending(context.Background()); len(pending) != 0 {
			t.Errorf("pending after a put: %+v", pending)
		}
	})
}

// staleFirst is a trust store whose first read of the policy answers stale: as a pass that read
// the policy just before another change committed.
type staleFirst struct {
	a2a.TrustStore
	stale []tenants.TrustIssuer
	read  bool
}

func (s *staleFirst) TrustPolicy(ctx context.Context, tenant tenants.ID) ([]tenants.TrustIssuer, error) {
	if !s.read {
		s.read = true
		return s.stale, nil
	}
	return s.TrustStore.TrustPolicy(ctx, tenant)
}

// TestTrustPassOfAnOlderPolicy: a pass that read the policy before another change wrote a card
// by the older policy reads the policy again after its write, and weighs the card against the one
// that now stands: the revoked key does not vouch for it in the end.
func TestTrustPassOfAnOlderPolicy(t *testing.T) {
	f := newFixture(t, "sqlite")
	pub, next := newSigner(t, "pub-1"), newSigner(t, "pub-2")
	f.mustImport(map[string]any{"agentId": "geo", "card": signed(t, a2atest.SampleV1(t), func(c map[string]any) map[string]any { return pub.sig(t, c, "") })})
	racing := *f.trust
	racing.Store = &staleFirst{TrustStore: f.trust.Store, stale: []tenants.TrustIssuer{{Domain: sampleHost, Keys: jwks(t, pub)}}}
	if _, _, err := racing.Put(alice, acme, tenants.TrustIssuer{Domain: sampleHost, Keys: jwks(t, next)}); err != nil {
		t.Fatal(err)
	}
	if got := f.trustOf("geo"); got.Status != cards.TrustUntrusted {
		t.Errorf("a card weighed by a policy gone: %+v", got)
	}
}

// TestTrustSignedCopyNotKept: a signed card whose copy cannot be kept (over the document limit,
// or not UTF-8, which Postgres and MySQL refuse as text) is imported, untrusted and saying why,
// without the copy; a status write of a signed card is not refused for the copy's depth.
func TestTrustSignedCopyNotKept(t *testing.T) {
	forEachDialect(t, func(t *testing.T, f *fixture) {
		pub := newSigner(t, "pub-1")
		f.putIssuer(tenants.TrustIssuer{Domain: sampleHost, Keys: jwks(t, pub)})
		by := func(c map[string]any) map[string]any { return pub.sig(t, c, "") }

		big := a2atest.SampleV1(t)
		big["zzPadding"] = strings.Repeat("x", cards.MaxDocumentBytes)
		c := f.mustImport(map[string]any{"agentId": "big", "card": signed(t, big, by)})
		if got := c.A2A.Import; got.Signed != nil || got.Trust.Status != cards.TrustUntrusted || !strings.Contains(got.Trust.Reason, "not kept") {
			t.Errorf("an oversize signed card: trust %+v, signed kept %v", got.Trust, got.Signed != nil)
		}

		raw := jsonOf(t, signed(t, a2atest.SampleV1(t), by))
		raw = []byte(strings.Replace(string(raw), "Provides advanced", "Provides \xff advanced", 1))
		body := []byte(`{"agentId": "bytes", "allowInvalidSignature": true, "card": ` + string(raw) + `}`)
		c, err := f.a2a.Import(alice, acme, body)
		if err != nil {
			t.Fatalf("a signed card with a byte that is not UTF-8: %v", err)
		}
		if got := c.A2A.Import; got.Signed != nil || got.Trust.Status != cards.TrustUntrusted || !strings.Contains(got.Trust.Reason, "UTF-8") {
			t.Errorf("a card not UTF-8: trust %+v, signed kept %v", got.Trust, got.Signed != nil)
		}

		// The shallowest depth a server may set: OAuth flows fit it in the card, and nest deeper
		// in the signed copy, which is not the patch's.
		f.cards.MaxJSONDepth = 8
		oauth := a2atest.SampleV1(t)
		oauth["securitySchemes"] = map[string]any{"oauth": map[string]any{"oauth2SecurityScheme": map[string]any{"flows": map[string]any{
			"clientCredentials": map[string]any{"tokenUrl": "https://auth.example.com/token", "scopes": map[string]any{"read": "Read"}}}}}}
		oauth["securityRequirements"] = []any{map[string]any{"schemes": map[string]any{"oauth": map[string]any{"list": []any{"read"}}}}}
		f.mustImport(map[string]any{"agentId": "geo", "card": signed(t, oauth, by)})
		patched, err := f.cards.Patch(alice, acme, "geo", []byte(`{"status": "deprecated"}`), cards.Precondition{})
		if err != nil {
			t.Fatalf("a status write of a signed card: %v", err)
		}
		if !patched.Trusted() {
			t.Errorf("a status write dropped the trust: %+v", patched.A2A.Import)
		}
	})
}

// failingReads is a trust store whose reads of the policy fail from the nth on.
type failingReads struct {
	a2a.TrustStore
	n, reads int
}

func (s *failingReads) TrustPolicy(ctx context.Context, tenant tenants.ID) ([]tenants.TrustIssuer, error) {
	if s.reads++; s.reads >= s.n {
		return nil, errors.New("the database is gone a moment")
	}
	return s.TrustStore.TrustPolicy(ctx, tenant)
}

// TestTrustLeftToSettle: what cannot be weighed when a card is written is left to Settle, never
// dropped, and a pass that cannot read an issuer's keys leaves its cards as they are, pending,
// instead of writing them untrusted for good: an import whose second weighing fails marks the
// tenant's signed cards pending; Settle goes on past a tenant it cannot settle (suspended) to
// the others; and it weighs the cards once the issuer's keys can be read again.
func TestTrustLeftToSettle(t *testing.T) {
	f := newFixture(t, "sqlite")
	f.allowLoopback()
	pub := newSigner(t, "pub-1")
	keys := newKeyServer(t, jwks(t, pub))
	by := func(c map[string]any) map[string]any { return pub.sig(t, c, "") }
	f.putIssuer(tenants.TrustIssuer{Domain: sampleHost, JWKSURL: keys.url()})

	// The policy changes under the import, and reading it again then fails.
	store := f.a2a.Trust
	f.a2a.Trust = &failingReads{TrustStore: &changingPolicy{TrustStore: store, onFirst: func() {
		writeIssuer(t, f, tenants.TrustIssuer{Domain: "*.example.com", Keys: jwks(t, pub)})
	}}, n: 2}
	f.mustImport(map[string]any{"agentId": "geo", "card": signed(t, a2atest.SampleV1(t), by)})
	f.a2a.Trust = store
	pending, err := store.TrustPending(context.Background())
	if err != nil || !slices.ContainsFunc(pending, func(p tenants.TrustPending) bool { return p.Domain == "" }) {
		t.Fatalf("after an import that could not weigh its card again: pending %+v, %v", pending, err)
	}

	// A suspended tenant's pending domain is left for later; acme's is settled all the same.
	storagetest.CreateTenant(t, f.db, "aaa", time.Now().UTC(), "alice")
	inAAA := authz.WithPrincipal(context.Background(), authz.Principal{Subject: "alice", Tenant: "aaa"})
	other := a2atest.SampleV1(t)
	other["supportedInterfaces"] = []any{map[string]any{"url": "https://a.example/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}}
	if _, err := f.a2a.Import(inAAA, "aaa", jsonOf(t, map[string]any{"agentId": "x", "card": signed(t, other, by)})); err != nil {
		t.Fatal(err)
	}
	if _, _, err := store.PutTrustIssuer(context.Background(), "aaa", tenants.TrustIssuer{Domain: "a.example", Keys: jwks(t, pub)}); err != nil {
		t.Fatal(err)
	}
	tenantStore := storage.NewTenantStore(f.db)
	aaa, err := tenantStore.Get(context.Background(), "aaa")
	if err != nil {
		t.Fatal(err)
	}
	aaa.Status = tenants.StatusSuspended
	if err := tenantStore.Update(context.Background(), aaa); err != nil {
		t.Fatal(err)
	}
	n, err := f.trust.Settle(context.Background(), 0)
	if err == nil || n == 0 {
		t.Errorf("Settle with a suspended tenant: %d settled, %v; want acme's settled and aaa's error", n, err)
	}
	pending, _ = store.TrustPending(context.Background())
	if len(pending) != 1 || pending[0].Tenant != "aaa" {
		t.Errorf("pending after Settle: %+v, want aaa's alone", pending)
	}
	if got := f.trustOf("geo"); got.Status != cards.TrustTrusted || got.Issuer != sampleHost {
		t.Errorf("geo after Settle: %+v", got)
	}

	// The issuer's URL fails, and a replica with no copy of its keys runs a pass: the card is
	// left trusted, the domain pending; once the keys can be read, the pass ends.
	keys.down.Store(true)
	f.trust.Keys = &a2a.KeySets{Fetch: f.a2a.Fetch, PlainHTTP: a2atest.IsLoopback}
	if err := store.MarkTrustPending(context.Background(), acme, sampleHost); err != nil {
		t.Fatal(err)
	}
	if _, err := f.trust.Settle(context.Background(), 0); err == nil {
		t.Errorf("Settle while the issuer's keys cannot be read: no error")
	}
	if got := f.trustOf("geo"); got.Status != cards.TrustTrusted {
		t.Errorf("geo while the issuer is down: %+v", got)
	}
	keys.down.Store(false)
	f.trust.Keys = &a2a.KeySets{Fetch: f.a2a.Fetch, PlainHTTP: a2atest.IsLoopback}
	f.trust.Settle(context.Background(), 0)
	pending, _ = store.TrustPending(context.Background())
	if slices.ContainsFunc(pending, func(p tenants.TrustPending) bool { return p.Tenant == acme }) {
		t.Errorf("acme still pending once the issuer is back: %+v", pending)
	}
}

// TestTrustKeySetsOneFetchAtATime: imports at once of cards signed by a kid the issuer's set
// lacks fetch it once; an issuer whose URL answers 404 publishes no key.
func TestTrustKeySetsOneFetchAtATime(t *testing.T) {
	f := newFixture(t, "sqlite")
	f.allowLoopback()
	pub, stranger := newSigner(t, "pub-1"), newSigner(t, "unknown")
	keys := newKeyServer(t, jwks(t, pub))
	f.putIssuer(tenants.TrustIssuer{Domain: sampleHost, JWKSURL: keys.url()})
	before := keys.hits.Load()
	var wg sync.WaitGroup
	for i := range 10 {
		wg.Go(func() {
			f.mustImport(map[string]any{"agentId": fmt.Sprintf("c%d", i), "card": signed(t, a2atest.SampleV1(t), func(c map[string]any) map[string]any { return stranger.sig(t, c, "") })})
		})
	}
	wg.Wait()
	if got := keys.hits.Load() - before; got != 1 {
		t.Errorf("ten imports at once with an unknown kid fetched the keys %d times, want 1", got)
	}

	// Withdrawn: 404. A fresh replica's import signed by the once-good key is not trusted.
	keys.srv.Config.Handler = http.NotFoundHandler()
	f.a2a.TrustKeys = &a2a.KeySets{Fetch: f.a2a.Fetch, PlainHTTP: a2atest.IsLoopback}
	c := f.mustImport(map[string]any{"agentId": "after", "card": signed(t, a2atest.SampleV1(t), func(c map[string]any) map[string]any { return pub.sig(t, c, "") })})
	if c.Trusted() {
		t.Errorf("trusted by an issuer whose keys are withdrawn: %+v", c.A2A.Import.Trust)
	}
}

// TestTrustRefreshKeepsWhatVouched: a refresh is refused when the card as it is was verified or
// trusted and the card fetched is neither, whichever made it so; a card no longer vouched for
// (its issuer removed) is refreshed again.
func TestTrustRefreshKeepsWhatVouched(t *testing.T) {
	f := newFixture(t, "sqlite")
	f.allowLoopback()
	pub := newSigner(t, "pub-1")
	var served atomic.Pointer[[]byte]
	serve := func(card map[string]any) { b := jsonOf(t, card); served.Store(&b) }
	serve(signed(t, a2atest.SampleV1(t), func(c map[string]any) map[string]any { return pub.sig(t, c, "") }))
	source := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(*served.Load()) }))
	t.Cleanup(source.Close)
	f.mustImport(map[string]any{"agentId": "geo", "url": source.URL + "/agent-card.json"}) // unverified: no key
	f.putIssuer(tenants.TrustIssuer{Domain: sampleHost, Keys: jwks(t, pub)})               // now trusted

	unsigned := a2atest.SampleV1(t)
	delete(unsigned, "signatures")
	unsigned["description"] = "Someone else's words."
	serve(unsigned)
	if res, err := f.a2a.Refresh(alice, acme, "geo", nil); err != nil || res.Outcome != cards.RefreshRefused {
		t.Errorf("an unsigned card in place of a trusted one: %+v, %v", res.RefreshOutcome, err)
	}
	if _, err := f.trust.Remove(alice, acme, sampleHost); err != nil {
		t.Fatal(err)
	}
	if res, err := f.a2a.Refresh(alice, acme, "geo", nil); err != nil || res.Outcome != cards.RefreshUpdated {
		t.Errorf("a card no longer vouched for: %+v, %v", res.RefreshOutcome, err)
	}
}

// BenchmarkImportTrust imports a signed card (the spec's sample, Ed25519, verified with the
// request's keys) into SQLite with no trust policy and with its issuer's key pinned (the card
// trusted): what weighing trust and keeping the signed copy add to an import.
func BenchmarkImportTrust(b *testing.B) {
	pub := newSigner(b, "pub-1")
	card := signed(b, a2atest.SampleV1(b), func(c map[string]any) map[string]any { return pub.sig(b, c, "") })
	for _, policy := range []string{"none", "pinned"} {
		b.Run(policy, func(b *testing.B) {
			f := newFixture(b, "sqlite")
			if policy == "pinned" {
				f.putIssuer(tenants.TrustIssuer{Domain: sampleHost, Keys: jwks(b, pub)})
			}
			body := map[string]any{"card": card, "keys": jwks(b, pub)}
			b.ResetTimer()
			for i := range b.N {
				body["agentId"] = fmt.Sprintf("agt-%d", i)
				if c := f.mustImport(body); c.Trusted() != (policy == "pinned") {
					b.Fatalf("trusted %v with policy %s", c.Trusted(), policy)
				}
			}
		})
	}
}
