package cards

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/go-jose/go-jose/v4"

	"github.com/agentcards/agentcards/authz"
	"github.com/agentcards/agentcards/tenants"
)

// ImportRequest is the body of an import: exactly one of Card and URL.
type ImportRequest struct {
	AgentID string          `json:"agentId"`
	Card    json.RawMessage `json:"card,omitempty"`
	URL     string          `json:"url,omitempty"`
	// Keys verify the card's signatures, before any jku the signatures name.
	Keys *jose.JSONWebKeySet `json:"keys,omitempty"`
	// AllowInvalidSignature stores a card whose signature is invalid (the record says so).
	AllowInvalidSignature bool       `json:"allowInvalidSignature,omitempty"`
	Visibility            Visibility `json:"visibility,omitempty"`
}

// Import creates the card of an agent from an A2A card sent inline or fetched from a URL with
// s.Fetch. ErrExists if the agent already has a card; ErrBadSignature for a signature its key
// rejects, unless AllowInvalidSignature.
func (s *Service) Import(ctx context.Context, tenant tenants.ID, body []byte) (Card, error) {
	var req ImportRequest
	if err := DecodeStrict(body, &req); err != nil {
		return Card{}, err
	}
	if err := ValidateAgentID(req.AgentID); err != nil {
		return Card{}, err
	}
	if (len(nonNull(req.Card)) == 0) == (req.URL == "") {
		return Card{}, fmt.Errorf("send exactly one of card and url: %w", ErrInvalid)
	}
	// Authorize before fetching anything: a caller who may not write must not make us call out.
	if err := s.Authz.Check(ctx, string(tenant), authz.CardObject(req.AgentID), authz.ActCardsWrite); err != nil {
		return Card{}, err
	}
	raw := []byte(req.Card)
	if req.URL != "" {
		var p problems
		p.httpURL("url", req.URL)
		if err := p.err(); err != nil {
			return Card{}, err
		}
		if s.Fetch == nil {
			return Card{}, fmt.Errorf("url: import by URL is not configured: %w", ErrInvalid)
		}
		var err error
		if raw, err = fetchJSON(ctx, s.Fetch, req.URL, MaxImportBytes); err != nil {
			return Card{}, fmt.Errorf("url: %w", err)
		}
	}
	a, format, err := ParseA2ACard(raw)
	if err != nil {
		return Card{}, err
	}
	v := &verifier{keys: req.Keys, fetch: s.Fetch}
	check := v.verify(ctx, raw)
	if check.Status == SignatureInvalid && !req.AllowInvalidSignature {
		return Card{}, fmt.Errorf("%s (send allowInvalidSignature: true to import it anyway): %w", check.Reason, ErrBadSignature)
	}
	c := FromA2A(req.AgentID, a)
	c.Visibility = req.Visibility
	if err := prepare(&c); err != nil {
		return Card{}, fmt.Errorf("the card maps to an invalid registry card: %w", err)
	}
	c.A2A.Import = &ImportRecord{Format: format, URL: req.URL, Signature: check}
	now := s.now()
	c.ID, c.Revision, c.CreatedAt, c.UpdatedAt = s.newID(), 1, now, now
	if err := s.Store.Create(ctx, tenant, c); err != nil {
		return Card{}, err
	}
	s.syncIndex(ctx, tenant)
	return c, nil
}

// GetA2A returns the card an A2A client asks for: a public card to anyone, any other card only
// to a caller of the tenant (or a platform admin) allowed cards:read on it. Everything else is
// ErrNotFound, so an anonymous reader learns nothing about cards it may not see.
func (s *Service) GetA2A(ctx context.Context, tenant tenants.ID, agentID string) (Card, error) {
	notFound := fmt.Errorf("card %q: %w", agentID, ErrNotFound)
	if ValidateAgentID(agentID) != nil {
		return Card{}, notFound
	}
	c, err := s.Store.Get(ctx, tenant, agentID)
	if err != nil {
		return Card{}, err
	}
	if c.Visibility == VisibilityPublic {
		return c, nil
	}
	p, ok := authz.PrincipalFrom(ctx)
	if !ok || (!p.PlatformAdmin && p.Tenant != string(tenant)) {
		return Card{}, notFound
	}
	err = s.Authz.Check(ctx, string(tenant), authz.CardObject(agentID), authz.ActCardsRead)
	switch {
	case errors.Is(err, authz.ErrForbidden):
		return Card{}, notFound
	case err != nil:
		return Card{}, err
	}
	return c, nil
}

