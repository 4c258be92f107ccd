// Package api holds the inputs and outputs of the service's requests, as every door speaks them:
// the catalogue (web/catalog) names one input and one output type per request, the Go client
// (web/client) sends and returns them, the MCP tools and CLI commands take their fields, and the
// OpenAPI document describes them. It imports only the light domain packages, so a program that
// uses the client does not link the server.
//
// An input field's `in` tag says where REST carries it: "path" (a route parameter of the same
// name), "query" (a query parameter; a list repeats it), "header" (ifRevision is the If-Match
// header), "body" (the field's value is the whole body) or "view" (read by the door itself to
// shape its answer, never sent). Untagged fields are members of the JSON body. An `enum` tag
// lists the values a field takes, and `min` and `max` bound a number (the doors' schemas say so,
// and the Go client refuses other values before sending); `doc` describes it.
package api

import (
	"encoding/json"
	"time"

	"github.com/agentcards/agentcards/authz"
	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/aicatalog"
	"github.com/agentcards/agentcards/cards/follow"
	"github.com/agentcards/agentcards/cards/webhooks"
	"github.com/agentcards/agentcards/tenants"
	"github.com/agentcards/agentcards/tenants/audit"
)

// Scope names the tenant of a tenant's request. Left empty, a door fills in the tenant of the
// caller's token (the Go client: its Tenant option, or the token's tenant claim).
type Scope struct {
	Tenant string `json:"tenant,omitempty" in:"path" doc:"the tenant; the token's by default"`
}

// TenantOf returns the scope's tenant (the method lets a door find the scope of any input).
func (s *Scope) TenantOf() *string { return &s.Tenant }

// Scoped is an input with a Scope.
type Scoped interface{ TenantOf() *string }

// Empty is the output of a request that answers nothing (204 No Content).
type Empty struct{}

// Status is the answer of the service probes.
type Status struct {
	Status string `json:"status"`
}

// ---- tenants

// TenantsCreate creates a tenant.
type TenantsCreate struct {
	ID     string   `json:"id" doc:"the tenant's slug: [a-z0-9][a-z0-9-]{0,62}"`
	Name   string   `json:"name" doc:"its display name"`
	Admins []string `json:"admins,omitempty" doc:"subjects given the tenant's admin role"`
}

// TenantsList lists every tenant.
type TenantsList struct{}

// TenantRef names one tenant.
type TenantRef struct {
	Tenant string `json:"tenant" in:"path" doc:"the tenant's id"`
}

// TenantsUpdate renames, suspends or reactivates a tenant: the fields sent change.
type TenantsUpdate struct {
	Tenant string  `json:"tenant" in:"path" doc:"the tenant's id"`
	Name   *string `json:"name,omitempty" doc:"its new display name"`
	Status *string `json:"status,omitempty" doc:"active or suspended" enum:"active,suspended"`
	// RefuseOfflineDelegation is a tenant setting: see tenants.Tenant.
	RefuseOfflineDelegation *bool `json:"refuseOfflineDelegation,omitempty" doc:"refuse delegations to cards whose agent is offline (409 agent_offline) instead of sending them"`
	HideDelegationTasks     *bool `json:"hideDelegationTasks,omitempty" doc:"keep the tenant's delegation records without the task text (for sensitive tasks)"`
}

// TenantList is a list of tenants.
type TenantList struct {
	Items []tenants.Tenant `json:"items"`
	Total int              `json:"total"`
}

// ---- cards

