// Package catalog is the one list of the service's requests. Each request has one dotted name
// (cards.search), written the same way on every door: the REST route, the MCP tool (cards_search),
// the CLI command (agentcards cards search) and the Go client method (Cards.Search). The list says
// who may call each request and which doors serve it; a door that leaves a request out says why.
// The doors are derived from it: web registers its REST routes from Requests, and a test fails
// when a route and the catalogue disagree.
package catalog

import (
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"time"

	"github.com/agentcards/agentcards/authz"
	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/follow"
	"github.com/agentcards/agentcards/cards/webhooks"
	"github.com/agentcards/agentcards/tenants"
	"github.com/agentcards/agentcards/web/api"
)

// Door is a way requests reach the service.
type Door uint8

// The doors.
const (
	REST Door = 1 << iota
	MCP
	CLI
	GoClient

	// Every door.
	Every = REST | MCP | CLI | GoClient
)

// Access is how a REST route authenticates its caller.
type Access int

// The ways a REST route authenticates.
const (
	// Open routes take no token.
	Open Access = iota
	// Token routes need a user's bearer token, or a delegation token (the services decide what
	// it opens).
	Token
	// OptionalToken routes are open; a token, when sent, lets its holder read non-public cards.
	OptionalToken
	// ResultToken routes are an agent's: the delegation's own token, in the query, admits it.
	ResultToken
)

// Route is a REST route of a request: its method, path (Echo's syntax: :name is a parameter,
// "\:" a colon) and the query parameters it takes; any other is refused.
type Route struct {
	Method, Path string
	Query        []string
}

// Request is one request of the service.
type Request struct {
	// Name is the request's dotted name: a resource and a verb, lowercase, words joined by _.
	Name string
	// Does says what the request does, in a line.
	Does string
	// Caller says who may call it.
	Caller string
	// Access is how its REST routes authenticate.
	Access Access
	// Routes are its REST routes; the first is the main one.
	Routes []Route
	// In and Out are its input and output (package web/api says how an input's fields travel
	// on REST). Every door takes In's fields under their JSON names and answers Out.
	In, Out reflect.Type
	// Doors are the doors that serve it; NotOn says why the others do not.
	Doors Door
	NotOn string
	// OpenWorld marks a request that reaches outside the service (an agent, a URL given).
	OpenWorld bool
	// FromMemory marks a read that memory may answer while the database does not (docs/storage.md,
	// "Reads during a database outage"): its REST routes let the tenant gate pass on the row as
	// last read. Any other request is refused at once once the database is found down.
	FromMemory bool
	// FlatErrors marks a request of a registry's compatible door: it answers errors as that
	// registry did, {"error": message}, with the code and requestId beside the message.
	FlatErrors bool
}

func typeOf[T any]() reflect.Type { return reflect.TypeFor[T]() }

// ReadOnly reports whether the request changes nothing: its main route is a GET, or it is a
// question (cards.search's POST form, access.check).
func (r Request) ReadOnly() bool {
	return r.Routes[0].Method == http.MethodGet || r.Name == "access.check"
}

// Idempotent reports whether sending the request twice does what sending it once does: reads,
// and PUT and DELETE writes.
func (r Request) Idempotent() bool {
	m := r.Routes[0].Method
	return r.ReadOnly() || m == http.MethodPut || m == http.MethodDelete
}

// Destructive reports whether the request may remove or overwrite what is stored.
func (r Request) Destructive() bool {
	m := r.Routes[0].Method
	return m == http.MethodDelete || m == http.MethodPut || m == http.MethodPatch
}

// MCPTool is the request's MCP tool name: the dotted name with _ for the dots.
func (r Request) MCPTool() string { return strings.ReplaceAll(r.Name, ".", "_") }

// Command is the request's CLI command: agentcards, then the name's parts, words joined by -.
func (r Request) Command() string {
	return "agentcards " + strings.ReplaceAll(strings.ReplaceAll(r.Name, ".", " "), "_", "-")
}

