package web_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/agentcards/agentcards/authz"
	"github.com/agentcards/agentcards/web/outbound"
	"github.com/golang-jwt/jwt/v5"
	"github.com/gowebpki/jcs"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// loopbackOnly refuses, without dialing, any request to a host that is not a loopback address,
// so no test can reach the network whatever URL a card or signature names.
type loopbackOnly struct{ inner outbound.Doer }

func (l loopbackOnly) Do(r *http.Request) (*http.Response, error) {
	a, err := netip.ParseAddr(r.URL.Hostname())
	if err != nil || !a.IsLoopback() {
		return nil, fmt.Errorf("test guard: %s is not a loopback address", r.URL.Host)
	}
	return l.inner.Do(r)
}

// allowLoopback lets the env's imports reach 127.0.0.0/8, as outbound.allow would.
func (e *env) allowLoopback() {
	e.cards.Fetch = loopbackOnly{outbound.New(outbound.Config{
		Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, Timeout: 5 * time.Second, FollowSameHostRedirects: true,
	})}
}

func testServiceKeys(t testing.TB) *authz.ServiceKeys {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	k, err := authz.NewServiceKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := authz.NewServiceKeys(k)
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// schemaDir holds the spec's schemas as the repository carries them.
const schemaDir = "../cards/a2aschema"

// cardSchemas compiles the Agent Card schemas of 1.0 and 0.3, independently of the product.
func cardSchemas(t *testing.T) (v1, v03 *jsonschema.Schema) {
	t.Helper()
	c := jsonschema.NewCompiler()
	for _, name := range []string{"a2a-v1.schema.json", "a2a-v0.3.0.schema.json"} {
		f, err := os.Open(filepath.Join(schemaDir, name))
		if err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if err := c.AddResource(name, doc); err != nil {
			t.Fatal(err)
		}
	}
	return c.MustCompile("a2a-v1.schema.json#/$defs/AgentCard"), c.MustCompile("a2a-v0.3.0.schema.json#/definitions/AgentCard")
}

func validateJSON(t *testing.T, s *jsonschema.Schema, body []byte) {
	t.Helper()
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(inst); err != nil {
		t.Fatalf("schema: %v\n%s", err, body)
	}
}

// requireV1 checks the 1.0 required fields the JSON Schema does not list.
func requireV1(t *testing.T, body []byte) {
	t.Helper()
	var c map[string]any
	if err := json.Unmarshal(body, &c); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"name", "description", "version", "supportedInterfaces", "capabilities", "defaultInputModes", "defaultOutputModes", "skills"} {
		if _, ok := c[k]; !ok {
			t.Fatalf("1.0 card lacks %s: %s", k, body)
		}
	}
	for _, s := range c["skills"].([]any) {
		for _, k := range []string{"id", "name", "description", "tags"} {
			if v, ok := s.(map[string]any)[k]; !ok || v == "" {
				t.Fatalf("skill lacks %s: %v", k, s)
			}
		}
	}
	for _, i := range c["supportedInterfaces"].([]any) {
		for _, k := range []string{"url", "protocolBinding", "protocolVersion"} {
			if v, ok := i.(map[string]any)[k]; !ok || v == "" {
				t.Fatalf("interface lacks %s: %v", k, i)
			}
		}
	}
}

// verifyCard checks a served card's signature the way an independent client would: the key from
// /.well-known/jwks.json, the JCS form of the card without "signatures".
func verifyCard(t *testing.T, jwks authz.JWKS, body []byte) error {
	t.Helper()
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return err
	}
	var sigs []struct{ Protected, Signature string }
	if err := json.Unmarshal(top["signatures"], &sigs); err != nil || len(sigs) != 1 {
		return fmt.Errorf("want one signature: %s", top["signatures"])
	}
	delete(top, "signatures")
	unsigned, _ := json.Marshal(top)
	payload, err := jcs.Transform(unsigned)
	if err != nil {
		return err
	}
	hb, err := base64.RawURLEncoding.DecodeString(sigs[0].Protected)
	if err != nil {
		return err
	}
	var h map[string]any
	if err := json.Unmarshal(hb, &h); err != nil {
		return err
	}
	if h["typ"] != "JOSE" || h["kid"] == nil || h["alg"] == nil {
		return fmt.Errorf("protected header %v", h)
	}
	for _, k := range jwks.Keys {
		if k.Kid != h["kid"] {
			continue
		}
		pub, err := k.PublicKey()
		if err != nil {
			return err
		}
		sig, err := base64.RawURLEncoding.DecodeString(sigs[0].Signature)
		if err != nil {
			return err
		}
		input := sigs[0].Protected + "." + base64.RawURLEncoding.EncodeToString(payload)
		return jwt.GetSigningMethod(h["alg"].(string)).Verify(input, sig, pub)
	}
	return errors.New("kid not in the JWKS")
}

func (e *env) jwks() authz.JWKS {
	e.t.Helper()
	r := e.do("GET", "/.well-known/jwks.json", "", nil)
	expect(e.t, r, http.StatusOK)
	var set authz.JWKS
	r.json(e.t, &set)
	return set
}

// sameJSON fails with the differing top-level members unless a and b are equal JSON values.
func sameJSON(t *testing.T, what string, got, want map[string]any) {
	t.Helper()
	if reflect.DeepEqual(got, want) {
		return
	}
	keys := map[string]bool{}
	for k := range got {
		keys[k] = true
	}
	for k := range want {
		keys[k] = true
	}
	var diff []string
	for k := range keys {
		if !reflect.DeepEqual(got[k], want[k]) {
			g, _ := json.Marshal(got[k])
			w, _ := json.Marshal(want[k])
			diff = append(diff, fmt.Sprintf("%s:\n  got  %s\n  want %s", k, g, w))
		}
	}
	sort.Strings(diff)
	t.Fatalf("%s differs:\n%s", what, strings.Join(diff, "\n"))
}
