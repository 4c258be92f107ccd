// Package cards holds the capability card, its validation and JSON handling, and the Service that
// registers, updates, fetches, lists and removes cards inside a tenant.
package cards

import (
	"encoding/json"
	"errors"
	"time"
)

// Errors of this package and of card stores; test them with errors.Is.
var (
	ErrNotFound  = errors.New("not found")
	ErrExists    = errors.New("already exists")
	ErrStale     = errors.New("revision does not match")
	ErrInvalid   = errors.New("invalid")
	ErrMalformed = errors.New("malformed JSON")
	ErrTooLarge  = errors.New("card is too large")
)

// Limits on one card document.
const (
	MaxDocumentBytes = 256 << 10
	MaxCapabilities  = 256
	MaxTags          = 64
)

// Visibility says who may read a card.
type Visibility string

// The visibilities. Private: tenant members with read permission; tenant (the default): the same
// over REST; public: its A2A card is also readable without a token.
const (
	VisibilityPrivate Visibility = "private"
	VisibilityTenant  Visibility = "tenant"
	VisibilityPublic  Visibility = "public"
)

// Card describes one agent: what it can do, which protocols it speaks, how to call it.
type Card struct {
	AgentID          string            `json:"agentId"`
	Name             string            `json:"name"`
	Description      string            `json:"description,omitempty"`
	Version          string            `json:"version,omitempty"`
	Protocols        []string          `json:"protocols"`
	Capabilities     []Capability      `json:"capabilities"`
	AuthRequirements *AuthRequirements `json:"authRequirements,omitempty"`
	Endpoint         string            `json:"endpoint,omitempty"`
	Resources        []Resource        `json:"resources"`
	Tags             []string          `json:"tags"`
	Metadata         json.RawMessage   `json:"metadata,omitempty"`
	Visibility       Visibility        `json:"visibility"`
	A2A              *A2A              `json:"a2a,omitempty"`

	// Server-owned: ignored on input.
	ID        string    `json:"id"`
	Revision  int64     `json:"revision"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// Capability is one thing an agent can be asked to do.
type Capability struct {
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema,omitempty"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Tags         []string        `json:"tags,omitempty"`
	Examples     []string        `json:"examples,omitempty"`
	InputModes   []string        `json:"inputModes,omitempty"`
	OutputModes  []string        `json:"outputModes,omitempty"`
}

// AuthRequirements says how callers authenticate to the agent's endpoint.
type AuthRequirements struct {
	Type   string   `json:"type"`
	Scopes []string `json:"scopes,omitempty"`
}

// The authentication types a card may require.
const (
	AuthBearer = "bearer"
	AuthOAuth2 = "oauth2"
	AuthAPIKey = "api-key"
	AuthNone   = "none"
)

// Resource is a URI (pattern) the agent acts on.
type Resource struct {
	URI    string `json:"uri"`
	Access string `json:"access,omitempty"`
}

// A2A holds what only the A2A Agent Card format has, so an imported card is served back whole.
type A2A struct {
	Provider             *Provider       `json:"provider,omitempty"`
	IconURL              string          `json:"iconUrl,omitempty"`
	DocumentationURL     string          `json:"documentationUrl,omitempty"`
	DefaultInputModes    []string        `json:"defaultInputModes,omitempty"`
	DefaultOutputModes   []string        `json:"defaultOutputModes,omitempty"`
	Streaming            bool            `json:"streaming,omitempty"`
	PushNotifications    bool            `json:"pushNotifications,omitempty"`
	Extensions           json.RawMessage `json:"extensions,omitempty"`
	Interfaces           json.RawMessage `json:"interfaces,omitempty"`
	SecuritySchemes      json.RawMessage `json:"securitySchemes,omitempty"`
	SecurityRequirements json.RawMessage `json:"securityRequirements,omitempty"`
}

// Provider is the organisation behind an agent.
type Provider struct {
	Organization string `json:"organization,omitempty"`
	URL          string `json:"url,omitempty"`
}

// clientFields are the top-level fields a client may send; serverFields are accepted and ignored.
var (
	clientFields = map[string]bool{
		"agentId": true, "name": true, "description": true, "version": true, "protocols": true,
		"capabilities": true, "authRequirements": true, "endpoint": true, "resources": true,
		"tags": true, "metadata": true, "visibility": true, "a2a": true,
	}
	serverFields = map[string]bool{"id": true, "revision": true, "createdAt": true, "updatedAt": true}
)

// normalize fills defaults so every stored card has the same shape: empty lists, not null.
func (c *Card) normalize() {
	if c.Protocols == nil {
		c.Protocols = []string{}
	}
	if c.Capabilities == nil {
		c.Capabilities = []Capability{}
	}
	if c.Resources == nil {
		c.Resources = []Resource{}
	}
	if c.Tags == nil {
		c.Tags = []string{}
	}
	if c.Visibility == "" {
		c.Visibility = VisibilityTenant
	}
}