// CardInput is a card as a client writes it: every field of cards.Card but those the server owns.
type CardInput struct {
	AgentID          string                  `json:"agentId" doc:"the agent's id, unique in the tenant"`
	Name             string                  `json:"name" doc:"the agent's name"`
	Description      string                  `json:"description,omitempty" doc:"what the agent does"`
	Version          string                  `json:"version,omitempty" doc:"free text"`
	Protocols        []string                `json:"protocols,omitempty" doc:"protocols it speaks: http, a2a, mcp, ..."`
	Capabilities     []cards.Capability      `json:"capabilities,omitempty" doc:"what it can be asked to do: [{name, title, description, inputSchema, outputSchema, tags, examples}]"`
	AuthRequirements *cards.AuthRequirements `json:"authRequirements,omitempty" doc:"{type, scopes}: how callers authenticate"`
	Endpoint         string                  `json:"endpoint,omitempty" doc:"the URL tasks are sent to"`
	Resources        []cards.Resource        `json:"resources,omitempty" doc:"[{uri, access}]: URIs (patterns) it acts on"`
	Tags             []string                `json:"tags,omitempty" doc:"labels it is found by"`
	Metadata         json.RawMessage         `json:"metadata,omitempty" doc:"any JSON object"`
	Visibility       string                  `json:"visibility,omitempty" doc:"private, tenant (the default) or public" enum:"private,tenant,public"`
	A2A              *cards.A2A              `json:"a2a,omitempty" doc:"what only the A2A Agent Card format has"`
	Status           string                  `json:"status,omitempty" doc:"active (the default), deprecated (flagged) or disabled (hidden, not delegated to)" enum:"active,deprecated,disabled"`
	Deprecation      *cards.Deprecation      `json:"deprecation,omitempty" doc:"{message, successor}: why, and the agentId to use instead"`
}

// CardsRegister registers an agent's card.
type CardsRegister struct {
	Scope
	CardInput
}

// CardsRegisterBatch registers up to 1,000 cards, all or none.
type CardsRegisterBatch struct {
	Scope
	Cards []CardInput `json:"cards" in:"body" doc:"the cards, at most 1,000"`
}

// CardsImport registers a card from an A2A Agent Card: exactly one of card and url.
type CardsImport struct {
	Scope
	AgentID               string          `json:"agentId" doc:"the id the card gets here"`
	Card                  json.RawMessage `json:"card,omitempty" doc:"the A2A Agent Card (1.0 or 0.3)"`
	URL                   string          `json:"url,omitempty" doc:"where to fetch the A2A Agent Card"`
	Keys                  json.RawMessage `json:"keys,omitempty" doc:"a JWK set that verifies the card's signatures"`
	AllowInvalidSignature bool            `json:"allowInvalidSignature,omitempty" doc:"store a card whose signature is invalid"`
	Visibility            string          `json:"visibility,omitempty" doc:"private, tenant (the default) or public" enum:"private,tenant,public"`
}

// CardsRefresh fetches a card's A2A card again from the URL it was imported from.
type CardsRefresh struct {
	Scope
	AgentID string          `json:"agentId" in:"path" doc:"the agent's id"`
	Keys    json.RawMessage `json:"keys,omitempty" doc:"a JWK set that verifies the card's signatures (as on import; not kept)"`
	// AllowInvalidSignature applies a card whose signature is invalid, as on import.
	AllowInvalidSignature bool `json:"allowInvalidSignature,omitempty" doc:"apply a card whose signature is invalid (one that loses a verified signature is still refused)"`
}

// CardsRefreshed is what a refresh did, and the card as it now is.
type CardsRefreshed struct {
	Card    cards.Card `json:"card"`
	Outcome string     `json:"outcome" doc:"updated (the card changed), unchanged, or refused (not applied: reason says why)"`
	Reason  string     `json:"reason,omitempty"`
}

// CardRef names one card.
type CardRef struct {
	Scope
	AgentID string `json:"agentId" in:"path" doc:"the agent's id"`
}

// CardsSearch searches a tenant's cards. Every filter given applies, and every value of a list.
type CardsSearch struct {
	Scope
	Protocol   []string `json:"protocol,omitempty" in:"query" doc:"protocols the card must speak (all; any case)"`
	Capability []string `json:"capability,omitempty" in:"query" doc:"capabilities it must have (all; exact names)"`
	Tag        []string `json:"tag,omitempty" in:"query" doc:"tags it must have (all; any case)"`
	Resource   []string `json:"resource,omitempty" in:"query" doc:"URIs the card's resources must cover"`
	Name       string   `json:"name,omitempty" in:"query" doc:"a substring of the name, any case"`
	Q          string   `json:"q,omitempty" in:"query" doc:"free text, ranked"`
	Limit      int      `json:"limit,omitempty" in:"query" doc:"page size, 20 by default" min:"1" max:"100"`
	Status     []string `json:"status,omitempty" in:"query" doc:"statuses to find (any); active, deprecated by default" enum:"active,deprecated,disabled"`
	Verified   *bool    `json:"verified,omitempty" in:"query" doc:"true: only cards whose signature verified; false: the others"`
	Trusted    *bool    `json:"trusted,omitempty" in:"query" doc:"true: only cards the trust policy vouches for; false: the others"`
	Online     *bool    `json:"online,omitempty" in:"query" doc:"true: only agents recently heard from; false: the others"`
	Explain    bool     `json:"explain,omitempty" in:"query" doc:"true: with q, why each result scored so"`
	Cursor     string   `json:"cursor,omitempty" in:"query" doc:"the previous page's nextCursor"`
	Fields     []string `json:"fields,omitempty" in:"view" doc:"instead of the compact fields: any card field, score, matchedCapabilities, matchedResources; card for all"`
}

