package cards

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"

	"github.com/agentcards/agentcards/cards/a2aschema"
)

// Errors of imports; test them with errors.Is.
var (
	// ErrFetch: a card or key set could not be fetched from its URL.
	ErrFetch = errors.New("fetch failed")
	// ErrBadSignature: an imported card carries a signature that its key rejects.
	ErrBadSignature = errors.New("invalid signature")
)

// MaxImportBytes bounds a fetched card or key set.
const MaxImportBytes = 1 << 20

// maxSchemaProblems is how many schema problems an invalid import lists.
const maxSchemaProblems = 5

// Doer sends HTTP requests; the SSRF-guarded client of cards/outbound is the one the service uses.
type Doer interface {
	Do(*http.Request) (*http.Response, error)
}

// ParseA2ACard reads an A2A Agent Card of version 1.0, or 0.3 (0.2-era cards included), checks
// it against the spec's schema and required fields, and returns its 1.0 form and the version it
// was written in. Problems are ErrInvalid and name their JSON paths.
func ParseA2ACard(raw []byte) (AgentCard, string, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil || top == nil {
		return AgentCard{}, "", fmt.Errorf("card: must be a JSON object: %w", ErrInvalid)
	}
	if isV03(top) {
		a, err := parseV03(top)
		return a, A2AVersion03, err
	}
	if err := schemaProblems(a2aschema.CardV1, raw); err != nil {
		return AgentCard{}, "", err
	}
	var a AgentCard
	if err := json.Unmarshal(raw, &a); err != nil {
		return AgentCard{}, "", fmt.Errorf("card: %s: %w", err, ErrInvalid)
	}
	if p := requiredV1(top, a); len(p) > 0 {
		return AgentCard{}, "", fmt.Errorf("card is not a valid A2A 1.0 card: %s: %w", strings.Join(p[:min(len(p), maxSchemaProblems)], "; "), ErrInvalid)
	}
	return a, A2AVersion10, nil
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
	if err != nil {
		return AgentCard{}, fmt.Errorf("card: %s: %w", err, ErrInvalid)
	}
	b, err = json.Marshal(v1)
	if err != nil {
		return AgentCard{}, fmt.Errorf("card: %s: %w", err, ErrInvalid)
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
		return fmt.Errorf("card does not match the A2A schema: %s: %w", strings.Join(p, "; "), ErrInvalid)
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

// FromA2A maps an A2A 1.0 card onto a registry card: capabilities from skills, endpoint from the
// first interface, protocols ["a2a"], authRequirements from the security schemes, and the rest
// into the a2a block, so that ToA2A gives the same card back.
func FromA2A(agentID string, a AgentCard) Card {
	c := Card{
		AgentID: agentID, Name: a.Name, Description: a.Description, Version: a.Version,
		Protocols: []string{"a2a"}, Capabilities: make([]Capability, 0, len(a.Skills)),
		A2A: &A2A{
			Provider: a.Provider, IconURL: a.IconURL, DocumentationURL: a.DocumentationURL,
			DefaultInputModes: a.DefaultInputModes, DefaultOutputModes: a.DefaultOutputModes,
			Streaming: a.Capabilities.Streaming, PushNotifications: a.Capabilities.PushNotifications,
			ExtendedAgentCard: a.Capabilities.ExtendedAgentCard, Extensions: nonNull(a.Capabilities.Extensions),
			SecuritySchemes: nonNull(a.SecuritySchemes), SecurityRequirements: nonNull(a.SecurityRequirements),
		},
	}
	if len(a.SupportedInterfaces) > 0 {
		c.Endpoint = a.SupportedInterfaces[0].URL
		c.A2A.Interfaces = mustJSON(a.SupportedInterfaces)
	}
	for _, s := range a.Skills {
		cp := Capability{
			Name: s.ID, Description: s.Description, Tags: s.Tags, Examples: s.Examples,
			InputModes: s.InputModes, OutputModes: s.OutputModes,
		}
		if s.Name != s.ID {
			cp.Title = s.Name
		}
		c.Capabilities = append(c.Capabilities, cp)
		if r := nonNull(s.SecurityRequirements); len(r) > 0 {
			if c.A2A.SkillSecurityRequirements == nil {
				c.A2A.SkillSecurityRequirements = map[string]json.RawMessage{}
			}
			c.A2A.SkillSecurityRequirements[s.ID] = r
		}
	}
	c.AuthRequirements = authFromSecurity(c.A2A.SecuritySchemes, c.A2A.SecurityRequirements, len(c.A2A.SkillSecurityRequirements) > 0)
	return c
}

// authFromSecurity reads the first security requirement's first scheme (by name) as the card's
// authRequirements: HTTP Bearer is bearer, an API key is api-key, OAuth 2.0 with one flow is
// oauth2. No requirement declared, on the card or any skill, is none (schemes that no requirement
// names require nothing); a scheme it cannot express (OpenID Connect, mTLS, HTTP Basic), or
// requirements on skills only, leave authRequirements unset: the a2a block still has them whole.
func authFromSecurity(schemes, reqs json.RawMessage, skillReqs bool) *AuthRequirements {
	var listed []json.RawMessage
	if len(nonNull(reqs)) == 0 || (json.Unmarshal(reqs, &listed) == nil && len(listed) == 0) {
		if skillReqs {
			return nil
		}
		return &AuthRequirements{Type: AuthNone}
	}
	var named map[string]map[string]json.RawMessage
	var rs []struct {
		Schemes map[string]struct {
			List []string `json:"list"`
		} `json:"schemes"`
	}
	if json.Unmarshal(schemes, &named) != nil || json.Unmarshal(reqs, &rs) != nil || len(rs) == 0 || len(rs[0].Schemes) == 0 {
		return nil
	}
	names := make([]string, 0, len(rs[0].Schemes))
	for n := range rs[0].Schemes {
		names = append(names, n)
	}
	slices.Sort(names)
	scopes := rs[0].Schemes[names[0]].List
	for kind, body := range named[names[0]] {
		switch kind {
		case "httpAuthSecurityScheme":
			var h struct {
				Scheme string `json:"scheme"`
			}
			if json.Unmarshal(body, &h) == nil && strings.EqualFold(h.Scheme, "bearer") {
				return &AuthRequirements{Type: AuthBearer, Scopes: scopes}
			}
		case "apiKeySecurityScheme":
			return &AuthRequirements{Type: AuthAPIKey, Scopes: scopes}
		case "oauth2SecurityScheme":
			var o struct {
				Flows json.RawMessage `json:"flows"`
			}
			_ = json.Unmarshal(body, &o)
			return &AuthRequirements{Type: AuthOAuth2, Scopes: scopes, Flows: nonNull(o.Flows)}
		}
	}
	return nil
}

// readLimited reads at most limit bytes, failing beyond.
func readLimited(r io.Reader, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrFetch, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("the document is over %d bytes: %w", limit, ErrInvalid)
	}
	return bytes.TrimSpace(b), nil
}
