package a2a_test

import "testing"

// The members by which the two versions of an Agent Card differ, written from the specs (0.3.0's
// AgentCard and SecurityScheme, 1.0's AgentCard and SecurityScheme), independently of the
// product: a hybrid card carries both sets. web's tests keep their own copy, for the cards they
// read over HTTP.
var (
	// members03 are the top-level members of a 0.3 card that 1.0 does not have.
	members03 = []string{"protocolVersion", "url", "preferredTransport", "additionalInterfaces", "security", "supportsAuthenticatedExtendedCard"}
	// members10 are the top-level members of a 1.0 card that 0.3 does not have.
	members10 = []string{"supportedInterfaces", "securityRequirements"}
	// schemeKinds10 are the one-of members of a 1.0 security scheme; 0.3 writes a scheme's fields
	// (type, scheme, in, name, flows, ...) directly in it instead.
	schemeKinds10 = map[string]bool{"httpAuthSecurityScheme": true, "apiKeySecurityScheme": true,
		"oauth2SecurityScheme": true, "openIdConnectSecurityScheme": true, "mtlsSecurityScheme": true}
)

// only10 is a card without its 0.3 members: what a 1.0 reader takes of it.
func only10(t testing.TB, body []byte) map[string]any {
	t.Helper()
	c := decodeCard(t, body)
	for _, k := range members03 {
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

// only03 is a card without its 1.0 members: what a 0.3 reader takes of it.
func only03(t testing.TB, body []byte) map[string]any {
	t.Helper()
	c := decodeCard(t, body)
	for _, k := range members10 {
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
