package main

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
)

// errNoToken is no token given at all: a request open to anyone goes without one.
var errNoToken = errors.New("no token: set AGENTCARDS_TOKEN or give --token-file")

// invalidToken is a token given that cannot be one: the service would answer 401 to it, so the
// CLI says so before sending rather than guess the tenant from it.
type invalidToken struct{ from, why string }

func (e invalidToken) Error() string {
	return fmt.Sprintf("unauthorized: %s is not a valid token: %s", e.from, e.why)
}

// readToken reads the bearer token from the file, else from AGENTCARDS_TOKEN: errNoToken when
// neither gives one, an invalidToken when what is given is not a JWT.
func readToken(file string, getenv func(string) string) (string, error) {
	from, tok := "AGENTCARDS_TOKEN", strings.TrimSpace(getenv("AGENTCARDS_TOKEN"))
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("--token-file: %w", err)
		}
		from, tok = "the token of --token-file "+file, strings.TrimSpace(string(b))
		if tok == "" {
			return "", invalidToken{from, "the file is empty"}
		}
	}
	if tok == "" {
		return "", errNoToken
	}
	if why := notJWT(tok); why != "" {
		return "", invalidToken{from, why}
	}
	return tok, nil
}

// notJWT says why tok is not a JWT in compact form (header.payload.signature, the first two
// base64url-encoded JSON objects), or "" when it is one. Whether it is signed by a key the
// service trusts, and still valid, is the service's to say.
func notJWT(tok string) string {
	if scheme, _, ok := strings.Cut(tok, " "); ok && strings.EqualFold(scheme, "Bearer") {
		return `it starts with "Bearer ": give the token alone`
	}
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return fmt.Sprintf("a JWT has three parts separated by dots, this has %d", len(parts))
	}
	for i, name := range []string{"header", "payload"} {
		raw, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[i], "="))
		var obj map[string]json.RawMessage
		if err != nil || json.Unmarshal(raw, &obj) != nil {
			return "its " + name + " is not a base64url-encoded JSON object"
		}
	}
	return ""
}
