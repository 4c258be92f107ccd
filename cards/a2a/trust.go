package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/tenants"
)

// A tenant's trust policy names the issuers whose keys vouch for imported cards, each bound to a
// domain (tenants.TrustIssuer). An import or refresh weighs the card's signatures against it
// apart from the signature check: a card is trusted when one of its signatures verifies with a
// key of the one issuer that speaks for every host its interfaces live on, and none of its
// signatures is invalid. A jku names where a signer published its keys, which proves nothing of
// who the signer is; trust takes keys from the policy only.

// TrustPolicies reads a tenant's trust policy as the database holds it now; storage's
// TenantStore is one.
type TrustPolicies interface {
	TrustPolicy(ctx context.Context, tenant tenants.ID) ([]tenants.TrustIssuer, error)
}

// signedContent is what an A2A card's signatures cover and the signatures themselves, as
// received; nil when the card carries none.
func signedContent(raw []byte) (*cards.SignedCard, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		return nil, err
	}
	sigs := top["signatures"]
	var list []json.RawMessage
	if json.Unmarshal(sigs, &list) != nil || len(list) == 0 {
		return nil, nil
	}
	delete(top, "signatures")
	card, err := json.Marshal(top)
	if err != nil {
		return nil, err
	}
	return &cards.SignedCard{Card: card, Signatures: sigs}, nil
}

// cardHosts are the hosts of the card's interfaces (lowercase, without ports), each once.
func cardHosts(c cards.Card) []string {
	var hosts []string
	for _, i := range c.A2AInterfaces() {
		u, err := url.Parse(i.URL)
		if err != nil || u.Hostname() == "" {
			continue
		}
		h := tenants.TrustHost(u.Hostname())
		if !slices.Contains(hosts, h) {
			hosts = append(hosts, h)
		}
	}
	return hosts
}

// KeySets fetches and keeps the key sets trust policies point to by URL. A set is fetched again
// when it is older than MaxAge, or when a signature names a kid the set does not have; at most
// once per Refetch is a URL fetched for a missing kid or after a failed fetch, and one fetch of a
// URL at a time is made, the others waiting for it (so a rotated key is found at once, and
// neither unknown kids nor an issuer that is down make it fetch in a loop). While a URL cannot be
// fetched, the last set read from it stands, for MaxStale at most; a URL that answers 404 or 410
// publishes no key. The zero value fetches nothing.
type KeySets struct {
	// Fetch is the SSRF-guarded client; nil fetches nothing.
	Fetch Doer
	// PlainHTTP tells whether a key set may be fetched from an http:// URL of host: keys that
	// vouch for cards come over https only, but for hosts this returns true for (the addresses
	// outbound.allow lists, where tests and private networks serve them). Nil: https only.
	PlainHTTP func(host string) bool
	MaxAge    time.Duration
	Refetch   time.Duration
	MaxStale  time.Duration
	mu        sync.Mutex
	sets      map[string]*keySet
}

type keySet struct {
	// fetching is held by the one fetch of the URL at a time; the fields below are guarded by
	// KeySets.mu.
	fetching sync.Mutex
	// set is the last set read (nil if none was), fetched when; tried is when a kid the set
	// lacked, or a failure, last made it fetch, and err the last fetch's error.
	set            *jose.JSONWebKeySet
	fetched, tried time.Time
	err            error
}

// Defaults of KeySets.
const (
	DefaultKeySetAge      = 5 * time.Minute
	DefaultKeySetRefetch  = 10 * time.Second
	DefaultKeySetMaxStale = 24 * time.Hour
	maxKeySets            = 1024
)

// checkURL refuses a key set URL that is not https, unless PlainHTTP allows its host.
func (k *KeySets) checkURL(u string) error {
	if err := cards.CheckHTTPURL("jwksUrl", u); err != nil {
		return err
	}
	parsed, _ := url.Parse(u)
	if parsed.Scheme != "https" && (k == nil || k.PlainHTTP == nil || !k.PlainHTTP(parsed.Hostname())) {
		return fault.Errorf(fault.Invalid, "jwksUrl: %q must be an https URL: the keys that vouch for cards are not taken over plain http: invalid", u)
	}
	return nil
}

