package index

import "slices"

// A search may order the first matches of q again, as a block, by more than the words they match
// (package search re-ranks them by a sentence encoder). Its pages inside that block continue at an
// offset into it (Position.Block), not after a card of the plain ranking; the page that reaches
// the block's end goes on with the plain ranking after the block's last card, whose positions
// continue as usual. These are the plan's parts such a search reads and pages with.

// Ranked reports whether the plan ranks its matches by q.
func (p *Plan) Ranked() bool { return len(p.terms) > 0 }

// Limit is the most matches a page of the plan holds.
func (p *Plan) Limit() int { return p.limit }

// Block is where in a re-ranked block the plan's page starts, from its cursor: the offset, and
// the agent of the card before it; 0 and "" when the cursor is not one of a block, or there is
// none.
func (p *Plan) Block() (offset int, after string) {
	if p.after == nil || p.after.Block == 0 {
		return 0, ""
	}
	return p.after.Block, p.after.AgentID
}

// Resumed reports whether the plan's page starts after a card of the plain ranking (its cursor
// is one of those).
func (p *Plan) Resumed() bool { return p.after != nil && p.after.Block == 0 }

// Paged is the plan for a page of up to limit matches after position (nil: from the first), its
// filters and q the same. It ranks with a basis of its own.
func (p *Plan) Paged(limit int, after *Position) Plan {
	c := *p
	c.limit, c.after, c.basis = limit, after, nil
	c.terms = slices.Clone(p.terms)
	return c
}

// BlockPosition is the position of a page that starts at offset in the re-ranked block; last is
// the agent of the card before it.
func (p *Plan) BlockPosition(offset int, last string) *Position {
	return &Position{Block: offset, AgentID: last, Query: p.fingerprint}
}

// MaxBlock bounds a re-ranked block, and so a cursor's offset into one.
const MaxBlock = 1000
