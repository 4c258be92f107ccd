package token

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/go-jose/go-jose/v4"
	"github.com/golang-jwt/jwt/v5"
)

// ServiceKey is one key the service signs with (A2A card signatures, delegation tokens).
type ServiceKey struct {
	// ID is the SHA-256 JWK thumbprint (RFC 7638, base64url) of the public key: stable, and
	// derived, not configured.
	ID     string
	Alg    string
	Signer crypto.Signer
}

// NewServiceKey wraps an ES256 (P-256) or EdDSA (Ed25519) private key.
func NewServiceKey(s crypto.Signer) (ServiceKey, error) {
	alg, err := algorithm(s.Public())
	if err != nil {
		return ServiceKey{}, err
	}
	jwk := jose.JSONWebKey{Key: s.Public()}
	id, err := jwk.Thumbprint(crypto.SHA256)
	if err != nil {
		return ServiceKey{}, err
	}
	return ServiceKey{ID: base64.RawURLEncoding.EncodeToString(id), Alg: string(alg), Signer: s}, nil
}

// ServiceKeys holds the service's signing keys, oldest first: it signs with the newest and
// publishes all, so keys can be rotated without breaking verifiers that cached an older one.
type ServiceKeys struct {
	keys []ServiceKey

	// verified remembers the delegation tokens already checked (see VerifyDelegation).
	mu       sync.Mutex
	verified map[string]verifiedDelegation
}

// NewServiceKeys returns a key set; keys are oldest first and at least one is required.
func NewServiceKeys(keys ...ServiceKey) (*ServiceKeys, error) {
	if len(keys) == 0 {
		return nil, errors.New("at least one signing key is required")
	}
	return &ServiceKeys{keys: keys}, nil
}

// Current is the key new signatures use.
func (s *ServiceKeys) Current() ServiceKey { return s.keys[len(s.keys)-1] }

// Find returns the key with id, if the set has it.
func (s *ServiceKeys) Find(id string) (ServiceKey, bool) {
	for _, k := range s.keys {
		if k.ID == id {
			return k, true
		}
	}
	return ServiceKey{}, false
}

// JWKS returns the public half of every key, newest first, as served at /.well-known/jwks.json.
func (s *ServiceKeys) JWKS() jose.JSONWebKeySet {
	out := jose.JSONWebKeySet{Keys: make([]jose.JSONWebKey, 0, len(s.keys))}
	for i := len(s.keys) - 1; i >= 0; i-- {
		k := s.keys[i]
		out.Keys = append(out.Keys, jose.JSONWebKey{Key: k.Signer.Public(), KeyID: k.ID, Algorithm: k.Alg, Use: "sig"})
	}
	return out
}

// algorithm is the JWS algorithm of a public key: ES256 for P-256, EdDSA for Ed25519.
func algorithm(pub crypto.PublicKey) (jose.SignatureAlgorithm, error) {
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		if k.Curve != elliptic.P256() {
			return "", errors.New("only P-256 ECDSA keys are supported (ES256)")
		}
		return jose.ES256, nil
	case ed25519.PublicKey:
		return jose.EdDSA, nil
	}
	return "", fmt.Errorf("unsupported signing key type %T (want ECDSA P-256 or Ed25519)", pub)
}

func (k ServiceKey) method() jwt.SigningMethod { return jwt.GetSigningMethod(k.Alg) }

// signingKey returns the key in the form golang-jwt's signing methods take.
func (k ServiceKey) signingKey() any {
	if ed, ok := k.Signer.(ed25519.PrivateKey); ok {
		return ed
	}
	return k.Signer
}

// SignJWT signs claims with the current key; the header names it with "kid".
func (s *ServiceKeys) SignJWT(claims jwt.Claims) (string, error) {
	k := s.Current()
	tok := jwt.NewWithClaims(k.method(), claims)
	tok.Header["kid"] = k.ID
	return tok.SignedString(k.signingKey())
}

// SignDetached makes a JWS with a detached payload (RFC 7515 appendix F) with the current key:
// it returns the base64url protected header and signature. The protected header is header with
// "alg" and "kid" set to the key's.
func (s *ServiceKeys) SignDetached(header map[string]any, payload []byte) (protected, signature string, err error) {
	k := s.Current()
	opts := &jose.SignerOptions{}
	for name, v := range header {
		opts.WithHeader(jose.HeaderKey(name), v)
	}
	// Set last: go-jose lets extra headers override its own "alg" and "kid".
	opts.WithHeader("alg", k.Alg).WithHeader("kid", k.ID)
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.SignatureAlgorithm(k.Alg), Key: k.signingKey()}, opts)
	if err != nil {
		return "", "", err
	}
	jws, err := signer.Sign(payload)
	if err != nil {
		return "", "", err
	}
	compact, err := jws.DetachedCompactSerialize()
	if err != nil {
		return "", "", err
	}
	protected, signature, _ = strings.Cut(compact, "..")
	return protected, signature, nil
}

// VerifyDetached checks a JWS with a detached payload, "protected..signature" (RFC 7515 appendix
// F), over payload against keys (a JWKS, as /.well-known/jwks.json serves): with the key its
// "kid" names, by that key's algorithm. It returns the protected header. A header with "crit" or
// "b64" is refused: the service signs with neither, and no extension is understood.
func VerifyDetached(keys jose.JSONWebKeySet, jws string, payload []byte) (jose.Header, error) {
	sig, err := jose.ParseDetached(jws, payload, []jose.SignatureAlgorithm{jose.ES256, jose.EdDSA})
	if err != nil {
		return jose.Header{}, err
	}
	if len(sig.Signatures) != 1 {
		return jose.Header{}, errors.New("not a JWS of one signature")
	}
	h := sig.Signatures[0].Protected
	if _, ok := h.ExtraHeaders["crit"]; ok {
		return jose.Header{}, errors.New("the JWS has extensions (crit)")
	}
	if _, ok := h.ExtraHeaders["b64"]; ok {
		return jose.Header{}, errors.New("the JWS has extensions (b64)")
	}
	found := keys.Key(h.KeyID)
	if h.KeyID == "" || len(found) == 0 {
		return jose.Header{}, fmt.Errorf("no key %q in the key set", h.KeyID)
	}
	for _, k := range found {
		if k.Algorithm != "" && k.Algorithm != h.Algorithm {
			continue
		}
		if _, err := sig.Verify(k.Key); err == nil {
			return h, nil
		}
	}
	return jose.Header{}, errors.New("the signature does not verify with the key")
}
