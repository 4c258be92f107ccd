package a2a

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/agentcards/agentcards/authz/fault"
)

// legacyInterface reads the 0.3 members of a 1.0 card: an SDK that serves both versions (the
// Python a2a-sdk 1.1, the "hybrid" card) adds url, preferredTransport and protocolVersion for the
// 0.3 clients that ask for no version. They describe a 0.3 interface when url is set and
// protocolVersion names 0.3 ("0.3" or "0.3.x"); preferredTransport is its binding, JSONRPC when
// absent (0.3's default). It returns nil when they describe none, and fault.Invalid when one of
// them is not a string: we read them, so we do not guess.
func legacyInterface(top map[string]json.RawMessage) (*AgentInterface, error) {
	var url, transport, version *string
	var problems []string
	for name, dst := range map[string]**string{"url": &url, "preferredTransport": &transport, "protocolVersion": &version} {
		if v, ok := top[name]; ok && json.Unmarshal(v, dst) != nil {
			problems = append(problems, fmt.Sprintf("/%s: must be a string", name))
		}
	}
	if len(problems) > 0 {
		slices.Sort(problems)
		return nil, fault.Errorf(fault.Invalid, "card does not match the A2A schema: %s: invalid", strings.Join(problems, "; "))
	}
	if url == nil || *url == "" || version == nil || !isV03Version(*version) {
		return nil, nil
	}
	i := &AgentInterface{URL: *url, ProtocolBinding: DefaultProtocolBind, ProtocolVersion: *version}
	if transport != nil && *transport != "" {
		i.ProtocolBinding = *transport
	}
	return i, nil
}

// isV03Version tells a 0.3 protocol version, however written ("0.3", "0.3.0"), as serving and
// delegation read it.
func isV03Version(v string) bool {
	return versionOf(v) == Version03
}

// listsV03 tells whether ifaces already list the 0.3 interface i: the same URL and binding, and a
// 0.3 version however written.
func listsV03(ifaces []AgentInterface, i AgentInterface) bool {
	return slices.ContainsFunc(ifaces, func(o AgentInterface) bool {
		return o.URL == i.URL && strings.EqualFold(o.ProtocolBinding, i.ProtocolBinding) && isV03Version(o.ProtocolVersion)
	})
}
