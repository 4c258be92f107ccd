package index

import (
	"math/bits"
	"slices"
	"strings"
	"sync"
)

// Bit-sliced ranking. For a free-text query without per-card checks, scores are computed 64
// documents at a time: each query term becomes bitmaps (present, matched whole, best field), and
// the per-document counts (matched, exact, weight) are kept as bit planes, added with carries
// like a ripple adder. The page is then found by narrowing a bitmap plane by plane from the most
// significant bit of the key, so no per-document key is ever materialised except for the page.

// keyPlanes is the number of bit planes of a key: 6 for matched, 6 for exact, 7 for weight.
const keyPlanes = 19

// planes is the working memory of one bit-sliced ranking, sized to the index.
type planes struct {
	words int
	key   [keyPlanes][]uint64 // most significant first: matched[5..0], exact[5..0], weight[6..0]
	union []uint64
	filt  []uint64
	tp    []uint64 // the term is present
	te    []uint64 // the term is present as a whole token
	tf    [2][]uint64
	c     []uint64 // selection work
	a     []uint64
}

func (pl *planes) size(words int) {
	grow := func(b []uint64) []uint64 {
		if cap(b) < words {
			return make([]uint64, words)
		}
		b = b[:words]
		clear(b)
		return b
	}
	pl.words = words
	for i := range pl.key {
		pl.key[i] = grow(pl.key[i])
	}
	pl.union, pl.filt, pl.tp, pl.te = grow(pl.union), grow(pl.filt), grow(pl.tp), grow(pl.te)
	pl.tf[0], pl.tf[1], pl.c, pl.a = grow(pl.tf[0]), grow(pl.tf[1]), grow(pl.c), grow(pl.a)
}

func setBit(b []uint64, n uint32)      { b[n>>6] |= 1 << (n & 63) }
func hasBit(b []uint64, n uint32) bool { return b[n>>6]&(1<<(n&63)) != 0 }

// add adds the 1-bit values v to the counter whose planes are given least significant first.
func add(counter [][]uint64, w int, v uint64) {
	for _, plane := range counter {
		if v == 0 {
			return
		}
		carry := plane[w] & v
		plane[w] ^= v
		v = carry
	}
}

// rankedBits scores the matches of q and returns the page. accept, when not nil, is the check
// postings cannot make (the exact name substring, resources, permission); it is applied to the
// matches only.
//
// online, when the plan filters on liveness, narrows the documents scored as postings do.
func (x *Tenant) rankedBits(p *Plan, cand []uint32, accept func(uint32) bool, s *scratch, online *Online) ([]Candidate, int, *Position) {
	pl := &s.planes
	pl.size((len(x.docs) + 63) / 64)
	x.scorable(p, pl, cand, online)
	x.score(p, pl)
	if accept != nil {
		pl.refuse(accept)
	}
	total := count(pl.union)
	x.afterCursor(p, pl)
	need := pl.narrow(p.limit + 1)
	res, next := p.cut(x.pageOf(pl, need))
	return res, total, next
}

// scorable sets pl.filt to the documents worth scoring: the live ones among cand (every live
// one when cand is nil), narrowed by liveness when the plan filters on it.
func (x *Tenant) scorable(p *Plan, pl *planes, cand []uint32, online *Online) {
	if cand == nil {
		copy(pl.filt, x.alive)
	} else {
		for _, n := range cand {
			setBit(pl.filt, n)
		}
		for w := range pl.filt {
			pl.filt[w] &= x.alive[w]
		}
	}
	if online != nil {
		for w := range pl.filt {
			if p.online > 0 {
				pl.filt[w] &= online.bits[w]
			} else {
				pl.filt[w] &^= online.bits[w]
			}
		}
	}
}

// score scores every scorable document into the key planes and sets pl.union to the matches.
// On a large index the two halves are scored at once: each half sets and adds bits only in its
// own words, so the halves share nothing.
func (x *Tenant) score(p *Plan, pl *planes) {
	if pl.words < parallelWords {
		x.scoreWords(p, pl, 0, pl.words)
		return
	}
	mid := pl.words / 2
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		x.scoreWords(p, pl, mid, pl.words)
	}()
	x.scoreWords(p, pl, 0, mid)
	wg.Wait()
}

