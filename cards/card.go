// Package cards holds the capability card, its validation and JSON handling, and the Service that
// registers, updates, fetches and removes cards inside a tenant. Searching them is cards/search;
// the A2A form of a card is cards/a2a.
package cards

import (
	"encoding/json"
	"time"

	"github.com/agentcards/agentcards/authz/fault"
)

// Errors of this package and of card stores; test them with errors.Is. Each is the kind of
// authz/fault it names, shared by every domain package: a card's ErrNotFound is a tenant's too.
var (
	ErrNotFound  = fault.NotFound
	ErrExists    = fault.Conflict
	ErrStale     = fault.Stale
	ErrInvalid   = fault.Invalid
	ErrMalformed = fault.Malformed
	ErrTooLarge  = fault.TooLarge
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

// Status says whether a card is in service. A card is active unless it says otherwise: the
// status is stored and served only when it is another.
type Status string

// The statuses. Deprecated: still found and delegated to, flagged, with a message and a successor
// if given; disabled: kept, but found only when asked for by status, and never delegated to.
const (
	StatusActive     Status = "active"
	StatusDeprecated Status = "deprecated"
	StatusDisabled   Status = "disabled"
)

// Deprecation says why a deprecated card is, and which agent replaces it.
type Deprecation struct {
	Message   string `json:"message,omitempty"`
	Successor string `json:"successor,omitempty"`
}

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
	// Status is absent (active), deprecated or disabled; Deprecation only with deprecated.
	Status      Status       `json:"status,omitempty" enum:"deprecated,disabled"`
	Deprecation *Deprecation `json:"deprecation,omitempty"`
	// Source is where the card's A2A card was imported from, kept across writes for refreshes.
	// The server owns it: it is ignored on input.
	Source *Source `json:"source,omitempty"`
	// Mirror marks a card copied from a registry the tenant follows (cards/follow): the card is
	// read-only here, written only by the sync of its source. The server owns it: it is ignored
	// on input.
	Mirror *Mirror `json:"mirror,omitempty"`
	// Liveness is served on reads (never stored, no revision): see Liveness.
	Liveness *Liveness `json:"liveness,omitempty"`

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
	// Flows are the OAuth 2.0 flows of an oauth2 requirement, in the A2A 1.0 OAuthFlows form
	// ({"clientCredentials": {"tokenUrl": ..., "scopes": {...}}}); the A2A card publishes them.
	Flows json.RawMessage `json:"flows,omitempty"`
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
	Provider           *Provider `json:"provider,omitempty"`
	IconURL            string    `json:"iconUrl,omitempty"`
	DocumentationURL   string    `json:"documentationUrl,omitempty"`
	DefaultInputModes  []string  `json:"defaultInputModes,omitempty"`
	DefaultOutputModes []string  `json:"defaultOutputModes,omitempty"`
	// Streaming, PushNotifications and ExtendedAgentCard are pointers because A2A 1.0 tracks
	// their presence: an explicit false is published, an absent one is not.
	Streaming            *bool           `json:"streaming,omitempty"`
	PushNotifications    *bool           `json:"pushNotifications,omitempty"`
	ExtendedAgentCard    *bool           `json:"extendedAgentCard,omitempty"`
	Extensions           json.RawMessage `json:"extensions,omitempty"`
	Interfaces           json.RawMessage `json:"interfaces,omitempty"`
	SecuritySchemes      json.RawMessage `json:"securitySchemes,omitempty"`
	SecurityRequirements json.RawMessage `json:"securityRequirements,omitempty"`
	// SkillSecurityRequirements holds a skill's own securityRequirements, by capability name.
	SkillSecurityRequirements map[string]json.RawMessage `json:"skillSecurityRequirements,omitempty"`
	// Import records where an imported card came from and what its signatures proved. The server
	// owns it: it is ignored on input and dropped by any later write, because it attests the
	// content as imported.
	Import *ImportRecord `json:"import,omitempty"`
}

// ImportRecord describes one import of an A2A card.
type ImportRecord struct {
	// Format is the A2A version of the card as received: "1.0" or "0.3".
	Format string `json:"format"`
	// URL is where the card was fetched from, when it was imported by URL.
	URL       string         `json:"url,omitempty"`
	Signature SignatureCheck `json:"signature"`
	// Trust says whether an issuer of the tenant's trust policy vouches for the card: whether a
	// signature verifies with a key the policy trusts for the hosts of the card's interfaces.
	// Absent on cards imported before trust was evaluated.
	Trust *TrustCheck `json:"trust,omitempty"`
	// Signed is the publisher's signed content, kept when the card carried signatures, so that
	// trust can be evaluated again when the policy changes and the publisher's signatures served.
	Signed *SignedCard `json:"signed,omitempty"`
}

// Vouched reports whether the record's signature verified, or the tenant's trust policy vouched
// for the card: what a refresh must not lose.
func (r ImportRecord) Vouched() bool {
	return r.Signature.Status == SignatureVerified || r.Trust != nil && r.Trust.Status == TrustTrusted
}

// SignedCard is an imported A2A card as its publisher signed it.
type SignedCard struct {
	// Card is the A2A card as received, without its "signatures" member: what they cover, once
	// canonicalized (RFC 8785).
	Card json.RawMessage `json:"card"`
	// Signatures are the card's signatures as received ({"protected", "signature", "header"}).
	Signatures json.RawMessage `json:"signatures"`
}

