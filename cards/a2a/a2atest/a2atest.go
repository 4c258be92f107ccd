// Package a2atest holds what the A2A tests of cards/a2a and web share: the two versions' members
// written from the specs, the views a 1.0 or a 0.3 reader takes of a served card, the check of a
// document against a JSON Schema, a fetcher that never leaves loopback, the published sample
// cards, and signatures written independently of the product's signer.
package a2atest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/agentcards/agentcards/web/outbound"
)

// The members by which the two versions of an Agent Card differ, written from the specs (0.3.0's
// AgentCard and SecurityScheme, 1.0's AgentCard and SecurityScheme), independently of the
// product: a hybrid card carries both sets.
var (
	// Members03 are the top-level members of a 0.3 card that 1.0 does not have.
	Members03 = []string{"protocolVersion", "url", "preferredTransport", "additionalInterfaces", "security", "supportsAuthenticatedExtendedCard"}
	// Members10 are the top-level members of a 1.0 card that 0.3 does not have.
	Members10 = []string{"supportedInterfaces", "securityRequirements"}
	// schemeKinds10 are the one-of members of a 1.0 security scheme; 0.3 writes a scheme's fields
	// (type, scheme, in, name, flows, ...) directly in it instead.
	schemeKinds10 = map[string]bool{"httpAuthSecurityScheme": true, "apiKeySecurityScheme": true,
		"oauth2SecurityScheme": true, "openIdConnectSecurityScheme": true, "mtlsSecurityScheme": true}
)

// Only10 is a served card without its 0.3 members: what a 1.0 reader takes of it.
func Only10(t testing.TB, body []byte) map[string]any {
	t.Helper()
	c := DecodeCard(t, body)
	for _, k := range Members03 {
		delete(c, k)
	}
	for _, s := range listOf(c["skills"]) {
		delete(s, "security")
	}
	for _, s := range objectOf(c["securitySchemes"]) {
		for k := range objectOf(s) {
			if !schemeKinds10[k] {
				delete(objectOf(s), k)
			}
		}
	}
	return c
}

// Only03 is a served card without its 1.0 members: what a 0.3 reader takes of it.
func Only03(t testing.TB, body []byte) map[string]any {
	t.Helper()
	c := DecodeCard(t, body)
	for _, k := range Members10 {
		delete(c, k)
	}
	delete(objectOf(c["capabilities"]), "extendedAgentCard")
	for _, s := range listOf(c["skills"]) {
		delete(s, "securityRequirements")
	}
	for _, s := range objectOf(c["securitySchemes"]) {
		for k := range objectOf(s) {
			if schemeKinds10[k] {
				delete(objectOf(s), k)
			}
		}
	}
	return c
}

// DecodeCard is body as a JSON object; anything else fails the test.
func DecodeCard(t testing.TB, body []byte) map[string]any {
	t.Helper()
	var c map[string]any
	if err := json.Unmarshal(body, &c); err != nil || c == nil {
		t.Fatalf("card %s: %v", body, err)
	}
	return c
}

// ValidateJSON fails the test unless body is valid against s.
func ValidateJSON(t testing.TB, s *jsonschema.Schema, body []byte) {
	t.Helper()
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(inst); err != nil {
		t.Fatalf("schema: %v\n%s", err, body)
	}
}

// LoopbackOnly refuses, without dialing, any request to a host that is not a loopback address,
// so no test can reach the network whatever URL a card or signature names.
type LoopbackOnly struct{ Inner outbound.Doer }

// Do sends r through Inner when its host is a loopback address.
func (l LoopbackOnly) Do(r *http.Request) (*http.Response, error) {
	a, err := netip.ParseAddr(r.URL.Hostname())
	if err != nil || !a.IsLoopback() {
		return nil, fmt.Errorf("test guard: %s is not a loopback address", r.URL.Host)
	}
	return l.Inner.Do(r)
}

// IsLoopback tells whether host is a loopback address, as outbound.allow set to 127.0.0.0/8 and
// ::1 lets through.
func IsLoopback(host string) bool {
	a, err := netip.ParseAddr(host)
	return err == nil && a.IsLoopback()
}

// LoopbackFetch is the guarded client imports use, allowed to reach 127.0.0.0/8 as outbound.allow
// would allow it, behind LoopbackOnly.
func LoopbackFetch() LoopbackOnly {
	return LoopbackOnly{outbound.New(outbound.Config{
		Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, Timeout: 5 * time.Second, FollowSameHostRedirects: true,
	})}
}

func objectOf(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func listOf(v any) []map[string]any {
	var out []map[string]any
	l, _ := v.([]any)
	for _, x := range l {
		if m, ok := x.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}
