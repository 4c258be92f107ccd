package webtest

import (
	"crypto"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/go-jose/go-jose/v4"
	"github.com/golang-jwt/jwt/v5"
	"github.com/gowebpki/jcs"
)

// algorithms are the signature algorithms of the service's published keys; a token or card that
// names another (HS256, "none") must not verify with them.
var algorithms = []string{"ES256", "EdDSA"}

// VerifyJWT checks raw, a compact JWT, with the keys of jwks (a JWKS document as served at
// /.well-known/jwks.json) the way an agent holding only those keys would, and returns its
// claims; it requires an expiry, and opts add checks such as jwt.WithIssuer.
func VerifyJWT[C any, PC interface {
	*C
	jwt.Claims
}](jwks []byte, raw string, opts ...jwt.ParserOption) (C, error) {
	var claims C
	set, err := parseJWKS(jwks)
	if err != nil {
		return claims, err
	}
	opts = append([]jwt.ParserOption{jwt.WithValidMethods(algorithms), jwt.WithExpirationRequired()}, opts...)
	_, err = jwt.ParseWithClaims(raw, PC(&claims), func(tok *jwt.Token) (any, error) {
		return publicKey(set, tok.Header["kid"])
	}, opts...)
	return claims, err
}

// VerifyCard checks every detached JWS signature of an A2A Agent Card (spec 1.0 §8.4) with the
// keys of jwks, as an independent client would: over the RFC 8785 (JCS) form of the card without
// "signatures", computed here rather than by the product's code. A card with no signature fails.
func VerifyCard(jwks, card []byte) error {
	set, err := parseJWKS(jwks)
	if err != nil {
		return err
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(card, &top); err != nil {
		return fmt.Errorf("card: %w", err)
	}
	var sigs []struct{ Protected, Signature string }
	if err := json.Unmarshal(top["signatures"], &sigs); err != nil || len(sigs) == 0 {
		return fmt.Errorf("card: no signatures: %s", top["signatures"])
	}
	delete(top, "signatures")
	unsigned, err := json.Marshal(top)
	if err != nil {
		return err
	}
	payload, err := jcs.Transform(unsigned)
	if err != nil {
		return err
	}
	for i, s := range sigs {
		if err := verifyDetached(set, s.Protected, s.Signature, payload, "JOSE"); err != nil {
			return fmt.Errorf("signature %d: %w", i, err)
		}
	}
	return nil
}

// VerifyAICatalog checks the signature inside an AI Catalog document (the draft's "signature"
// member) with the keys of jwks, as an independent client would: a detached JWS, protected
// header typ "ai-catalog+jws", over the RFC 8785 (JCS) form of the document without
// signature.jws and additionalSignatures, computed here rather than by the product's code. A
// document without one fails.
func VerifyAICatalog(jwks, doc []byte) error {
	set, err := parseJWKS(jwks)
	if err != nil {
		return err
	}
	var top map[string]any
	if err := json.Unmarshal(doc, &top); err != nil {
		return fmt.Errorf("catalog: %w", err)
	}
	sig, _ := top["signature"].(map[string]any)
	jws, _ := sig["jws"].(string)
	protected, signature, ok := strings.Cut(jws, "..")
	if !ok || protected == "" || signature == "" {
		return fmt.Errorf("catalog: no detached JWS in its signature: %v", top["signature"])
	}
	delete(sig, "jws")
	delete(top, "additionalSignatures")
	unsigned, err := json.Marshal(top)
	if err != nil {
		return err
	}
	payload, err := jcs.Transform(unsigned)
	if err != nil {
		return err
	}
	return verifyDetached(set, protected, signature, payload, "ai-catalog+jws")
}

// verifyDetached checks one JWS whose payload travels apart from it, with go-jose: a JOSE
// implementation other than the one the service signs with. Its protected header must name
// typ, a kid and an algorithm of the service's.
func verifyDetached(set jose.JSONWebKeySet, protected, signature string, payload []byte, typ string) error {
	hb, err := base64.RawURLEncoding.DecodeString(protected)
	if err != nil {
		return fmt.Errorf("protected header: %w", err)
	}
	var h struct {
		Alg string `json:"alg"`
		Kid string `json:"kid"`
		Typ string `json:"typ"`
	}
	if err := json.Unmarshal(hb, &h); err != nil {
		return fmt.Errorf("protected header: %w", err)
	}
	if h.Typ != typ || h.Kid == "" || !slices.Contains(algorithms, h.Alg) {
		return fmt.Errorf("protected header %s", hb)
	}
	pub, err := publicKey(set, h.Kid)
	if err != nil {
		return err
	}
	jws, err := jose.ParseDetached(protected+".."+signature, payload, []jose.SignatureAlgorithm{jose.ES256, jose.EdDSA})
	if err != nil {
		return fmt.Errorf("signature: %w", err)
	}
	_, err = jws.Verify(pub)
	return err
}

// parseJWKS reads a JWKS document with go-jose, not with the service's own JWK code, so that a
// fault in how the service publishes its keys shows here.
func parseJWKS(doc []byte) (jose.JSONWebKeySet, error) {
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(doc, &set); err != nil || len(set.Keys) == 0 {
		return set, fmt.Errorf("not a JWKS with keys: %s (%v)", doc, err)
	}
	for _, k := range set.Keys {
		if !k.IsPublic() || !k.Valid() {
			return set, fmt.Errorf("JWKS key %q is not a valid public key", k.KeyID)
		}
	}
	return set, nil
}

// publicKey returns the key of set with id kid.
func publicKey(set jose.JSONWebKeySet, kid any) (crypto.PublicKey, error) {
	id, _ := kid.(string)
	if keys := set.Key(id); id != "" && len(keys) == 1 {
		return keys[0].Key, nil
	}
	return nil, errors.New("kid not in the JWKS, or in it twice")
}
