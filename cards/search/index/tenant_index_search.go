package index

import (
	"math/bits"
	"slices"
	"strings"
	"sync"
)

// scratch is per-search working memory sized to the index, reused through a pool so a search
// allocates almost nothing.
type scratch struct {
	bits []uint64
	// preset says bits holds the documents the filters find (see Tenant.filterBits).
	preset bool
	// matches holds a filtered search's matches (see ordered).
	matches []uint32
	// The ranking of q (see ranked): the terms' weights and lists, and each ranker's block.
	weights []float64
	terms   []termList
	parts   [2]scorePart
}

// scorePart is one ranker's working memory in the ranking of q: by document of the block being
// ranked, its score so far, its words matched and its best match of the term being read, with
// the documents of that term met so far; and by list read, where the block's entries start.
// Every entry of score, best and matched is zero between blocks.
type scorePart struct {
	score   []float64
	best    []float64
	matched []uint8
	touched []uint32
	readers []reader
	others  []reader
	// A block ranked in two passes (see rankRequired): sets of its documents (those seen, the
	// candidates, the eligible ones, and those each term holds), each term's best counts, each
	// term's bound in the last such block, the share of the documents holding each term, and
	// the matches of counts in the shortest card.
	sets   []uint64
	counts []blockCounts
	ubs    []float64
	shares []float64
	sat    shortMatches
}

