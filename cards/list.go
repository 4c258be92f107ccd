package cards

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/agentcards/agentcards/authz"
	"github.com/agentcards/agentcards/tenants"
)

// Paging bounds of a list.
const (
	DefaultLimit = 20
	MaxLimit     = 100
)

// ListQuery asks for one page of a tenant's cards.
type ListQuery struct {
	Limit  int
	Cursor string
}

// Page is one page of cards in agentId order. NextCursor is empty on the last page.
type Page struct {
	Total      int    `json:"total"`
	Items      []Card `json:"items"`
	NextCursor string `json:"nextCursor,omitempty"`
}

// cursor is the decoded form of a page cursor: the last agentId the previous page showed.
// Keyset paging on agentId never repeats or skips a card that exists throughout, however others
// write meanwhile.
type cursor struct {
	Kind  string `json:"k"`
	After string `json:"a"`
}

const listCursorKind = "list"

func encodeCursor(c cursor) string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(s, kind string) (cursor, error) {
	bad := fmt.Errorf("cursor: not a cursor of this query: %w", ErrInvalid)
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return cursor{}, bad
	}
	var c cursor
	if err := json.Unmarshal(b, &c); err != nil || c.Kind != kind || c.After == "" {
		return cursor{}, bad
	}
	return c, nil
}

// List returns one page of the cards the caller may read.
func (s *Service) List(ctx context.Context, tenant tenants.ID, q ListQuery) (Page, error) {
	if q.Limit == 0 {
		q.Limit = DefaultLimit
	}
	if q.Limit < 1 || q.Limit > MaxLimit {
		return Page{}, fmt.Errorf("limit: must be between 1 and %d: %w", MaxLimit, ErrInvalid)
	}
	var after string
	if q.Cursor != "" {
		c, err := decodeCursor(q.Cursor, listCursorKind)
		if err != nil {
			return Page{}, err
		}
		after = c.After
	}
	ids, err := s.Store.IDs(ctx, tenant)
	if err != nil {
		return Page{}, err
	}
	slices.Sort(ids) // byte order, whatever the database's collation
	// Only readable cards count, so total and pages agree with what the caller can fetch.
	readable := ids[:0]
	for _, id := range ids {
		err := s.Authz.Check(ctx, string(tenant), authz.CardObject(id), authz.ActCardsRead)
		switch {
		case err == nil:
			readable = append(readable, id)
		case !errors.Is(err, authz.ErrForbidden):
			return Page{}, err
		}
	}
	start := sort.SearchStrings(readable, after)
	if start < len(readable) && readable[start] == after {
		start++
	}
	end := min(start+q.Limit, len(readable))
	page := Page{Total: len(readable), Items: []Card{}}
	if start < end {
		items, err := s.Store.GetMany(ctx, tenant, readable[start:end])
		if err != nil {
			return Page{}, err
		}
		page.Items = items
	}
	if end < len(readable) && len(page.Items) > 0 {
		page.NextCursor = encodeCursor(cursor{Kind: listCursorKind, After: page.Items[len(page.Items)-1].AgentID})
	}
	return page, nil
}
