package a2a

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/agentcards/agentcards/cards"
)

// FromCard renders the card as an A2A 1.0 Agent Card, without signatures.
func FromCard(c cards.Card) AgentCard {
	a := c.A2A
	if a == nil {
		a = &cards.A2A{}
	}
	out := AgentCard{
		Name:               c.Name,
		Description:        orDefault(c.Description, c.Name),
		Version:            orDefault(c.Version, DefaultVersion),
		Provider:           a.Provider,
		DocumentationURL:   a.DocumentationURL,
		IconURL:            a.IconURL,
		DefaultInputModes:  modesOrDefault(a.DefaultInputModes),
		DefaultOutputModes: modesOrDefault(a.DefaultOutputModes),
		Capabilities: AgentCapabilities{
			Streaming: a.Streaming, PushNotifications: a.PushNotifications,
			ExtendedAgentCard: a.ExtendedAgentCard, Extensions: a.Extensions,
		},
		SupportedInterfaces: interfacesOf(c),
		Skills:              make([]AgentSkill, 0, len(c.Capabilities)),
	}
	if out.Provider != nil && *out.Provider == (cards.Provider{}) {
		out.Provider = nil
	}
	// The deprecation extension says what the card's status says, and only that: one stored
	// among the card's extensions (sent by a client, or imported) is not served.
	out.Capabilities.Extensions, _ = withoutDeprecation(out.Capabilities.Extensions)
	if c.Status == cards.StatusDeprecated {
		out.Capabilities.Extensions = withDeprecation(out.Capabilities.Extensions, c.Deprecation)
	}
	out.SecuritySchemes, out.SecurityRequirements = securityOf(c)
	for _, cp := range c.Capabilities {
		tags := cp.Tags
		if len(tags) == 0 {
			tags = c.Tags
		}
		if len(tags) == 0 {
			tags = []string{cp.Name}
		}
		out.Skills = append(out.Skills, AgentSkill{
			ID:                   cp.Name,
			Name:                 orDefault(cp.Title, cp.Name),
			Description:          orDefault(cp.Description, orDefault(cp.Title, cp.Name)),
			Tags:                 tags,
			Examples:             cp.Examples,
			InputModes:           cp.InputModes,
			OutputModes:          cp.OutputModes,
			SecurityRequirements: a.SkillSecurityRequirements[cp.Name],
		})
	}
	return out
}

// interfacesOf returns the interfaces the card declares (cards.Card.A2AInterfaces, which
// delegation reads too), with protocol versions as written.
func interfacesOf(c cards.Card) []AgentInterface {
	declared := c.A2AInterfaces()
	out := make([]AgentInterface, len(declared))
	for i, d := range declared {
		out[i] = AgentInterface(d) // the same fields
	}
	return out
}

// securityOf returns the card's security schemes and requirements: a2a.securitySchemes exactly
// when given, else derived from authRequirements.
func securityOf(c cards.Card) (schemes, reqs json.RawMessage) {
	if c.A2A != nil && len(c.A2A.SecuritySchemes) > 0 {
		return c.A2A.SecuritySchemes, c.A2A.SecurityRequirements
	}
	ar := c.AuthRequirements
	if ar == nil || ar.Type == cards.AuthNone {
		return nil, nil
	}
	var name string
	var scheme map[string]any
	switch ar.Type {
	case cards.AuthBearer:
		name = defaultBearerScheme
		scheme = map[string]any{"httpAuthSecurityScheme": map[string]any{"scheme": httpAuthBearerScheme}}
	case cards.AuthAPIKey:
		name = defaultAPIKeyScheme
		scheme = map[string]any{"apiKeySecurityScheme": map[string]any{"location": apiKeyLocationHeader, "name": DefaultAPIKeyHeader}}
	case cards.AuthOAuth2:
		name = defaultOAuth2Scheme
		body := map[string]any{}
		if len(ar.Flows) > 0 {
			body["flows"] = ar.Flows
		}
		scheme = map[string]any{"oauth2SecurityScheme": body}
	default:
		return nil, nil
	}
	list := map[string]any{}
	if len(ar.Scopes) > 0 {
		list["list"] = ar.Scopes
	}
	schemes = mustJSON(map[string]any{name: scheme})
	reqs = mustJSON([]any{map[string]any{"schemes": map[string]any{name: list}}})
	return schemes, reqs
}

// mustJSON marshals values built here from strings, maps and raw JSON already validated.
func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("a2a: marshal value: %v", err))
	}
	return b
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func modesOrDefault(m []string) []string {
	if len(m) == 0 {
		return []string{DefaultMode}
	}
	return m
}