// refuse drops from the matches the documents accept refuses. It runs after scoring, so the
// check is made on matches only.
func (pl *planes) refuse(accept func(uint32) bool) {
	for w, u := range pl.union {
		for m := u; m != 0; m &= m - 1 {
			n := uint32(w*64 + bits.TrailingZeros64(m))
			if !accept(n) {
				pl.union[w] &^= 1 << (n & 63)
			}
		}
	}
}

// afterCursor sets pl.c to the matches eligible for the page: all of them, or with a cursor those
// after it in answer order (a lower key, or the same key and a greater agentId).
func (x *Tenant) afterCursor(p *Plan, pl *planes) {
	copy(pl.c, pl.union)
	if p.after == nil {
		return
	}
	k := uint32(p.after.Matched)<<13 | uint32(p.after.Exact)<<7 | uint32(p.after.Weight)
	for w := range pl.words {
		u := pl.union[w]
		if u == 0 {
			continue
		}
		lt, eq := uint64(0), u
		for i := range keyPlanes {
			plane := pl.key[i][w]
			if k>>(keyPlanes-1-i)&1 == 1 {
				lt |= eq &^ plane
				eq &= plane
			} else {
				eq &^= plane
			}
		}
		// Equal keys continue after the cursor's agentId.
		for m := eq; m != 0; m &= m - 1 {
			n := uint32(w*64 + bits.TrailingZeros64(m))
			if x.docs[n].agentID <= p.after.AgentID {
				eq &^= 1 << (n & 63)
			}
		}
		pl.c[w] = lt | eq
	}
}

// narrow finds the best need eligible documents, plane by plane from the most significant bit
// of the key: pl.a collects the documents surely on the page, pl.c keeps those tied at the
// threshold key. It returns how many of the tied ones the page still takes (the first by
// agentId).
func (pl *planes) narrow(need int) int {
	if count(pl.c) <= need {
		copy(pl.a, pl.c)
		clear(pl.c)
		return 0
	}
	for i := range keyPlanes {
		plane := pl.key[i]
		hits := 0
		for w, c := range pl.c {
			hits += bits.OnesCount64(c & plane[w])
		}
		if hits >= need {
			for w := range pl.c {
				pl.c[w] &= plane[w]
			}
			continue
		}
		for w := range pl.c {
			pl.a[w] |= pl.c[w] & plane[w]
			pl.c[w] &^= plane[w]
		}
		need -= hits
	}
	return need
}

// keyOf reads a document's key off the planes, in packKey's layout.
func (pl *planes) keyOf(n uint32) uint32 {
	var k uint32
	for i := range keyPlanes {
		k = k<<1 | uint32(pl.key[i][n>>6]>>(n&63)&1)
	}
	return packKey(int(k>>13), int(k>>7&63), int(k&127))
}

// pageOf returns the page narrow selected, in answer order: the documents of pl.a sorted by
// key, then the first need of the tied ones in pl.c by agentId. Only the page's keys are ever
// read off the planes.
func (x *Tenant) pageOf(pl *planes, need int) []Candidate {
	var page []keyed
	for w, a := range pl.a {
		for m := a; m != 0; m &= m - 1 {
			n := uint32(w*64 + bits.TrailingZeros64(m))
			page = append(page, keyed{pl.keyOf(n), n})
		}
	}
	slices.SortFunc(page, func(a, b keyed) int {
		switch {
		case x.worse(b, a):
			return -1
		case x.worse(a, b):
			return 1
		}
		return 0
	})
	if need > 0 {
		page = append(page, x.firstByAgent(pl.c, need, pl.keyOf)...)
	}
	out := make([]Candidate, len(page))
	for i, e := range page {
		out[i] = Candidate{agentID: x.docs[e.n].agentID, matched: int(e.key >> 16), exact: int(e.key >> 8 & 0xff), weight: int(e.key & 0xff)}
	}
	return out
}

func count(b []uint64) int {
	c := 0
	for _, w := range b {
		c += bits.OnesCount64(w)
	}
	return c
}

