package a2a

import (
	"context"
	"encoding/base64"

	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/search"
	"github.com/agentcards/agentcards/tenants"
)

// AgentSummary is one entry of a tenant's public agent directory.
type AgentSummary struct {
	AgentID     string `json:"agentId"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// CardURL is the path of the agent's A2A card on this service; the HTTP API fills it in, as
	// the one that decides where cards are served.
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
	public, err := s.Search.Public(ctx, tenant, after, limit)
	if err != nil {
		return AgentPage{}, err
	}
	page := AgentPage{Items: make([]AgentSummary, 0, len(public.Cards))}
	for _, c := range public.Cards {
		page.Items = append(page.Items, AgentSummary{AgentID: c.AgentID, Name: c.Name, Description: c.Description})
	}
	if public.Next != "" {
		page.NextCursor = base64.RawURLEncoding.EncodeToString([]byte(public.Next))
	}
	return page, nil
}

// CheckAgentsQuery validates the paging of the public agent list and returns the limit to use
// and the agentId to start after. The API checks a request for a tenant that does not exist
// with it too, so that such a request answers exactly like one for a tenant without public cards.
func CheckAgentsQuery(limit int, cursor string) (int, string, error) {
	if limit == 0 {
		limit = search.DefaultLimit
	}
	if limit < 1 || limit > search.MaxLimit {
		return 0, "", fault.Errorf(fault.Invalid, "limit: must be between 1 and %d: invalid", search.MaxLimit)
	}
	if cursor == "" {
		return limit, "", nil
	}
	b, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil || cards.ValidateAgentID(string(b)) != nil {
		return 0, "", fault.New(fault.Invalid, "cursor: not a cursor of this list: invalid")
	}
	return limit, string(b), nil
}
