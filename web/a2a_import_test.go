package web_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/go-jose/go-jose/v4"

	"github.com/agentcards/agentcards/cards/a2a/a2atest"
	"github.com/agentcards/agentcards/cards/agenttest"
	"github.com/agentcards/agentcards/storage/storagetest"
)

const samplesDir = "testdata/a2a-samples"

// TestA2AImportSignatures: the signature record over HTTP. An import answers 201 with its
// a2a.import.signature (verified by a jku or by the request's keys, unverified without a key); a
// signature its key rejects is 400 invalid_signature and stores nothing, or, with
// allowInvalidSignature, a 201 recorded invalid. Search's verified filter finds the verified
// cards, a write drops the record, and a client cannot set it. Which record or error each
// signature gives is cards/a2a's (cards/a2a/signature_test.go).
func TestA2AImportSignatures(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		e.mkTenant("acme", "alice")
		alice := e.token("alice", "acme", false)
		pub, priv, _ := ed25519.GenerateKey(rand.Reader)
		keys := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: pub, KeyID: "k1", Algorithm: "EdDSA"}}}
		jwks, err := json.Marshal(keys)
		if err != nil {
			t.Fatal(err)
		}
		agent := agenttest.New(t, nil)
		agent.ServeJSON("/jwks.json", http.StatusOK, jwks)
		e.allowLoopback()
		status := func(r response) (string, string) {
			var rest struct {
				A2A struct {
					Import struct {
						Signature struct{ Status, Reason, Kid, KeySource string }
					}
				}
			}
			r.json(t, &rest)
			s := rest.A2A.Import.Signature
			return s.Status, s.KeySource
		}
		imp := func(id string, body map[string]any) response {
			body["agentId"] = id
			return e.do("POST", "/v1/tenants/acme/cards/import", alice, body)
		}

		signed := a2atest.SignEd25519(t, priv, "k1", agent.URL+"/jwks.json", a2atest.SampleV1(t))
		r := imp("by-jku", map[string]any{"card": signed})
		expect(t, r, http.StatusCreated)
		if st, src := status(r); st != "verified" || src != "jku" {
			t.Fatalf("jku: %s %s", st, src)
		}
		r = imp("by-keys", map[string]any{"card": a2atest.SignEd25519(t, priv, "k1", "", a2atest.SampleV1(t)), "keys": keys})
		expect(t, r, http.StatusCreated)
		if st, src := status(r); st != "verified" || src != "request" {
			t.Fatalf("keys: %s %s", st, src)
		}
		r = imp("no-key", map[string]any{"card": a2atest.SignEd25519(t, priv, "k1", "", a2atest.SampleV1(t))})
		expect(t, r, http.StatusCreated)
		if st, _ := status(r); st != "unverified" {
			t.Fatalf("no key: %s", st)
		}

		tampered := a2atest.SignEd25519(t, priv, "k1", "", a2atest.SampleV1(t))
		tampered["name"] = "GeoSpatial Route Planner AgenT"
		expect(t, imp("tampered", map[string]any{"card": tampered, "keys": keys}), http.StatusBadRequest, "invalid_signature")
		expect(t, e.getCard("acme", "tampered"), http.StatusNotFound)
		r = imp("tampered", map[string]any{"card": tampered, "keys": keys, "allowInvalidSignature": true})
		expect(t, r, http.StatusCreated)
		if st, _ := status(r); st != "invalid" {
			t.Fatalf("allowed invalid: %s", st)
		}

		// verified=true finds the cards whose imported signature verified; false, the others.
		expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, sampleCard("plain")), http.StatusCreated)
		if got := e.search(alice, "acme", "verified=true").ids(); !slices.Equal(got, []string{"by-jku", "by-keys"}) {
			t.Errorf("verified=true: %v", got)
		}
		if got := e.search(alice, "acme", "verified=false").ids(); !slices.Equal(got, []string{"no-key", "plain", "tampered"}) {
			t.Errorf("verified=false: %v", got)
		}
		// The registry's own fields are not what the signature attests: changing them keeps it.
		expect(t, e.do("PATCH", "/v1/tenants/acme/cards/by-keys", alice, map[string]any{"status": "deprecated", "visibility": "public"}), http.StatusOK)
		if got := e.search(alice, "acme", "verified=true&q=route").ids(); !slices.Equal(got, []string{"by-jku", "by-keys"}) {
			t.Errorf("verified=true&q=route after a status change: %v", got)
		}
		expect(t, e.do("GET", "/v1/tenants/acme/cards?verified=yes", alice, nil), http.StatusBadRequest, "invalid")
		scan := newEnvWith(t, e.db, envOptions{noIndex: true}) // search.index: none answers alike
		if got := scan.search(alice, "acme", "verified=true").ids(); !slices.Equal(got, []string{"by-jku", "by-keys"}) {
			t.Errorf("verified=true without an index: %v", got)
		}

		// Any later write drops the record: it attested the content as imported.
		r = e.do("PATCH", "/v1/tenants/acme/cards/by-jku", alice, map[string]any{"description": "edited"})
		expect(t, r, http.StatusOK)
		if st, _ := status(r); st != "" {
			t.Fatalf("import record survived a write: %s", r.body)
		}
		if got := e.search(alice, "acme", "verified=true").ids(); !slices.Equal(got, []string{"by-keys"}) {
			t.Errorf("verified=true after a write to by-jku: %v", got)
		}
		// A client cannot set the record itself.
		c := sampleCard("forged")
		c["a2a"] = map[string]any{"import": map[string]any{"format": "1.0", "signature": map[string]any{"status": "verified"}}}
		r = e.do("PUT", "/v1/tenants/acme/cards/forged", alice, c)
		expect(t, r, http.StatusCreated)
		if st, _ := status(r); st != "" {
			t.Fatalf("client set the import record: %s", r.body)
		}
		if got := e.search(alice, "acme", "verified=true").ids(); slices.Contains(got, "forged") {
			t.Errorf("a forged record is found as verified: %v", got)
		}
	})
}

