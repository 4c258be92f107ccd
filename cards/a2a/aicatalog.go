package a2a

import (
	"context"
	"encoding/json"

	"github.com/agentcards/agentcards/authz"
	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/search"
	"github.com/agentcards/agentcards/tenants"
	"github.com/agentcards/agentcards/tenants/paging"
)

// Bounds of a page of a tenant's AI Catalog: it lists CatalogPageSize cards unless asked for
// more, up to CatalogMaxPage, and ends early once its cards' text passes CatalogPageBytes (a
// card's description and tags may take tens of KB), so that no page is larger than a client
// reads or slower than a request should be.
const (
	CatalogPageSize  = 100
	CatalogMaxPage   = 1000
	CatalogPageBytes = 1 << 20
)

// entryBytes is about what a card's catalog entry takes: its text as JSON, which escaping may
// make six times its bytes, and the rest (identifier, URL, type, date).
func entryBytes(c cards.Card) int {
	b, err := json.Marshal([]any{c.Description, c.Tags, c.Version})
	if err != nil {
		return CatalogPageBytes
	}
	return len(b) + 4*len(c.AgentID) + 300
}

// PublishedTenants reads a tenant for anyone, as the open A2A routes show it: tenants.Service
// is one. A tenant that does not exist or is suspended is fault.NotFound.
type PublishedTenants interface {
	Published(ctx context.Context, id tenants.ID) (tenants.Tenant, error)
}

// CatalogPage is one page of a tenant's AI Catalog: the tenant that publishes it, its public
// cards in agentId (byte) order, and the cursor of the next page, empty on the last.
type CatalogPage struct {
	Tenant     tenants.Tenant
	Cards      []cards.Card
	NextCursor string
}

// Catalog reads one page of a tenant's public, enabled cards for its AI Catalog; it needs no
// caller. Its cursors are the public agent list's (PublicAgents), and so is the order. A tenant
// that does not exist, is suspended, or has no public card publishes no catalog: the three are
// the same fault.NotFound, so the catalog, which names its tenant, shows no tenant that the
// open routes do not show already.
func (s *Service) Catalog(ctx context.Context, tenant tenants.ID, p paging.Page) (CatalogPage, error) {
	if err := authz.Visitor(ctx); err != nil {
		return CatalogPage{}, err
	}
	limit, after, err := checkAfter(p, CatalogPageSize, CatalogMaxPage)
	if err != nil {
		return CatalogPage{}, err
	}
	none := fault.Errorf(fault.NotFound, "tenant %q publishes no AI Catalog: not found", string(tenant))
	t, err := s.Tenants.Published(ctx, tenant)
	if err != nil {
		if fault.KindOf(err) == fault.NotFound {
			return CatalogPage{}, none
		}
		return CatalogPage{}, err
	}
	page := CatalogPage{Tenant: t, Cards: make([]cards.Card, 0, min(limit, search.MaxLimit))}
	// The public list answers search.MaxLimit cards at a time; a part may hold fewer than asked
	// (a card may have turned private since the index answered), and only an empty next
	// position says that none follows.
	next := after
	size := 0
fill:
	for len(page.Cards) < limit {
		part, err := s.Search.Public(ctx, tenant, next, min(limit-len(page.Cards), search.MaxLimit))
		if err != nil {
			return CatalogPage{}, err
		}
		for _, c := range part.Cards {
			if size += entryBytes(c); size > CatalogPageBytes && len(page.Cards) > 0 {
				next = page.Cards[len(page.Cards)-1].AgentID // the rest on the next page
				break fill
			}
			page.Cards = append(page.Cards, c)
		}
		if next = part.Next; next == "" {
			break
		}
	}
	if next != "" {
		page.NextCursor = paging.EncodeCursor(agentsList, next)
	}
	if len(page.Cards) > 0 {
		return page, nil
	}
	// An empty page: the end of the list reached while it was read (cards made private or
	// removed since the last page), or a tenant with no public card at all, which is none.
	if after != "" {
		first, err := s.Search.Public(ctx, tenant, "", 1)
		if err != nil {
			return CatalogPage{}, err
		}
		if len(first.Cards) > 0 {
			return page, nil
		}
	}
	return CatalogPage{}, none
}
