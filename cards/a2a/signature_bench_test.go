package a2a

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"testing"

	"github.com/agentcards/agentcards/authz/token"
	"github.com/agentcards/agentcards/cards"
)

// BenchmarkVerifySignature checks the signature of a 3 KB card as an import does (JCS form,
// protected header, key from the request's JWKS, signature), next to the bare signature check of
// the same signing input: jws/crypto is what canonicalization and the JOSE layer cost.
func BenchmarkVerifySignature(b *testing.B) {
	card := map[string]any{"name": "GeoSpatial Route Planner Agent", "version": "1.2.0"}
	var skills []any
	for i := range 24 {
		skills = append(skills, map[string]any{"id": fmt.Sprintf("skill-%d", i), "name": "Route planning", "tags": []any{"maps", "routing"}})
	}
	card["skills"] = skills
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	_, ed, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for _, signer := range []crypto.Signer{ec, ed} {
		k, err := token.NewServiceKey(signer)
		if err != nil {
			b.Fatal(err)
		}
		keys, err := token.NewServiceKeys(k)
		if err != nil {
			b.Fatal(err)
		}
		signed, err := SignCard(keys, card)
		if err != nil {
			b.Fatal(err)
		}
		jwks, err := json.Marshal(keys.JWKS())
		if err != nil {
			b.Fatal(err)
		}
		var req ImportRequest // the keys as an import request carries them
		if err := json.Unmarshal([]byte(`{"keys":`+string(jwks)+`}`), &req); err != nil {
			b.Fatal(err)
		}
		b.Run(k.Alg+"/jws", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				v := &verifier{keys: req.Keys}
				if c := v.verify(ctx, signed); c.Status != cards.SignatureVerified {
					b.Fatalf("%+v", c)
				}
			}
		})
		var top struct{ Signatures []AgentCardSignature }
		if err := json.Unmarshal(signed, &top); err != nil {
			b.Fatal(err)
		}
		payload, err := CanonicalPayload(signed)
		if err != nil {
			b.Fatal(err)
		}
		input := []byte(top.Signatures[0].Protected + "." + base64.RawURLEncoding.EncodeToString(payload))
		sig, err := base64.RawURLEncoding.DecodeString(top.Signatures[0].Signature)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(k.Alg+"/crypto", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if !bareVerify(signer.Public(), input, sig) {
					b.Fatal("the signature does not verify")
				}
			}
		})
	}
}

func bareVerify(pub crypto.PublicKey, input, sig []byte) bool {
	if ed, ok := pub.(ed25519.PublicKey); ok {
		return ed25519.Verify(ed, input, sig)
	}
	sum := sha256.Sum256(input)
	r, s := new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])
	return ecdsa.Verify(pub.(*ecdsa.PublicKey), sum[:], r, s)
}