// firstByAgent returns the need documents of set with the smallest agentIds, in that order.
func (x *Tenant) firstByAgent(set []uint64, need int, keyOf func(uint32) uint32) []keyed {
	var out []keyed
	if c := count(set); c*16 < len(x.order) {
		for w, b := range set {
			for m := b; m != 0; m &= m - 1 {
				n := uint32(w*64 + bits.TrailingZeros64(m))
				out = append(out, keyed{keyOf(n), n})
			}
		}
		slices.SortFunc(out, func(a, b keyed) int { return strings.Compare(x.docs[a.n].agentID, x.docs[b.n].agentID) })
		return out[:min(need, len(out))]
	}
	for _, n := range x.order {
		if hasBit(set, n) {
			out = append(out, keyed{keyOf(n), n})
			if len(out) == need {
				break
			}
		}
	}
	return out
}

// parallelWords is the index size, in 64-document words, from which scoring is split in two.
// A variable so that tests can split small indexes too.
var parallelWords = 512

// scoreWords scores the documents of words [wlo, whi): for each term, its bitmaps from the
// postings that fall in the range, then the bit-sliced additions into the key planes.
//
// The additions stay in this loop rather than in a helper: add inlines into it, and the
// counters are built once per call rather than once per term.
func (x *Tenant) scoreWords(p *Plan, pl *planes, wlo, whi int) {
	// Counters, least significant plane first.
	matched := [][]uint64{pl.key[5], pl.key[4], pl.key[3], pl.key[2], pl.key[1], pl.key[0]}
	exact := [][]uint64{pl.key[11], pl.key[10], pl.key[9], pl.key[8], pl.key[7], pl.key[6]}
	weight := [][]uint64{pl.key[18], pl.key[17], pl.key[16], pl.key[15], pl.key[14], pl.key[13], pl.key[12]}
	for _, t := range p.terms {
		x.termWords(pl, t.text, wlo, whi)
		if t.prefix {
			x.prefixWords(pl, t.text, wlo, whi)
		}
		for w := wlo; w < whi; w++ {
			v := pl.tp[w] & pl.filt[w]
			if v == 0 {
				continue
			}
			pl.union[w] |= v
			add(matched, w, v)
			add(exact, w, pl.te[w]&v)
			add(weight, w, pl.tf[0][w]&v)
			add(weight[1:], w, pl.tf[1][w]&v)
		}
	}
}

// inRange cuts a posting list (sorted by document) to the documents of words [wlo, whi).
func inRange(list []uint32, wlo, whi int) []uint32 {
	a, _ := slices.BinarySearch(list, uint32(wlo*64)<<2)
	b, _ := slices.BinarySearch(list, uint32(whi*64)<<2)
	return list[a:b]
}

// termWords sets the term bitmaps of words [wlo, whi) (pl.tp, pl.te, pl.tf) to the word tok as a
// whole token: copied from its bitmaps when it is in many cards, else set entry by entry.
func (x *Tenant) termWords(pl *planes, tok string, wlo, whi int) {
	tp, te, tf0, tf1 := pl.tp[wlo:whi], pl.te[wlo:whi], pl.tf[0][wlo:whi], pl.tf[1][wlo:whi]
	clear(tp)
	clear(te)
	clear(tf0)
	clear(tf1)
	l := x.terms[tok]
	if l == nil {
		return
	}
	if b := x.denseBits(tok, *l); b != nil {
		copy(tp, b.present[wlo:whi])
		copy(te, b.present[wlo:whi])
		copy(tf0, b.f0[wlo:whi])
		copy(tf1, b.f1[wlo:whi])
		return
	}
	for _, e := range inRange(*l, wlo, whi) {
		n, f := e>>2, e&3
		setBit(pl.tp, n)
		setBit(pl.te, n)
		if f&1 != 0 {
			setBit(pl.tf[0], n)
		}
		if f&2 != 0 {
			setBit(pl.tf[1], n)
		}
	}
}

// prefixWords adds to the term bitmaps of words [wlo, whi) the longer words that start with the
// prefix: each document that holds one is present, with the best field of any.
func (x *Tenant) prefixWords(pl *planes, prefix string, wlo, whi int) {
	for _, tok := range x.vocab3[prefix[:minPrefix]] {
		if tok == prefix || !strings.HasPrefix(tok, prefix) {
			continue
		}
		l := *x.terms[tok]
		if b := x.denseBits(tok, l); b != nil {
			pl.widenBits(b, wlo, whi)
		} else {
			pl.widenEntries(inRange(l, wlo, whi))
		}
	}
}