// GoMethod is the request's Go client method: the name's parts in CamelCase, as Cards.Search.
func (r Request) GoMethod() string {
	parts := strings.Split(r.Name, ".")
	for i, p := range parts {
		words := strings.Split(p, "_")
		for j, w := range words {
			switch {
			case w == "a2a" || w == "id":
				words[j] = strings.ToUpper(w)
			case w != "":
				words[j] = strings.ToUpper(w[:1]) + w[1:]
			}
		}
		parts[i] = strings.Join(words, "")
	}
	return strings.Join(parts, ".")
}

// Lookup returns the request of that name.
func Lookup(name string) (Request, bool) {
	for _, r := range Requests {
		if r.Name == name {
			return r, true
		}
	}
	return Request{}, false
}

// SearchQuery are the query parameters of the card search's GET route.
var SearchQuery = []string{"capability", "cursor", "explain", "limit", "name", "online", "protocol", "q", "resource", "status", "tag", "trusted", "verified"}

// AuditQuery are the query parameters of the audit trail.
var AuditQuery = []string{"principal", "action", "object", "since", "until", "limit", "cursor"}

// DelegationListQuery are the query parameters of the delegation list.
var DelegationListQuery = []string{"status", "agentId", "limit", "cursor"}

const (
	tenantPath = "/v1/tenants/:tenant"
	probeOnly  = "a probe for load balancers and process supervisors, not a user's request"
	// JWKSPath is where the public keys that verify the service's signatures are served.
	JWKSPath = "/.well-known/jwks.json"
	// MeshBase is the base URL of agentkit-mesh's control plane for a tenant.
	MeshBase = "/compat/agentkit-mesh/:tenant"
	meshOnly = "agentkit-mesh's HTTP control plane, for that registry's clients; the other doors have the cards.* and " +
		"delegations.* requests it maps to (and MCP agentkit-mesh's own tool names)"
)