// AgentSummary is one entry of a tenant's public agent directory.
type AgentSummary struct {
	AgentID     string `json:"agentId"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// CardURL is the path of the agent's A2A card on this service.
	CardURL string `json:"cardUrl"`
}

// AgentPage is one page of the public agent directory, in agentId (byte) order.
type AgentPage struct {
	Items      []AgentSummary `json:"items"`
	NextCursor string         `json:"nextCursor,omitempty"`
}

// PublicAgents lists one page of a tenant's public cards; it needs no caller. The cursor is the
// base64url of the last agentId shown.
func (s *Service) PublicAgents(ctx context.Context, tenant tenants.ID, limit int, cursor string) (AgentPage, error) {
	limit, after, err := CheckAgentsQuery(limit, cursor)
	if err != nil {
		return AgentPage{}, err
	}
	if s.Index != nil {
		return s.publicFromIndex(ctx, tenant, after, limit)
	}
	ids, err := s.Store.IDs(ctx, tenant)
	if err != nil {
		return AgentPage{}, err
	}
	slices.Sort(ids)
	start := sort.SearchStrings(ids, after)
	if start < len(ids) && ids[start] == after {
		start++
	}
	page := AgentPage{Items: []AgentSummary{}}
	// Visibility lives in the document, so cards are read in batches until the page is full and
	// one more public card is found: only that one proves a next page exists (private cards after
	// the last one must not earn a cursor to an empty page, which the index never gives either).
	for start < len(ids) && len(page.Items) <= limit {
		end := min(start+max(limit+1, scanBatch), len(ids))
		batch, err := s.Store.GetMany(ctx, tenant, ids[start:end])
		if err != nil {
			return AgentPage{}, err
		}
		for _, c := range batch {
			if c.Visibility == VisibilityPublic && len(page.Items) <= limit {
				page.Items = append(page.Items, AgentSummary{
					AgentID: c.AgentID, Name: c.Name, Description: c.Description,
					CardURL: A2ACardPath(tenant, c.AgentID),
				})
			}
		}
		start = end
	}
	if len(page.Items) > limit {
		page.Items = page.Items[:limit]
		page.NextCursor = base64.RawURLEncoding.EncodeToString([]byte(page.Items[limit-1].AgentID))
	}
	return page, nil
}

// A2ACardPath is where the A2A card of an agent is served.
func A2ACardPath(tenant tenants.ID, agentID string) string {
	return "/a2a/" + string(tenant) + "/" + agentID + "/.well-known/agent-card.json"
}

// publicFromIndex pages through the public cards the index knows, so an anonymous list costs one
// query for the page however few of the tenant's cards are public.
func (s *Service) publicFromIndex(ctx context.Context, tenant tenants.ID, after string, limit int) (AgentPage, error) {
	ids, more, err := s.Index.publicAfter(ctx, tenant, after, limit)
	if err != nil {
		return AgentPage{}, err
	}
	found, err := s.Store.GetMany(ctx, tenant, ids)
	if err != nil {
		return AgentPage{}, err
	}
	page := AgentPage{Items: []AgentSummary{}}
	for _, c := range found {
		if c.Visibility == VisibilityPublic { // it may have changed since the index answered
			page.Items = append(page.Items, AgentSummary{
				AgentID: c.AgentID, Name: c.Name, Description: c.Description,
				CardURL: A2ACardPath(tenant, c.AgentID),
			})
		}
	}
	if more && len(ids) > 0 {
		page.NextCursor = base64.RawURLEncoding.EncodeToString([]byte(ids[len(ids)-1]))
	}
	return page, nil
}

// CheckAgentsQuery validates the paging of the public agent list and returns the limit to use
// and the agentId to start after. The API checks a request for a tenant that does not exist
// with it too, so that such a request answers exactly like one for a tenant without public cards.
func CheckAgentsQuery(limit int, cursor string) (int, string, error) {
	if limit == 0 {
		limit = DefaultLimit
	}
	if limit < 1 || limit > MaxLimit {
		return 0, "", fmt.Errorf("limit: must be between 1 and %d: %w", MaxLimit, ErrInvalid)
	}
	if cursor == "" {
		return limit, "", nil
	}
	b, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil || ValidateAgentID(string(b)) != nil {
		return 0, "", fmt.Errorf("cursor: not a cursor of this list: %w", ErrInvalid)
	}
	return limit, string(b), nil
}
