package token

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"testing"
)

// BenchmarkSignDetached signs a 3 KB payload (the size of a real A2A card) as a card rendering
// does, next to the bare signature of the same signing input: jws/crypto is what the JOSE layer
// costs on top of the key operation.
func BenchmarkSignDetached(b *testing.B) {
	payload := bytes.Repeat([]byte(`{"id":"route-planning","name":"Route planning","tags":["maps"]},`), 48)
	for _, signer := range benchSigners(b) {
		k, err := NewServiceKey(signer)
		if err != nil {
			b.Fatal(err)
		}
		keys, err := NewServiceKeys(k)
		if err != nil {
			b.Fatal(err)
		}
		header := map[string]any{"typ": "JOSE"}
		b.Run(k.Alg+"/jws", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := keys.SignDetached(header, payload); err != nil {
					b.Fatal(err)
				}
			}
		})
		hb, _ := json.Marshal(map[string]any{"alg": k.Alg, "kid": k.ID, "typ": "JOSE"})
		input := []byte(base64.RawURLEncoding.EncodeToString(hb) + "." + base64.RawURLEncoding.EncodeToString(payload))
		b.Run(k.Alg+"/crypto", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := bareSign(signer, input); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// benchSigners returns a P-256 and an Ed25519 key, the two kinds a service key may be.
func benchSigners(b *testing.B) []crypto.Signer {
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	_, ed, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	return []crypto.Signer{ec, ed}
}

func bareSign(s crypto.Signer, input []byte) error {
	if ed, ok := s.(ed25519.PrivateKey); ok {
		ed25519.Sign(ed, input)
		return nil
	}
	sum := sha256.Sum256(input)
	_, _, err := ecdsa.Sign(rand.Reader, s.(*ecdsa.PrivateKey), sum[:])
	return err
}
