package token

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

func TestServiceKeysSignAndPublish(t *testing.T) {
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	_, ed, _ := ed25519.GenerateKey(rand.Reader)
	for name, signer := range map[string]any{"ES256": ec, "EdDSA": ed} {
		t.Run(name, func(t *testing.T) {
			old, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
			oldKey, err := NewServiceKey(old)
			if err != nil {
				t.Fatal(err)
			}
			var newKey ServiceKey
			switch s := signer.(type) {
			case *ecdsa.PrivateKey:
				newKey, err = NewServiceKey(s)
			case ed25519.PrivateKey:
				newKey, err = NewServiceKey(s)
			}
			if err != nil {
				t.Fatal(err)
			}
			keys, err := NewServiceKeys(oldKey, newKey)
			if err != nil {
				t.Fatal(err)
			}
			set := keys.JWKS()
			if len(set.Keys) != 2 || set.Keys[0].Kid != newKey.ID || set.Keys[0].Alg != name || oldKey.ID == newKey.ID {
				t.Fatalf("jwks %+v", set)
			}

			tok, err := keys.SignJWT(jwt.RegisteredClaims{Subject: "x", ExpiresAt: jwt.NewNumericDate(time.Now().Add(time.Minute))})
			if err != nil {
				t.Fatal(err)
			}
			parsed, err := jwt.Parse(tok, func(tk *jwt.Token) (any, error) {
				for _, k := range set.Keys {
					if k.Kid == tk.Header["kid"] {
						return k.PublicKey()
					}
				}
				return nil, jwt.ErrTokenUnverifiable
			}, jwt.WithValidMethods([]string{name}))
			if err != nil || !parsed.Valid {
				t.Fatalf("verify with the published key: %v", err)
			}

			payload := []byte(`{"a":1}`)
			protected, sig, err := keys.SignDetached(map[string]any{"typ": "JOSE"}, payload)
			if err != nil {
				t.Fatal(err)
			}
			pub, _ := set.Keys[0].PublicKey()
			raw, _ := base64.RawURLEncoding.DecodeString(sig)
			input := protected + "." + base64.RawURLEncoding.EncodeToString(payload)
			if err := jwt.GetSigningMethod(name).Verify(input, raw, pub); err != nil {
				t.Fatalf("detached signature: %v", err)
			}
			tampered := protected + "." + base64.RawURLEncoding.EncodeToString([]byte(`{"a":2}`))
			if err := jwt.GetSigningMethod(name).Verify(tampered, raw, pub); err == nil {
				t.Fatal("a changed payload verified")
			}
		})
	}
	if _, err := NewServiceKey(mustP384(t)); err == nil {
		t.Fatal("a P-384 key was accepted for ES256")
	}
}

func mustP384(t *testing.T) *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}
