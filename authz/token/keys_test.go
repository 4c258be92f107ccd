package token

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
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
			if len(set.Keys) != 2 || set.Keys[0].KeyID != newKey.ID || set.Keys[0].Algorithm != name || oldKey.ID == newKey.ID {
				t.Fatalf("jwks %+v", set)
			}

			tok, err := keys.SignJWT(jwt.RegisteredClaims{Subject: "x", ExpiresAt: jwt.NewNumericDate(time.Now().Add(time.Minute))})
			if err != nil {
				t.Fatal(err)
			}
			parsed, err := jwt.Parse(tok, func(tk *jwt.Token) (any, error) {
				for _, k := range set.Keys {
					if k.KeyID == tk.Header["kid"] {
						return k.Key, nil
					}
				}
				return nil, jwt.ErrTokenUnverifiable
			}, jwt.WithValidMethods([]string{name}))
			if err != nil || !parsed.Valid {
				t.Fatalf("verify with the published key: %v", err)
			}

			payload := []byte(`{"a":1}`)
			// The caller's header cannot name another algorithm or key.
			protected, sig, err := keys.SignDetached(map[string]any{"typ": "JOSE", "alg": "none", "kid": "x"}, payload)
			if err != nil {
				t.Fatal(err)
			}
			hb, _ := base64.RawURLEncoding.DecodeString(protected)
			if want := `{"alg":"` + name + `","kid":"` + newKey.ID + `","typ":"JOSE"}`; string(hb) != want {
				t.Fatalf("protected header %s, want %s", hb, want)
			}
			pub := set.Keys[0].Key
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

// TestServiceKeyIDs: a key's id is its RFC 7638 SHA-256 thumbprint, so the ids of configured keys
// do not change with the code that computes them, and the JWKS has the members verifiers read.
func TestServiceKeyIDs(t *testing.T) {
	// RFC 8037 appendix A.1 and A.3: an Ed25519 key and its thumbprint.
	seed, _ := base64.RawURLEncoding.DecodeString("nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A")
	ed, err := NewServiceKey(ed25519.NewKeyFromSeed(seed))
	if err != nil {
		t.Fatal(err)
	}
	if ed.ID != "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k" || ed.Alg != "EdDSA" {
		t.Errorf("Ed25519 key %s %s", ed.ID, ed.Alg)
	}
	priv, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ec, err := NewServiceKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := NewServiceKeys(ed, ec)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := json.Marshal(keys.JWKS())
	if err != nil {
		t.Fatal(err)
	}
	var set struct{ Keys []map[string]string }
	if err := json.Unmarshal(doc, &set); err != nil || len(set.Keys) != 2 {
		t.Fatalf("%s: %v", doc, err)
	}
	// RFC 7638 §3: the required members, in lexicographic order, without whitespace.
	canon := fmt.Sprintf(`{"crv":"P-256","kty":"EC","x":"%s","y":"%s"}`, set.Keys[0]["x"], set.Keys[0]["y"])
	sum := sha256.Sum256([]byte(canon))
	want := []map[string]string{
		{"kty": "EC", "crv": "P-256", "x": set.Keys[0]["x"], "y": set.Keys[0]["y"], "kid": base64.RawURLEncoding.EncodeToString(sum[:]), "alg": "ES256", "use": "sig"},
		{"kty": "OKP", "crv": "Ed25519", "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo", "kid": ed.ID, "alg": "EdDSA", "use": "sig"},
	}
	for i := range want {
		if !maps.Equal(set.Keys[i], want[i]) || len(set.Keys[i]["x"]) != 43 {
			t.Errorf("key %d: %v, want %v", i, set.Keys[i], want[i])
		}
	}
	if ec.ID != want[0]["kid"] {
		t.Errorf("P-256 key id %s, want %s", ec.ID, want[0]["kid"])
	}
}

// TestVerifyDetached: a detached JWS the keys made verifies over its payload with the JWKS, for
// both algorithms and after a rotation (the old key still published); a changed payload, a key
// set without its kid, another key under its kid, and a header with b64 or crit do not.
func TestVerifyDetached(t *testing.T) {
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	_, ed, _ := ed25519.GenerateKey(rand.Reader)
	ecKey, _ := NewServiceKey(ec)
	edKey, _ := NewServiceKey(ed)
	old, _ := NewServiceKeys(ecKey)
	rotated, _ := NewServiceKeys(ecKey, edKey)
	payload := []byte(`{"changes":[],"nextCursor":"x"}` + "\n")
	for _, keys := range []*ServiceKeys{old, rotated} {
		protected, sig, err := keys.SignDetached(map[string]any{"typ": "JOSE", "tenant": "acme"}, payload)
		if err != nil {
			t.Fatal(err)
		}
		jws := protected + ".." + sig
		h, err := VerifyDetached(rotated.JWKS(), jws, payload)
		if err != nil || h.KeyID != keys.Current().ID || h.ExtraHeaders["tenant"] != "acme" {
			t.Fatalf("%s: %v, header %+v", keys.Current().Alg, err, h)
		}
		if _, err := VerifyDetached(rotated.JWKS(), jws, append([]byte(" "), payload...)); err == nil {
			t.Fatalf("%s: a changed payload verifies", keys.Current().Alg)
		}
	}
	// Signed by the new key: a set of the old key alone has no key of its kid.
	protected, sig, _ := rotated.SignDetached(nil, payload)
	if _, err := VerifyDetached(old.JWKS(), protected+".."+sig, payload); err == nil {
		t.Fatal("verified without its key")
	}
	// Another key published under the signer's kid.
	impostor := edKey
	_, other, _ := ed25519.GenerateKey(rand.Reader)
	impostor.Signer = other
	fake, _ := NewServiceKeys(impostor)
	if _, err := VerifyDetached(fake.JWKS(), protected+".."+sig, payload); err == nil {
		t.Fatal("verified with another key under the same kid")
	}
	for _, ext := range []map[string]any{{"b64": true}, {"crit": []string{"exp"}, "exp": 1}} {
		p, s, err := rotated.SignDetached(ext, payload)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := VerifyDetached(rotated.JWKS(), p+".."+s, payload); err == nil {
			t.Fatalf("a header with %v verifies", ext)
		}
	}
}
