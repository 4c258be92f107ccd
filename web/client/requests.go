package client

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"net/url"

	"github.com/agentcards/agentcards/authz"
	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/aicatalog"
	"github.com/agentcards/agentcards/cards/follow"
	"github.com/agentcards/agentcards/cards/webhooks"
	"github.com/agentcards/agentcards/tenants"
	"github.com/agentcards/agentcards/tenants/audit"
	"github.com/agentcards/agentcards/web/api"
)

// call sends a request of the catalogue and returns its output.
func call[Out any](ctx context.Context, c *Client, name string, in any) (Out, error) {
	var out Out
	err := c.Call(ctx, name, in, &out)
	return out, err
}

// Tenants are the tenants.* requests (a platform admin's).
type Tenants struct{ c *Client }

// Create is tenants.create.
func (r Tenants) Create(ctx context.Context, in api.TenantsCreate) (tenants.Tenant, error) {
	return call[tenants.Tenant](ctx, r.c, "tenants.create", in)
}

// List is tenants.list.
func (r Tenants) List(ctx context.Context, in api.TenantsList) (api.TenantList, error) {
	return call[api.TenantList](ctx, r.c, "tenants.list", in)
}

// Get is tenants.get.
func (r Tenants) Get(ctx context.Context, in api.TenantRef) (tenants.Tenant, error) {
	return call[tenants.Tenant](ctx, r.c, "tenants.get", in)
}

// Update is tenants.update.
func (r Tenants) Update(ctx context.Context, in api.TenantsUpdate) (tenants.Tenant, error) {
	return call[tenants.Tenant](ctx, r.c, "tenants.update", in)
}

// Delete is tenants.delete.
func (r Tenants) Delete(ctx context.Context, in api.TenantRef) (api.Empty, error) {
	return call[api.Empty](ctx, r.c, "tenants.delete", in)
}

// Cards are the cards.* requests.
type Cards struct{ c *Client }

// Register is cards.register.
func (r Cards) Register(ctx context.Context, in api.CardsRegister) (cards.Card, error) {
	return call[cards.Card](ctx, r.c, "cards.register", in)
}

// RegisterBatch is cards.register_batch.
func (r Cards) RegisterBatch(ctx context.Context, in api.CardsRegisterBatch) (api.CardList, error) {
	return call[api.CardList](ctx, r.c, "cards.register_batch", in)
}

// Import is cards.import.
func (r Cards) Import(ctx context.Context, in api.CardsImport) (cards.Card, error) {
	return call[cards.Card](ctx, r.c, "cards.import", in)
}

// Heartbeat is cards.heartbeat.
func (r Cards) Heartbeat(ctx context.Context, in api.CardRef) (cards.Liveness, error) {
	return call[cards.Liveness](ctx, r.c, "cards.heartbeat", in)
}

// Refresh is cards.refresh.
func (r Cards) Refresh(ctx context.Context, in api.CardsRefresh) (api.CardsRefreshed, error) {
	return call[api.CardsRefreshed](ctx, r.c, "cards.refresh", in)
}

// Get is cards.get.
func (r Cards) Get(ctx context.Context, in api.CardRef) (cards.Card, error) {
	return call[cards.Card](ctx, r.c, "cards.get", in)
}

// Search is cards.search: one page.
func (r Cards) Search(ctx context.Context, in api.CardsSearch) (api.SearchResult, error) {
	return call[api.SearchResult](ctx, r.c, "cards.search", in)
}

// SearchAll is cards.search, page after page from in.Cursor, until the last page or an error
// (the last value yielded).
func (r Cards) SearchAll(ctx context.Context, in api.CardsSearch) iter.Seq2[api.Hit, error] {
	return pages(func(cursor string) ([]api.Hit, string, error) {
		in.Cursor = cursor
		p, err := r.Search(ctx, in)
		return p.Items, p.NextCursor, err
	}, in.Cursor)
}

// Replace is cards.replace.
func (r Cards) Replace(ctx context.Context, in api.CardsReplace) (cards.Card, error) {
	return call[cards.Card](ctx, r.c, "cards.replace", in)
}