// TrustCheck is the outcome of weighing an imported card's signatures against the tenant's
// trust policy.
type TrustCheck struct {
	// Status is trusted or untrusted.
	Status string `json:"status" enum:"trusted,untrusted"`
	// Issuer is the domain of the policy's issuer entry that vouches for the card (trusted), or
	// the entry whose keys were tried (untrusted), if any.
	Issuer string `json:"issuer,omitempty"`
	// KeyID is the kid of the key whose signature vouches for the card.
	KeyID string `json:"kid,omitempty"`
	// Reason says why an untrusted card is not trusted.
	Reason string `json:"reason,omitempty"`
	// CheckedAt is when the policy was last weighed against the card.
	CheckedAt time.Time `json:"checkedAt"`
}

// Reweighed says what weighing a tenant's cards again against its changed trust policy did: how
// many cards imported with signatures the changed domain covers it weighed, how many of them it
// found trusted, and how many it recorded anew because their trust changed.
type Reweighed struct {
	Weighed int `json:"weighed"`
	Trusted int `json:"trusted"`
	Changed int `json:"changed"`
}

// The outcomes of a trust check.
const (
	TrustTrusted   = "trusted"
	TrustUntrusted = "untrusted"
)

// SignatureCheck is the outcome of verifying the signatures an imported card carried.
type SignatureCheck struct {
	// Status is verified, unverified (no key to check with, or no signature) or invalid.
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
	// KeyID and KeySource ("request" or "jku") say which key decided a verified or invalid result.
	KeyID     string `json:"kid,omitempty"`
	KeySource string `json:"keySource,omitempty"`
}

// The outcomes of a signature check.
const (
	SignatureVerified   = "verified"
	SignatureUnverified = "unverified"
	SignatureInvalid    = "invalid"
)

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
		"tags": true, "metadata": true, "visibility": true, "a2a": true, "status": true, "deprecation": true,
	}
	serverFields = map[string]bool{"id": true, "revision": true, "createdAt": true, "updatedAt": true, "source": true, "mirror": true, "liveness": true}
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
	if c.Status == StatusActive {
		c.Status = "" // active is the status of a card that names none: one form, stored and served
	}
	if c.Status != StatusDeprecated {
		c.Deprecation = nil // it goes with the status: a card no longer deprecated drops it
	}
}

// Source is the URL a card's A2A card was imported from, and what its last refresh found.
type Source struct {
	URL string `json:"url"`
	// Verified says whether the signature of the A2A card last applied verified, or the tenant's
	// trust policy vouched for it, when it was applied.
	Verified bool `json:"verified"`
	// RefreshedAt and Refresh are the last refresh's time and outcome.
	RefreshedAt *time.Time      `json:"refreshedAt,omitempty"`
	Refresh     *RefreshOutcome `json:"refresh,omitempty"`
}

// RefreshOutcome is what a refresh did: updated (the card changed), unchanged, or refused (the
// card fetched was not applied; Reason says why).
type RefreshOutcome struct {
	Outcome string `json:"outcome"`
	Reason  string `json:"reason,omitempty"`
}

// The outcomes of a refresh.
const (
	RefreshUpdated   = "updated"
	RefreshUnchanged = "unchanged"
	RefreshRefused   = "refused"
)

// Disabled reports whether the card is disabled: kept, but neither found by default nor
// delegated to.
func (c *Card) Disabled() bool { return c.Status == StatusDisabled }

// Verified reports whether the card is as imported from an A2A card whose signature verified
// (a later write drops the import record, and with it the claim).
func (c *Card) Verified() bool {
	return c.A2A != nil && c.A2A.Import != nil && c.A2A.Import.Signature.Status == SignatureVerified
}

// Trusted reports whether an issuer of the tenant's trust policy vouches for the card as imported
// (a later write of its content drops the import record, and with it the claim).
func (c *Card) Trusted() bool {
	return c.A2A != nil && c.A2A.Import != nil && c.A2A.Import.Trust != nil && c.A2A.Import.Trust.Status == TrustTrusted
}

// Liveness says whether a card's agent is answering: online when a heartbeat or a successful
// probe came within the liveness TTL (and no run of failed probes since), offline after that,
// unknown when neither ever happened. It is served with the card on reads, never stored in it,
// and moves no revision.
type Liveness struct {
	State LivenessState `json:"state" enum:"online,offline,unknown"`
	// LastSeenAt is the last heartbeat; Probe the last probe, when probes run.
	LastSeenAt *time.Time `json:"lastSeenAt,omitempty"`
	Probe      *Probe     `json:"probe,omitempty"`
}

// LivenessState is online, offline or unknown.
type LivenessState string

// The liveness states.
const (
	Online  LivenessState = "online"
	Offline LivenessState = "offline"
	Unknown LivenessState = "unknown"
)

// Probe is what the last health probe of a card's agent found.
type Probe struct {
	CheckedAt time.Time `json:"checkedAt"`
	OK        bool      `json:"ok"`
	// LatencyMs is the probe's round trip; Error why it failed.
	LatencyMs int64  `json:"latencyMs"`
	Error     string `json:"error,omitempty"`
	// Failures counts the failed probes in a row.
	Failures int `json:"failures,omitempty"`
}