// TestA2AImportByURL: import by URL over HTTP. The server's default guard answers a loopback URL
// 400 blocked_url; an allowed one is a 201 with the card's Location and the import record; an
// agent that has a card is 409; a URL that cannot be reached is 502 fetch_failed and stores
// nothing; a reader is 403 before anything is fetched. Which error each fetched answer or redirect
// gives is cards/a2a's (TestA2AImportFetchFailures, TestA2AImportRedirects).
func TestA2AImportByURL(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(samplesDir, "a2a-samples__adk_currency_agent__agent_card.json"))
	if err != nil {
		t.Fatal(err)
	}
	agent := agenttest.New(t, nil) // any other path: 404
	agent.ServeJSON(agenttest.CardPath, http.StatusOK, raw)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedPort := "http://" + ln.Addr().String() + "/card.json"
	_ = ln.Close()
	forEachDialect(t, func(t *testing.T, e *env) {
		e.mkTenant("acme", "alice")
		alice := e.token("alice", "acme", false)
		body := func(id, path string) map[string]any {
			return map[string]any{"agentId": id, "url": agent.URL + path}
		}
		// The default guard refuses loopback.
		expect(t, e.do("POST", "/v1/tenants/acme/cards/import", alice, body("cur", "/.well-known/agent-card.json")), http.StatusBadRequest, "blocked_url")

		e.allowLoopback()
		r := e.do("POST", "/v1/tenants/acme/cards/import", alice, body("cur", "/.well-known/agent-card.json"))
		expect(t, r, http.StatusCreated)
		if r.header.Get("Location") != "/v1/tenants/acme/cards/cur" || !strings.Contains(string(r.body), `"url":"`+agent.URL) {
			t.Fatalf("Location %q body %s", r.header.Get("Location"), r.body)
		}
		expect(t, e.do("POST", "/v1/tenants/acme/cards/import", alice, body("cur", "/.well-known/agent-card.json")), http.StatusConflict, "conflict")
		unreachable := map[string]any{"agentId": "unreachable", "url": closedPort}
		expect(t, e.do("POST", "/v1/tenants/acme/cards/import", alice, unreachable), http.StatusBadGateway, "fetch_failed")
		expect(t, e.getCard("acme", "unreachable"), http.StatusNotFound)
		// A reader may not import, and is refused before anything is fetched.
		expect(t, e.do("POST", "/v1/tenants/acme/roles", alice, map[string]any{"subject": "rita", "role": "reader"}), http.StatusCreated)
		expect(t, e.do("POST", "/v1/tenants/acme/cards/import", e.token("rita", "acme", false), body("r", "/.well-known/agent-card.json")), http.StatusForbidden, "forbidden")
	})
}

// TestA2AImportRejectsBadInput: an import refused as invalid is a 400 invalid whose body names
// each problem's path and no file of the server; a body that is not JSON is 400 malformed_json.
// Which input is refused, and the message for each, are cards/a2a's
// (TestA2AImportRefusesInvalidInput).
func TestA2AImportRejectsBadInput(t *testing.T) {
	e := newEnv(t, storagetest.Open(t, "sqlite"), 1<<20)
	e.mkTenant("acme", "alice")
	alice := e.token("alice", "acme", false)
	imp := func(body any) response { return e.do("POST", "/v1/tenants/acme/cards/import", alice, body) }

	bad := a2atest.SampleV1(t)
	bad["skills"].([]any)[1].(map[string]any)["tags"] = "maps"
	bad["capabilities"] = map[string]any{"streaming": "yes"}
	r := imp(map[string]any{"agentId": "x", "card": bad})
	expect(t, r, http.StatusBadRequest, "invalid")
	for _, path := range []string{"/skills/1/tags", "/capabilities/streaming"} {
		if !strings.Contains(string(r.body), path) {
			t.Fatalf("400 does not name %s: %s", path, r.body)
		}
	}
	// The schema library's own text names the schema's file under the server's directory.
	if strings.Contains(string(r.body), "file:") {
		t.Fatalf("400 names a file of the server: %s", r.body)
	}
	expect(t, imp("{"), http.StatusBadRequest, "malformed_json")
}
