package delegation

import (
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/cards"
)

// The A2A protocol bindings and versions a delegation can speak, as a record names them.
const (
	BindingJSONRPC  = "JSONRPC"
	BindingHTTPJSON = "HTTP+JSON"
	A2AVersion10    = "1.0"
	A2AVersion03    = "0.3"
)

// Interface is the A2A interface a delegation was sent to: its protocol binding and the protocol
// version the call speaks. It is zero for delegations over plain HTTP.
type Interface struct {
	Binding string `json:"protocolBinding"`
	Version string `json:"protocolVersion"`
}

// a2aPreference is the order in which a card's interfaces are tried: JSON-RPC before HTTP+JSON,
// and within a binding the newer version first. It lists every interface a2a-go v2 has a client
// for, in 1.0 and through its 0.3 compat layer; gRPC needs a connection outside the guarded
// HTTP client, so it is not one of them.
var a2aPreference = []Interface{
	{BindingJSONRPC, A2AVersion10},
	{BindingJSONRPC, A2AVersion03},
	{BindingHTTPJSON, A2AVersion10},
	{BindingHTTPJSON, A2AVersion03},
}

// target is where a call goes: a URL and, for A2A, the interface it speaks and the A2A tenant
// the interface declares (1.0 only).
type target struct {
	url    string
	iface  Interface
	tenant string
}

// targetOf finds where a transport reaches the card's agent. For http it is the card's endpoint
// (the POST /task URL); for a2a, the interface chooseA2A picks from the card's declared ones.
func targetOf(card cards.Card, transport string) (target, error) {
	t := target{url: card.Endpoint}
	if transport == TransportA2A {
		if !slices.Contains(card.Protocols, "a2a") {
			return target{}, fault.Errorf(fault.Invalid, "card %q does not speak a2a: invalid", card.AgentID)
		}
		var err error
		if t, err = chooseA2A(card); err != nil {
			return target{}, err
		}
	}
	if t.url == "" {
		return target{}, fault.Errorf(fault.Invalid, "card %q has no endpoint: invalid", card.AgentID)
	}
	u, err := url.Parse(t.url)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return target{}, fault.Errorf(fault.Invalid, "card %q: endpoint %q is not an http(s) URL: invalid", card.AgentID, t.url)
	}
	return t, nil
}

// chooseA2A picks the interface a delegation speaks to: the first one of the card's declared
// interfaces (cards.Card.A2AInterfaces, as its served A2A card lists them) in the order of
// a2aPreference (card order within each). A card that declares no
// interface this service can speak is refused before anything is sent, naming what it declares.
func chooseA2A(card cards.Card) (target, error) {
	list := card.A2AInterfaces()
	for _, want := range a2aPreference {
		for _, d := range list {
			if spoken, ok := speaks(d); ok && spoken == want {
				t := target{url: d.URL, iface: spoken}
				if spoken.Version == A2AVersion10 {
					t.tenant = d.Tenant
				}
				return t, nil
			}
		}
	}
	if len(list) == 0 {
		return target{}, fault.Errorf(fault.Invalid, "card %q declares no A2A interface: invalid", card.AgentID)
	}
	return target{}, fault.Errorf(fault.Invalid, "card %q declares no A2A interface this service can speak "+
		"(JSONRPC or HTTP+JSON, in 1.0 or 0.3); it declares %s: invalid", card.AgentID, describe(list))
}

// speaks returns the interface in the form a call speaks it, if it can: a binding named
// JSONRPC or HTTP+JSON (in any case) and a protocolVersion that names 1.0 or 0.3 as
// cards.A2AVersion reads it (a patch level does not change the protocol). Another minor
// version, even 1.1, is not spoken: the agent did not declare 1.0, and the call would speak a
// version it never stated.
func speaks(d cards.A2AInterface) (Interface, bool) {
	var i Interface
	switch {
	case strings.EqualFold(d.ProtocolBinding, BindingJSONRPC):
		i.Binding = BindingJSONRPC
	case strings.EqualFold(d.ProtocolBinding, BindingHTTPJSON):
		i.Binding = BindingHTTPJSON
	default:
		return Interface{}, false
	}
	i.Version, _ = cards.A2AVersion(d.ProtocolVersion)
	return i, i.Version == A2AVersion10 || i.Version == A2AVersion03
}

// maxDescribed bounds how many interfaces an error names.
const maxDescribed = 5

// describe names the interfaces a card declares by binding and version, in card order.
func describe(list []cards.A2AInterface) string {
	names := make([]string, 0, min(len(list), maxDescribed))
	for _, d := range list[:min(len(list), maxDescribed)] {
		names = append(names, fmt.Sprintf("%s %s", orUnset(d.ProtocolBinding), orUnset(d.ProtocolVersion)))
	}
	s := strings.Join(names, ", ")
	if len(list) > maxDescribed {
		s += fmt.Sprintf(" and %d more", len(list)-maxDescribed)
	}
	return s
}

func orUnset(s string) string {
	if s == "" {
		return "(unset)"
	}
	return s
}