// CardsReplace creates or replaces a card whole.
type CardsReplace struct {
	Scope
	CardInput
	IfRevision int64 `json:"ifRevision,omitempty" in:"header" doc:"replace only the card at this revision"`
}

// CardsUpdate changes the fields of a card that the patch sends.
type CardsUpdate struct {
	Scope
	AgentID    string          `json:"agentId" in:"path" doc:"the agent's id"`
	Patch      json.RawMessage `json:"patch" in:"body" doc:"a JSON merge patch (RFC 7396): the members sent change, null removes one"`
	IfRevision int64           `json:"ifRevision,omitempty" in:"header" doc:"change only the card at this revision"`
}

// CardsRemove removes a card.
type CardsRemove struct {
	Scope
	AgentID    string `json:"agentId" in:"path" doc:"the agent's id"`
	IfRevision int64  `json:"ifRevision,omitempty" in:"header" doc:"remove only the card at this revision"`
}

// CardsChanges reads the tenant's change feed: the changes of its cards since a cursor.
type CardsChanges struct {
	Scope
	Since string `json:"since,omitempty" in:"query" doc:"the nextCursor of the previous page; none answers the feed's present cursor and no change"`
	Limit int    `json:"limit,omitempty" in:"query" doc:"the most feed entries to read, 100 by default" min:"1" max:"1000"`
}

// SignatureHeader carries the service's signature of an answer's body where the answer is
// signed (a page of the change feed; webhooks.SignatureHeader, the same, signs deliveries): a JWS with a detached payload, "protected..signature"
// (RFC 7515 appendix F), over the body's exact bytes, made with a key of the service's JWKS
// (/.well-known/jwks.json) that its "kid" names.
const SignatureHeader = "Agentcards-Signature"

// WantSignatureHeader, sent with any value on a search (cards.search), asks the service to sign
// its answer as it signs a page of the change feed (SignatureHeader): a follower's listing of
// the cards is then checked as its changes are.
const WantSignatureHeader = "Agentcards-Want-Signature"

// ChangePage is one page of the change feed, in commit order, and the cursor to follow it from.
type ChangePage struct {
	Changes    []CardChange `json:"changes"`
	NextCursor string       `json:"nextCursor" doc:"the cursor to pass as since for the changes after these"`
	More       bool         `json:"more,omitempty" doc:"the page was full: more changes may be read at once; without it, ask again later"`
}

// CardChange is one change of a card: an upsert with the card as it is now (its revision is the
// change's or a later one), or a removal with the revision of the card removed.
type CardChange struct {
	Op       string      `json:"op" doc:"upsert or remove"`
	AgentID  string      `json:"agentId" doc:"the agent's id"`
	Revision int64       `json:"revision" doc:"the card's revision: an upsert's card's, or the removed card's"`
	Card     *cards.Card `json:"card,omitempty" doc:"an upsert's card, as cards.get answers it"`
}

// CardList is the cards a batch registered.
type CardList struct {
	Items []cards.Card `json:"items"`
	Total int          `json:"total"`
}

// SearchResult is one page of a search.
type SearchResult struct {
	Total      int    `json:"total" doc:"how many cards match"`
	Items      []Hit  `json:"items"`
	NextCursor string `json:"nextCursor,omitempty" doc:"the cursor of the next page; none on the last"`
}

