package index

import (
	"github.com/agentcards/agentcards/tenants/paging"
)

// Position is where a page ends, in the order of the answer (see less): the last card's score and
// words matched, and its agentId. Without q, only agentId counts.
type Position struct {
	Score   float64 `json:"s,omitempty"`
	Matched int     `json:"m,omitempty"`
	AgentID string  `json:"a"`
	Query   uint64  `json:"f"`
	// Block, when not 0, is where the page starts in a re-ranked block (see Plan.Block): then
	// AgentID is the card before it, and Score and Matched are 0.
	Block int `json:"b,omitempty"`
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
	if p.AgentID == "" || p.Matched < 0 || p.Matched > 32 || !(p.Score >= 0 && p.Score <= 1) || p.Block < 0 || p.Block > MaxBlock ||
		p.Block > 0 && (p.Score != 0 || p.Matched != 0) {
		return Position{}, paging.ErrCursor
	}
	return p, nil
}
