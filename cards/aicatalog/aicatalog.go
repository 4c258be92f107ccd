// Package aicatalog is the AI Catalog document (https://ai-catalog.io, the draft the A2A project
// points to for listing several agents of a host) as agentcards serves a tenant's public cards:
// one entry per card, linking to its A2A Agent Card, and a nested-catalog entry linking to the
// next page. The document is signed as the draft signs a catalog: a detached JWS over the RFC
// 8785 (JCS) form of the document without signature.jws (and additionalSignatures, which the
// draft reserves).
package aicatalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"time"

	"github.com/gowebpki/jcs"

	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/tenants"
)

// The draft's names.
const (
	// SpecVersion is the version of the draft the documents follow.
	SpecVersion = "1.0"
	// MediaType is an AI Catalog document's media type, and the type of an entry that is a
	// nested catalog.
	MediaType = "application/ai-catalog+json"
	// TypeA2AAgentCard is the type of an entry that is an A2A Agent Card.
	TypeA2AAgentCard = "application/a2a-agent-card+json"
	// JWSType is the "typ" of a catalog signature's protected header.
	JWSType = "ai-catalog+jws"
)

// Profile names how a signature of ours is verified: with the key its protected header's "kid"
// names, from the JWKS at the signature's signer URL. The draft's one profile, did-web-v1,
// resolves the signer as a DID, which this service does not have; a profile the draft does not
// define is named by an absolute URI, here that of its description.
const Profile = "https://github.com/agentcards/agentcards/blob/main/docs/a2a.md#ai-catalog-signature-profile-v1"

// Validity is how long a catalog's signature holds (Signature.ExpiresAt): a copy replayed later,
// listing a card since withdrawn, no longer verifies as current.
const Validity = 24 * time.Hour

// Catalog is an AI Catalog document.
type Catalog struct {
	SpecVersion string         `json:"specVersion" doc:"the draft's version, 1.0"`
	Host        HostInfo       `json:"host" doc:"who publishes the catalog"`
	Entries     []CatalogEntry `json:"entries" doc:"the tenant's public cards in agentId order; when more remain, a last entry of type application/ai-catalog+json leads to the next page"`
	// Signature is absent on a server without signing keys.
	Signature *Signature `json:"signature,omitempty" doc:"the service's signature of the document: a detached JWS over its JCS form without signature.jws"`
}

// HostInfo is the publisher of a catalog.
type HostInfo struct {
	DisplayName string `json:"displayName" doc:"the tenant's id"`
	Identifier  string `json:"identifier,omitempty" doc:"the catalog's own URL"`
}

// CatalogEntry is one entry of a catalog, always by reference (url): agentcards serves no entry
// inline. It has no displayName: the draft leaves the name to the A2A card, which carries its own.
type CatalogEntry struct {
	Identifier  string    `json:"identifier" doc:"urn:agentcards:{tenant}:{agentId} for a card"`
	Type        string    `json:"type" doc:"application/a2a-agent-card+json, or application/ai-catalog+json for the next page"`
	URL         string    `json:"url" doc:"where the card's A2A Agent Card, or the next page, is served"`
	Version     string    `json:"version,omitempty" doc:"the card's version, when it has one"`
	Description string    `json:"description,omitempty" doc:"the card's description"`
	Tags        []string  `json:"tags,omitempty" doc:"the card's tags"`
	UpdatedAt   time.Time `json:"updatedAt,omitzero" doc:"when the card was last written"`
}

// Signature is a catalog's signature, in the draft's form.
type Signature struct {
	Signer    string    `json:"signer" doc:"the URL of the JWKS that holds the key its kid names"`
	Profile   string    `json:"profile" doc:"how to verify: this service's profile (docs/a2a.md), the key of the signer's JWKS the kid names"`
	IssuedAt  time.Time `json:"issuedAt" doc:"when it was signed"`
	ExpiresAt time.Time `json:"expiresAt" doc:"when it stops holding: a day after issuedAt"`
	JWS       string    `json:"jws" doc:"a JWS with a detached payload (protected..signature), protected header {alg, kid, typ: ai-catalog+jws}"`
}

// CardEntry is the entry of a card of tenant, whose A2A Agent Card is served at url.
func CardEntry(tenant tenants.ID, c cards.Card, url string) CatalogEntry {
	e := CatalogEntry{
		Identifier: CardIdentifier(tenant, c.AgentID), Type: TypeA2AAgentCard, URL: url,
		Version: c.Version, Description: c.Description, Tags: c.Tags,
	}
	if !c.UpdatedAt.IsZero() {
		e.UpdatedAt = c.UpdatedAt.UTC()
	}
	return e
}

// CardIdentifier is a card's identifier in its tenant's catalog: a URN that names the tenant and
// the agent, the same on every page and every replica, but not unique from one installation of
// the service to another.
func CardIdentifier(tenant tenants.ID, agentID string) string {
	return "urn:agentcards:" + string(tenant) + ":" + agentID
}

// NextEntry is the nested-catalog entry that leads to the page after cursor, served at url. Its
// identifier cannot be a card's: an agentId holds no colon.
func NextEntry(tenant tenants.ID, cursor, url string) CatalogEntry {
	return CatalogEntry{Identifier: "urn:agentcards:" + string(tenant) + ":ai-catalog:" + cursor, Type: MediaType, URL: url}
}

// Signer makes a JWS with a detached payload; token.ServiceKeys is one. It adds "alg" and "kid"
// to header.
type Signer interface {
	SignDetached(header map[string]any, payload []byte) (protected, signature string, err error)
}

// Sign sets c's signature: by signer, whose keys are published at keysURL, made at issuedAt
// (kept to the second), over Payload of the document with its signature but for the jws.
func Sign(signer Signer, c *Catalog, keysURL string, issuedAt time.Time) error {
	at := issuedAt.UTC().Truncate(time.Second)
	c.Signature = &Signature{Signer: keysURL, Profile: Profile, IssuedAt: at, ExpiresAt: at.Add(Validity)}
	doc, err := Marshal(*c)
	if err != nil {
		return err
	}
	payload, err := Payload(doc)
	if err != nil {
		return err
	}
	protected, sig, err := signer.SignDetached(map[string]any{"typ": JWSType}, payload)
	if err != nil {
		return err
	}
	c.Signature.JWS = protected + ".." + sig
	return nil
}

// Marshal returns the JSON of c, ended by a newline, with "<", ">" and "&" as themselves: the
// document is read by programs, not pasted into HTML, and its URLs' query strings stay legible.
func Marshal(c Catalog) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(c); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Payload is what a catalog's signature covers: the RFC 8785 (JCS) canonical form of the
// document doc without signature.jws and without additionalSignatures, the draft's reserved
// member. Every other member is kept, those this package does not know too, as the draft asks.
func Payload(doc []byte) ([]byte, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(doc, &top); err != nil {
		return nil, err
	}
	if top == nil {
		return nil, errors.New("the catalog is not a JSON object")
	}
	delete(top, "additionalSignatures")
	if raw, ok := top["signature"]; ok {
		var sig map[string]json.RawMessage
		if err := json.Unmarshal(raw, &sig); err != nil || sig == nil {
			return nil, errors.New("the catalog's signature is not a JSON object")
		}
		delete(sig, "jws")
		b, err := json.Marshal(sig)
		if err != nil {
			return nil, err
		}
		top["signature"] = b
	}
	b, err := json.Marshal(top)
	if err != nil {
		return nil, err
	}
	return jcs.Transform(b)
}
