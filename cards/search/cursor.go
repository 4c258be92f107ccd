package search

import (
	"github.com/agentcards/agentcards/tenants/paging"
)

// position is where a page ends, in the order of the answer (see less). Without q, only agentId
// counts.
type position struct {
	Matched int    `json:"m,omitempty"`
	Exact   int    `json:"e,omitempty"`
	Weight  int    `json:"w,omitempty"`
	AgentID string `json:"a"`
	Query   uint64 `json:"f"`
}

// before reports whether the position comes before c in answer order.
func (p position) before(c candidate) bool {
	return less(candidate{agentID: p.AgentID, matched: p.Matched, exact: p.Exact, weight: p.Weight}, c)
}

// cursorList names search cursors to the codec, so that another list's cursor is refused; a
// cursor of another query is refused by its fingerprint (Query).
const cursorList = "search"

func encodePosition(p position) string { return paging.EncodeCursor(cursorList, p) }

func decodePosition(s string) (position, error) {
	var p position
	if err := paging.DecodeCursor(cursorList, s, &p); err != nil {
		return position{}, err
	}
	if p.AgentID == "" || p.Matched < 0 || p.Matched > 32 || p.Exact < 0 || p.Exact > p.Matched || p.Weight < 0 || p.Weight > 3*p.Matched {
		return position{}, paging.ErrCursor
	}
	return p, nil
}
