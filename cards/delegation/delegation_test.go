package delegation

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentcards/agentcards/cards"
)

func TestResultOf(t *testing.T) {
	for body, want := range map[string]string{
		`{"result": {"a": 1}}`: `{"a": 1}`,
		`{"other": 1}`:         `{"other": 1}`,
		`[1, 2]`:               `[1, 2]`,
		` "done" `:             `"done"`,
		`null`:                 `null`,
		`{"result": null}`:     `null`,
		`{"result": 1} extra`:  `"{\"result\": 1} extra"`,
		`plain text`:           `"plain text"`,
		"bad \xff utf8":        `"bad ` + "\uFFFD" + ` utf8"`,
	} {
		if got := string(resultOf([]byte(body))); got != want {
			t.Errorf("resultOf(%q) = %s, want %s", body, got, want)
		}
	}
	if got := errorText([]byte(strings.Repeat("é", 1000))); len(got) > maxErrorText || !json.Valid([]byte(`"`+got+`"`)) {
		t.Errorf("errorText kept %d bytes", len(got))
	}
}

func TestTargetOf(t *testing.T) {
	card := cards.Card{AgentID: "a", Protocols: []string{"a2a"}, Endpoint: "https://x.example/task",
		A2A: &cards.A2A{Interfaces: json.RawMessage(`[{"url": "https://x.example/grpc", "protocolBinding": "GRPC"},
			{"url": "https://x.example/rpc", "transport": "JSONRPC"}]`)}}
	// An entry in the 0.3 form ({url, transport}) is a 0.3 interface.
	if got, err := targetOf(card, TransportA2A); err != nil || got.url != "https://x.example/rpc" || got.iface != (Interface{BindingJSONRPC, A2AVersion03}) {
		t.Fatalf("a2a target %v %v", got, err)
	}
	if got, err := targetOf(card, TransportHTTP); err != nil || got.url != card.Endpoint {
		t.Fatalf("http target %v %v", got, err)
	}
	card.A2A.Interfaces = json.RawMessage(`[{"url": "https://x.example/grpc", "protocolBinding": "GRPC"}]`)
	if _, err := targetOf(card, TransportA2A); !errors.Is(err, ErrInvalid) {
		t.Fatalf("no JSON-RPC interface: %v", err)
	}
	card.Protocols = []string{"http"}
	if _, err := targetOf(card, TransportA2A); !errors.Is(err, ErrInvalid) {
		t.Fatalf("not a2a: %v", err)
	}
	if _, err := targetOf(cards.Card{AgentID: "b", Endpoint: "ftp://x"}, TransportHTTP); !errors.Is(err, ErrInvalid) {
		t.Fatalf("ftp endpoint: %v", err)
	}
}

// TestSealedSecretIsBoundToItsCard: a sealed secret opens only for the tenant, card and endpoint
// it was sealed for, and only with its key.
func TestSealedSecretIsBoundToItsCard(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	s, err := NewEndpointSecrets(key, nil, nil, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	const ep = "https://agt1.example/task"
	sealed := s.seal("acme", "agt1", ep, "hunter2")
	if strings.Contains(sealed, "hunter2") {
		t.Fatal("sealed value holds the plain secret")
	}
	if got, err := s.open("acme", "agt1", ep, sealed); err != nil || got != "hunter2" {
		t.Fatalf("open: %q %v", got, err)
	}
	if _, err := s.open("acme", "agt2", ep, sealed); err == nil {
		t.Fatal("a secret moved to another card opened")
	}
	if _, err := s.open("acme", "agt1", "https://evil.example/task", sealed); err == nil {
		t.Fatal("a secret moved to another endpoint opened")
	}
	other, _ := NewEndpointSecrets([]byte("fedcba9876543210fedcba9876543210"), nil, nil, nil, nil, nil)
	if _, err := other.open("acme", "agt1", ep, sealed); err == nil {
		t.Fatal("opened with another key")
	}
	if _, err := NewEndpointSecrets(key[:16], nil, nil, nil, nil, nil); err == nil {
		t.Fatal("a 16-byte key accepted")
	}
}

// TestCredentialHeaderField: a credential goes as the bearer token of Authorization, or as the
// whole value of the header it was set for, Authorization included; none goes nowhere.
func TestCredentialHeaderField(t *testing.T) {
	for _, c := range []struct {
		cred        Credential
		name, value string
	}{
		{Credential{Value: "t0k"}, "Authorization", "Bearer t0k"},
		{Credential{Header: "X-Api-Key", Value: "k3y"}, "X-Api-Key", "k3y"},
		{Credential{Header: "Authorization", Value: "r4w"}, "Authorization", "r4w"},
		{Credential{}, "", ""},
		{Credential{Header: "X-Api-Key"}, "", ""},
	} {
		if name, value := c.cred.HeaderField(); name != c.name || value != c.value {
			t.Errorf("%+v: %q: %q, want %q: %q", c.cred, name, value, c.name, c.value)
		}
	}
}
