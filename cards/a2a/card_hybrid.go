package a2a

import (
	"encoding/json"
)

// Hybrid returns the default card of an agent that has a 0.3 interface: the 1.0 card, with every
// declared interface, plus the members of its 0.3 form (ToV03) that 1.0 does not have:
// protocolVersion, url, preferredTransport, additionalInterfaces (when there are several 0.3
// interfaces), security, supportsAuthenticatedExtendedCard, each skill's security, and the
// OpenAPI-style fields of each security scheme next to its 1.0 one-of member. The reference
// Python SDK serves the same union, so that a 0.3 client, which asks for no version, reads its
// members and a 1.0 client reads the others, each ignoring what it does not know (spec 1.0.1
// §5.7). The 1.0 JSON Schema forbids unknown members, so it refuses the hybrid as a whole: that is
// deliberate, and each half validates once the other's members are removed.
func (a AgentCard) Hybrid() map[string]json.RawMessage {
	top := members(a)
	v03 := a.ToV03()
	old := members(v03)
	for _, k := range []string{"protocolVersion", "url", "preferredTransport", "security", "supportsAuthenticatedExtendedCard"} {
		if v, ok := old[k]; ok {
			top[k] = v
		}
	}
	if len(v03.AdditionalInterfaces) > 1 {
		top["additionalInterfaces"] = old["additionalInterfaces"]
	}
	var schemes map[string]map[string]json.RawMessage
	if len(v03.SecuritySchemes) > 0 && json.Unmarshal(top["securitySchemes"], &schemes) == nil {
		for name, s := range v03.SecuritySchemes {
			if schemes[name] != nil {
				mergeMembers(schemes[name], members(s))
			}
		}
		top["securitySchemes"] = mustJSON(schemes)
	}
	var skills []map[string]json.RawMessage
	if json.Unmarshal(top["skills"], &skills) == nil && len(skills) == len(v03.Skills) {
		for i, s := range v03.Skills {
			if len(s.Security) > 0 {
				skills[i]["security"] = mustJSON(s.Security)
			}
		}
		top["skills"] = mustJSON(skills)
	}
	return top
}

// members returns the top-level members of v's JSON object.
func members(v any) map[string]json.RawMessage {
	var out map[string]json.RawMessage
	if err := json.Unmarshal(mustJSON(v), &out); err != nil || out == nil {
		panic("a2a: a card form is not a JSON object")
	}
	return out
}

// mergeMembers adds to dst the members of src it does not have.
func mergeMembers(dst, src map[string]json.RawMessage) {
	for k, v := range src {
		if _, ok := dst[k]; !ok {
			dst[k] = v
		}
	}
}
