package cards

import (
	"slices"
	"strings"
	"sync"
)

// scratch is per-search working memory sized to the index, reused through a pool so a search
// allocates almost nothing.
type scratch struct {
	acc     []uint32 // packed (matched, exact, weight) per document
	best    []uint8
	bits    []uint64
	touched []uint32
	termHit []uint32
	planes  planes
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

func (s *scratch) size(n int) {
	if cap(s.acc) < n {
		s.acc, s.best = make([]uint32, n), make([]uint8, n)
	}
	s.acc, s.best = s.acc[:n], s.best[:n]
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
	// Ranking skips removed documents itself; it needs accept only for the other checks.
	rankAccept := accept
	if p.name == "" && len(p.resources) == 0 && readable == nil {
		rankAccept = nil
	}
	s := scratchPool.Get().(*scratch)
	defer scratchPool.Put(s)
	s.size(len(x.docs))
	if len(p.terms) > 0 {
		if rankAccept == nil {
			return x.rankedBits(p, cand, s)
		}
		return x.ranked(p, cand, rankAccept, s)
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

// ranked scores the matches of q: per document, how many distinct query tokens matched, how many
// whole, and the sum of the best fields they matched in, accumulated as one packed key (see
// packKey); then the page in answer order.
func (x *tenantIndex) ranked(p *plan, cand []uint32, accept func(uint32) bool, s *scratch) ([]candidate, int, *position) {
	if cand != nil {
		for _, n := range cand {
			s.set(n)
		}
	}
	// skip says whether a posting is out: removed, or not among the filtered candidates. With no
	// removed documents and no filter (the common case) nothing is skipped.
	anyDead := x.live != len(x.docs)
	skip := func(n uint32) bool {
		return (anyDead && !x.docs[n].alive) || (cand != nil && !s.has(n))
	}
	acc := s.acc
	for _, t := range p.terms {
		var exactList []uint32
		if l := x.terms[t.text]; l != nil {
			exactList = *l
		}
		var prefixLists [][]uint32
		if t.prefix {
			for _, tok := range x.vocab3[t.text[:minPrefix]] {
				if tok != t.text && strings.HasPrefix(tok, t.text) {
					prefixLists = append(prefixLists, *x.terms[tok])
				}
			}
		}
		if len(prefixLists) == 0 {
			// One list: each document appears once, so it adds straight to the key.
			for _, e := range exactList {
				n := e >> 2
				if skip(n) {
					continue
				}
				if acc[n] == 0 {
					s.touched = append(s.touched, n)
				}
				acc[n] += 1<<16 | 1<<8 | e&3
			}
			continue
		}
		// Several lists: keep the best field per document first. best holds the field in bits
		// 0-1 and bit 2 when the whole token matched.
		s.termHit = s.termHit[:0]
		visit := func(list []uint32, exact uint8) {
			for _, e := range list {
				n, f := e>>2, uint8(e&3)
				if skip(n) {
					continue
				}
				b := s.best[n]
				if b == 0 {
					s.termHit = append(s.termHit, n)
				}
				if f > b&3 {
					b = b&4 | f
				}
				s.best[n] = b | exact
			}
		}
		visit(exactList, 4)
		for _, l := range prefixLists {
			visit(l, 0)
		}
		for _, n := range s.termHit {
			if acc[n] == 0 {
				s.touched = append(s.touched, n)
			}
			b := uint32(s.best[n])
			acc[n] += 1<<16 | (b>>2)<<8 | b&3
			s.best[n] = 0
		}
	}
	// Select the page without materialising every match: a bounded heap of (key, doc), where
	// most comparisons are one integer compare.
	sel := &selector{x: x, k: p.limit + 1}
	var afterKey uint32
	if p.after != nil {
		afterKey = packKey(p.after.Matched, p.after.Exact, p.after.Weight)
	}
	total := 0
	for _, n := range s.touched {
		key := acc[n]
		acc[n] = 0
		if accept != nil && !accept(n) {
			continue
		}
		total++
		if p.after != nil && (key > afterKey || key == afterKey && x.docs[n].agentID <= p.after.AgentID) {
			continue // on an earlier page
		}
		sel.offer(key, n)
	}
	top := sel.sorted()
	out := make([]candidate, len(top))
	for i, e := range top {
		out[i] = candidate{agentID: x.docs[e.n].agentID, matched: int(e.key >> 16), exact: int(e.key >> 8 & 0xff), weight: int(e.key & 0xff)}
	}
	page, next := p.cut(out)
	return page, total, next
}

// packKey orders like less: a greater key is an earlier answer. Each part fits in 8 bits (at
// most 32 terms, weight at most 3 per term).
func packKey(matched, exact, weight int) uint32 {
	return uint32(matched)<<16 | uint32(exact)<<8 | uint32(weight)
}

type keyed struct {
	key uint32
	n   uint32
}

// selector keeps the k best (key desc, agentId asc) entries offered, in a heap with the worst at
// the root.
type selector struct {
	x *tenantIndex
	k int
	h []keyed
}

// worse reports whether a comes after b in answer order.
func (s *selector) worse(a, b keyed) bool {
	if a.key != b.key {
		return a.key < b.key
	}
	return s.x.docs[a.n].agentID > s.x.docs[b.n].agentID
}

func (s *selector) offer(key, n uint32) {
	e := keyed{key, n}
	if len(s.h) < s.k {
		s.h = append(s.h, e)
		for i := len(s.h) - 1; i > 0; {
			parent := (i - 1) / 2
			if !s.worse(s.h[i], s.h[parent]) {
				break
			}
			s.h[i], s.h[parent] = s.h[parent], s.h[i]
			i = parent
		}
		return
	}
	if e.key < s.h[0].key || !s.worse(s.h[0], e) {
		return
	}
	s.h[0] = e
	for i := 0; ; {
		l, r, w := 2*i+1, 2*i+2, i
		if l < len(s.h) && s.worse(s.h[l], s.h[w]) {
			w = l
		}
		if r < len(s.h) && s.worse(s.h[r], s.h[w]) {
			w = r
		}
		if w == i {
			return
		}
		s.h[i], s.h[w] = s.h[w], s.h[i]
		i = w
	}
}

// sorted returns the kept entries best first.
func (s *selector) sorted() []keyed {
	slices.SortFunc(s.h, func(a, b keyed) int {
		switch {
		case s.worse(b, a):
			return -1
		case s.worse(a, b):
			return 1
		}
		return 0
	})
	return s.h
}