// Requests is every request of the service, in the order of the table in docs/api.md.
var Requests = []Request{
	{Name: "tenants.create", In: typeOf[api.TenantsCreate](), Out: typeOf[tenants.Tenant](), Does: "Create a tenant with its admins and built-in roles", Caller: "platform admin",
		Access: Token, Routes: []Route{{Method: "POST", Path: "/v1/tenants"}}, Doors: Every},
	{Name: "tenants.list", In: typeOf[api.TenantsList](), Out: typeOf[api.TenantList](), Does: "List the tenants", Caller: "platform admin",
		Access: Token, Routes: []Route{{Method: "GET", Path: "/v1/tenants"}}, Doors: Every},
	{Name: "tenants.get", In: typeOf[api.TenantRef](), Out: typeOf[tenants.Tenant](), Does: "Read one tenant", Caller: "platform admin",
		Access: Token, Routes: []Route{{Method: "GET", Path: tenantPath}}, Doors: Every},
	{Name: "tenants.update", In: typeOf[api.TenantsUpdate](), Out: typeOf[tenants.Tenant](), Does: "Rename, suspend or reactivate a tenant", Caller: "platform admin",
		Access: Token, Routes: []Route{{Method: "PATCH", Path: tenantPath}}, Doors: Every},
	{Name: "tenants.delete", In: typeOf[api.TenantRef](), Out: typeOf[api.Empty](), Does: "Delete a tenant and everything it holds", Caller: "platform admin",
		Access: Token, Routes: []Route{{Method: "DELETE", Path: tenantPath}}, Doors: Every},

	{Name: "cards.register", In: typeOf[api.CardsRegister](), Out: typeOf[cards.Card](), Does: "Register an agent's card", Caller: "cards:write",
		Access: Token, Routes: []Route{{Method: "POST", Path: tenantPath + "/cards"}}, Doors: Every},
	{Name: "cards.register_batch", In: typeOf[api.CardsRegisterBatch](), Out: typeOf[api.CardList](), Does: "Register up to 1,000 cards, all or none", Caller: "cards:write on each",
		Access: Token, Routes: []Route{{Method: "POST", Path: tenantPath + `/cards\:batch`}}, Doors: Every},
	{Name: "cards.import", In: typeOf[api.CardsImport](), Out: typeOf[cards.Card](), Does: "Register a card from an A2A Agent Card, given or fetched", Caller: "cards:write", OpenWorld: true,
		Access: Token, Routes: []Route{{Method: "POST", Path: tenantPath + "/cards/import"}}, Doors: Every},
	{Name: "cards.refresh", In: typeOf[api.CardsRefresh](), Out: typeOf[api.CardsRefreshed](), Does: "Fetch a card's A2A card again from where it was imported, and apply it if it changed", Caller: "cards:write", OpenWorld: true,
		Access: Token, Routes: []Route{{Method: "POST", Path: tenantPath + "/cards/:agentId/refresh"}}, Doors: Every},
	{Name: "cards.get", FromMemory: true, In: typeOf[api.CardRef](), Out: typeOf[cards.Card](), Does: "Read one card", Caller: "cards:read",
		Access: Token, Routes: []Route{{Method: "GET", Path: tenantPath + "/cards/:agentId"}}, Doors: Every},
	{Name: "cards.heartbeat", In: typeOf[api.CardRef](), Out: typeOf[cards.Liveness](), Does: "Report that a card's agent is alive (no revision, no change-feed entry)", Caller: "cards:heartbeat, or the agent with its delegation token",
		Access: Token, Routes: []Route{{Method: "POST", Path: tenantPath + "/cards/:agentId/heartbeat"}}, Doors: Every},
	{Name: "cards.search", FromMemory: true, In: typeOf[api.CardsSearch](), Out: typeOf[api.SearchResult](), Does: "Search cards by protocol, capability, tag, name, resource and text", Caller: "cards:read",
		Access: Token, Routes: []Route{
			{Method: "GET", Path: tenantPath + "/cards", Query: SearchQuery},
			{Method: "POST", Path: tenantPath + "/cards/search"},
		}, Doors: Every},
	{Name: "cards.changes", In: typeOf[api.CardsChanges](), Out: typeOf[api.ChangePage](), Does: "Follow the changes of the tenant's cards, in commit order, from a cursor", Caller: "cards:read",
		Access: Token, Routes: []Route{{Method: "GET", Path: tenantPath + `/cards\:changes`, Query: []string{"since", "limit"}}}, Doors: Every},
	{Name: "cards.replace", In: typeOf[api.CardsReplace](), Out: typeOf[cards.Card](), Does: "Create or replace a card whole", Caller: "cards:write",
		Access: Token, Routes: []Route{{Method: "PUT", Path: tenantPath + "/cards/:agentId"}}, Doors: Every},
	{Name: "cards.update", In: typeOf[api.CardsUpdate](), Out: typeOf[cards.Card](), Does: "Change the fields of a card sent (JSON merge patch)", Caller: "cards:write",
		Access: Token, Routes: []Route{{Method: "PATCH", Path: tenantPath + "/cards/:agentId"}}, Doors: Every},
	{Name: "cards.remove", In: typeOf[api.CardsRemove](), Out: typeOf[api.Empty](), Does: "Remove a card", Caller: "cards:delete",
		Access: Token, Routes: []Route{{Method: "DELETE", Path: tenantPath + "/cards/:agentId"}}, Doors: Every},

	{Name: "secrets.set", In: typeOf[api.SecretsSet](), Out: typeOf[api.Empty](), Does: "Set the static secret sent to a card's endpoint", Caller: "cards:write",
		Access: Token, Routes: []Route{{Method: "PUT", Path: tenantPath + "/cards/:agentId/secret"}}, Doors: Every},
	{Name: "secrets.remove", In: typeOf[api.CardRef](), Out: typeOf[api.Empty](), Does: "Remove the secret of a card's endpoint", Caller: "cards:write",
		Access: Token, Routes: []Route{{Method: "DELETE", Path: tenantPath + "/cards/:agentId/secret"}}, Doors: Every},

	{Name: "roles.list", FromMemory: true, In: typeOf[api.RolesList](), Out: typeOf[api.RoleList](), Does: "List who has which role", Caller: "policies:manage",
		Access: Token, Routes: []Route{{Method: "GET", Path: tenantPath + "/roles"}}, Doors: Every},
	{Name: "roles.grant", In: typeOf[api.RoleChange](), Out: typeOf[authz.Assignment](), Does: "Give a subject a role", Caller: "policies:manage",
		Access: Token, Routes: []Route{{Method: "POST", Path: tenantPath + "/roles"}}, Doors: Every},
	{Name: "roles.revoke", In: typeOf[api.RoleRevoke](), Out: typeOf[api.Empty](), Does: "Take a role from a subject", Caller: "policies:manage",
		Access: Token, Routes: []Route{{Method: "DELETE", Path: tenantPath + "/roles", Query: []string{"subject", "role"}}}, Doors: Every},
	{Name: "policies.list", FromMemory: true, In: typeOf[api.PoliciesList](), Out: typeOf[api.PolicyList](), Does: "List the tenant's policies, the built-in roles' included", Caller: "policies:manage",
		Access: Token, Routes: []Route{{Method: "GET", Path: tenantPath + "/policies"}}, Doors: Every},
	{Name: "policies.add", In: typeOf[api.PolicyAdd](), Out: typeOf[authz.Policy](), Does: "Add an allow or deny policy", Caller: "policies:manage",
		Access: Token, Routes: []Route{{Method: "POST", Path: tenantPath + "/policies"}}, Doors: Every},
	{Name: "policies.remove", In: typeOf[api.PolicyRemove](), Out: typeOf[api.Empty](), Does: "Remove a policy", Caller: "policies:manage",
		Access: Token, Routes: []Route{{Method: "DELETE", Path: tenantPath + "/policies", Query: []string{"subject", "object", "action", "effect"}}}, Doors: Every},
	{Name: "access.check", FromMemory: true, In: typeOf[api.AccessCheck](), Out: typeOf[authz.Decision](), Does: "Say whether a subject may take an action on an object, and which policy decides", Caller: "any member; another subject needs policies:manage",
		Access: Token, Routes: []Route{{Method: "POST", Path: tenantPath + "/authorize"}}, Doors: Every},

	{Name: "audit.list", In: typeOf[api.AuditList](), Out: typeOf[api.AuditPage](), Does: "List who changed what in the tenant, newest first", Caller: "policies:manage, or audit:read on audit",
		Access: Token, Routes: []Route{{Method: "GET", Path: tenantPath + "/audit", Query: AuditQuery}}, Doors: Every},

	{Name: "synonyms.list", FromMemory: true, In: typeOf[api.SynonymsList](), Out: typeOf[api.SynonymList](), Does: "List the synonym sets the tenant's searches apply", Caller: "cards:read on cards/*",
		Access: Token, Routes: []Route{{Method: "GET", Path: tenantPath + "/synonyms"}}, Doors: Every},
	{Name: "synonyms.put", In: typeOf[api.SynonymsPut](), Out: typeOf[tenants.SynonymSet](), Does: "Create a synonym set, or replace the set of its id", Caller: "search:manage on search",
		Access: Token, Routes: []Route{{Method: "PUT", Path: tenantPath + "/synonyms/:id"}}, Doors: Every},
	{Name: "synonyms.remove", In: typeOf[api.SynonymsRemove](), Out: typeOf[api.Empty](), Does: "Remove a synonym set", Caller: "search:manage on search",
		Access: Token, Routes: []Route{{Method: "DELETE", Path: tenantPath + "/synonyms/:id"}}, Doors: Every},

	{Name: "trust.list", In: typeOf[api.TrustList](), Out: typeOf[api.TrustIssuerList](), Does: "List the issuers of the tenant's trust policy: whose keys vouch for the cards of which domain", Caller: "cards:read on cards/*",
		Access: Token, Routes: []Route{{Method: "GET", Path: tenantPath + "/trust"}}, Doors: Every},
	{Name: "trust.get", In: typeOf[api.TrustRef](), Out: typeOf[tenants.TrustIssuer](), Does: "Read one issuer of the tenant's trust policy", Caller: "cards:read on cards/*",
		Access: Token, Routes: []Route{{Method: "GET", Path: tenantPath + "/trust/:domain"}}, Doors: Every},
	{Name: "trust.put", In: typeOf[api.TrustPut](), Out: typeOf[api.TrustPutted](), Does: "Trust an issuer's keys for a domain's cards, or replace its keys, and weigh those cards again", Caller: "trust:manage on trust", OpenWorld: true,
		Access: Token, Routes: []Route{{Method: "PUT", Path: tenantPath + "/trust/:domain"}}, Doors: Every},
	{Name: "trust.remove", In: typeOf[api.TrustRef](), Out: typeOf[api.TrustRemoved](), Does: "Stop trusting an issuer, and weigh the cards it covered again", Caller: "trust:manage on trust",
		Access: Token, Routes: []Route{{Method: "DELETE", Path: tenantPath + "/trust/:domain"}}, Doors: Every},
	{Name: "sources.create", In: typeOf[api.SourcesCreate](), Out: typeOf[follow.Source](), Does: "Follow a registry: mirror the cards of another agentcards tenant, an AI Catalog or A2A card URLs, read-only", Caller: "sources:manage on sources", OpenWorld: true,
		Access: Token, Routes: []Route{{Method: "POST", Path: tenantPath + "/sources"}}, Doors: Every},
	{Name: "sources.list", In: typeOf[api.SourcesList](), Out: typeOf[api.SourceList](), Does: "List the registries the tenant follows and the state of their syncs", Caller: "sources:manage on sources",
		Access: Token, Routes: []Route{{Method: "GET", Path: tenantPath + "/sources"}}, Doors: Every},
	{Name: "sources.get", In: typeOf[api.SourceRef](), Out: typeOf[follow.Source](), Does: "Read one followed registry and the state of its sync", Caller: "sources:manage on sources",
		Access: Token, Routes: []Route{{Method: "GET", Path: tenantPath + "/sources/:id"}}, Doors: Every},
	{Name: "sources.update", In: typeOf[api.SourcesUpdate](), Out: typeOf[follow.Source](), Does: "Give a followed registry a new token, or a polled one a new interval", Caller: "sources:manage on sources",
		Access: Token, Routes: []Route{{Method: "PATCH", Path: tenantPath + "/sources/:id"}}, Doors: Every},
	{Name: "sources.remove", In: typeOf[api.SourceRef](), Out: typeOf[follow.Source](), Does: "Stop following a registry and remove its mirrored cards", Caller: "sources:manage on sources",
		Access: Token, Routes: []Route{{Method: "DELETE", Path: tenantPath + "/sources/:id"}}, Doors: Every},
	{Name: "webhooks.create", In: typeOf[api.WebhooksCreate](), Out: typeOf[webhooks.Webhook](), Does: "Subscribe a URL to the tenant's card changes, delivered as signed CloudEvents", Caller: "webhooks:manage on webhooks",
		Access: Token, Routes: []Route{{Method: "POST", Path: tenantPath + "/webhooks"}}, Doors: Every},
	{Name: "webhooks.list", In: typeOf[api.WebhooksList](), Out: typeOf[api.WebhookList](), Does: "List the tenant's webhook subscriptions and their delivery state", Caller: "webhooks:manage on webhooks",
		Access: Token, Routes: []Route{{Method: "GET", Path: tenantPath + "/webhooks"}}, Doors: Every},
	{Name: "webhooks.get", In: typeOf[api.WebhookRef](), Out: typeOf[webhooks.Webhook](), Does: "Read one webhook subscription and its delivery state", Caller: "webhooks:manage on webhooks",
		Access: Token, Routes: []Route{{Method: "GET", Path: tenantPath + "/webhooks/:id"}}, Doors: Every},
	{Name: "webhooks.update", In: typeOf[api.WebhooksUpdate](), Out: typeOf[webhooks.Webhook](), Does: "Change a webhook's URL or filter, pause it, or resume it", Caller: "webhooks:manage on webhooks",
		Access: Token, Routes: []Route{{Method: "PATCH", Path: tenantPath + "/webhooks/:id"}}, Doors: Every},
	{Name: "webhooks.remove", In: typeOf[api.WebhookRef](), Out: typeOf[api.Empty](), Does: "Remove a webhook subscription and its delivery records", Caller: "webhooks:manage on webhooks",
		Access: Token, Routes: []Route{{Method: "DELETE", Path: tenantPath + "/webhooks/:id"}}, Doors: Every},
	{Name: "webhooks.deliveries", In: typeOf[api.WebhooksDeliveries](), Out: typeOf[api.DeliveryList](), Does: "List a webhook's last delivery attempts, newest first", Caller: "webhooks:manage on webhooks",
		Access: Token, Routes: []Route{{Method: "GET", Path: tenantPath + "/webhooks/:id/deliveries", Query: []string{"limit"}}}, Doors: Every},

	{Name: "delegations.create", In: typeOf[api.DelegationsCreate](), Out: typeOf[api.Delegation](), Does: "Delegate a task to an agent, sync or async, over HTTP or A2A", Caller: "delegate on the capability", OpenWorld: true,
		Access: Token, Routes: []Route{{Method: "POST", Path: tenantPath + "/delegations"}}, Doors: Every},
	{Name: "delegations.list", In: typeOf[api.DelegationsList](), Out: typeOf[api.DelegationList](), Does: "List delegation records, newest first", Caller: "any member (their own; all with delegations:read)",
		Access: Token, Routes: []Route{{Method: "GET", Path: tenantPath + "/delegations", Query: DelegationListQuery}}, Doors: Every},
	{Name: "delegations.get", In: typeOf[api.DelegationRef](), Out: typeOf[api.Delegation](), Does: "Read one delegation record and its outcome", Caller: "its caller, or delegations:read",
		Access: Token, Routes: []Route{{Method: "GET", Path: tenantPath + "/delegations/:id"}}, Doors: Every},
	{Name: "delegations.import", In: typeOf[api.DelegationsImport](), Out: typeOf[api.DelegationsImported](), Does: "Write up to 1,000 delegation records of another registry as the tenant's history, all or none", Caller: "policies:manage",
		Access: Token, Routes: []Route{{Method: "POST", Path: tenantPath + `/delegations\:import`}}, Doors: Every},
	{Name: "delegations.complete", In: typeOf[api.DelegationsComplete](), Out: typeOf[api.Empty](), Does: "Report the outcome of an async delegation", Caller: "the agent, by the delegation's token",
		Access: ResultToken, Routes: []Route{{Method: "POST", Path: "/callbacks/delegations/:tenant/:id", Query: []string{"token"}}},
		Doors: REST, NotOn: "agents report results over HTTP to the callback URL they were given, not through a user's door"},

	{Name: "mesh.health", FlatErrors: true, In: typeOf[api.MeshAgentsList](), Out: typeOf[api.Status](), Does: "Answer while the process runs, at agentkit-mesh's base URL (its GET /health)", Caller: "anyone",
		Access: Open, Routes: []Route{{Method: "GET", Path: MeshBase + "/health"}}, Doors: REST, NotOn: meshOnly},
	{Name: "mesh.agents_list", FlatErrors: true, In: typeOf[api.MeshAgentsList](), Out: typeOf[[]api.MeshAgent](), Does: "List every agent, by name (agentkit-mesh's GET /v1/agents)", Caller: "cards:read (the cards it may read)",
		Access: Token, Routes: []Route{{Method: "GET", Path: MeshBase + "/v1/agents"}}, Doors: REST, NotOn: meshOnly},
	{Name: "mesh.agents_register", FlatErrors: true, In: typeOf[api.MeshAgentsRegister](), Out: typeOf[api.MeshAgent](), Does: "Register an agent, or replace the one of that name (agentkit-mesh's POST /v1/agents)", Caller: "cards:write",
		Access: Token, Routes: []Route{{Method: "POST", Path: MeshBase + "/v1/agents"}}, Doors: REST, NotOn: meshOnly},
	{Name: "mesh.agents_get", FlatErrors: true, In: typeOf[api.MeshAgentRef](), Out: typeOf[api.MeshAgent](), Does: "Read one agent (agentkit-mesh's GET /v1/agents/{name})", Caller: "cards:read",
		Access: Token, Routes: []Route{{Method: "GET", Path: MeshBase + "/v1/agents/:name"}}, Doors: REST, NotOn: meshOnly},
	{Name: "mesh.agents_remove", FlatErrors: true, In: typeOf[api.MeshAgentRef](), Out: typeOf[api.MeshOK](), Does: "Remove an agent (agentkit-mesh's DELETE /v1/agents/{name})", Caller: "cards:delete",
		Access: Token, Routes: []Route{{Method: "DELETE", Path: MeshBase + "/v1/agents/:name"}}, Doors: REST, NotOn: meshOnly},
	{Name: "mesh.agents_heartbeat", FlatErrors: true, In: typeOf[api.MeshAgentRef](), Out: typeOf[api.MeshOK](), Does: "Report that an agent is alive (agentkit-mesh's POST /v1/agents/{name}/heartbeat)", Caller: "cards:heartbeat, or the agent with its delegation token",
		Access: Token, Routes: []Route{{Method: "POST", Path: MeshBase + "/v1/agents/:name/heartbeat"}}, Doors: REST, NotOn: meshOnly},
	{Name: "mesh.discover", FlatErrors: true, FromMemory: true, In: typeOf[api.MeshDiscover](), Out: typeOf[[]api.MeshMatch](), Does: "Find the agents that match a query, ranked by the free-text search (agentkit-mesh's GET /v1/discover)", Caller: "cards:read",
		Access: Token, Routes: []Route{{Method: "GET", Path: MeshBase + "/v1/discover", Query: []string{"query", "limit", "resources"}}}, Doors: REST, NotOn: meshOnly},
	{Name: "mesh.delegate", FlatErrors: true, In: typeOf[api.MeshDelegate](), Out: typeOf[api.MeshDelegated](), Does: "Delegate a task to an agent by name, or to the best match of a query (agentkit-mesh's POST /v1/delegate)", Caller: "delegate on the capability", OpenWorld: true,
		Access: Token, Routes: []Route{{Method: "POST", Path: MeshBase + "/v1/delegate"}}, Doors: REST, NotOn: meshOnly},
	{Name: "mesh.delegations_list", FlatErrors: true, In: typeOf[api.MeshDelegationsList](), Out: typeOf[[]api.MeshDelegation](), Does: "List delegation records, newest first (agentkit-mesh's GET /v1/delegations)", Caller: "any member (their own; all with delegations:read)",
		Access: Token, Routes: []Route{{Method: "GET", Path: MeshBase + "/v1/delegations", Query: []string{"limit", "offset"}}}, Doors: REST, NotOn: meshOnly},
	{Name: "mesh.delegations_get", FlatErrors: true, In: typeOf[api.MeshDelegationRef](), Out: typeOf[api.MeshDelegation](), Does: "Read one delegation record (agentkit-mesh's GET /v1/delegations/{id})", Caller: "its caller, or delegations:read",
		Access: Token, Routes: []Route{{Method: "GET", Path: MeshBase + "/v1/delegations/:id"}}, Doors: REST, NotOn: meshOnly},
	{Name: "mesh.delegations_result", FlatErrors: true, In: typeOf[api.MeshResult](), Out: typeOf[api.MeshOK](), Does: "Report the outcome of an async delegation (agentkit-mesh's POST /v1/delegations/{id}/result)", Caller: "the agent (its delegation token), or cards:write on its card",
		Access: Token, Routes: []Route{{Method: "POST", Path: MeshBase + "/v1/delegations/:id/result"}}, Doors: REST, NotOn: meshOnly},

	{Name: "a2a.agents", FromMemory: true, In: typeOf[api.A2AAgents](), Out: typeOf[api.AgentPage](), Does: "List a tenant's public agents with their A2A card URLs", Caller: "anyone",
		Access: OptionalToken, Routes: []Route{{Method: "GET", Path: "/a2a/:tenant/agents", Query: []string{"limit", "cursor"}}}, Doors: Every},
	{Name: "a2a.card", FromMemory: true, In: typeOf[api.A2ACard](), Out: typeOf[api.A2AAgentCard](), Does: "Read an agent's card in A2A form (1.0, 0.3 or both), signed", Caller: "anyone for public cards, else cards:read",
		Access: OptionalToken, Routes: []Route{{Method: "GET", Path: "/a2a/:tenant/:agentId/.well-known/agent-card.json", Query: []string{"version"}}}, Doors: Every},
	{Name: "a2a.catalog", FromMemory: true, In: typeOf[api.A2ACatalog](), Out: typeOf[api.AICatalog](), Does: "List a tenant's public agents as an AI Catalog document, signed", Caller: "anyone",
		Access: OptionalToken, Routes: []Route{{Method: "GET", Path: "/a2a/:tenant/.well-known/ai-catalog.json", Query: []string{"limit", "cursor"}}}, Doors: Every},
	{Name: "keys.list", In: typeOf[api.KeysList](), Out: typeOf[api.JWKS](), Does: "List the public keys that verify the service's signatures (JWKS)", Caller: "anyone",
		Access: Open, Routes: []Route{{Method: "GET", Path: JWKSPath}}, Doors: Every},
	{Name: "service.health", In: typeOf[api.Probe](), Out: typeOf[api.Status](), Does: "Answer while the process runs", Caller: "anyone",
		Access: Open, Routes: []Route{{Method: "GET", Path: "/health"}}, Doors: REST, NotOn: probeOnly},
	{Name: "service.ready", In: typeOf[api.Probe](), Out: typeOf[api.Status](), Does: "Answer 200 when the database answers, else 503", Caller: "anyone",
		Access: Open, Routes: []Route{{Method: "GET", Path: "/ready"}}, Doors: REST, NotOn: probeOnly},
	{Name: "service.openapi", In: typeOf[api.OpenAPIInput](), Out: typeOf[api.OpenAPI](), Does: "Describe the REST API (OpenAPI 3)", Caller: "anyone",
		Access: Open, Routes: []Route{{Method: "GET", Path: "/openapi.json"}}, Doors: REST,
		NotOn: "it describes the REST door itself; the MCP door lists its own tools, and the CLI and the Go client are built from the catalogue"},
}

