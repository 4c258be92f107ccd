package a2a

import (
	"context"

	"github.com/agentcards/agentcards/authz"
	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/search"
	"github.com/agentcards/agentcards/tenants"
	"github.com/agentcards/agentcards/tenants/paging"
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

// agentsList names the cursors of the public agent list to the codec.
const agentsList = "agents"

// PublicAgents lists one page of a tenant's public cards; it needs no caller, and a tenant that
// does not exist or is suspended lists none. The cursor holds the last agentId shown.
func (s *Service) PublicAgents(ctx context.Context, tenant tenants.ID, p paging.Page) (AgentPage, error) {
	if err := authz.Visitor(ctx); err != nil {
		return AgentPage{}, err
	}
	limit, after, err := CheckAgentsQuery(p)
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
		page.NextCursor = paging.EncodeCursor(agentsList, public.Next)
	}
	return page, nil
}

// CheckAgentsQuery validates the page asked of the public agent list and returns the limit to
// use (search.DefaultLimit, at most search.MaxLimit) and the agentId to start after.
func CheckAgentsQuery(p paging.Page) (int, string, error) {
	return checkAfter(p, search.DefaultLimit, search.MaxLimit)
}

// checkAfter validates a page of a list of public cards (the agent list, the AI Catalog) and
// returns the limit to use (def, at most max) and the agentId its cursor starts after.
func checkAfter(p paging.Page, def, max int) (int, string, error) {
	limit, err := p.Check(def, max)
	if err != nil {
		return 0, "", err
	}
	if p.Cursor == "" {
		return limit, "", nil
	}
	var after string
	if err := paging.DecodeCursor(agentsList, p.Cursor, &after); err != nil {
		return 0, "", err
	}
	if cards.ValidateAgentID(after) != nil {
		return 0, "", paging.ErrCursor
	}
	return limit, after, nil
}
