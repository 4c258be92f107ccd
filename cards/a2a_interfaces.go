package cards

import (
	"encoding/json"
	"strconv"
	"strings"
)

// A2AInterface is an A2A interface a card declares: where its agent answers, in which protocol
// binding and protocol version (as written: "0.3.0" stays so), and for 1.0, under which tenant.
type A2AInterface struct {
	URL             string `json:"url"`
	ProtocolBinding string `json:"protocolBinding"`
	Tenant          string `json:"tenant,omitempty"`
	ProtocolVersion string `json:"protocolVersion"`
}

// A2AInterfaces lists the A2A interfaces the card declares, in its order: a2a.interfaces when the
// owner lists any, else one 1.0 JSON-RPC interface at its endpoint, else none. The endpoint is
// not added to a list that leaves it out: that would claim a version the owner never declared.
// Serving the card and delegating to it both read the interfaces here, so that a client is sent
// where a delegation would go, in the same version.
//
// Documents stored before interfaces were checked on write may hold an unreadable list, which
// counts as none, or entries in A2A 0.3's form ({url, transport}), which are read as 0.3
// interfaces of that binding.
func (c Card) A2AInterfaces() []A2AInterface {
	var list []struct {
		A2AInterface
		Transport string `json:"transport"`
	}
	if c.A2A != nil && len(c.A2A.Interfaces) > 0 {
		_ = json.Unmarshal(c.A2A.Interfaces, &list)
	}
	out := make([]A2AInterface, 0, max(len(list), 1))
	for _, d := range list {
		i := d.A2AInterface
		if i.ProtocolBinding == "" && d.Transport != "" {
			i.ProtocolBinding = d.Transport
			if i.ProtocolVersion == "" {
				i.ProtocolVersion = "0.3"
			}
		}
		out = append(out, i)
	}
	if len(out) == 0 && c.Endpoint != "" {
		out = append(out, A2AInterface{URL: c.Endpoint, ProtocolBinding: "JSONRPC", ProtocolVersion: "1.0"})
	}
	return out
}

// A2AVersion reads a protocolVersion as the A2A version it names, major.minor: "1.0", "1.0.1"
// and "v1.0" are 1.0, "0.3.0" is 0.3. A patch level, or whatever follows the second dot, does not
// change the protocol an interface speaks. ok is false unless the version starts with two
// dot-separated decimal numbers.
func A2AVersion(protocolVersion string) (version string, ok bool) {
	v := strings.TrimPrefix(strings.TrimSpace(protocolVersion), "v")
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return "", false
	}
	var nums [2]int
	for i, p := range parts[:2] {
		if p == "" || strings.TrimLeft(p, "0123456789") != "" {
			return "", false
		}
		n, err := strconv.Atoi(p)
		if err != nil {
			return "", false
		}
		nums[i] = n
	}
	return strconv.Itoa(nums[0]) + "." + strconv.Itoa(nums[1]), true
}
