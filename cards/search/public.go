package search

import (
	"context"
	"errors"
	"slices"
	"sort"

	"github.com/agentcards/agentcards/authz"
	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/tenants"
)

// PublicPage is one page of a tenant's public cards, in agentId (byte) order.
type PublicPage struct {
	Cards []cards.Card
	// Next is the agentId the next page starts after; empty when no public card follows, so
	// that no cursor leads to an empty page.
	Next string
}

// Public returns up to limit of the tenant's public cards after the agentId after (from the
// start when empty). It needs no caller: a public card is readable by anyone. A tenant that does
// not exist or is suspended answers as one without public cards, so nobody learns from this
// open list which tenants exist. With an Index it
// costs one query for the page however few of the tenant's cards are public; without one it
// reads the tenant's cards in batches until the page is full, with the same answers.
func (s *Service) Public(ctx context.Context, tenant tenants.ID, after string, limit int) (PublicPage, error) {
	if limit < 1 || limit > MaxLimit {
		return PublicPage{}, fault.Errorf(fault.Invalid, "limit: must be between 1 and %d", MaxLimit)
	}
	if err := authz.Visitor(ctx); err != nil {
		return PublicPage{}, err
	}
	ctx, err := s.Gate.EnterPublished(ctx, string(tenant))
	if errors.Is(err, tenants.ErrNotFound) {
		return PublicPage{}, nil
	}
	if err != nil {
		return PublicPage{}, err
	}
	if s.Index != nil {
		return s.publicFromIndex(ctx, tenant, after, limit)
	}
	ids, err := s.Store.IDs(ctx, tenant)
	if err != nil {
		return PublicPage{}, err
	}
	slices.Sort(ids)
	start := sort.SearchStrings(ids, after)
	if start < len(ids) && ids[start] == after {
		start++
	}
	page := PublicPage{Cards: []cards.Card{}}
	// Visibility lives in the document, so cards are read in batches until the page is full and
	// one more public card is found: only that one proves a next page exists (private cards after
	// the last one must not earn a cursor to an empty page, which the index never gives either).
	for start < len(ids) && len(page.Cards) <= limit {
		end := min(start+max(limit+1, scanBatch), len(ids))
		batch, err := s.Store.GetMany(ctx, tenant, ids[start:end])
		if err != nil {
			return PublicPage{}, err
		}
		for _, c := range batch {
			if c.Visibility == cards.VisibilityPublic && !c.Disabled() && len(page.Cards) <= limit {
				page.Cards = append(page.Cards, c)
			}
		}
		start = end
	}
	if len(page.Cards) > limit {
		page.Cards = page.Cards[:limit]
		page.Next = page.Cards[limit-1].AgentID
	}
	return page, nil
}

// publicFromIndex pages through the public cards the index knows.
func (s *Service) publicFromIndex(ctx context.Context, tenant tenants.ID, after string, limit int) (PublicPage, error) {
	ids, more, err := s.Index.publicAfter(ctx, tenant, after, limit)
	if err != nil {
		return PublicPage{}, err
	}
	var found []cards.Card
	if !tenants.Stale(ctx) {
		if found, err = s.Store.GetMany(ctx, tenant, ids); err != nil && !tenants.FoundDown(ctx, err) {
			return PublicPage{}, err
		}
		// Else the database stopped answering since the gate let the request in: memory
		// answers, as below.
	}
	if tenants.Stale(ctx) {
		// The database did not answer the gate: memory answers, if it holds every card of the
		// page (the outage copy, or the cards read before).
		for _, id := range ids {
			c, ok := s.Index.Remembered(tenant, id)
			if !ok {
				return PublicPage{}, errNotInMemory
			}
			found = append(found, c)
		}
	}
	page := PublicPage{Cards: []cards.Card{}}
	for _, c := range found {
		if c.Visibility == cards.VisibilityPublic && !c.Disabled() { // it may have changed since the index answered
			page.Cards = append(page.Cards, c)
		}
	}
	if more && len(ids) > 0 {
		page.Next = ids[len(ids)-1]
	}
	return page, nil
}

// publicAfter returns up to limit agentIds of the tenant's public cards after the agentId after,
// in order, and whether more follow.
func (ix *Index) publicAfter(ctx context.Context, tenant tenants.ID, after string, limit int) ([]string, bool, error) {
	e, err := ix.entry(ctx, tenant)
	if err != nil {
		return nil, false, err
	}
	e.x.RLock()
	defer e.x.RUnlock()
	ids, more := e.x.PublicAfter(after, limit)
	return ids, more, nil
}