// size makes the block's arrays hold a block.
func (p *scorePart) size() {
	if len(p.score) != blockDocs {
		p.score, p.best, p.matched = make([]float64, blockDocs), make([]float64, blockDocs), make([]uint8, blockDocs)
	}
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

func (s *scratch) size(n int) {
	words := (n + 63) / 64
	if cap(s.bits) < words {
		s.bits = make([]uint64, words)
	}
	s.bits = s.bits[:words]
	clear(s.bits)
}

func (s *scratch) set(n uint32)      { s.bits[n>>6] |= 1 << (n & 63) }
func (s *scratch) has(n uint32) bool { return s.bits[n>>6]&(1<<(n&63)) != 0 }

// filterLists returns the posting lists every match must be in, the names' trigrams' apart, and
// false when some filter value is in no card at all.
func (x *Tenant) filterLists(p *Plan) ([][]uint32, []*plist, bool) {
	var lists [][]uint32
	var grams []*plist
	for _, group := range []struct {
		m      map[string][]uint32
		values []string
	}{{x.protocols, p.protocols}, {x.tags, p.tags}, {x.caps, p.capabilities}} {
		for _, v := range group.values {
			l, ok := group.m[v]
			if !ok {
				return nil, nil, false
			}
			lists = append(lists, l)
		}
	}
	for _, g := range trigramsOf(p.name) {
		l, ok := x.trigrams[g]
		if !ok {
			return nil, nil, false
		}
		grams = append(grams, l)
	}
	return lists, grams, true
}

// candidates returns the documents in every list and in the trigrams' lists, in order, or some
// more of the latter (see fewCandidates); nil when there are no lists (every document is a
// candidate).
func candidates(lists [][]uint32, grams []*plist) []uint32 {
	if len(lists) == 0 && len(grams) == 0 {
		return nil
	}
	slices.SortFunc(lists, func(a, b []uint32) int { return len(a) - len(b) })
	slices.SortFunc(grams, func(a, b *plist) int { return a.Len() - b.Len() })
	var cand []uint32
	if len(grams) > 0 && (len(lists) == 0 || grams[0].Len() < len(lists[0])) {
		cand = grams[0].docs()
		grams = grams[1:]
	} else {
		cand, lists = lists[0], lists[1:]
	}
	for _, l := range lists {
		cand = intersect(cand, l)
	}
	// The trigrams only narrow the documents the name's substring is looked for in (accept
	// looks, at a few nanoseconds a card): past the shortest lists, or once few candidates are
	// left, looking costs less than reading more lists.
	for i, l := range grams {
		if len(cand) <= fewCandidates || i >= moreGrams {
			break
		}
		cand = l.intersect(cand)
	}
	return cand
}

// fewCandidates is how many documents a name filter's candidates may number when its trigrams'
// lists are no longer read, and moreGrams how many lists it reads besides the shortest.
const (
	fewCandidates = 256
	moreGrams     = 2
)

// Search answers p from the index: the page, the count of every match and the next page's
// position (nil on the last page). readable, when not nil, says which agents the caller may read
// (it may be called from two goroutines at once);
// online, when the plan filters on liveness, which documents are online. The caller holds the
// read lock.
func (x *Tenant) Search(p *Plan, readable func(string) bool, online *Online) ([]Candidate, int, *Position) {
	lists, grams, any := x.filterLists(p)
	if !any {
		return nil, 0, nil
	}
	// The scratch goes back to the pool only from a search that ended: one that panicked (in
	// readable, say) may leave scores and counts that every search expects to find zero.
	s := scratchPool.Get().(*scratch)
	res, total, next := x.search(p, lists, grams, readable, online, s)
	scratchPool.Put(s)
	return res, total, next
}

// search is Search with the filters' lists and a scratch.
func (x *Tenant) search(p *Plan, lists [][]uint32, grams []*plist, readable func(string) bool, online *Online, s *scratch) ([]Candidate, int, *Position) {
	s.size(len(x.docs))
	// Filters most cards pass are intersected as bitmaps, into s.bits (preset); others as lists.
	s.preset = len(grams) == 0 && x.dense(lists)
	var cand []uint32 // nil: every document, unless preset
	if s.preset {
		x.filterBits(lists, s)
	} else {
		cand = candidates(lists, grams)
	}
	// Statuses need checking unless the plan finds every status a live card has; so do the
	// verified and trusted filters, when given.
	status := p.signed() || p.statuses != allStatuses && !(p.statuses == defaultStatuses && x.disabled == 0)
	// accept applies what postings cannot: removal, the exact substring, resources, status,
	// liveness, permission.
	accept := func(n uint32) bool {
		d := &x.docs[n]
		return d.alive && (p.name == "" || strings.Contains(d.name, p.name)) &&
			coversAll(d.patterns(), p.resources) && (!status || p.statuses&d.status != 0 && p.findsSigned(d.verified, d.trusted)) &&
			(online == nil || p.findsOnline(online.has(n))) && (readable == nil || readable(d.agentID))
	}
	// Ranking skips removed documents itself, and narrows by liveness itself; it needs accept
	// only for the other checks.
	rankAccept := accept
	if p.name == "" && len(p.resources) == 0 && !status && readable == nil {
		rankAccept = nil
	}
	if len(p.terms) > 0 {
		return x.ranked(p, cand, rankAccept, s, online)
	}
	if s.preset {
		return x.orderedBits(p, accept, rankAccept == nil && online == nil, s)
	}
	unfiltered := cand == nil && p.name == "" && len(p.resources) == 0 && readable == nil
	if unfiltered && !p.signed() && online != nil {
		return x.byLiveness(p, online)
	}
	if unfiltered && !p.signed() && p.statuses == defaultStatuses && x.disabled > 0 {
		return x.allButDisabled(p)
	}
	return x.ordered(p, cand, unfiltered && !status, accept, s)
}

// orderedBits is ordered for the documents in s.bits (preset: live, of the filters), accept
// checking the rest unless trivial (it would take every one).
func (x *Tenant) orderedBits(p *Plan, accept func(uint32) bool, trivial bool, s *scratch) ([]Candidate, int, *Position) {
	total := 0
	for w, word := range s.bits {
		if trivial {
			total += bits.OnesCount64(word)
			continue
		}
		for rest := word; rest != 0; rest &= rest - 1 {
			n := uint32(w*64 + bits.TrailingZeros64(rest))
			if accept(n) {
				total++
			} else {
				s.bits[w] &^= 1 << (n & 63)
			}
		}
	}
	start := x.pageStart(p)
	var page []Candidate
	for _, n := range x.order[start:] {
		if len(page) > p.limit {
			break
		}
		if s.has(n) {
			page = append(page, Candidate{agentID: x.docs[n].agentID})
		}
	}
	page, next := p.cut(page)
	return page, total, next
}

// pageStart is where in agentId order the plan's page starts: after its cursor's agent.
func (x *Tenant) pageStart(p *Plan) int {
	if p.after == nil {
		return 0
	}
	start, _ := slices.BinarySearchFunc(x.order, p.after.AgentID, x.cmpAgent)
	if start < len(x.order) && x.docs[x.order[start]].agentID == p.after.AgentID {
		start++
	}
	return start
}

// allButDisabled pages through every live card but the disabled ones, in agentId order: the
// default listing of a tenant that has some, without testing every card for the count.
func (x *Tenant) allButDisabled(p *Plan) ([]Candidate, int, *Position) {
	start := x.pageStart(p)
	var page []Candidate
	for _, n := range x.order[start:] {
		if len(page) > p.limit {
			break
		}
		if x.docs[n].status != bitDisabled {
			page = append(page, Candidate{agentID: x.docs[n].agentID})
		}
	}
	page, next := p.cut(page)
	return page, x.live - x.disabled, next
}

// byLiveness pages through the live cards of the plan's statuses that are online (or not), in
// agentId order: a listing by liveness alone, counted from the online set instead of testing
// every card.
func (x *Tenant) byLiveness(p *Plan, online *Online) ([]Candidate, int, *Position) {
	total := 0
	for i := range online.count {
		switch {
		case p.statuses&(1<<i) == 0:
		case p.online > 0:
			total += online.count[i]
		default:
			total += online.live[i] - online.count[i]
		}
	}
	start := x.pageStart(p)
	var page []Candidate
	for _, n := range x.order[start:] {
		if len(page) > p.limit {
			break
		}
		if d := &x.docs[n]; p.statuses&d.status != 0 && p.findsOnline(online.has(n)) {
			page = append(page, Candidate{agentID: d.agentID})
		}
	}
	page, next := p.cut(page)
	return page, total, next
}

// ordered pages through the matches in agentId order (no q). everything: every live card matches.
func (x *Tenant) ordered(p *Plan, cand []uint32, everything bool, accept func(uint32) bool, s *scratch) ([]Candidate, int, *Position) {
	start := x.pageStart(p)
	var page []Candidate
	collect := func(n uint32) {
		if len(page) <= p.limit {
			page = append(page, Candidate{agentID: x.docs[n].agentID})
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
		matches := s.matches[:0]
		defer func() { s.matches = matches[:0] }()
		for _, n := range cand {
			if accept(n) {
				total++
				s.set(n)
				matches = append(matches, n)
			}
		}
		// The walk through the order below passes about limit/share of the cards to fill the
		// page, share being the matches' share of the cards; when that is more than sorting the
		// matches by agentId costs, they are sorted instead.
		walk := (p.limit + 1) * len(x.order) / max(1, len(matches))
		if 2*len(matches)*bits.Len(uint(len(matches))) < walk {
			slices.SortFunc(matches, func(a, b uint32) int { return strings.Compare(x.docs[a].agentID, x.docs[b].agentID) })
			from := 0
			if p.after != nil {
				from, _ = slices.BinarySearchFunc(matches, p.after.AgentID, x.cmpAgent)
				if from < len(matches) && x.docs[matches[from]].agentID == p.after.AgentID {
					from++
				}
			}
			for _, n := range matches[from:min(len(matches), from+p.limit+1)] {
				collect(n)
			}
			break
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
