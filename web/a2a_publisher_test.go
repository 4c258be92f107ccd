package web_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"github.com/go-jose/go-jose/v4"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/agentcards/agentcards/cards/a2a/a2atest"
	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/web/webtest"
)

// servedSignatures are the signatures of a served A2A card, as {protected, signature}.
func servedSignatures(t *testing.T, body []byte) []map[string]any {
	t.Helper()
	var c struct {
		Signatures []map[string]any `json:"signatures"`
	}
	if err := json.Unmarshal(body, &c); err != nil {
		t.Fatal(err)
	}
	return c.Signatures
}

// withKeys is the JWKS of jwks (a served document) with the keys of set added.
func withKeys(t *testing.T, jwks []byte, set jose.JSONWebKeySet) []byte {
	t.Helper()
	var all jose.JSONWebKeySet
	if err := json.Unmarshal(jwks, &all); err != nil {
		t.Fatal(err)
	}
	all.Keys = append(all.Keys, set.Keys...)
	return mustJSON(t, all)
}

// TestA2APublisherSignaturesServed: a card imported with its publisher's signature, verified, is served, in
// the form that is exactly what the publisher signed, with that signature unchanged after the
// service's own; each verifies with plain JCS and JWS (go-jose) under its own key, both together
// with both keys, and a2a-go reads the card with both. A form that is not the publisher's content
// (the card deprecated, so served with the deprecation extension; a card whose content changed)
// carries the service's alone, and so does a card imported without signatures.
func TestA2APublisherSignaturesServed(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		e.mkTenant("acme", "alice")
		alice := e.token("alice", "acme", false)
		service := e.jwks()
		pub, priv, _ := ed25519.GenerateKey(rand.Reader)
		publisher := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: pub, KeyID: "publisher-1", Algorithm: "EdDSA"}}}
		card := a2atest.SignEd25519(t, priv, "publisher-1", "", a2atest.SampleV1(t))
		sent := servedSignatures(t, mustJSON(t, card))[0]
		expect(t, e.do("POST", "/v1/tenants/acme/cards/import", alice, map[string]any{"agentId": "geo", "card": card, "keys": publisher, "visibility": "public"}), http.StatusCreated)
		path := "/a2a/acme/geo/.well-known/agent-card.json"

		for _, form := range []string{"", "?version=1.0"} {
			r := e.do("GET", path+form, "", nil)
			expect(t, r, http.StatusOK)
			sigs := servedSignatures(t, r.body)
			if len(sigs) != 2 || sigs[1]["protected"] != sent["protected"] || sigs[1]["signature"] != sent["signature"] {
				t.Fatalf("form %q: signatures %v, want the service's and then the publisher's %v", form, sigs, sent)
			}
			if err := webtest.VerifyCard(withKeys(t, service, publisher), r.body); err != nil {
				t.Errorf("form %q: both signatures with both keys: %v", form, err)
			}
			onlyOne := func(i int, keys []byte, who string) {
				t.Helper()
				one := map[string]any{}
				if err := json.Unmarshal(r.body, &one); err != nil {
					t.Fatal(err)
				}
				one["signatures"] = []any{sigs[i]}
				if err := webtest.VerifyCard(keys, mustJSON(t, one)); err != nil {
					t.Errorf("form %q: the %s's signature alone with its keys: %v", form, who, err)
				}
			}
			onlyOne(0, service, "service")
			onlyOne(1, mustJSON(t, publisher), "publisher")
			var pb a2apb.AgentCard
			if err := protojson.Unmarshal(r.body, &pb); err != nil || len(pb.GetSignatures()) != 2 || pb.GetSignatures()[1].GetSignature() != sent["signature"] {
				t.Errorf("form %q: a2a-go's proto model reads %d signatures (%v)", form, len(pb.GetSignatures()), err)
			}
		}

		// Deprecated: served with the deprecation extension, which the publisher did not sign.
		expect(t, e.do("PATCH", "/v1/tenants/acme/cards/geo", alice, map[string]any{"status": "deprecated"}), http.StatusOK)
		r := e.do("GET", path, "", nil)
		if sigs := servedSignatures(t, r.body); len(sigs) != 1 {
			t.Errorf("deprecated: %d signatures, want the service's alone", len(sigs))
		}
		if err := webtest.VerifyCard(service, r.body); err != nil {
			t.Errorf("deprecated: %v", err)
		}
		// Active again: the publisher's content again, and its signature with it.
		expect(t, e.do("PATCH", "/v1/tenants/acme/cards/geo", alice, map[string]any{"status": "active"}), http.StatusOK)
		if sigs := servedSignatures(t, e.do("GET", path, "", nil).body); len(sigs) != 2 {
			t.Errorf("active again: %d signatures, want 2", len(sigs))
		}
		// Its content changed: the import record is gone, and the publisher's signature with it.
		expect(t, e.do("PATCH", "/v1/tenants/acme/cards/geo", alice, map[string]any{"description": "Changed here."}), http.StatusOK)
		if sigs := servedSignatures(t, e.do("GET", path, "", nil).body); len(sigs) != 1 {
			t.Errorf("changed: %d signatures, want the service's alone", len(sigs))
		}
		// Imported despite an invalid signature: the service's alone, not the invalid one.
		tampered := a2atest.SignEd25519(t, priv, "publisher-1", "", a2atest.SampleV1(t))
		tampered["name"] = "Someone Else"
		expect(t, e.do("POST", "/v1/tenants/acme/cards/import", alice, map[string]any{"agentId": "bad", "card": tampered,
			"keys": publisher, "allowInvalidSignature": true, "visibility": "public"}), http.StatusCreated)
		if sigs := servedSignatures(t, e.do("GET", "/a2a/acme/bad/.well-known/agent-card.json", "", nil).body); len(sigs) != 1 {
			t.Errorf("imported with an invalid signature: %d signatures, want the service's alone", len(sigs))
		}
		// A publisher's signature with a member the spec does not have is served without it.
		odd := a2atest.SignEd25519(t, priv, "publisher-1", "", a2atest.SampleV1(t))
		odd["signatures"].([]any)[0].(map[string]any)["note"] = "mine"
		expect(t, e.do("POST", "/v1/tenants/acme/cards/import", alice, map[string]any{"agentId": "odd", "card": odd, "keys": publisher, "visibility": "public"}), http.StatusCreated)
		oddBody := e.do("GET", "/a2a/acme/odd/.well-known/agent-card.json", "", nil).body
		if sigs := servedSignatures(t, oddBody); len(sigs) != 2 || sigs[1]["note"] != nil {
			t.Errorf("a signature with another member: served %v", sigs)
		}
		var pb a2apb.AgentCard
		if err := protojson.Unmarshal(oddBody, &pb); err != nil {
			t.Errorf("a2a-go's proto model refuses the card: %v", err)
		}
		// Imported without signatures: the service's alone.
		unsigned := a2atest.SampleV1(t)
		delete(unsigned, "signatures")
		expect(t, e.do("POST", "/v1/tenants/acme/cards/import", alice, map[string]any{"agentId": "plain", "card": unsigned, "visibility": "public"}), http.StatusCreated)
		if sigs := servedSignatures(t, e.do("GET", "/a2a/acme/plain/.well-known/agent-card.json", "", nil).body); len(sigs) != 1 {
			t.Errorf("imported unsigned: %d signatures", len(sigs))
		}
	})
}

