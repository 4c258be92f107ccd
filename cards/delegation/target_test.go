package delegation

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentcards/agentcards/cards"
)

// a2aCard is a card that speaks a2a at endpoint and declares ifaces as its a2a.interfaces
// (none when ifaces is nil).
func a2aCard(endpoint string, ifaces ...map[string]string) cards.Card {
	c := cards.Card{AgentID: "rev", Protocols: []string{"a2a"}, Endpoint: endpoint}
	if ifaces != nil {
		b, _ := json.Marshal(ifaces)
		c.A2A = &cards.A2A{Interfaces: b}
	}
	return c
}

func iface(url, binding, version string) map[string]string {
	return map[string]string{"url": url, "protocolBinding": binding, "protocolVersion": version}
}

// TestChooseA2A: the interface a delegation speaks is the card's first 1.0 JSON-RPC one, else its
// first 0.3 JSON-RPC one, else HTTP+JSON in 1.0 then 0.3, whatever the order the card lists them
// in; a card that lists none (or an empty list) speaks 1.0 JSON-RPC at its endpoint.
func TestChooseA2A(t *testing.T) {
	const ep = "https://agents.example/ep"
	for _, c := range []struct {
		name string
		card cards.Card
		want target
	}{
		{"endpoint only", a2aCard(ep), target{url: ep, iface: Interface{BindingJSONRPC, A2AVersion10}}},
		{"empty list", a2aCard(ep, []map[string]string{}...), target{url: ep, iface: Interface{BindingJSONRPC, A2AVersion10}}},
		{"1.0 JSON-RPC listed after 0.3", a2aCard(ep,
			iface("https://a/v03", "JSONRPC", "0.3.0"), iface("https://a/v1", "JSONRPC", "1.0")),
			target{url: "https://a/v1", iface: Interface{BindingJSONRPC, A2AVersion10}}},
		{"0.3 JSON-RPC before 1.0 HTTP+JSON", a2aCard(ep,
			iface("https://a/rest", "HTTP+JSON", "1.0"), iface("https://a/v03", "JSONRPC", "0.3")),
			target{url: "https://a/v03", iface: Interface{BindingJSONRPC, A2AVersion03}}},
		{"1.0 HTTP+JSON before 0.3 HTTP+JSON", a2aCard(ep,
			iface("https://a/rest03", "HTTP+JSON", "0.3.0"), iface("https://a/rest", "http+json", "1.0.1")),
			target{url: "https://a/rest", iface: Interface{BindingHTTPJSON, A2AVersion10}}},
		{"0.3 HTTP+JSON after gRPC", a2aCard(ep,
			iface("https://a/grpc", "GRPC", "1.0"), iface("https://a/rest03", "HTTP+JSON", "0.3")),
			target{url: "https://a/rest03", iface: Interface{BindingHTTPJSON, A2AVersion03}}},
		{"first of two alike", a2aCard(ep,
			iface("https://a/one", "JSONRPC", "0.3.0"), iface("https://a/two", "jsonrpc", "0.3.1")),
			target{url: "https://a/one", iface: Interface{BindingJSONRPC, A2AVersion03}}},
		{"1.0 tenant kept", a2aCard(ep, map[string]string{"url": "https://a/v1", "protocolBinding": "JSONRPC", "protocolVersion": "1.0", "tenant": "t1"}),
			target{url: "https://a/v1", iface: Interface{BindingJSONRPC, A2AVersion10}, tenant: "t1"}},
	} {
		got, err := targetOf(c.card, TransportA2A)
		if err != nil || got != c.want {
			t.Errorf("%s: %+v %v, want %+v", c.name, got, err, c.want)
		}
	}
}

// TestChooseA2ANoneSpoken: a card whose interfaces are all of a binding or version this service
// cannot speak is refused as invalid, and the error names what it declares.
func TestChooseA2ANoneSpoken(t *testing.T) {
	card := a2aCard("https://agents.example/ep",
		iface("https://a/grpc", "GRPC", "1.0"), iface("https://a/v02", "JSONRPC", "0.2.5"),
		iface("https://a/v11", "JSONRPC", "1.1"), iface("https://a/v2", "JSONRPC", "2.0"), iface("https://a/x", "JSONRPC", "one"))
	_, err := targetOf(card, TransportA2A)
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "it declares GRPC 1.0, JSONRPC 0.2.5, JSONRPC 1.1, JSONRPC 2.0, JSONRPC one") {
		t.Fatalf("a card with no interface spoken: %v", err)
	}
	if got, err := targetOf(card, TransportHTTP); err != nil || got.url != card.Endpoint || got.iface != (Interface{}) {
		t.Fatalf("over http the same card goes to its endpoint: %+v %v", got, err)
	}
}