// Hit is one card found, with why.
type Hit struct {
	Card                cards.Card   `json:"card"`
	Score               *float64     `json:"score,omitempty" doc:"the free-text score, with q"`
	MatchedCapabilities []string     `json:"matchedCapabilities,omitempty"`
	MatchedResources    []string     `json:"matchedResources,omitempty"`
	Explain             *Explanation `json:"explain,omitempty" doc:"why the card scored as it did, when asked for (explain)"`
}

// Explanation says why a card scored as it did for q: per word of q, what it weighs, which of
// the card's words matched it, where, and what it added; the adds sum to the score (to rounding).
type Explanation struct {
	Words         []WordScore `json:"words"`
	Length        int         `json:"length" doc:"the card's length: its words' weighted counts summed"`
	AverageLength float64     `json:"averageLength" doc:"the average length of the tenant's cards"`
	Similarity    *Similarity `json:"similarity,omitempty" doc:"the sentence encoder's part in the card's place, when the server re-ranks q searches (search.encoder) and the card was among the first matches"`
}

// Similarity is how a re-ranked card's place was worked out (see docs/search.md).
type Similarity struct {
	Cosine float64 `json:"cosine" doc:"the cosine of the sentence encoder's embeddings of q and of the card"`
	Weight float64 `json:"weight" doc:"the weight of the cosine (search.encoder.weight)"`
	Rank   float64 `json:"rank" doc:"the card's score over the first match's score, plus weight times the cosine: the re-ranked cards are in order of rank"`
}

// WordScore is one word of q in an Explanation.
type WordScore struct {
	Word    string   `json:"word" doc:"the query's word, or its phrase that is a synonym"`
	Weight  float64  `json:"weight" doc:"the share of the score the word can add (its BM25 weight over the query's total)"`
	Matched string   `json:"matched,omitempty" doc:"the card's word (its stem) or synonym that matched best; none when none did"`
	By      string   `json:"by,omitempty" doc:"how it matched" enum:"word,synonym,prefix"`
	Where   []string `json:"where,omitempty" doc:"the card's fields holding it: name, description, tags, capabilities[NAME].name, .title, .description, .tags, .examples"`
	Count   int      `json:"count,omitempty" doc:"its weighted count in the card"`
	Adds    float64  `json:"adds" doc:"what it added to the score: weight times how well the card matches it"`
}

// ---- secrets

// SecretsSet sets the static secret sent to a card's endpoint.
type SecretsSet struct {
	Scope
	AgentID string `json:"agentId" in:"path" doc:"the agent's id"`
	Secret  string `json:"secret" doc:"the secret; never returned"`
	Header  string `json:"header,omitempty" doc:"the header the secret goes in, as its whole value (X-Api-Key); without it, Authorization: Bearer"`
}

// ---- roles and policies

// RolesList lists the tenant's role assignments.
type RolesList struct{ Scope }

// RoleChange gives or takes a role.
type RoleChange struct {
	Scope
	Subject string `json:"subject" doc:"a user, or agent:{agentId}"`
	Role    string `json:"role" doc:"reader, editor, orchestrator, admin or a custom role"`
}

// RoleRevoke takes a role from a subject.
type RoleRevoke struct {
	Scope
	Subject string `json:"subject" in:"query" doc:"a user, or agent:{agentId}"`
	Role    string `json:"role" in:"query" doc:"the role"`
}

// RoleList is the tenant's role assignments.
type RoleList struct {
	Items []authz.Assignment `json:"items"`
	Total int                `json:"total"`
}

// PoliciesList lists the tenant's policies.
type PoliciesList struct{ Scope }

// PolicyAdd adds an allow or deny policy.
type PolicyAdd struct {
	Scope
	Subject string `json:"subject" doc:"a user, agent:{agentId}, or a role"`
	Object  string `json:"object" doc:"policies, audit, search, cards/{agentId}, cards/{agentId}/capabilities/{name} or delegations/{id}; * is any one segment"`
	Action  string `json:"action" doc:"cards:read, cards:write, cards:delete, cards:heartbeat, delegate, delegations:read, policies:manage, audit:read or search:manage"`
	Effect  string `json:"effect" doc:"allow or deny" enum:"allow,deny"`
}

