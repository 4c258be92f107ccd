package index

import (
	"slices"
	"sync"
)

// ranked scores the matches of q (see score.go) and returns the page. accept, when not nil, is
// the check postings cannot make (the exact name substring, resources, status, permission); it
// is applied to the matches only. online, when the plan filters on liveness, narrows the
// documents scored as postings do.
//
// Each term's posting lists are read twice: once to count the live documents holding the word
// (its weight), once to score the eligible ones (live, in cand, of the liveness asked). Only the
// documents met are visited after, so a query costs its lists' length, not the index's size.
func (x *Tenant) ranked(p *Plan, cand []uint32, accept func(uint32) bool, s *scratch, online *Online) ([]Candidate, int, *Position) {
	x.eligible(p, cand, s, online)
	s.sizeScores(len(x.docs))
	c := corpus{docs: x.live, length: x.length}
	weights := s.weights[:0]
	total := 0.0
	for _, t := range p.terms {
		w := c.idf(x.df(t))
		weights = append(weights, w)
		total += w
	}
	s.weights = weights
	p.keepBasis(weights, total, c)
	// On a large index the two halves of the documents are scored at once, and their matches
	// collected at once when accepting them needs no check: each half reads and writes only the
	// entries of its own documents, so they share nothing.
	split := len(x.docs) >= parallelDocs
	halves := [2][2]int{{0, len(x.docs)}, {len(x.docs), len(x.docs)}}
	if split {
		halves[0][1], halves[1][0] = len(x.docs)/2, len(x.docs)/2
	}
	norm := c.norm()
	both(split, func(i int) { x.scoreRange(p, s, &s.parts[i], norm, halves[i][0], halves[i][1]) })
	boundary := x.boundary(p, s, accept, total)
	var pages [2]best
	var counts [2]int
	both(split && accept == nil, func(i int) {
		pages[i] = best{k: p.limit + 1, h: make([]Candidate, 0, p.limit+1)}
		counts[i] = x.collect(s, halves[i][0], halves[i][1], accept, total, boundary, &pages[i])
	})
	for _, c := range pages[1].h {
		pages[0].offer(c)
	}
	res, next := p.cut(pages[0].sorted())
	return res, counts[0] + counts[1], next
}

// both runs f(0) and f(1), at once if split.
func both(split bool, f func(i int)) {
	if !split {
		f(0)
		f(1)
		return
	}
	var wg sync.WaitGroup
	wg.Go(func() { f(1) })
	f(0)
	wg.Wait()
}

// collect offers the matches among documents [lo, hi) to page, those accept takes (all when
// nil) and after the boundary, clears their scores, and returns how many accept took. Reading
// every document's count of words matched costs less than listing the matches as they are met.
func (x *Tenant) collect(s *scratch, lo, hi int, accept func(uint32) bool, total float64, boundary *Candidate, page *best) int {
	count := 0
	for i, m := range s.matched[lo:hi] {
		if m == 0 {
			continue
		}
		n := uint32(lo + i)
		score := s.score[n] / total
		s.score[n], s.matched[n] = 0, 0
		if accept != nil && !accept(n) {
			continue
		}
		count++
		// Most matches score below the page or above the cursor: they are passed over without
		// reading their documents, which only a tie needs.
		if boundary != nil && score > boundary.score || len(page.h) == page.k && score < page.h[0].score {
			continue
		}
		c := Candidate{agentID: x.docs[n].agentID, score: score, matched: int(m)}
		if boundary == nil || less(*boundary, c) {
			page.offer(c)
		}
	}
	return count
}

// parallelDocs is the index size from which scoring is split in two.
const parallelDocs = 1 << 15

// scoreRange scores the eligible documents of [lo, hi) for every term, with the terms' weights
// in s.weights, into s.score and s.matched; part lists the documents met.
func (x *Tenant) scoreRange(p *Plan, s *scratch, part *scorePart, norm lengthNorm, lo, hi int) {
	for i, t := range p.terms {
		weight := s.weights[i]
		if !t.prefix && t.members == nil {
			x.addWord(s, norm, t.text, weight, lo, hi)
			continue
		}
		// The word being typed matches at its best of the word and the longer words it begins, a
		// synonym at its best of its members: the best is kept per document before it is added.
		part.touched = part.touched[:0]
		if t.members == nil {
			x.bestOfWord(s, part, norm, t.text, 1, lo, hi)
		}
		for _, m := range t.members {
			if len(m.words) == 1 {
				x.bestOfWord(s, part, norm, m.words[0], 1, lo, hi)
			} else {
				x.bestOfPhrase(s, part, norm, m.words, lo, hi)
			}
		}
		if t.prefix {
			for _, w := range x.vocab3[t.raw[:minPrefix]] {
				if t.prefixOf(w) {
					x.bestOfWord(s, part, norm, w, prefixShare, lo, hi)
				}
			}
		}
		for _, n := range part.touched {
			s.hit(n, weight*s.best[n])
			s.best[n] = 0
		}
	}
}

// inRange cuts a word's posting list to the entries of documents [lo, hi).
func inRange(list []uint32, lo, hi int) []uint32 {
	a, _ := slices.BinarySearch(list, uint32(lo)<<termShift)
	b, _ := slices.BinarySearch(list, uint32(hi)<<termShift)
	return list[a:b]
}