// TestA2APublisherSignatureHybrid: a card whose publisher declares a 0.3 interface beside its 1.0
// ones is served by default as the hybrid, which is not what the publisher signed: the service's
// signature alone. Its pure forms are not the publisher's content either.
func TestA2APublisherSignatureHybrid(t *testing.T) {
	e := newEnv(t, storagetest.Open(t, "sqlite"), 1<<20)
	e.mkTenant("acme", "alice")
	alice := e.token("alice", "acme", false)
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	publisher := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: pub, KeyID: "publisher-1", Algorithm: "EdDSA"}}}
	card := a2atest.SampleV1(t)
	card["supportedInterfaces"] = append(card["supportedInterfaces"].([]any),
		map[string]any{"url": "https://georoute-agent.example.com/a2a/v03", "protocolBinding": "JSONRPC", "protocolVersion": "0.3"})
	card = a2atest.SignEd25519(t, priv, "publisher-1", "", card)
	r := e.do("POST", "/v1/tenants/acme/cards/import", alice, map[string]any{"agentId": "geo", "card": card, "keys": publisher, "visibility": "public"})
	expect(t, r, http.StatusCreated)
	if !strings.Contains(string(r.body), `"status":"verified"`) {
		t.Fatalf("the hybrid's signature did not verify on import: %s", r.body)
	}
	for _, form := range []string{"", "?version=1.0", "?version=0.3"} {
		if sigs := servedSignatures(t, e.do("GET", "/a2a/acme/geo/.well-known/agent-card.json"+form, "", nil).body); len(sigs) != 1 {
			t.Errorf("form %q: %d signatures, want the service's alone", form, len(sigs))
		}
	}
}