// get returns the set at u, fetched again if it is too old, or if it lacks kid (at most once per
// Refetch); fresh forces a fetch, and fails when it fails.
func (k *KeySets) get(ctx context.Context, u, kid string, fresh bool) (*jose.JSONWebKeySet, error) {
	if k == nil || k.Fetch == nil {
		return nil, errors.New("fetching keys is not configured")
	}
	if err := k.checkURL(u); err != nil {
		return nil, err
	}
	k.mu.Lock()
	if k.sets == nil || len(k.sets) >= maxKeySets {
		k.sets = map[string]*keySet{}
	}
	entry := k.sets[u]
	if entry == nil {
		entry = &keySet{}
		k.sets[u] = entry
	}
	k.mu.Unlock()
	// One fetch of a URL at a time: the next one sees what it read.
	entry.fetching.Lock()
	defer entry.fetching.Unlock()

	now := time.Now()
	maxAge, refetch, maxStale := durationOr(k.MaxAge, DefaultKeySetAge), durationOr(k.Refetch, DefaultKeySetRefetch), durationOr(k.MaxStale, DefaultKeySetMaxStale)
	k.mu.Lock()
	set, fetched, tried, lastErr := entry.set, entry.fetched, entry.tried, entry.err
	k.mu.Unlock()
	stands := set != nil && now.Sub(fetched) < maxStale
	missed := false
	if !fresh {
		has := set != nil && (kid == "" || slices.ContainsFunc(set.Keys, func(key jose.JSONWebKey) bool { return key.KeyID == kid }))
		recent := now.Sub(tried) < refetch
		switch {
		case has && now.Sub(fetched) < maxAge:
			return set, nil
		case recent && stands:
			return set, nil // fetched again for this reason a moment ago
		case recent && lastErr != nil:
			return nil, lastErr
		}
		missed = set != nil && now.Sub(fetched) < maxAge
	}
	body, err := fetchJSON(ctx, k.Fetch, "jwksUrl", u, MaxImportBytes)
	var got *jose.JSONWebKeySet
	var status statusError
	switch {
	case err == nil:
		if got, err = readJWKS(body); err != nil {
			err = fault.Errorf(fault.Invalid, "jwksUrl: %s: %s: invalid", u, err)
		}
	case errors.As(err, &status) && (status == http.StatusNotFound || status == http.StatusGone) && !fresh:
		got, err = &jose.JSONWebKeySet{}, nil // the issuer withdrew its keys
	case ctx.Err() != nil:
		return nil, err // cut short by its caller: says nothing of the URL
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if missed || err != nil {
		entry.tried = now
	}
	entry.err = err
	if err == nil {
		entry.set, entry.fetched = got, now
		return got, nil
	}
	if fresh || !stands {
		return nil, err
	}
	return set, nil // the issuer's URL is down: its last keys stand
}

func durationOr(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// issuerKeys returns the keys of a policy entry: its pinned set, or the set at its URL.
func (k *KeySets) issuerKeys(ctx context.Context, e *tenants.TrustIssuer, kid string) (*jose.JSONWebKeySet, error) {
	if e.JWKSURL != "" {
		return k.get(ctx, e.JWKSURL, kid, false)
	}
	return readJWKS(e.Keys)
}

// weighTrust weighs an imported card against the tenant's policy: c is the card mapped from the
// A2A card, signed what its publisher signed (nil: no signatures), check the outcome of the
// signature check. Keys of the issuer that could not be read make the card untrusted, and are
// the error too (with the issuer's domain), so that the card is weighed again once they can be.
func weighTrust(ctx context.Context, keys *KeySets, policy []tenants.TrustIssuer, c cards.Card, signed *cards.SignedCard, check cards.SignatureCheck, now time.Time) (cards.TrustCheck, *keysUnread) {
	untrusted := func(issuer, reason string) cards.TrustCheck {
		return cards.TrustCheck{Status: cards.TrustUntrusted, Issuer: issuer, Reason: reason, CheckedAt: now}
	}
	if signed == nil {
		return untrusted("", "the card has no signatures"), nil
	}
	if check.Status == cards.SignatureInvalid {
		return untrusted("", "a signature on the card is invalid: "+check.Reason), nil
	}
	hosts := cardHosts(c)
	if len(hosts) == 0 {
		return untrusted("", "the card names no interface URL, so no issuer speaks for it"), nil
	}
	var issuer *tenants.TrustIssuer
	for _, h := range hosts {
		e := tenants.TrustIssuerFor(policy, h)
		switch {
		case e == nil:
			return untrusted("", fmt.Sprintf("no issuer of the trust policy speaks for %s", h)), nil
		case issuer != nil && issuer.Domain != e.Domain:
			return untrusted("", fmt.Sprintf("its interfaces live on hosts of two issuers, %s and %s", issuer.Domain, e.Domain)), nil
		}
		issuer = e
	}
	payload, err := CanonicalPayload(signed.Card)
	if err != nil {
		return untrusted(issuer.Domain, "the signed card cannot be canonicalized"), nil
	}
	var sigs []AgentCardSignature
	if err := json.Unmarshal(signed.Signatures, &sigs); err != nil {
		return untrusted(issuer.Domain, "the signatures cannot be read"), nil
	}
	var kids []string
	var vouched *cards.TrustCheck
	for i, s := range sigs {
		h, ok := readHeader(s.Protected)
		if !ok || h.extension || !slices.Contains(algorithms, jose.SignatureAlgorithm(h.Alg)) {
			continue
		}
		set, err := keys.issuerKeys(ctx, issuer, h.Kid)
		if err != nil {
			return untrusted(issuer.Domain, fmt.Sprintf("the keys of issuer %s could not be read: %s", issuer.Domain, fault.MessageOf(err))),
				&keysUnread{domain: issuer.Domain, err: err}
		}
		key := pickKey(set, h)
		if key == nil {
			kids = append(kids, fmt.Sprintf("%q", h.Kid))
			continue
		}
		jws, err := jose.ParseDetached(s.Protected+".."+s.Signature, payload, algorithms)
		if err != nil {
			continue
		}
		if _, err := jws.Verify(key); err != nil {
			// A key the policy trusts rejects what it supposedly signed: whatever else verifies,
			// the card is not as its issuer signed it.
			return untrusted(issuer.Domain, fmt.Sprintf("signatures[%d] does not match the card under issuer %s's key %q", i, issuer.Domain, h.Kid)), nil
		}
		if vouched == nil {
			vouched = &cards.TrustCheck{Status: cards.TrustTrusted, Issuer: issuer.Domain, KeyID: h.Kid, CheckedAt: now}
		}
	}
	if vouched != nil {
		return *vouched, nil
	}
	if len(kids) == 0 {
		return untrusted(issuer.Domain, "no signature could be checked with the keys of issuer "+issuer.Domain), nil
	}
	return untrusted(issuer.Domain, fmt.Sprintf("no signature is by a key of issuer %s (kid %s)", issuer.Domain, strings.Join(kids, ", "))), nil
}

// keysUnread is the error of weighTrust when the keys of the issuer of domain could not be read.
type keysUnread struct {
	domain string
	err    error
}

func (e *keysUnread) Error() string {
	return fmt.Sprintf("the keys of issuer %s could not be read: %v", e.domain, e.err)
}

func (e *keysUnread) Unwrap() error { return e.err }

// sameTrust reports whether two checks say the same, whenever they were made.
func sameTrust(a, b *cards.TrustCheck) bool {
	if a == nil || b == nil {
		return a == b
	}
	x, y := *a, *b
	x.CheckedAt, y.CheckedAt = time.Time{}, time.Time{}
	return x == y
}