// widenBits adds a word found in many cards to the term bitmaps of words [wlo, whi), from its
// bitmaps. The best field so far and this word's are 2-bit numbers sliced into two planes: each
// document keeps the larger (a document without the word counts as 0).
func (pl *planes) widenBits(b *termBits, wlo, whi int) {
	tp, tf0, tf1 := pl.tp[wlo:whi], pl.tf[0][wlo:whi], pl.tf[1][wlo:whi]
	for w := range tp {
		a1, a0 := tf1[w], tf0[w]
		b1, b0 := b.f1[wlo+w], b.f0[wlo+w]
		tf0[w] = ^(a1^b1)&(a0|b0) | a1&^b1&a0 | b1&^a1&b0
		tf1[w] = a1 | b1
		tp[w] |= b.present[wlo+w]
	}
}

// widenEntries adds a word to the term bitmaps entry by entry, from its posting list cut to the
// range: each document is present and keeps the better of its field so far and this word's.
func (pl *planes) widenEntries(list []uint32) {
	for _, e := range list {
		n, f := e>>2, e&3
		old := uint32(0)
		if hasBit(pl.tf[0], n) {
			old |= 1
		}
		if hasBit(pl.tf[1], n) {
			old |= 2
		}
		setBit(pl.tp, n)
		if f > old {
			if f&1 != 0 {
				setBit(pl.tf[0], n)
			} else {
				pl.tf[0][n>>6] &^= 1 << (n & 63)
			}
			if f&2 != 0 {
				setBit(pl.tf[1], n)
			}
		}
	}
}

// Dense terms. A word found in many cards ("invoice" in most of a corpus about invoices) has a
// long posting list, and setting a bit per entry on every query is most of such a query's cost.
// For those words the index keeps the list as bitmaps, built on the first query that needs them
// and dropped by any change to the index (the next query builds them again): copying a few
// thousand words replaces a hundred thousand bit settings.

// denseMin is the share of the documents (1/denseMin) a word's list must reach to be kept as
// bitmaps, where copying bitmaps costs less than setting bits entry by entry; denseEntries the
// least entries (a variable so that tests can use bitmaps on small indexes).
const denseMin = 32

var denseEntries = 1024

// denseMax bounds the words kept as bitmaps at once (each costs 3 bits per document).
const denseMax = 256

// termBits is a word's posting list as bitmaps: the documents that hold it, and the two bits of
// the best field it occurs in.
type termBits struct {
	present, f0, f1 []uint64
}

type denseEntry struct {
	once sync.Once
	bits termBits
}

// denseCache holds the bitmaps of dense words for one generation of the index.
type denseCache struct {
	mu  sync.Mutex
	gen uint64
	m   map[string]*denseEntry
}

// denseBits returns the bitmaps of tok, whose posting list is list, if the list is dense enough
// to be worth them; nil otherwise. The caller holds x.mu for reading.
func (x *Tenant) denseBits(tok string, list []uint32) *termBits {
	if len(list) < denseEntries || len(list) < len(x.docs)/denseMin {
		return nil
	}
	c := &x.dense
	c.mu.Lock()
	if c.m == nil || c.gen != x.gen {
		c.m, c.gen = map[string]*denseEntry{}, x.gen
	}
	e := c.m[tok]
	if e == nil {
		if len(c.m) >= denseMax {
			clear(c.m)
		}
		e = &denseEntry{}
		c.m[tok] = e
	}
	c.mu.Unlock()
	e.once.Do(func() {
		words := (len(x.docs) + 63) / 64
		b := termBits{present: make([]uint64, words), f0: make([]uint64, words), f1: make([]uint64, words)}
		for _, en := range list {
			n, f := en>>2, en&3
			setBit(b.present, n)
			if f&1 != 0 {
				setBit(b.f0, n)
			}
			if f&2 != 0 {
				setBit(b.f1, n)
			}
		}
		e.bits = b
	})
	return &e.bits
}