// TestA2APublisherSignatureWithA2AJS: @a2a-js/sdk's verifier, given only the publisher's key,
// verifies the served card by the publisher's signature, and given only the service's keys, by
// the service's. It needs Node and the SDK (see a2aJS); CI installs both.
func TestA2APublisherSignatureWithA2AJS(t *testing.T) {
	verify := a2aJS(t)
	e := newEnv(t, storagetest.Open(t, "sqlite"), 1<<20)
	e.mkTenant("acme", "alice")
	alice := e.token("alice", "acme", false)
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	publisher := mustJSON(t, jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: pub, KeyID: "publisher-1", Algorithm: "EdDSA"}}})
	stranger, _, _ := ed25519.GenerateKey(rand.Reader)
	other := mustJSON(t, jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: stranger, KeyID: "publisher-1", Algorithm: "EdDSA"}}})
	card := a2atest.SignEd25519(t, priv, "publisher-1", "", a2atest.SampleV1(t))
	expect(t, e.do("POST", "/v1/tenants/acme/cards/import", alice, map[string]any{"agentId": "geo", "card": card, "keys": json.RawMessage(publisher), "visibility": "public"}), http.StatusCreated)
	r := e.do("GET", "/a2a/acme/geo/.well-known/agent-card.json", "", nil)
	expect(t, r, http.StatusOK)
	if err := verify(r.body, publisher); err != nil {
		t.Errorf("with the publisher's key: %v", err)
	}
	if err := verify(r.body, e.jwks()); err != nil {
		t.Errorf("with the service's keys: %v", err)
	}
	if err := verify(r.body, other); err == nil {
		t.Errorf("a stranger's key under the publisher's kid verifies the card")
	}
}

// a2aJS returns a check of an A2A card with @a2a-js/sdk's verifyAgentCardSignature and the keys of
// a JWKS, run by Node from the SDK's install directory: AGENTCARDS_A2A_JS, by default
// ~/.cache/agentcards-a2a-js (where .ci/run installs @a2a-js/sdk@1.3.0). Without Node or the SDK
// the test is skipped, except in CI, where it fails.
func a2aJS(t *testing.T) func(card, jwks []byte) error {
	t.Helper()
	dir := os.Getenv("AGENTCARDS_A2A_JS")
	if dir == "" {
		home, _ := os.UserHomeDir()
		dir = filepath.Join(home, ".cache", "agentcards-a2a-js")
	}
	node, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(filepath.Join(dir, "node_modules", "@a2a-js", "sdk", "package.json"))
	}
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("Node and @a2a-js/sdk in %s are needed: %v", dir, err)
		}
		t.Skipf("Node and @a2a-js/sdk in %s are needed (npm install --prefix %s @a2a-js/sdk@1.3.0): %v", dir, dir, err)
	}
	script, err := os.ReadFile(filepath.Join("testdata", "a2a-js", "verify-card.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	// Beside its node_modules, so that Node resolves the SDK's imports from there; a name of its
	// own, as other test processes may run the same script at once.
	f, err := os.CreateTemp(dir, "verify-card-*.mjs")
	if err != nil {
		t.Fatal(err)
	}
	run := f.Name()
	t.Cleanup(func() { os.Remove(run) })
	if _, err := f.Write(script); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return func(card, jwks []byte) error {
		files := t.TempDir()
		cardFile, keysFile := filepath.Join(files, "card.json"), filepath.Join(files, "jwks.json")
		if err := os.WriteFile(cardFile, card, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(keysFile, jwks, 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(node, run, cardFile, keysFile).CombinedOutput()
		if err != nil {
			return errors.New(string(out))
		}
		return nil
	}
}
