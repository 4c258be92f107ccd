// Package a2a maps capability cards to and from A2A Agent Cards (1.0, and 0.3 for clients that
// predate it), parses and checks imported cards, signs served cards and verifies the signatures of
// imported ones. Its Service is what the A2A routes do: import a card, return the card an A2A
// client asks for, and list a tenant's public agents.
package a2a

import (
	"encoding/json"

	"github.com/agentcards/agentcards/cards"
)

// The A2A versions the service serves and reads.
const (
	Version10 = "1.0"
	Version03 = "0.3"
)

// Defaults for what A2A 1.0 requires and a card may lack; docs/a2a.md lists them.
const (
	DefaultVersion       = "0.0.0"      // version of a card that has none
	DefaultProtocolBind  = "JSONRPC"    // binding of the interface made from endpoint
	DefaultAPIKeyHeader  = "X-API-Key"  // header of an api-key requirement
	DefaultMode          = "text/plain" // default input and output mode
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
	Provider             *cards.Provider      `json:"provider,omitempty"`
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
