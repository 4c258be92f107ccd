package a2a

import (
	"slices"
	"strings"

	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/cards"
)

// VersionDefault asks for the default card: no A2A version named by the client.
const VersionDefault = ""

// Render returns the form of the card an A2A client asks for, without signatures.
//
// Version10 and Version03 are the pure forms of that version, listing only the interfaces of
// that version: a client must not be sent to an endpoint that does not speak its protocol. A card
// without such an interface is fault.VersionNotSupported, naming the versions it declares.
//
// VersionDefault, for a client that names no version, is the 1.0 card with every declared
// interface; when one of them speaks 0.3 it is the hybrid card (see Hybrid), so that a 0.3
// client, which sends no version, can read it too.
func Render(c cards.Card, version string) (any, error) {
	full := FromCard(c)
	switch version {
	case VersionDefault:
		if len(full.interfacesOf(Version03)) > 0 {
			return full.Hybrid(), nil
		}
		return full, nil
	case Version10, Version03:
		own := full.interfacesOf(version)
		if len(own) == 0 {
			return nil, versionError(c.AgentID, version, full.Versions())
		}
		if version == Version03 {
			return full.ToV03(), nil
		}
		full.SupportedInterfaces = own
		return full, nil
	}
	return nil, fault.Errorf(fault.Invalid, "A2A version %q is not served; this service serves 1.0 and 0.3: invalid request", version)
}

// Preferred returns the form of the card to serve a client that prefers version v, as the
// A2A-Version header names it (major.minor): v's pure form when the card declares an interface of
// v, else the default card, the agent's own whatever the client speaks (a 0.3 agent's is the
// hybrid, which a2a-go and the Python SDK serve for such an agent to every client). An agent serves
// its card to any client, which reads from it the versions the agent speaks: refusing the card
// for a header would refuse a client the agent itself answers. No form lists an interface under
// a version it does not speak, so no client is sent to an endpoint in the wrong protocol.
func Preferred(c cards.Card, v string) string {
	if v == Version10 || v == Version03 {
		for _, i := range c.A2AInterfaces() {
			if versionOf(i.ProtocolVersion) == v {
				return v
			}
		}
	}
	return VersionDefault
}

// FormVersions lists the A2A versions a client reads the card's form as (Render): its version
// for a pure form; for the default card 1.0, and 0.3 too when it is the hybrid.
func FormVersions(c cards.Card, form string) []string {
	if form != VersionDefault {
		return []string{form}
	}
	for _, i := range c.A2AInterfaces() {
		if versionOf(i.ProtocolVersion) == Version03 {
			return []string{Version10, Version03}
		}
	}
	return []string{Version10}
}

// versionError is the answer to a form the card has no interface for. Like A2A's
// VersionNotSupportedError it says which versions there are, so the client can ask again.
func versionError(agentID, asked string, declared []string) error {
	has := "declares no A2A interface"
	if len(declared) > 0 {
		has = "declares A2A " + strings.Join(declared, " and ")
	}
	return fault.Errorf(fault.VersionNotSupported,
		"agent %q has no A2A %s interface: its card %s (ask for one of those, or for no version): version not supported",
		agentID, asked, has)
}

// Versions lists the A2A versions (major.minor) of the card's interfaces, each once, in the
// order the interfaces declare them.
func (a AgentCard) Versions() []string {
	var out []string
	for _, i := range a.SupportedInterfaces {
		if v := versionOf(i.ProtocolVersion); v != "" && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// interfacesOf returns the card's interfaces of version v, in order.
func (a AgentCard) interfacesOf(v string) []AgentInterface {
	var out []AgentInterface
	for _, i := range a.SupportedInterfaces {
		if versionOf(i.ProtocolVersion) == v {
			out = append(out, i)
		}
	}
	return out
}

// versionOf reads a protocolVersion as the A2A version it names (cards.A2AVersion, which
// delegation uses too); "" when it names none.
func versionOf(protocolVersion string) string {
	v, _ := cards.A2AVersion(protocolVersion)
	return v
}
