package a2a

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"

	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/cards/a2a/a2aschema"
)

// maxSchemaProblems is how many schema problems an invalid import lists.
const maxSchemaProblems = 5

// ParseCard reads an A2A Agent Card of version 1.0, or 0.3 (0.2-era cards included), checks
// it against the spec's schema and required fields, and returns its 1.0 form and the version it
// was written in. Members the version's schema does not describe are ignored (spec 1.0.1 §5.7)
// and left out of the result; the 0.3 members of a 1.0 card may add a 0.3 interface
// (legacyInterface). Problems are fault.Invalid and name their JSON paths.
func ParseCard(raw []byte) (AgentCard, string, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil || top == nil {
		return AgentCard{}, "", fault.New(fault.Invalid, "card: must be a JSON object: invalid")
	}
	if isV03(top) {
		_, kept, err := pruned(a2aschema.CardV03, raw)
		if err != nil {
			return AgentCard{}, "", err
		}
		a, err := parseV03(kept)
		return a, Version03, err
	}
	legacy, err := legacyInterface(top)
	if err != nil {
		return AgentCard{}, "", err
	}
	raw, top, err = pruned(a2aschema.CardV1, raw)
	if err != nil {
		return AgentCard{}, "", err
	}
	if err := schemaProblems(a2aschema.CardV1, raw); err != nil {
		return AgentCard{}, "", err
	}
	var a AgentCard
	if err := json.Unmarshal(raw, &a); err != nil {
		// The decoder's text names our Go types: the log has it, the client a message of ours.
		return AgentCard{}, "", fault.Wrap(err, fault.Invalid, "card: cannot be read as an A2A 1.0 card: invalid")
	}
	if p := requiredV1(top, a); len(p) > 0 {
		return AgentCard{}, "", fault.Errorf(fault.Invalid, "card is not a valid A2A 1.0 card: %s: invalid", strings.Join(p[:min(len(p), maxSchemaProblems)], "; "))
	}
	if legacy != nil && !listsV03(a.SupportedInterfaces, *legacy) {
		a.SupportedInterfaces = append(a.SupportedInterfaces, *legacy)
	}
	return a, Version10, nil
}

