package token

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/golang-jwt/jwt/v5"
)

// ServiceKey is one key the service signs with (A2A card signatures, delegation tokens).
type ServiceKey struct {
	// ID is the JWK thumbprint (RFC 7638) of the public key: stable, and derived, not configured.
	ID     string
	Alg    string
	Signer crypto.Signer
}

// NewServiceKey wraps an ES256 (P-256) or EdDSA (Ed25519) private key.
func NewServiceKey(s crypto.Signer) (ServiceKey, error) {
	jwk, err := publicJWK(s.Public())
	if err != nil {
		return ServiceKey{}, err
	}
	return ServiceKey{ID: jwk.thumbprint(), Alg: jwk.Alg, Signer: s}, nil
}

// ServiceKeys holds the service's signing keys, oldest first: it signs with the newest and
// publishes all, so keys can be rotated without breaking verifiers that cached an older one.
type ServiceKeys struct {
	keys []ServiceKey
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

// JWK is a public key in JSON Web Key form (RFC 7517).
type JWK struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Y   string `json:"y,omitempty"`
	Kid string `json:"kid,omitempty"`
	Alg string `json:"alg,omitempty"`
	Use string `json:"use,omitempty"`
}

// JWKS is a JSON Web Key Set, as served at /.well-known/jwks.json.
type JWKS struct {
	Keys []JWK `json:"keys"`
}

// JWKS returns the public half of every key, newest first.
func (s *ServiceKeys) JWKS() JWKS {
	out := JWKS{Keys: make([]JWK, 0, len(s.keys))}
	for i := len(s.keys) - 1; i >= 0; i-- {
		jwk, _ := publicJWK(s.keys[i].Signer.Public()) // checked in NewServiceKey
		jwk.Kid, jwk.Use = s.keys[i].ID, "sig"
		out.Keys = append(out.Keys, jwk)
	}
	return out
}

func publicJWK(pub crypto.PublicKey) (JWK, error) {
	b64 := base64.RawURLEncoding.EncodeToString
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		if k.Curve != elliptic.P256() {
			return JWK{}, errors.New("only P-256 ECDSA keys are supported (ES256)")
		}
		raw, err := k.Bytes() // uncompressed point: 0x04 || X || Y, 32 bytes each
		if err != nil {
			return JWK{}, err
		}
		return JWK{Kty: "EC", Crv: "P-256", X: b64(raw[1:33]), Y: b64(raw[33:]), Alg: "ES256"}, nil
	case ed25519.PublicKey:
		return JWK{Kty: "OKP", Crv: "Ed25519", X: b64(k), Alg: "EdDSA"}, nil
	}
	return JWK{}, fmt.Errorf("unsupported signing key type %T (want ECDSA P-256 or Ed25519)", pub)
}

// thumbprint is the RFC 7638 SHA-256 thumbprint: the required members in lexicographic order.
func (j JWK) thumbprint() string {
	var canon []byte
	if j.Kty == "EC" {
		canon, _ = json.Marshal(struct {
			Crv string `json:"crv"`
			Kty string `json:"kty"`
			X   string `json:"x"`
			Y   string `json:"y"`
		}{j.Crv, j.Kty, j.X, j.Y})
	} else {
		canon, _ = json.Marshal(struct {
			Crv string `json:"crv"`
			Kty string `json:"kty"`
			X   string `json:"x"`
		}{j.Crv, j.Kty, j.X})
	}
	sum := sha256.Sum256(canon)
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// PublicKey parses a JWK back into a public key, for verifiers (and tests) of our signatures.
func (j JWK) PublicKey() (crypto.PublicKey, error) {
	x, err := base64.RawURLEncoding.DecodeString(j.X)
	if err != nil {
		return nil, fmt.Errorf("jwk x: %w", err)
	}
	switch {
	case j.Kty == "OKP" && j.Crv == "Ed25519" && len(x) == ed25519.PublicKeySize:
		return ed25519.PublicKey(x), nil
	case j.Kty == "EC" && j.Crv == "P-256":
		y, err := base64.RawURLEncoding.DecodeString(j.Y)
		if err != nil || len(x) != 32 || len(y) != 32 {
			return nil, errors.New("jwk: bad P-256 coordinates")
		}
		return ecdsa.ParseUncompressedPublicKey(elliptic.P256(), append(append([]byte{4}, x...), y...))
	}
	return nil, fmt.Errorf("jwk: unsupported key %s/%s", j.Kty, j.Crv)
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
// it returns the base64url protected header and signature. header gets "alg" and "kid" added.
func (s *ServiceKeys) SignDetached(header map[string]any, payload []byte) (protected, signature string, err error) {
	k := s.Current()
	h := map[string]any{}
	for name, v := range header {
		h[name] = v
	}
	h["alg"], h["kid"] = k.Alg, k.ID
	hb, err := json.Marshal(h)
	if err != nil {
		return "", "", err
	}
	protected = base64.RawURLEncoding.EncodeToString(hb)
	sig, err := k.method().Sign(protected+"."+base64.RawURLEncoding.EncodeToString(payload), k.signingKey())
	if err != nil {
		return "", "", err
	}
	return protected, base64.RawURLEncoding.EncodeToString(sig), nil
}