// PolicyRemove removes a policy.
type PolicyRemove struct {
	Scope
	Subject string `json:"subject" in:"query" doc:"the policy's subject"`
	Object  string `json:"object" in:"query" doc:"the policy's object"`
	Action  string `json:"action" in:"query" doc:"the policy's action"`
	Effect  string `json:"effect" in:"query" doc:"the policy's effect" enum:"allow,deny"`
}

// PolicyList is the tenant's policies.
type PolicyList struct {
	Items []authz.Policy `json:"items"`
	Total int            `json:"total"`
}

// AccessCheck asks whether a subject may take an action on an object.
type AccessCheck struct {
	Scope
	Subject string `json:"subject,omitempty" doc:"the subject asked about; the caller by default"`
	Action  string `json:"action" doc:"the action, as cards:read or delegate"`
	Object  string `json:"object" doc:"the object, as cards/{agentId}"`
}

// ---- delegations

// DelegationsCreate delegates a task to an agent.
type DelegationsCreate struct {
	Scope
	AgentID    string          `json:"agentId" doc:"the agent the task goes to"`
	Capability string          `json:"capability" doc:"the capability of its card asked for"`
	Task       string          `json:"task" doc:"what to do"`
	Context    json.RawMessage `json:"context,omitempty" doc:"any JSON the agent gets with the task"`
	Mode       string          `json:"mode,omitempty" doc:"sync (the default: answers with the outcome) or async (answers at once; the agent reports later)" enum:"sync,async"`
	TimeoutMS  int64           `json:"timeoutMs,omitempty" doc:"how long the agent may take, in milliseconds: the server's default when none, and at most the server's limit" min:"0"`
	Transport  string          `json:"transport,omitempty" doc:"http or a2a; chosen from the card by default" enum:"http,a2a"`
}

// DelegationsList lists delegation records, newest first.
type DelegationsList struct {
	Scope
	Status  string `json:"status,omitempty" in:"query" doc:"pending, running, accepted, completed, failed, timeout or rejected" enum:"pending,running,accepted,completed,failed,timeout,rejected"`
	AgentID string `json:"agentId,omitempty" in:"query" doc:"only the delegations to this agent"`
	Limit   int    `json:"limit,omitempty" in:"query" doc:"the page size, 50 by default" min:"1" max:"200"`
	Cursor  string `json:"cursor,omitempty" in:"query" doc:"the nextCursor of the previous page"`
}

// DelegationRef names one delegation.
type DelegationRef struct {
	Scope
	ID string `json:"id" in:"path" doc:"the delegation's id"`
}

// DelegationsImport writes another registry's delegation records as the tenant's history, all
// or none; nothing is sent to any agent.
type DelegationsImport struct {
	Scope
	Source  string               `json:"source" doc:"the registry the records come from; each record keeps it as its imported" enum:"agentkit-mesh"`
	Records []ImportedDelegation `json:"records" doc:"1 to 1,000 records; one the tenant holds already (by id) is left as it is and listed as existing"`
}

// ImportedDelegation is one delegation as another registry recorded it.
type ImportedDelegation struct {
	ID        string          `json:"id" doc:"its id there, a UUID in lowercase, which the record keeps"`
	Caller    string          `json:"caller,omitempty" doc:"who delegated there, in its words (api, an agent's name); the record's caller is agentcards:import/ and this"`
	AgentID   string          `json:"agentId" doc:"the agent the task went to"`
	Mode      string          `json:"mode,omitempty" doc:"sync (the default) or async" enum:"sync,async"`
	Task      string          `json:"task,omitempty" doc:"the task, kept as a delegation's is (delegation.recordTaskBytes, hideDelegationTasks)"`
	Status    string          `json:"status" doc:"its status there; pending, running and accepted are recorded as timeout, with an error saying it was unfinished" enum:"pending,running,accepted,completed,failed,timeout,rejected"`
	Result    json.RawMessage `json:"result,omitempty" doc:"its result, any JSON (a string for agentkit-mesh's)"`
	Error     string          `json:"error,omitempty" doc:"its error (its first KiB is kept)"`
	LatencyMS int64           `json:"latencyMs,omitempty"`
	CreatedAt time.Time       `json:"createdAt"`
	UpdatedAt time.Time       `json:"updatedAt,omitzero" doc:"createdAt when absent"`
}