// Update is cards.update.
func (r Cards) Update(ctx context.Context, in api.CardsUpdate) (cards.Card, error) {
	return call[cards.Card](ctx, r.c, "cards.update", in)
}

// Changes is cards.changes.
func (r Cards) Changes(ctx context.Context, in api.CardsChanges) (api.ChangePage, error) {
	return call[api.ChangePage](ctx, r.c, "cards.changes", in)
}

// Remove is cards.remove.
func (r Cards) Remove(ctx context.Context, in api.CardsRemove) (api.Empty, error) {
	return call[api.Empty](ctx, r.c, "cards.remove", in)
}

// Secrets are the secrets.* requests.
type Secrets struct{ c *Client }

// Set is secrets.set.
func (r Secrets) Set(ctx context.Context, in api.SecretsSet) (api.Empty, error) {
	return call[api.Empty](ctx, r.c, "secrets.set", in)
}

// Remove is secrets.remove.
func (r Secrets) Remove(ctx context.Context, in api.CardRef) (api.Empty, error) {
	return call[api.Empty](ctx, r.c, "secrets.remove", in)
}

// Roles are the roles.* requests.
type Roles struct{ c *Client }

// List is roles.list.
func (r Roles) List(ctx context.Context, in api.RolesList) (api.RoleList, error) {
	return call[api.RoleList](ctx, r.c, "roles.list", in)
}

// Grant is roles.grant.
func (r Roles) Grant(ctx context.Context, in api.RoleChange) (authz.Assignment, error) {
	return call[authz.Assignment](ctx, r.c, "roles.grant", in)
}

// Revoke is roles.revoke.
func (r Roles) Revoke(ctx context.Context, in api.RoleRevoke) (api.Empty, error) {
	return call[api.Empty](ctx, r.c, "roles.revoke", in)
}

// Policies are the policies.* requests.
type Policies struct{ c *Client }

// List is policies.list.
func (r Policies) List(ctx context.Context, in api.PoliciesList) (api.PolicyList, error) {
	return call[api.PolicyList](ctx, r.c, "policies.list", in)
}

// Add is policies.add.
func (r Policies) Add(ctx context.Context, in api.PolicyAdd) (authz.Policy, error) {
	return call[authz.Policy](ctx, r.c, "policies.add", in)
}

// Remove is policies.remove.
func (r Policies) Remove(ctx context.Context, in api.PolicyRemove) (api.Empty, error) {
	return call[api.Empty](ctx, r.c, "policies.remove", in)
}

// Access is the access.* request.
type Access struct{ c *Client }

// Check is access.check.
func (r Access) Check(ctx context.Context, in api.AccessCheck) (authz.Decision, error) {
	return call[authz.Decision](ctx, r.c, "access.check", in)
}

// Audit is the audit.* request.
type Audit struct{ c *Client }

// List is audit.list: one page.
func (r Audit) List(ctx context.Context, in api.AuditList) (api.AuditPage, error) {
	return call[api.AuditPage](ctx, r.c, "audit.list", in)
}

// ListAll is audit.list, page after page.
func (r Audit) ListAll(ctx context.Context, in api.AuditList) iter.Seq2[audit.Entry, error] {
	return pages(func(cursor string) ([]audit.Entry, string, error) {
		in.Cursor = cursor
		p, err := r.List(ctx, in)
		return p.Items, p.NextCursor, err
	}, in.Cursor)
}

// Synonyms are the synonyms.* requests.
type Synonyms struct{ c *Client }

// List is synonyms.list.
func (r Synonyms) List(ctx context.Context, in api.SynonymsList) (api.SynonymList, error) {
	return call[api.SynonymList](ctx, r.c, "synonyms.list", in)
}

// Put is synonyms.put.
func (r Synonyms) Put(ctx context.Context, in api.SynonymsPut) (tenants.SynonymSet, error) {
	return call[tenants.SynonymSet](ctx, r.c, "synonyms.put", in)
}