// ToCard maps an A2A 1.0 card onto a registry card: capabilities from skills, endpoint from the
// first interface, protocols ["a2a"], authRequirements from the security schemes, and the rest
// into the a2a block, so that FromCard gives the same card back.
func ToCard(agentID string, a AgentCard) cards.Card {
	c := cards.Card{
		AgentID: agentID, Name: a.Name, Description: a.Description, Version: a.Version,
		Protocols: []string{"a2a"}, Capabilities: make([]cards.Capability, 0, len(a.Skills)),
		A2A: &cards.A2A{
			Provider: a.Provider, IconURL: a.IconURL, DocumentationURL: a.DocumentationURL,
			DefaultInputModes: a.DefaultInputModes, DefaultOutputModes: a.DefaultOutputModes,
			Streaming: a.Capabilities.Streaming, PushNotifications: a.Capabilities.PushNotifications,
			ExtendedAgentCard: a.Capabilities.ExtendedAgentCard, Extensions: cards.NonNull(a.Capabilities.Extensions),
			SecuritySchemes: cards.NonNull(a.SecuritySchemes), SecurityRequirements: cards.NonNull(a.SecurityRequirements),
		},
	}
	// A card that declares the deprecation extension (as agentcards serves a deprecated card's)
	// is read as deprecated.
	var dep *cards.Deprecation
	if c.A2A.Extensions, dep = withoutDeprecation(c.A2A.Extensions); dep != nil {
		c.Status = cards.StatusDeprecated
		if dep.Successor == agentID || cards.ValidateAgentID(dep.Successor) != nil {
			dep.Successor = "" // one that names no other agent of this registry says nothing here
		}
		if *dep != (cards.Deprecation{}) {
			c.Deprecation = dep
		}
	}
	if len(a.SupportedInterfaces) > 0 {
		c.Endpoint = a.SupportedInterfaces[0].URL
		c.A2A.Interfaces = mustJSON(a.SupportedInterfaces)
	}
	for _, s := range a.Skills {
		cp := cards.Capability{
			Name: s.ID, Description: s.Description, Tags: s.Tags, Examples: s.Examples,
			InputModes: s.InputModes, OutputModes: s.OutputModes,
		}
		if s.Name != s.ID {
			cp.Title = s.Name
		}
		c.Capabilities = append(c.Capabilities, cp)
		if r := cards.NonNull(s.SecurityRequirements); len(r) > 0 {
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
func authFromSecurity(schemes, reqs json.RawMessage, skillReqs bool) *cards.AuthRequirements {
	var listed []json.RawMessage
	if len(cards.NonNull(reqs)) == 0 || (json.Unmarshal(reqs, &listed) == nil && len(listed) == 0) {
		if skillReqs {
			return nil
		}
		return &cards.AuthRequirements{Type: cards.AuthNone}
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
				return &cards.AuthRequirements{Type: cards.AuthBearer, Scopes: scopes}
			}
		case "apiKeySecurityScheme":
			return &cards.AuthRequirements{Type: cards.AuthAPIKey, Scopes: scopes}
		case "oauth2SecurityScheme":
			var o struct {
				Flows json.RawMessage `json:"flows"`
			}
			_ = json.Unmarshal(body, &o)
			return &cards.AuthRequirements{Type: cards.AuthOAuth2, Scopes: scopes, Flows: cards.NonNull(o.Flows)}
		}
	}
	return nil
}

// DeprecationExtension is the URI of the extension a deprecated agent's A2A card declares: A2A
// has no status of its own, and an extension is how a card says more than the spec does. Its
// description is the deprecation's message, its params name the successor.
const DeprecationExtension = "https://agentcards.dev/extensions/deprecation/v1"

// defaultDeprecation is the extension's description when the deprecation gives no message.
const defaultDeprecation = "This agent is deprecated."

// withoutDeprecation returns a card's extensions without the deprecation extension, and that
// extension (its description and params) when there was one.
func withoutDeprecation(exts json.RawMessage) (json.RawMessage, *cards.Deprecation) {
	var list []json.RawMessage
	if json.Unmarshal(exts, &list) != nil || len(list) == 0 {
		return exts, nil
	}
	var found *cards.Deprecation
	list = slices.DeleteFunc(list, func(e json.RawMessage) bool {
		var ext struct {
			URI         string
			Description string
			Params      struct{ Successor string }
		}
		if json.Unmarshal(e, &ext) != nil || ext.URI != DeprecationExtension {
			return false
		}
		found = &cards.Deprecation{Successor: ext.Params.Successor}
		if ext.Description != defaultDeprecation {
			found.Message = ext.Description
		}
		return true
	})
	if found == nil {
		return exts, nil
	}
	if len(list) == 0 {
		return nil, found
	}
	return mustJSON(list), found
}

// withDeprecation adds the deprecation extension to a card's extensions.
func withDeprecation(exts json.RawMessage, d *cards.Deprecation) json.RawMessage {
	var list []json.RawMessage
	_ = json.Unmarshal(exts, &list) // the stored extensions are a list, or absent
	ext := map[string]any{"uri": DeprecationExtension, "required": false, "description": defaultDeprecation}
	if d != nil && d.Message != "" {
		ext["description"] = d.Message
	}
	if d != nil && d.Successor != "" {
		ext["params"] = map[string]string{"successor": d.Successor}
	}
	return mustJSON(append(list, mustJSON(ext)))
}