// DelegationsImported is what an import did.
type DelegationsImported struct {
	Imported []string `json:"imported" doc:"the ids of the records written"`
	Existing []string `json:"existing" doc:"the ids the tenant held already, whose records were left as they were"`
}

// DelegationsComplete is an agent's report of an async delegation's outcome.
type DelegationsComplete struct {
	Tenant string          `json:"tenant" in:"path"`
	ID     string          `json:"id" in:"path"`
	Token  string          `json:"token" in:"query" doc:"the delegation's token, from its callback URL"`
	Status string          `json:"status" doc:"completed or failed" enum:"completed,failed"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  string          `json:"error,omitempty"`
}

// Delegation is the record of one delegation.
type Delegation struct {
	ID         string          `json:"id"`
	Caller     string          `json:"caller"`
	AgentID    string          `json:"agentId"`
	Capability string          `json:"capability"`
	Mode       string          `json:"mode"`
	Transport  string          `json:"transport"`
	Depth      int             `json:"depth"`
	Status     string          `json:"status" doc:"pending, running, accepted, completed, failed, timeout or rejected"`
	Result     json.RawMessage `json:"result,omitempty"`
	Error      string          `json:"error,omitempty"`
	LatencyMS  int64           `json:"latencyMs"`
	CreatedAt  time.Time       `json:"createdAt"`
	UpdatedAt  time.Time       `json:"updatedAt"`
	Deadline   time.Time       `json:"deadline,omitzero"`
	A2A        *A2AInterface   `json:"a2a,omitempty"`
	// AgentLiveness is the card's liveness when the delegation was made.
	AgentLiveness string `json:"agentLiveness,omitempty" doc:"the card's liveness when the delegation was made: online, offline or unknown" enum:"online,offline,unknown"`
	Attempts      int    `json:"attempts,omitempty" doc:"for a rejected record, how many tries of the same refusal it stands for (absent: one)"`
	Task          string `json:"task,omitempty" doc:"the task as the caller sent it, its first delegation.recordTaskBytes bytes; absent for delegations refused before they were sent, when the server keeps none, or when the tenant hides its tasks"`
	TaskTruncated bool   `json:"taskTruncated,omitempty" doc:"the task was cut to delegation.recordTaskBytes"`
	Imported      string `json:"imported,omitempty" doc:"the registry the record was imported from (delegations.import); absent for the service's own" enum:"agentkit-mesh"`
}

// A2AInterface is the A2A interface a delegation was sent to.
type A2AInterface struct {
	ProtocolBinding string `json:"protocolBinding"`
	ProtocolVersion string `json:"protocolVersion"`
}

// DelegationList is one page of delegation records.
type DelegationList struct {
	Items      []Delegation `json:"items"`
	NextCursor string       `json:"nextCursor,omitempty"`
}

// ---- audit

// AuditList lists a tenant's audit trail, newest first.
type AuditList struct {
	Scope
	Principal string `json:"principal,omitempty" in:"query" doc:"who wrote (exact): a subject, agent:<id>, or agentcards:<job>"`
	Action    string `json:"action,omitempty" in:"query" doc:"the request's name (exact), as cards.update"`
	Object    string `json:"object,omitempty" in:"query" doc:"objects starting with this: cards/ for every card's, cards/<agentId> for one card's (its secret's too)"`
	Since     string `json:"since,omitempty" in:"query" doc:"entries written at or after this time (RFC 3339)"`
	Until     string `json:"until,omitempty" in:"query" doc:"entries written before this time (RFC 3339)"`
	Limit     int    `json:"limit,omitempty" in:"query" doc:"the page size, 50 by default" min:"1" max:"500"`
	Cursor    string `json:"cursor,omitempty" in:"query" doc:"the nextCursor of the previous page"`
}

// AuditPage is one page of the audit trail.
type AuditPage struct {
	Items      []audit.Entry `json:"items"`
	NextCursor string        `json:"nextCursor,omitempty"`
}

// ---- synonyms

// SynonymsList lists the tenant's search synonym sets.
type SynonymsList struct{ Scope }

// SynonymsPut creates a synonym set, or replaces the set of its id.
type SynonymsPut struct {
	Scope
	ID    string   `json:"id" in:"path" doc:"the set's id: [a-z0-9][a-z0-9_.-]{0,63}"`
	Words []string `json:"words" doc:"2 to 32 distinct words or phrases (case aside) that searches take as meaning the same, each up to 100 bytes"`
}

// SynonymsRemove removes a synonym set.
type SynonymsRemove struct {
	Scope
	ID string `json:"id" in:"path" doc:"the set's id"`
}

// SynonymList is the tenant's synonym sets, in id order.
type SynonymList struct {
	Items []tenants.SynonymSet `json:"items"`
	Total int                  `json:"total"`
}

// ---- trust

// TrustList lists the issuers of the tenant's trust policy.
type TrustList struct{ Scope }

// TrustRef names one issuer of the tenant's trust policy.
type TrustRef struct {
	Scope
	Domain string `json:"domain" in:"path" doc:"the issuer's domain: a host name, *. and a host name, or an IP address"`
}

// TrustPut creates the issuer of a domain, or replaces it.
type TrustPut struct {
	Scope
	Domain  string          `json:"domain" in:"path" doc:"the hosts the issuer speaks for: a host name (example.com), *. and a host name for its subdomains (*.example.com, not example.com itself), or an IP address"`
	JWKSURL string          `json:"jwksUrl,omitempty" doc:"where the issuer publishes its keys (a JWKS), fetched now and when cards are weighed; exactly one of jwksUrl and keys"`
	Keys    json.RawMessage `json:"keys,omitempty" doc:"a JWKS of public keys pinned in the policy; exactly one of jwksUrl and keys"`
}

// TrustPutted is what putting an issuer answers: the entry as stored, and what weighing the cards
// it covers again did.
type TrustPutted struct {
	Issuer tenants.TrustIssuer `json:"issuer"`
	Cards  cards.Reweighed     `json:"cards"`
}

// TrustRemoved is what removing an issuer answers: what weighing the cards it covered again did.
type TrustRemoved struct {
	Cards cards.Reweighed `json:"cards"`
}

// TrustIssuerList is the tenant's trust issuers, in domain order.
type TrustIssuerList struct {
	Items []tenants.TrustIssuer `json:"items"`
	Total int                   `json:"total"`
}

// ---- webhooks

// WebhooksCreate subscribes a URL to the tenant's card changes.
type WebhooksCreate struct {
	Scope
	URL      string   `json:"url" doc:"where each event is POSTed: an absolute http or https URL, up to 2048 bytes, at an address the outbound guard allows"`
	Types    []string `json:"types,omitempty" doc:"the event types delivered, agentcards.card.upserted and agentcards.card.removed; none: both"`
	AgentIDs []string `json:"agentIds,omitempty" doc:"globs (* and ? within an id) of the agents whose changes are delivered, up to 32; none: every agent"`
}

// SourcesCreate follows a registry: another agentcards tenant, an AI Catalog, or A2A card URLs.
type SourcesCreate struct {
	Scope
	Kind     string   `json:"kind" doc:"agentcards, ai-catalog or a2a-urls" enum:"agentcards,ai-catalog,a2a-urls"`
	URL      string   `json:"url,omitempty" doc:"agentcards: the tenant's URL, https://host/v1/tenants/{id}; ai-catalog: the catalog document's URL"`
	URLs     []string `json:"urls,omitempty" doc:"a2a-urls: the A2A card URLs, 1 to 1000"`
	Token    string   `json:"token,omitempty" doc:"agentcards: a token the source's service issued, with cards:read there; kept sealed, never answered"`
	Interval int      `json:"intervalSeconds,omitempty" doc:"ai-catalog, a2a-urls: how often to read the source again, 10 to 86400 seconds, 300 by default"`
}

// SourcesUpdate changes a source: the members sent.
type SourcesUpdate struct {
	Scope
	ID       string  `json:"id" in:"path" doc:"the source's id (src_...)"`
	Token    *string `json:"token,omitempty" doc:"agentcards: a new token, sent from the next sync on; \"\" for none"`
	Interval *int    `json:"intervalSeconds,omitempty" doc:"ai-catalog, a2a-urls: how often to read the source again, 10 to 86400 seconds"`
}

// SourcesList lists the tenant's sources.
type SourcesList struct{ Scope }

// SourceRef names one source.
type SourceRef struct {
	Scope
	ID string `json:"id" in:"path" doc:"the source's id (src_...)"`
}

// SourceList is the tenant's sources, oldest first, each with the state of its sync.
type SourceList struct {
	Items []follow.Source `json:"items"`
	Total int             `json:"total"`
}

// WebhooksList lists the tenant's webhook subscriptions.
type WebhooksList struct{ Scope }

// WebhookRef names one webhook subscription.
type WebhookRef struct {
	Scope
	ID string `json:"id" in:"path" doc:"the subscription's id (wh_...)"`
}

// WebhooksUpdate changes a webhook subscription: the members sent.
type WebhooksUpdate struct {
	Scope
	ID       string    `json:"id" in:"path" doc:"the subscription's id (wh_...)"`
	URL      *string   `json:"url,omitempty" doc:"a new URL"`
	Types    *[]string `json:"types,omitempty" doc:"new event types; [] for both"`
	AgentIDs *[]string `json:"agentIds,omitempty" doc:"new agent globs; [] for every agent"`
	State    *string   `json:"state,omitempty" doc:"active (resume, and retry at once) or disabled (pause)"`
}

// WebhooksDeliveries reads a subscription's delivery records.
type WebhooksDeliveries struct {
	Scope
	ID    string `json:"id" in:"path" doc:"the subscription's id (wh_...)"`
	Limit int    `json:"limit,omitempty" in:"query" doc:"the most records to answer, newest first; all that are kept by default" min:"1" max:"1000"`
}

// WebhookList is the tenant's webhook subscriptions, oldest first.
type WebhookList struct {
	Items []webhooks.Webhook `json:"items"`
	Total int                `json:"total"`
}

// DeliveryList is a subscription's delivery records, newest first.
type DeliveryList struct {
	Items []webhooks.Delivery `json:"items"`
	Total int                 `json:"total"`
}

// ---- A2A

// A2AAgents lists a tenant's public agents.
type A2AAgents struct {
	Scope
	Limit  int    `json:"limit,omitempty" in:"query" doc:"the page size, 20 by default" min:"1" max:"100"`
	Cursor string `json:"cursor,omitempty" in:"query" doc:"the nextCursor of the previous page"`
}

// AgentPage is one page of the public agent directory.
type AgentPage struct {
	Items      []AgentSummary `json:"items"`
	NextCursor string         `json:"nextCursor,omitempty"`
}

// AgentSummary is one public agent.
type AgentSummary struct {
	AgentID     string `json:"agentId"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	CardURL     string `json:"cardUrl" doc:"the path of its A2A card on this service"`
}