// Remove is synonyms.remove.
func (r Synonyms) Remove(ctx context.Context, in api.SynonymsRemove) (api.Empty, error) {
	return call[api.Empty](ctx, r.c, "synonyms.remove", in)
}

// Trust are the trust.* requests.
type Trust struct{ c *Client }

// List is trust.list.
func (r Trust) List(ctx context.Context, in api.TrustList) (api.TrustIssuerList, error) {
	return call[api.TrustIssuerList](ctx, r.c, "trust.list", in)
}

// Get is trust.get.
func (r Trust) Get(ctx context.Context, in api.TrustRef) (tenants.TrustIssuer, error) {
	return call[tenants.TrustIssuer](ctx, r.c, "trust.get", in)
}

// Put is trust.put.
func (r Trust) Put(ctx context.Context, in api.TrustPut) (api.TrustPutted, error) {
	return call[api.TrustPutted](ctx, r.c, "trust.put", in)
}

// Remove is trust.remove.
func (r Trust) Remove(ctx context.Context, in api.TrustRef) (api.TrustRemoved, error) {
	return call[api.TrustRemoved](ctx, r.c, "trust.remove", in)
}

// Sources are the sources.* requests.
type Sources struct{ c *Client }

// Create is sources.create.
func (r Sources) Create(ctx context.Context, in api.SourcesCreate) (follow.Source, error) {
	return call[follow.Source](ctx, r.c, "sources.create", in)
}

// List is sources.list.
func (r Sources) List(ctx context.Context, in api.SourcesList) (api.SourceList, error) {
	return call[api.SourceList](ctx, r.c, "sources.list", in)
}

// Get is sources.get.
func (r Sources) Get(ctx context.Context, in api.SourceRef) (follow.Source, error) {
	return call[follow.Source](ctx, r.c, "sources.get", in)
}

// Update is sources.update.
func (r Sources) Update(ctx context.Context, in api.SourcesUpdate) (follow.Source, error) {
	return call[follow.Source](ctx, r.c, "sources.update", in)
}

// Remove is sources.remove.
func (r Sources) Remove(ctx context.Context, in api.SourceRef) (follow.Source, error) {
	return call[follow.Source](ctx, r.c, "sources.remove", in)
}

// Webhooks are the webhooks.* requests.
type Webhooks struct{ c *Client }

// Create is webhooks.create.
func (r Webhooks) Create(ctx context.Context, in api.WebhooksCreate) (webhooks.Webhook, error) {
	return call[webhooks.Webhook](ctx, r.c, "webhooks.create", in)
}

// List is webhooks.list.
func (r Webhooks) List(ctx context.Context, in api.WebhooksList) (api.WebhookList, error) {
	return call[api.WebhookList](ctx, r.c, "webhooks.list", in)
}

// Get is webhooks.get.
func (r Webhooks) Get(ctx context.Context, in api.WebhookRef) (webhooks.Webhook, error) {
	return call[webhooks.Webhook](ctx, r.c, "webhooks.get", in)
}

// Update is webhooks.update.
func (r Webhooks) Update(ctx context.Context, in api.WebhooksUpdate) (webhooks.Webhook, error) {
	return call[webhooks.Webhook](ctx, r.c, "webhooks.update", in)
}

// Remove is webhooks.remove.
func (r Webhooks) Remove(ctx context.Context, in api.WebhookRef) (api.Empty, error) {
	return call[api.Empty](ctx, r.c, "webhooks.remove", in)
}

// Deliveries is webhooks.deliveries.
func (r Webhooks) Deliveries(ctx context.Context, in api.WebhooksDeliveries) (api.DeliveryList, error) {
	return call[api.DeliveryList](ctx, r.c, "webhooks.deliveries", in)
}

// Delegations are the delegations.* requests.
type Delegations struct{ c *Client }

// Create is delegations.create.
func (r Delegations) Create(ctx context.Context, in api.DelegationsCreate) (api.Delegation, error) {
	return call[api.Delegation](ctx, r.c, "delegations.create", in)
}