// OldName is a name a request was known by elsewhere, answered on one door until a day.
type OldName struct {
	// Name is the old name, as that door spells it (an MCP tool name).
	Name string
	Door Door
	// Request is the catalogue request it stands for now.
	Request string
	// From says where the name comes from.
	From string
	// Until is the day (UTC) the name stops working: it answers before that day, with a notice
	// naming the new name and the day, and is refused, naming the new name, from that day on.
	Until time.Time
}

// Notice is what every answer to the old name says until its day.
func (o OldName) Notice() string {
	return fmt.Sprintf("%s was renamed to %s. This name stops working on %s; use %s.",
		o.Name, o.NewName(), o.Until.Format(time.DateOnly), o.NewName())
}

// Refusal is what a call of the old name answers from its day on.
func (o OldName) Refusal() string {
	return fmt.Sprintf("%s was renamed to %s and stopped working on %s; use %s.",
		o.Name, o.NewName(), o.Until.Format(time.DateOnly), o.NewName())
}

// NewName is the name of its request on the old name's door.
func (o OldName) NewName() string {
	r, _ := Lookup(o.Request)
	if o.Door == CLI {
		return r.Command()
	}
	return r.MCPTool()
}

// Answers reports whether the old name still answers at now.
func (o OldName) Answers(now time.Time) bool { return now.Before(o.Until) }

// oldNamesUntil is the day the seeds' names stop working: three months after the release that
// took them in (agentkit-mesh users move their MCP configurations over, then rename their calls).
var oldNamesUntil = time.Date(2027, time.March, 1, 0, 0, 0, 0, time.UTC)

// OldNames are the names of the registries agentcards takes over from: their MCP tools answer
// here, mapped onto our requests, in the shapes those registries documented.
var OldNames = []OldName{
	{Name: "mesh_register", Door: MCP, Request: "cards.register", From: "agentkit-mesh", Until: oldNamesUntil},
	{Name: "mesh_discover", Door: MCP, Request: "cards.search", From: "agentkit-mesh", Until: oldNamesUntil},
	{Name: "mesh_unregister", Door: MCP, Request: "cards.remove", From: "agentkit-mesh", Until: oldNamesUntil},
	{Name: "mesh_delegate", Door: MCP, Request: "delegations.create", From: "agentkit-mesh", Until: oldNamesUntil},
	{Name: "registry_list", Door: MCP, Request: "cards.search", From: "agentmesh", Until: oldNamesUntil},
}