// pruned is raw without the members the schema at loc does not describe, and its members.
func pruned(loc string, raw []byte) ([]byte, map[string]json.RawMessage, error) {
	b, _, err := a2aschema.Prune(loc, raw)
	if err != nil {
		return nil, nil, err // raw was read as JSON above: the schemas did not load
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil {
		return nil, nil, err
	}
	return b, top, nil
}

// isV03 tells a 0.3 (or 0.2) card by the members 1.0 removed.
func isV03(top map[string]json.RawMessage) bool {
	if _, ok := top["supportedInterfaces"]; ok {
		return false
	}
	for _, k := range []string{"url", "protocolVersion", "preferredTransport", "additionalInterfaces", "security"} {
		if _, ok := top[k]; ok {
			return true
		}
	}
	return false
}

// parseV03 validates a 0.3 card and converts it with a2a-go's a2av0 parser. Two corrections
// first: a missing preferredTransport is JSONRPC (0.3's default, which a2av0 ignores, dropping
// the url), and a 0.2-era card without protocolVersion is checked as if it had one. After, the
// security requirements are rewritten in the spec's 1.0 form ({"list": [...]}), which a2a-go
// v2.3.1 writes as bare arrays.
func parseV03(top map[string]json.RawMessage) (AgentCard, error) {
	if _, ok := top["url"]; ok {
		if _, ok := top["preferredTransport"]; !ok {
			top["preferredTransport"] = json.RawMessage(`"` + DefaultProtocolBind + `"`)
		}
	}
	checked := top
	if _, ok := top["protocolVersion"]; !ok {
		checked = make(map[string]json.RawMessage, len(top)+1)
		for k, v := range top {
			checked[k] = v
		}
		checked["protocolVersion"] = json.RawMessage(`"0.2.0"`)
	}
	cb, err := json.Marshal(checked)
	if err != nil {
		return AgentCard{}, err
	}
	if err := schemaProblems(a2aschema.CardV03, cb); err != nil {
		return AgentCard{}, err
	}
	b, err := json.Marshal(top)
	if err != nil {
		return AgentCard{}, err
	}
	v1, err := a2av0.NewAgentCardParser()(b)
	if err == nil {
		b, err = json.Marshal(v1)
	}
	if err != nil {
		// a2a-go's text names its Go types: the log has it, the client a message of ours.
		return AgentCard{}, fault.Wrap(err, fault.Invalid, "card: cannot be converted from A2A 0.3 to 1.0: invalid")
	}
	var a AgentCard
	if err := json.Unmarshal(b, &a); err != nil {
		return AgentCard{}, err
	}
	restoreCapabilityFlags(top, &a.Capabilities)
	a.SecurityRequirements = requirementsV1(a.SecurityRequirements)
	for i := range a.Skills {
		a.Skills[i].SecurityRequirements = requirementsV1(a.Skills[i].SecurityRequirements)
	}
	return a, nil
}

// restoreCapabilityFlags copies the 0.3 card's streaming, pushNotifications and
// supportsAuthenticatedExtendedCard onto its 1.0 form when it states them. a2a-go v2.3.1 holds
// them as plain bools, so its conversion drops an explicit false, which the 1.0 proto keeps
// (the flags are optional) and a 1.0 import keeps; found by TestA2AImportV03Members.
func restoreCapabilityFlags(top map[string]json.RawMessage, c *AgentCapabilities) {
	var caps struct {
		Streaming         *bool `json:"streaming"`
		PushNotifications *bool `json:"pushNotifications"`
	}
	var extended *bool
	// The schema check passed, so these members have their types; a failure leaves the flags.
	_ = json.Unmarshal(top["capabilities"], &caps)
	_ = json.Unmarshal(top["supportsAuthenticatedExtendedCard"], &extended)
	if caps.Streaming != nil {
		c.Streaming = caps.Streaming
	}
	if caps.PushNotifications != nil {
		c.PushNotifications = caps.PushNotifications
	}
	if extended != nil {
		c.ExtendedAgentCard = extended
	}
}

// requirementsV1 rewrites [{"schemes": {"x": ["s"]}}] as [{"schemes": {"x": {"list": ["s"]}}}].
func requirementsV1(raw json.RawMessage) json.RawMessage {
	var in []struct {
		Schemes map[string][]string `json:"schemes"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &in) != nil {
		return raw
	}
	out := make([]any, 0, len(in))
	for _, r := range in {
		m := map[string]any{}
		for name, scopes := range r.Schemes {
			list := map[string]any{}
			if len(scopes) > 0 {
				list["list"] = scopes
			}
			m[name] = list
		}
		out = append(out, map[string]any{"schemes": m})
	}
	return mustJSON(out)
}

func schemaProblems(loc string, doc []byte) error {
	p, err := a2aschema.Validate(loc, doc, maxSchemaProblems)
	if err != nil {
		return err
	}
	if len(p) > 0 {
		return fault.Errorf(fault.Invalid, "card does not match the A2A schema: %s: invalid", strings.Join(p, "; "))
	}
	return nil
}

// requiredV1 checks what the 1.0 proto requires and its JSON Schema does not say.
func requiredV1(top map[string]json.RawMessage, a AgentCard) []string {
	var p []string
	for _, k := range []string{"name", "description", "version", "supportedInterfaces", "capabilities", "defaultInputModes", "defaultOutputModes", "skills"} {
		if _, ok := top[k]; !ok {
			p = append(p, "/"+k+": is required")
		}
	}
	if _, ok := top["supportedInterfaces"]; ok && len(a.SupportedInterfaces) == 0 {
		p = append(p, "/supportedInterfaces: must list at least one interface")
	}
	for i, f := range a.SupportedInterfaces {
		for name, v := range map[string]string{"url": f.URL, "protocolBinding": f.ProtocolBinding, "protocolVersion": f.ProtocolVersion} {
			if v == "" {
				p = append(p, fmt.Sprintf("/supportedInterfaces/%d/%s: is required", i, name))
			}
		}
	}
	for i, s := range a.Skills {
		for name, v := range map[string]string{"id": s.ID, "name": s.Name, "description": s.Description} {
			if v == "" {
				p = append(p, fmt.Sprintf("/skills/%d/%s: is required", i, name))
			}
		}
		if s.Tags == nil {
			p = append(p, fmt.Sprintf("/skills/%d/tags: is required", i))
		}
	}
	slices.Sort(p)
	return p
}