// List is delegations.list: one page.
func (r Delegations) List(ctx context.Context, in api.DelegationsList) (api.DelegationList, error) {
	return call[api.DelegationList](ctx, r.c, "delegations.list", in)
}

// ListAll is delegations.list, page after page.
func (r Delegations) ListAll(ctx context.Context, in api.DelegationsList) iter.Seq2[api.Delegation, error] {
	return pages(func(cursor string) ([]api.Delegation, string, error) {
		in.Cursor = cursor
		p, err := r.List(ctx, in)
		return p.Items, p.NextCursor, err
	}, in.Cursor)
}

// Get is delegations.get.
func (r Delegations) Get(ctx context.Context, in api.DelegationRef) (api.Delegation, error) {
	return call[api.Delegation](ctx, r.c, "delegations.get", in)
}

// Import is delegations.import.
func (r Delegations) Import(ctx context.Context, in api.DelegationsImport) (api.DelegationsImported, error) {
	return call[api.DelegationsImported](ctx, r.c, "delegations.import", in)
}

// A2A are the a2a.* requests.
type A2A struct{ c *Client }

// Agents is a2a.agents: one page.
func (r A2A) Agents(ctx context.Context, in api.A2AAgents) (api.AgentPage, error) {
	return call[api.AgentPage](ctx, r.c, "a2a.agents", in)
}

// AgentsAll is a2a.agents, page after page.
func (r A2A) AgentsAll(ctx context.Context, in api.A2AAgents) iter.Seq2[api.AgentSummary, error] {
	return pages(func(cursor string) ([]api.AgentSummary, string, error) {
		in.Cursor = cursor
		p, err := r.Agents(ctx, in)
		return p.Items, p.NextCursor, err
	}, in.Cursor)
}

// Card is a2a.card: the signed A2A Agent Card document as served.
func (r A2A) Card(ctx context.Context, in api.A2ACard) (json.RawMessage, error) {
	return call[json.RawMessage](ctx, r.c, "a2a.card", in)
}

// Catalog is a2a.catalog: one page of the tenant's AI Catalog document, signed.
func (r A2A) Catalog(ctx context.Context, in api.A2ACatalog) (api.AICatalog, error) {
	return call[api.AICatalog](ctx, r.c, "a2a.catalog", in)
}

// CatalogAll is a2a.catalog, page after page: the entries of the tenant's cards, each page's
// nested entry (the next page) followed rather than yielded.
func (r A2A) CatalogAll(ctx context.Context, in api.A2ACatalog) iter.Seq2[aicatalog.CatalogEntry, error] {
	return pages(func(cursor string) ([]aicatalog.CatalogEntry, string, error) {
		in.Cursor = cursor
		doc, err := r.Catalog(ctx, in)
		if err != nil {
			return nil, "", err
		}
		entries, next := doc.Entries, ""
		if n := len(entries); n > 0 && entries[n-1].Type == aicatalog.MediaType {
			u, err := url.Parse(entries[n-1].URL)
			if err != nil || u.Query().Get("cursor") == "" {
				return nil, "", fmt.Errorf("a2a.catalog: the next page's url %q holds no cursor", entries[n-1].URL)
			}
			entries, next = entries[:n-1], u.Query().Get("cursor")
		}
		return entries, next, nil
	}, in.Cursor)
}

// Keys is the keys.* request.
type Keys struct{ c *Client }

// List is keys.list.
func (r Keys) List(ctx context.Context, in api.KeysList) (api.JWKS, error) {
	return call[api.JWKS](ctx, r.c, "keys.list", in)
}

// pages yields the items of page after page, from cursor on, until a page has no next cursor.
func pages[T any](page func(cursor string) ([]T, string, error), cursor string) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		for {
			items, next, err := page(cursor)
			if err != nil {
				var zero T
				yield(zero, err)
				return
			}
			for _, it := range items {
				if !yield(it, nil) {
					return
				}
			}
			if next == "" {
				return
			}
			cursor = next
		}
	}
}