// A2ACard reads an agent's card in A2A form.
type A2ACard struct {
	Scope
	AgentID string `json:"agentId" in:"path" doc:"the agent's id"`
	Version string `json:"version,omitempty" in:"query" doc:"1.0 or 0.3: that form, refused when the agent declares no interface of it; absent: both (a 1.0 card that 0.3 readers also read)"`
}

// A2AAgentCard is an A2A Agent Card document, signed by the service.
type A2AAgentCard = json.RawMessage

// A2ACatalog reads a tenant's public agents as an AI Catalog document, a page at a time.
type A2ACatalog struct {
	Scope
	Limit  int    `json:"limit,omitempty" in:"query" doc:"the most cards the page lists, 100 by default; a page ends early past 1 MiB of cards" min:"1" max:"1000"`
	Cursor string `json:"cursor,omitempty" in:"query" doc:"the page's position, from the url of the previous page's last entry (the agent list's nextCursor works too)"`
}

// AICatalog is an AI Catalog document, signed by the service.
type AICatalog = aicatalog.Catalog

// KeysList lists the service's public keys.
type KeysList struct{}

// JWKS is a JSON Web Key Set.
type JWKS struct {
	Keys []json.RawMessage `json:"keys"`
}

// Probe is the input of the service probes.
type Probe struct{}

// OpenAPIInput is the input of the OpenAPI document's request.
type OpenAPIInput struct{}

// OpenAPI is the OpenAPI 3 document of the REST door.
type OpenAPI = json.RawMessage
