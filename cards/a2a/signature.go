package a2a

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/go-jose/go-jose/v4"
	"github.com/gowebpki/jcs"

	"github.com/agentcards/agentcards/cards"
)

// CardSigner makes a JWS with a detached payload; token.ServiceKeys is one. It adds "alg" and
// "kid" to header.
type CardSigner interface {
	SignDetached(header map[string]any, payload []byte) (protected, signature string, err error)
}

// CanonicalPayload is what an Agent Card signature covers (spec 1.0 §8.4): the RFC 8785 (JCS)
// canonical form of the card without its "signatures" member.
func CanonicalPayload(card []byte) ([]byte, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(card, &top); err != nil {
		return nil, err
	}
	if top == nil {
		return nil, errors.New("the card is not a JSON object")
	}
	delete(top, "signatures")
	b, err := json.Marshal(top)
	if err != nil {
		return nil, err
	}
	return jcs.Transform(b)
}

// SignCard returns the JSON of card (which must have no signatures) with its signatures: one of
// signer (none when signer is nil), protected header {"alg", "kid", "typ": "JOSE"}, then others
// as given (the publisher's, see PublisherSignatures). Without any, it is the card as it is.
func SignCard(signer CardSigner, card any, others ...json.RawMessage) ([]byte, error) {
	b, err := json.Marshal(card)
	if err != nil {
		return nil, err
	}
	var sigs []json.RawMessage
	if signer != nil {
		payload, err := CanonicalPayload(b)
		if err != nil {
			return nil, err
		}
		protected, sig, err := signer.SignDetached(map[string]any{"typ": "JOSE"}, payload)
		if err != nil {
			return nil, err
		}
		ours, err := json.Marshal(AgentCardSignature{Protected: protected, Signature: sig})
		if err != nil {
			return nil, err
		}
		sigs = append(sigs, ours)
	}
	sigs = append(sigs, others...)
	if len(sigs) == 0 {
		return b, nil
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil {
		return nil, err
	}
	top["signatures"], err = json.Marshal(sigs)
	if err != nil {
		return nil, err
	}
	return json.Marshal(top)
}

// PublisherSignatures returns the signatures the publisher of an imported card made, when form
// (the JSON of a rendered form of c, without signatures) is exactly what the publisher signed: its canonical
// form (RFC 8785) is that of the card as received. Those signatures then verify over the form
// served as over the card the publisher served. Any other form (the hybrid of a card with a 0.3
// interface, a deprecated card's added extension, a form of a card whose content changed since)
// gets none.
func PublisherSignatures(c cards.Card, form []byte) ([]json.RawMessage, error) {
	// Only signatures the import found good: verified with a key, or by the trust policy's issuer
	// (a card imported despite an invalid signature is not served with it).
	if c.A2A == nil || c.A2A.Import == nil || c.A2A.Import.Signed == nil || !c.A2A.Import.Vouched() {
		return nil, nil
	}
	signed := c.A2A.Import.Signed
	served, err := CanonicalPayload(form)
	if err != nil {
		return nil, err
	}
	// A signed copy that does not canonicalize, or whose signatures do not read, matches nothing.
	original, err := CanonicalPayload(signed.Card)
	var sigs []AgentCardSignature
	if err != nil || !bytes.Equal(served, original) || json.Unmarshal(signed.Signatures, &sigs) != nil {
		return nil, nil
	}
	// Each as the spec's AgentCardSignature has it, and nothing else: a member of another name
	// would make a strict reader (a2a-go's proto model) refuse the whole card.
	out := make([]json.RawMessage, 0, len(sigs))
	for _, sig := range sigs {
		b, err := json.Marshal(sig)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

// jwsHeader is the part of a protected header verification reads.
type jwsHeader struct {
	Alg, Kid, Jku string
	// extension is set when the header has "crit" or "b64": RFC 7515 §4.1.11 asks a verifier to
	// reject extensions it does not understand, and we implement none (not even RFC 7797's b64,
	// which go-jose would honour).
	extension bool
}

// algorithms are the JWS algorithms of the keys card signatures are checked with.
var algorithms = []jose.SignatureAlgorithm{jose.ES256, jose.EdDSA}

// verifier finds the keys that check an imported card's signatures.
type verifier struct {
	keys    *jose.JSONWebKeySet // given in the request
	fetch   Doer                // for jku; nil means jku is not followed
	jkuSets map[string]*jose.JSONWebKeySet
}

// verify checks every signature on the card as received. Any signature that a found key
// rejects makes the result invalid; else any that a key accepts makes it verified; else it is
// unverified, with the reasons.
func (v *verifier) verify(ctx context.Context, raw []byte) cards.SignatureCheck {
	var card struct {
		Signatures []AgentCardSignature `json:"signatures"`
	}
	if err := json.Unmarshal(raw, &card); err != nil || len(card.Signatures) == 0 {
		return cards.SignatureCheck{Status: cards.SignatureUnverified, Reason: "the card has no signatures"}
	}
	payload, err := CanonicalPayload(raw)
	if err != nil {
		return cards.SignatureCheck{Status: cards.SignatureInvalid, Reason: "the card cannot be canonicalized: " + err.Error()}
	}
	var verified *cards.SignatureCheck
	var reasons []string
	for i, s := range card.Signatures {
		res := v.verifyOne(ctx, s, payload)
		switch res.Status {
		case cards.SignatureInvalid:
			res.Reason = fmt.Sprintf("signatures[%d]: %s", i, res.Reason)
			return res
		case cards.SignatureVerified:
			if verified == nil {
				verified = &res
			}
		default:
			reasons = append(reasons, fmt.Sprintf("signatures[%d]: %s", i, res.Reason))
		}
	}
	if verified != nil {
		return *verified
	}
	return cards.SignatureCheck{Status: cards.SignatureUnverified, Reason: strings.Join(reasons, "; ")}
}

func (v *verifier) verifyOne(ctx context.Context, s AgentCardSignature, payload []byte) cards.SignatureCheck {
	h, ok := readHeader(s.Protected)
	if !ok {
		return cards.SignatureCheck{Status: cards.SignatureInvalid, Reason: "the protected header is not base64url JSON"}
	}
	if _, err := base64.RawURLEncoding.DecodeString(s.Signature); err != nil {
		return cards.SignatureCheck{Status: cards.SignatureInvalid, Reason: "the signature is not base64url"}
	}
	if !slices.Contains(algorithms, jose.SignatureAlgorithm(h.Alg)) {
		return cards.SignatureCheck{Status: cards.SignatureUnverified, Reason: fmt.Sprintf("algorithm %q is not supported", h.Alg)}
	}
	if h.extension {
		return cards.SignatureCheck{Status: cards.SignatureUnverified, Reason: "the protected header uses a JWS extension (crit, b64), and none is supported"}
	}
	jws, err := jose.ParseDetached(s.Protected+".."+s.Signature, payload, algorithms)
	if err != nil {
		// A member go-jose checks and we do not read, such as a "jwk" that is not a public key.
		return cards.SignatureCheck{Status: cards.SignatureInvalid, Reason: "the protected header is not a valid JWS header"}
	}
	key, source, reason := v.findKey(ctx, h)
	if key == nil {
		return cards.SignatureCheck{Status: cards.SignatureUnverified, Reason: reason}
	}
	if _, err := jws.Verify(key); err != nil {
		return cards.SignatureCheck{Status: cards.SignatureInvalid, Reason: "the signature does not match the card", KeyID: h.Kid, KeySource: source}
	}
	return cards.SignatureCheck{Status: cards.SignatureVerified, KeyID: h.Kid, KeySource: source}
}

// readHeader decodes a protected header as go-jose reads it: member names match exactly (a
// struct would take "ALG" for "alg"), and the base64url must be the canonical encoding, since
// go-jose checks the signature over its own encoding of the bytes, not over the text received.
func readHeader(protected string) (jwsHeader, bool) {
	hb, err := base64.RawURLEncoding.DecodeString(protected)
	if err != nil || base64.RawURLEncoding.EncodeToString(hb) != protected {
		return jwsHeader{}, false
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(hb, &members); err != nil {
		return jwsHeader{}, false
	}
	var h jwsHeader
	for name, dst := range map[string]*string{"alg": &h.Alg, "kid": &h.Kid, "jku": &h.Jku} {
		if raw, ok := members[name]; ok && json.Unmarshal(raw, dst) != nil {
			return jwsHeader{}, false
		}
	}
	_, crit := members["crit"]
	_, b64 := members["b64"]
	h.extension = crit || b64
	return h, true
}

// findKey looks for the signature's key in the request's keys, then at its jku.
func (v *verifier) findKey(ctx context.Context, h jwsHeader) (crypto.PublicKey, string, string) {
	if k := pickKey(v.keys, h); k != nil {
		return k, "request", ""
	}
	if h.Jku == "" {
		return nil, "", fmt.Sprintf("no key given for kid %q and no jku", h.Kid)
	}
	set, err := v.fetchJWKS(ctx, h.Jku)
	if err != nil {
		// The cause (addresses, resolver errors) stays out of the card: every reader sees it.
		return nil, "", fmt.Sprintf("jku %s could not be fetched or read", h.Jku)
	}
	if k := pickKey(set, h); k != nil {
		return k, "jku", ""
	}
	return nil, "", fmt.Sprintf("jku %s has no usable key with kid %q", h.Jku, h.Kid)
}

func (v *verifier) fetchJWKS(ctx context.Context, jku string) (*jose.JSONWebKeySet, error) {
	if set, ok := v.jkuSets[jku]; ok {
		return set, nil
	}
	if v.fetch == nil {
		return nil, errors.New("fetching keys is not configured")
	}
	if err := cards.CheckHTTPURL("jku", jku); err != nil {
		return nil, err
	}
	body, err := fetchJSON(ctx, v.fetch, "jku", jku, MaxImportBytes)
	if err != nil {
		return nil, err
	}
	set, err := readJWKS(body)
	if err != nil {
		return nil, err
	}
	if v.jkuSets == nil {
		v.jkuSets = map[string]*jose.JSONWebKeySet{}
	}
	v.jkuSets[jku] = set
	return set, nil
}

// readJWKS reads a JWKS as RFC 7517 §5 asks: a key go-jose cannot read (a "kty" or curve it does
// not know, a missing member) is ignored rather than failing the set. It stays as an empty entry,
// so that the single-key rule of pickKey counts the keys the signer published.
func readJWKS(body []byte) (*jose.JSONWebKeySet, error) {
	var raw struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, errors.New("the key set is not a JWKS")
	}
	set := &jose.JSONWebKeySet{Keys: make([]jose.JSONWebKey, len(raw.Keys))}
	for i, k := range raw.Keys {
		if err := set.Keys[i].UnmarshalJSON(k); err != nil {
			set.Keys[i] = jose.JSONWebKey{}
		}
	}
	return set, nil
}

// pickKey returns the key with the header's kid, or the only key when the header has no kid,
// provided its algorithm agrees with the header's.
func pickKey(set *jose.JSONWebKeySet, h jwsHeader) crypto.PublicKey {
	if set == nil {
		return nil
	}
	for _, k := range set.Keys {
		if (h.Kid != "" && k.KeyID != h.Kid) || (h.Kid == "" && len(set.Keys) != 1) {
			continue
		}
		if k.Algorithm != "" && k.Algorithm != h.Alg {
			continue
		}
		if keyFits(k.Key, h.Alg) {
			return k.Key
		}
	}
	return nil
}

// keyFits tells whether pub is a public key of alg; go-jose also reads P-384 and RSA keys, and
// private ones.
func keyFits(pub crypto.PublicKey, alg string) bool {
	switch k := pub.(type) {
	case ed25519.PublicKey:
		return alg == string(jose.EdDSA)
	case *ecdsa.PublicKey:
		return alg == string(jose.ES256) && k.Curve == elliptic.P256()
	}
	return false
}
