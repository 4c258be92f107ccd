package cards

import (
	"slices"
	"strings"
	"sync"
)

// scratch is per-search working memory sized to the index, reused through a pool so a search
// allocates almost nothing.
type scratch struct {
	matched []uint8
	exact   []uint8
	weight  []uint16
	best    []uint8
	bits    []uint64
	touched []uint32
	termHit []uint32
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

func (s *scratch) size(n int) {
	if cap(s.matched) < n {
		s.matched, s.exact, s.weight, s.best = make([]uint8, n), make([]uint8, n), make([]uint16, n), make([]uint8, n)
	}
	s.matched, s.exact, s.weight, s.best = s.matched[:n], s.exact[:n], s.weight[:n], s.best[:n]
	words := (n + 63) / 64
	if cap(s.bits) < words {
		s.bits = make([]uint64, words)
	}
	s.bits = s.bits[:words]
	clear(s.bits)
	s.touched, s.termHit = s.touched[:0], s.termHit[:0]
}

func (s *scratch) set(n uint32)      { s.bits[n>>6] |= 1 << (n & 63) }
func (s *scratch) has(n uint32) bool { return s.bits[n>>6]&(1<<(n&63)) != 0 }

// filterLists returns the posting lists every match must be in, and false when some filter value
// is in no card at all.
func (x *tenantIndex) filterLists(p *plan) ([][]uint32, bool) {
	var lists [][]uint32
	for _, group := range []struct {
		m      map[string][]uint32
		values []string
	}{{x.protocols, p.protocols}, {x.tags, p.tags}, {x.caps, p.capabilities}} {
		for _, v := range group.values {
			l, ok := group.m[v]
			if !ok {
				return nil, false
			}
			lists = append(lists, l)
		}
	}
	for _, g := range trigramsOf(p.name) {
		l, ok := x.trigrams[g]
		if !ok {
			return nil, false
		}
		lists = append(lists, l)
	}
	return lists, true
}

// search answers p from the index. readable, when not nil, says which agents the caller may read.
// The caller holds mu for reading.
func (x *tenantIndex) search(p *plan, readable func(string) bool) ([]candidate, int, *position) {
	lists, any := x.filterLists(p)
	if !any {
		return nil, 0, nil
	}
	var cand []uint32 // nil: every document
	if len(lists) > 0 {
		slices.SortFunc(lists, func(a, b []uint32) int { return len(a) - len(b) })
		cand = lists[0]
		for _, l := range lists[1:] {
			cand = intersect(cand, l)
		}
	}
	// accept applies what postings cannot: liveness, the exact substring, resources, permission.
	accept := func(n uint32) bool {
		d := &x.docs[n]
		return d.alive && (p.name == "" || strings.Contains(d.name, p.name)) &&
			coversAll(d.resources, p.resources) && (readable == nil || readable(d.agentID))
	}
	s := scratchPool.Get().(*scratch)
	defer scratchPool.Put(s)
	s.size(len(x.docs))
	if len(p.terms) > 0 {
		return x.ranked(p, cand, accept, s)
	}
	everything := cand == nil && p.name == "" && len(p.resources) == 0 && readable == nil
	return x.ordered(p, cand, everything, accept, s)
}

// ordered pages through the matches in agentId order (no q). everything: every live card matches.
func (x *tenantIndex) ordered(p *plan, cand []uint32, everything bool, accept func(uint32) bool, s *scratch) ([]candidate, int, *position) {
	start := 0
	if p.after != nil {
		start, _ = slices.BinarySearchFunc(x.order, p.after.AgentID, x.cmpAgent)
		if start < len(x.order) && x.docs[x.order[start]].agentID == p.after.AgentID {
			start++
		}
	}
	var page []candidate
	collect := func(n uint32) {
		if len(page) <= p.limit {
			page = append(page, candidate{agentID: x.docs[n].agentID})
		}
	}
	total := 0
	switch {
	case everything:
		total = x.live
		for _, n := range x.order[start:min(len(x.order), start+p.limit+1)] {
			collect(n)
		}
	case cand == nil:
		for i, n := range x.order {
			if accept(n) {
				total++
				if i >= start {
					collect(n)
				}
			}
		}
	default:
		for _, n := range cand {
			if accept(n) {
				total++
				s.set(n)
			}
		}
		for _, n := range x.order[start:] {
			if len(page) > p.limit {
				break
			}
			if s.has(n) {
				collect(n)
			}
		}
	}
	page, next := p.cut(page)
	return page, total, next
}

// ranked scores the matches of q: per document, how many distinct query tokens matched and the
// sum of the best fields they matched in; then the page in answer order.
func (x *tenantIndex) ranked(p *plan, cand []uint32, accept func(uint32) bool, s *scratch) ([]candidate, int, *position) {
	if cand != nil {
		for _, n := range cand {
			s.set(n)
		}
	}
	for _, t := range p.terms {
		s.termHit = s.termHit[:0]
		// best holds the best field for this term in bits 0-1, and bit 2 when the whole token
		// matched.
		visit := func(list []uint32, exact uint8) {
			for _, e := range list {
				n, f := e>>2, uint8(e&3)
				if !x.docs[n].alive || (cand != nil && !s.has(n)) {
					continue
				}
				if s.best[n] == 0 {
					s.termHit = append(s.termHit, n)
				}
				if f > s.best[n]&3 {
					s.best[n] = s.best[n]&4 | f
				}
				s.best[n] |= exact
			}
		}
		visit(x.terms[t.text], 4)
		if t.prefix {
			for _, tok := range x.vocab3[t.text[:minPrefix]] {
				if tok != t.text && strings.HasPrefix(tok, t.text) {
					visit(x.terms[tok], 0)
				}
			}
		}
		for _, n := range s.termHit {
			if s.matched[n] == 0 {
				s.touched = append(s.touched, n)
			}
			s.matched[n]++
			s.exact[n] += s.best[n] >> 2
			s.weight[n] += uint16(s.best[n] & 3)
			s.best[n] = 0
		}
	}
	all := make([]candidate, 0, len(s.touched))
	for _, n := range s.touched {
		if accept(n) {
			all = append(all, candidate{agentID: x.docs[n].agentID, matched: int(s.matched[n]),
				exact: int(s.exact[n]), weight: int(s.weight[n])})
		}
		s.matched[n], s.exact[n], s.weight[n] = 0, 0, 0
	}
	page, next := p.page(all)
	return page, len(all), next
}
