package cards

import (
	"encoding/json"
	"fmt"
)

// The A2A versions the service serves and reads.
const (
	A2AVersion10 = "1.0"
	A2AVersion03 = "0.3"
)

// Defaults for what A2A 1.0 requires and a card may lack; the README lists them.
const (
	DefaultA2AVersion    = "0.0.0"      // version of a card that has none
	DefaultProtocolBind  = "JSONRPC"    // binding of the interface made from endpoint
	DefaultAPIKeyHeader  = "X-API-Key"  // header of an api-key requirement
	DefaultA2AMode       = "text/plain" // default input and output mode
	defaultBearerScheme  = "bearer"
	defaultAPIKeyScheme  = "apiKey"
	defaultOAuth2Scheme  = "oauth2"
	httpAuthBearerScheme = "Bearer"
	apiKeyLocationHeader = "header"
)

// AgentCard is an A2A 1.0 Agent Card. Field presence follows the spec's proto: required fields are
// always written, optional ones only when set, so a verifier canonicalizes the bytes we signed.
// Security schemes and requirements stay raw JSON: their one-of shapes pass through unchanged.
type AgentCard struct {
	Name                 string               `json:"name"`
	Description          string               `json:"description"`
	SupportedInterfaces  []AgentInterface     `json:"supportedInterfaces"`
	Provider             *Provider            `json:"provider,omitempty"`
	Version              string               `json:"version"`
	DocumentationURL     string               `json:"documentationUrl,omitempty"`
	Capabilities         AgentCapabilities    `json:"capabilities"`
	SecuritySchemes      json.RawMessage      `json:"securitySchemes,omitempty"`
	SecurityRequirements json.RawMessage      `json:"securityRequirements,omitempty"`
	DefaultInputModes    []string             `json:"defaultInputModes"`
	DefaultOutputModes   []string             `json:"defaultOutputModes"`
	Skills               []AgentSkill         `json:"skills"`
	Signatures           []AgentCardSignature `json:"signatures,omitempty"`
	IconURL              string               `json:"iconUrl,omitempty"`
}

// AgentInterface is one URL and protocol binding an agent answers on.
type AgentInterface struct {
	URL             string `json:"url"`
	ProtocolBinding string `json:"protocolBinding"`
	Tenant          string `json:"tenant,omitempty"`
	ProtocolVersion string `json:"protocolVersion"`
}

// AgentCapabilities are the optional A2A features an agent supports.
type AgentCapabilities struct {
	Streaming         *bool           `json:"streaming,omitempty"`
	PushNotifications *bool           `json:"pushNotifications,omitempty"`
	Extensions        json.RawMessage `json:"extensions,omitempty"`
	ExtendedAgentCard *bool           `json:"extendedAgentCard,omitempty"`
}

// AgentSkill is one A2A skill; the registry's capabilities become skills.
type AgentSkill struct {
	ID                   string          `json:"id"`
	Name                 string          `json:"name"`
	Description          string          `json:"description"`
	Tags                 []string        `json:"tags"`
	Examples             []string        `json:"examples,omitempty"`
	InputModes           []string        `json:"inputModes,omitempty"`
	OutputModes          []string        `json:"outputModes,omitempty"`
	SecurityRequirements json.RawMessage `json:"securityRequirements,omitempty"`
}

// AgentCardSignature is one JWS over the card (spec 1.0 §8.4), in flattened form with a
// detached payload.
type AgentCardSignature struct {
	Protected string          `json:"protected"`
	Signature string          `json:"signature"`
	Header    json.RawMessage `json:"header,omitempty"`
}

// ToA2A renders the card as an A2A 1.0 Agent Card, without signatures.
func (c Card) ToA2A() AgentCard {
	a := c.A2A
	if a == nil {
		a = &A2A{}
	}
	out := AgentCard{
		Name:               c.Name,
		Description:        orDefault(c.Description, c.Name),
		Version:            orDefault(c.Version, DefaultA2AVersion),
		Provider:           a.Provider,
		DocumentationURL:   a.DocumentationURL,
		IconURL:            a.IconURL,
		DefaultInputModes:  modesOrDefault(a.DefaultInputModes),
		DefaultOutputModes: modesOrDefault(a.DefaultOutputModes),
		Capabilities: AgentCapabilities{
			Streaming: a.Streaming, PushNotifications: a.PushNotifications,
			ExtendedAgentCard: a.ExtendedAgentCard, Extensions: a.Extensions,
		},
		SupportedInterfaces: c.interfaces(),
		Skills:              make([]AgentSkill, 0, len(c.Capabilities)),
	}
	if out.Provider != nil && *out.Provider == (Provider{}) {
		out.Provider = nil
	}
	out.SecuritySchemes, out.SecurityRequirements = c.security()
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

// interfaces lists a2a.interfaces, preceded by one made from endpoint unless one of them already
// has the endpoint's URL. A stored a2a.interfaces was validated on write, so a decode error here
// means a document written before that check: its interfaces are left out rather than failing.
func (c Card) interfaces() []AgentInterface {
	var stored []AgentInterface
	if c.A2A != nil && len(c.A2A.Interfaces) > 0 {
		_ = json.Unmarshal(c.A2A.Interfaces, &stored)
	}
	out := make([]AgentInterface, 0, len(stored)+1)
	if c.Endpoint != "" {
		listed := false
		for _, i := range stored {
			listed = listed || i.URL == c.Endpoint
		}
		if !listed {
			out = append(out, AgentInterface{URL: c.Endpoint, ProtocolBinding: DefaultProtocolBind, ProtocolVersion: A2AVersion10})
		}
	}
	return append(out, stored...)
}

// security returns the card's security schemes and requirements: a2a.securitySchemes exactly
// when given, else derived from authRequirements.
func (c Card) security() (schemes, reqs json.RawMessage) {
	if c.A2A != nil && len(c.A2A.SecuritySchemes) > 0 {
		return c.A2A.SecuritySchemes, c.A2A.SecurityRequirements
	}
	ar := c.AuthRequirements
	if ar == nil || ar.Type == AuthNone {
		return nil, nil
	}
	var name string
	var scheme map[string]any
	switch ar.Type {
	case AuthBearer:
		name = defaultBearerScheme
		scheme = map[string]any{"httpAuthSecurityScheme": map[string]any{"scheme": httpAuthBearerScheme}}
	case AuthAPIKey:
		name = defaultAPIKeyScheme
		scheme = map[string]any{"apiKeySecurityScheme": map[string]any{"location": apiKeyLocationHeader, "name": DefaultAPIKeyHeader}}
	case AuthOAuth2:
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
		panic(fmt.Sprintf("cards: marshal A2A value: %v", err))
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
		return []string{DefaultA2AMode}
	}
	return m
}
