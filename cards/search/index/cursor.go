package index

import (
	"github.com/agentcards/agentcards/tenants/paging"
)

// Position is where a page ends, in the order of the answer (see less). Without q, only agentId
// counts.
type Position struct {
	Matched int    `json:"m,omitempty"`
	Exact   int    `json:"e,omitempty"`
	Weight  int    `json:"w,omitempty"`
	AgentID string `json:"a"`
	Query   uint64 `json:"f"`
}

// before reports whether the position comes before c in answer order.
func (p Position) before(c Candidate) bool {
	return less(Candidate{agentID: p.AgentID, matched: p.Matched, exact: p.Exact, weight: p.Weight}, c)
}

// cursorList names search cursors to the codec, so that another list's cursor is refused; a
// cursor of another query is refused by its fingerprint (Query).
const cursorList = "search"

// Cursor is the cursor of the page that starts after p.
func (p Position) Cursor() string { return encodePosition(p) }

func encodePosition(p Position) string { return paging.EncodeCursor(cursorList, p) }

func decodePosition(s string) (Position, error) {
	var p Position
	if err := paging.DecodeCursor(cursorList, s, &p); err != nil {
		return Position{}, err
	}
	if p.AgentID == "" || p.Matched < 0 || p.Matched > 32 || p.Exact < 0 || p.Exact > p.Matched || p.Weight < 0 || p.Weight > 3*p.Matched {
		return Position{}, paging.ErrCursor
	}
	return p, nil
}
