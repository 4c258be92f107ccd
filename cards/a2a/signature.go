package a2a

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/golang-jwt/jwt/v5"
	"github.com/gowebpki/jcs"

	"github.com/agentcards/agentcards/authz/token"
	"github.com/agentcards/agentcards/cards"
)

// ErrBadSignature is returned (wrapped) by an import of a card that carries a signature its key
// rejects; test it with errors.Is.
var ErrBadSignature = errors.New("invalid signature")

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

// SignCard returns the JSON of card (which must have no signatures) with one signature of
// signer added, protected header {"alg", "kid", "typ": "JOSE"}.
func SignCard(signer CardSigner, card any) ([]byte, error) {
	b, err := json.Marshal(card)
	if err != nil {
		return nil, err
	}
	payload, err := CanonicalPayload(b)
	if err != nil {
		return nil, err
	}
	protected, sig, err := signer.SignDetached(map[string]any{"typ": "JOSE"}, payload)
	if err != nil {
		return nil, err
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil {
		return nil, err
	}
	top["signatures"], err = json.Marshal([]AgentCardSignature{{Protected: protected, Signature: sig}})
	if err != nil {
		return nil, err
	}
	return json.Marshal(top)
}

// jwsHeader is the part of a protected header verification reads.
type jwsHeader struct {
	Alg string `json:"alg"`
	Kid string `json:"kid"`
	Jku string `json:"jku"`
}

// verifier finds the keys that check an imported card's signatures.
type verifier struct {
	keys    *token.JWKS // given in the request
	fetch   Doer        // for jku; nil means jku is not followed
	jkuSets map[string]*token.JWKS
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
	hb, err := base64.RawURLEncoding.DecodeString(s.Protected)
	var h jwsHeader
	if err != nil || json.Unmarshal(hb, &h) != nil {
		return cards.SignatureCheck{Status: cards.SignatureInvalid, Reason: "the protected header is not base64url JSON"}
	}
	sig, err := base64.RawURLEncoding.DecodeString(s.Signature)
	if err != nil {
		return cards.SignatureCheck{Status: cards.SignatureInvalid, Reason: "the signature is not base64url"}
	}
	method := jwt.GetSigningMethod(h.Alg)
	if method == nil || h.Alg == "none" || strings.HasPrefix(h.Alg, "HS") {
		return cards.SignatureCheck{Status: cards.SignatureUnverified, Reason: fmt.Sprintf("algorithm %q is not supported", h.Alg)}
	}
	key, source, reason := v.findKey(ctx, h)
	if key == nil {
		return cards.SignatureCheck{Status: cards.SignatureUnverified, Reason: reason}
	}
	input := s.Protected + "." + base64.RawURLEncoding.EncodeToString(payload)
	if err := method.Verify(input, sig, key); err != nil {
		return cards.SignatureCheck{Status: cards.SignatureInvalid, Reason: "the signature does not match the card", KeyID: h.Kid, KeySource: source}
	}
	return cards.SignatureCheck{Status: cards.SignatureVerified, KeyID: h.Kid, KeySource: source}
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

func (v *verifier) fetchJWKS(ctx context.Context, jku string) (*token.JWKS, error) {
	if set, ok := v.jkuSets[jku]; ok {
		return set, nil
	}
	if v.fetch == nil {
		return nil, errors.New("fetching keys is not configured")
	}
	if err := cards.CheckHTTPURL("jku", jku); err != nil {
		return nil, err
	}
	body, err := fetchJSON(ctx, v.fetch, jku, MaxImportBytes)
	if err != nil {
		return nil, err
	}
	var set token.JWKS
	if err := json.Unmarshal(body, &set); err != nil {
		return nil, errors.New("the key set is not a JWKS")
	}
	if v.jkuSets == nil {
		v.jkuSets = map[string]*token.JWKS{}
	}
	v.jkuSets[jku] = &set
	return &set, nil
}

// pickKey returns the key with the header's kid, or the only key when the header has no kid,
// provided its algorithm agrees with the header's.
func pickKey(set *token.JWKS, h jwsHeader) crypto.PublicKey {
	if set == nil {
		return nil
	}
	for _, k := range set.Keys {
		if (h.Kid != "" && k.Kid != h.Kid) || (h.Kid == "" && len(set.Keys) != 1) {
			continue
		}
		if k.Alg != "" && k.Alg != h.Alg {
			continue
		}
		pub, err := k.PublicKey()
		if err == nil && keyFits(pub, h.Alg) {
			return pub
		}
	}
	return nil
}

func keyFits(pub crypto.PublicKey, alg string) bool {
	switch pub.(type) {
	case ed25519.PublicKey:
		return alg == "EdDSA"
	case *ecdsa.PublicKey:
		return alg == "ES256"
	}
	return false
}