// df is the number of live documents a term's weight counts (see term.df), or for a word being
// typed that none holds, those holding the most common longer word it begins.
func (x *Tenant) df(t term) int {
	df := t.df(x.holding)
	if df == 0 && t.prefix {
		for _, w := range x.vocab3[t.raw[:minPrefix]] {
			if t.prefixOf(w) {
				df = max(df, x.holding(w))
			}
		}
	}
	return df
}

// holding counts the live documents holding the vocabulary word w. The counts are kept for the
// index as it is (its gen): a search after no change reads them instead of the lists.
func (x *Tenant) holding(w string) int {
	c := &x.counts
	c.mu.Lock()
	if c.m == nil || c.gen != x.gen {
		c.m, c.gen = map[string]int{}, x.gen
	}
	n, ok := c.m[w]
	c.mu.Unlock()
	if ok {
		return n
	}
	if list := x.terms[w]; list != nil {
		for _, e := range *list {
			if hasBit(x.alive, e>>termShift) {
				n++
			}
		}
	}
	c.mu.Lock()
	if c.gen == x.gen && len(c.m) < maxCounts {
		c.m[w] = n
	}
	c.mu.Unlock()
	return n
}

// wordCounts holds the live documents holding each word searched, for one gen of the index.
type wordCounts struct {
	mu  sync.Mutex
	gen uint64
	m   map[string]int
}

// maxCounts bounds the words whose counts are kept at once.
const maxCounts = 1 << 12

// addWord adds to each eligible document of [lo, hi) holding w its match of w times weight.
func (x *Tenant) addWord(s *scratch, norm lengthNorm, w string, weight float64, lo, hi int) {
	list := x.terms[w]
	if list == nil {
		return
	}
	for _, e := range inRange(*list, lo, hi) {
		n := e >> termShift
		if s.has(n) {
			s.hit(n, weight*norm.saturation(uint8(e&countMask), x.lens[n]))
		}
	}
}

// bestOfWord keeps in s.best, for each eligible document of [lo, hi) holding w, the better of
// its best match so far and its match of w times share; the documents met first go into
// part.touched.
func (x *Tenant) bestOfWord(s *scratch, part *scorePart, norm lengthNorm, w string, share float64, lo, hi int) {
	list := x.terms[w]
	if list == nil {
		return
	}
	for _, e := range inRange(*list, lo, hi) {
		n := e >> termShift
		if !s.has(n) {
			continue
		}
		s.keepBest(part, n, norm.saturation(uint8(e&countMask), x.lens[n])*share)
	}
}

// keepBest keeps m as document n's best match of the term being read if it is better.
func (s *scratch) keepBest(part *scorePart, n uint32, m float64) {
	switch old := s.best[n]; {
	case old == 0:
		part.touched = append(part.touched, n)
		s.best[n] = m
	case m > old:
		s.best[n] = m
	}
}

// bestOfPhrase is bestOfWord for a synonym of several words: a document matches it when it
// holds every word, as well as it matches the least of them. The shortest list is walked, and
// each of its documents looked up in the others.
func (x *Tenant) bestOfPhrase(s *scratch, part *scorePart, norm lengthNorm, words []string, lo, hi int) {
	lists := make([][]uint32, len(words))
	shortest := 0
	for i, w := range words {
		list := x.terms[w]
		if list == nil {
			return
		}
		lists[i] = *list
		if len(lists[i]) < len(lists[shortest]) {
			shortest = i
		}
	}
next:
	for _, e := range inRange(lists[shortest], lo, hi) {
		n := e >> termShift
		if !s.has(n) {
			continue
		}
		m := 1.0
		for _, list := range lists {
			j, _ := slices.BinarySearch(list, n<<termShift)
			if j == len(list) || list[j]>>termShift != n {
				continue next
			}
			m = min(m, norm.saturation(uint8(list[j]&countMask), x.lens[n]))
		}
		s.keepBest(part, n, m)
	}
}

// boundary is where the page starts (nil: at the first match): after the cursor's card as it
// ranks now, if it still matches, so that a change of the words' weights between two pages moves
// the cursor with the cards; else after the position the cursor recorded. total is the sum of
// the terms' weights.
func (x *Tenant) boundary(p *Plan, s *scratch, accept func(uint32) bool, total float64) *Candidate {
	a := p.after
	if a == nil {
		return nil
	}
	if n, ok := x.byID[a.AgentID]; ok && s.matched[n] > 0 && (accept == nil || accept(n)) {
		return &Candidate{agentID: a.AgentID, score: s.score[n] / total, matched: int(s.matched[n])}
	}
	return &Candidate{agentID: a.AgentID, score: a.Score, matched: a.Matched}
}

// eligible sets s.bits to the documents worth scoring: the live ones among cand (every live one
// when cand is nil), narrowed by liveness when the plan filters on it.
func (x *Tenant) eligible(p *Plan, cand []uint32, s *scratch, online *Online) {
	if cand == nil {
		copy(s.bits, x.alive)
	} else {
		for _, n := range cand {
			s.set(n)
		}
		for w := range s.bits {
			s.bits[w] &= x.alive[w]
		}
	}
	if online != nil {
		for w := range s.bits {
			if p.online > 0 {
				s.bits[w] &= online.bits[w]
			} else {
				s.bits[w] &^= online.bits[w]
			}
		}
	}
}
