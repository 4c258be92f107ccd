package index

import (
	"encoding/binary"
	"math"
	"math/bits"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
)

// ranked scores the matches of q (see score.go) and returns the page. accept, when not nil, is
// the check postings cannot make (the exact name substring, resources, status, permission); it
// is applied to the matches only. online, when the plan filters on liveness, narrows the
// documents scored as postings do.
//
// Each term's posting lists are read twice: once to count the live documents holding the word
// (its weight), once to score the eligible ones (live, in cand, of the liveness asked). The
// documents are scored and collected a block at a time, every term's entries for the block
// before the next block, so that the block's scores stay in the core's cache from the first
// term to the collection; a query costs its lists' length and a pass over the documents.
func (x *Tenant) ranked(p *Plan, cand []uint32, accept func(uint32) bool, s *scratch, online *Online) ([]Candidate, int, *Position) {
	x.eligible(p, cand, s, online)
	c := corpus{docs: x.live, length: x.length}
	weights := s.weights[:0]
	total := 0.0
	for _, t := range p.terms {
		w := c.idf(x.df(t))
		weights = append(weights, w)
		total += w
	}
	s.weights = weights
	p.settle(func(t term) int { return t.df(x.holding) })
	p.keepBasis(weights, total, c)
	norm := c.norm()
	terms := x.termLists(p, s)
	boundary := x.boundary(p, s, terms, norm, accept, total)
	// The documents are ranked a chunk of blocks at a time, each chunk by whichever of two
	// rankers claims it first; each writes only its own working memory and page, and they share
	// the chunks' counter and the page's threshold, both atomic, beside what they only read.
	work := chunks{docs: len(x.docs), size: chunkBlocks * blockDocs}
	var pages [2]best
	var counts [2]int
	var shared *threshold
	split := len(x.docs) >= parallelDocs
	if split {
		shared = new(threshold)
	}
	for i := range pages {
		pages[i] = best{k: p.limit + 1, h: make([]Candidate, 0, p.limit+1)}
	}
	rank := func(i int) {
		// A ranker that panics (in accept) leaves no chunk to the other.
		finished := false
		defer func() {
			if !finished {
				work.stop()
			}
		}()
		r := ranking{x: x, s: s, part: &s.parts[i], terms: terms, norm: norm, total: total, accept: accept, boundary: boundary,
			page: &pages[i], shared: shared}
		r.begin()
		for lo, hi, ok := work.claim(i); ok; lo, hi, ok = work.claim(i) {
			counts[i] += r.rank(lo, hi)
		}
		finished = true
	}
	switch {
	case split && alternateChunks:
		rank(0)
		rank(1)
	case split:
		helped(rank)
	default:
		rank(0)
	}
	for _, c := range pages[1].h {
		pages[0].offer(c)
	}
	res, next := p.cut(pages[0].sorted())
	return res, counts[0] + counts[1], next
}

// chunks hands out the documents to rank, chunk by chunk in order, until they are all taken or
// it is stopped.
type chunks struct {
	docs, size int
	next       atomic.Int64
	stopped    atomic.Bool
	taken      [2]int // with alternateChunks, how many each ranker took
}

// stop hands out no more chunks.
func (c *chunks) stop() { c.stopped.Store(true) }

// alternateChunks, set by tests, makes the two rankers of a large index run one after the
// other, ranker i taking chunks i, i+2, i+4…: both rank, and every chunk follows a jump.
var alternateChunks bool

// claim returns the next chunk [lo, hi) for ranker i; false when none is left.
func (c *chunks) claim(i int) (lo, hi int, ok bool) {
	if c.stopped.Load() {
		return 0, 0, false
	}
	k := int(c.next.Add(1) - 1)
	if alternateChunks {
		k = 2*c.taken[i] + i
		c.taken[i]++
	}
	lo = k * c.size
	if lo >= c.docs {
		return 0, 0, false
	}
	return lo, min(lo+c.size, c.docs), true
}

// helped runs f(0), and f(1) on another goroutine if that one starts before f(0) is done: a
// goroutine can take a tenth of a millisecond to start on an idle core, and one that starts
// after the work is done is not waited for. Once f(0) is done, or has panicked, f(1), if it
// started, is waited for (it finishes the chunk it holds, if any: a ranker that panics stops
// the chunks), so that it reads nothing after the caller returns and lets go of the index's
// lock. A panic of f(1) is raised again here, on the caller's goroutine, where it can be
// recovered, unless f(0) panicked too.
func helped(f func(i int)) {
	const waiting, running, unneeded = 0, 1, 2
	var state atomic.Int32
	done := make(chan any, 1)
	go func() {
		if state.CompareAndSwap(waiting, running) {
			defer func() { done <- recover() }()
			f(1)
		}
	}()
	returned := false
	defer func() {
		if !state.CompareAndSwap(waiting, unneeded) {
			if v := <-done; v != nil && returned {
				panic(v)
			}
		}
	}()
	for awaitHelper && state.Load() == waiting {
		runtime.Gosched()
	}
	f(0)
	returned = true
}

// awaitHelper, set by tests, makes helped start f(0) once f(1) has started.
var awaitHelper bool

// parallelDocs is the index size from which ranking is shared by two goroutines, blockDocs how
// many documents are scored and collected at once: the scores of a block (8 bytes each, twice)
// stay in the core's cache between its terms and its collection; and chunkBlocks how many
// blocks a goroutine claims at once. Tests make them small, so that small indexes are ranked
// in chunks and blocks.
var (
	parallelDocs = 1 << 15
	blockDocs    = maxBlockDocs
	chunkBlocks  = 4
)

// maxBlockDocs is the most documents a block holds, whatever blockDocs is.
const maxBlockDocs = 2048

// blockCounts holds a count for each document of a block, by its place in the block.
type blockCounts = [maxBlockDocs]uint8

// wordList is a posting list a term reads, with what a match in it is worth against a match of
// the term's own word: 1, or prefixShare for a longer word the word being typed begins.
type wordList struct {
	list  *plist
	share float64
}

// termList is what one term of the query reads. A plain word is added as it is met; otherwise
// (a word being typed, a synonym) a document matches the term at its best of the lists' matches
// and the phrases' (synonyms of several words: a document holds every word, and matches as well
// as it matches the least of them).
type termList struct {
	weight  float64
	plain   bool
	words   []wordList
	phrases [][]*plist
}

// termLists resolves the plan's terms to the posting lists they read, in s.
func (x *Tenant) termLists(p *Plan, s *scratch) []termList {
	terms := s.terms[:0]
	for i, t := range p.terms {
		tl := termList{weight: s.weights[i], plain: !t.prefix && t.members == nil}
		add := func(w string, share float64) {
			if list := x.terms[w]; list != nil {
				tl.words = append(tl.words, wordList{list: list, share: share})
			}
		}
		if t.members == nil {
			add(t.text, 1)
		}
	phrases:
		for _, m := range t.members {
			if len(m.words) == 1 {
				add(m.words[0], 1)
				continue
			}
			lists := make([]*plist, len(m.words))
			for j, w := range m.words {
				list := x.terms[w]
				if list == nil {
					continue phrases
				}
				lists[j] = list
			}
			// The shortest list is walked, and each of its documents looked up in the others.
			shortest := 0
			for j := range lists {
				if lists[j].Len() < lists[shortest].Len() {
					shortest = j
				}
			}
			lists[0], lists[shortest] = lists[shortest], lists[0]
			tl.phrases = append(tl.phrases, lists)
		}
		if t.prefix {
			for _, w := range x.vocab3[t.raw[:minPrefix]] {
				if t.begins(w) && !t.coveredByPart(w) {
					add(w, prefixShare)
				}
			}
			// A completion is a stem of letters (never a compound), and none begins with raw.
			for _, w := range t.completions {
				add(w, prefixShare)
			}
		}
		terms = append(terms, tl)
	}
	s.terms = terms
	return terms
}

// ranking is one ranker's ranking of the documents it claims: its block's scores, and the page
// it offers the matches to.
type ranking struct {
	x        *Tenant
	s        *scratch
	part     *scorePart
	terms    []termList
	norm     lengthNorm
	total    float64
	accept   func(uint32) bool
	boundary *Candidate
	page     *best
	// below is a score before its division by total under which a match ranks below the full
	// page: most matches are passed over without dividing. Its margin is far above the rounding
	// of the division.
	below float64
	// shared is the threshold of both rankers, when two share the documents.
	shared *threshold
	// onePass is how many more blocks to rank in one pass although terms are required: the
	// last block ranked in two passes scored most of its matches (see maxCandidateShare).
	onePass int
	// at is where the readers stand: the end of the documents ranked last, -1 before any.
	at int
}

// begin readies the ranking's working memory and its lists' readers: one for each list read (a
// word's, a phrase's first), and for each phrase's other lists, in which its documents are
// looked up in order.
func (r *ranking) begin() {
	if blockDocs > maxBlockDocs {
		panic("search index: blockDocs above maxBlockDocs")
	}
	part := r.part
	part.size()
	part.ubs, part.shares = part.ubs[:0], part.shares[:0]
	part.sat.n = 0
	k, o := 0, 0
	for _, t := range r.terms {
		k += len(t.words) + len(t.phrases)
		for _, lists := range t.phrases {
			o += len(lists) - 1
		}
	}
	if cap(part.readers) < k {
		part.readers = make([]reader, k)
	}
	if cap(part.others) < o {
		part.others = make([]reader, o)
	}
	part.readers, part.others = part.readers[:k], part.others[:o]
	r.at = -1
}

// rank scores and collects the documents [lo, hi) block by block, and returns how many matches
// accept took. Each list is read from where the previous block stopped, and from where the
// previous call stopped when it stopped at lo.
func (r *ranking) rank(lo, hi int) int {
	part := r.part
	readers, others := part.readers, part.others
	if lo != r.at {
		k, o := 0, 0
		for _, t := range r.terms {
			for _, w := range t.words {
				readers[k].seek(w.list, uint32(lo)<<termShift)
				k++
			}
			for _, lists := range t.phrases {
				readers[k].seek(lists[0], uint32(lo)<<termShift)
				k++
				for _, l := range lists[1:] {
					others[o].seek(l, uint32(lo)<<termShift)
					o++
				}
			}
		}
	}
	r.at = hi
	count := 0
	for blo := lo; blo < hi; blo += blockDocs {
		bhi := min(blo+blockDocs, hi)
		if r.required() {
			if r.onePass == 0 {
				count += r.rankRequired(readers, blo, bhi)
				continue
			}
			r.onePass--
		}
		k, o := 0, 0
		for _, t := range r.terms {
			if t.plain {
				for range t.words {
					r.addWord(&readers[k], t.weight, blo, bhi)
					k++
				}
				continue
			}
			part.touched = part.touched[:0]
			for _, w := range t.words {
				r.bestOfWord(&readers[k], w.share, blo, bhi)
				k++
			}
			for _, lists := range t.phrases {
				r.bestOfPhrase(&readers[k], others[o:o+len(lists)-1], blo, bhi)
				k++
				o += len(lists) - 1
			}
			score, matched, best := part.score, part.matched, part.best
			for _, i := range part.touched {
				score[i] += t.weight * best[i]
				matched[i]++
				best[i] = 0
			}
		}
		count += r.collect(blo, bhi)
		if r.shared != nil {
			r.shared.raise(r.below)
		}
	}
	return count
}

// addWord adds to each eligible document of the block [blo, bhi) holding the word its match of
// it times weight, taking the block's entries from rd.
func (r *ranking) addWord(rd *reader, weight float64, blo, bhi int) {
	score, matched, bits, lens, norm := r.part.score, r.part.matched, r.s.bits, r.x.lens, r.norm
	end := uint32(bhi) << termShift
	for entries := rd.take(end); len(entries) > 0; entries = rd.take(end) {
		for _, e := range entries {
			n := e >> termShift
			if bits[n>>6]&(1<<(n&63)) != 0 {
				score[int(n)-blo] += weight * norm.saturation(uint8(e&countMask), lens[n])
				matched[int(n)-blo]++
			}
		}
	}
}

// bestOfWord keeps, for each eligible document of the block holding the word, the better of its
// best match of the term so far and its match of the word times the list's share; the documents
// met first go into touched. It takes the block's entries from rd.
func (r *ranking) bestOfWord(rd *reader, share float64, blo, bhi int) {
	touched, best, bits, lens, norm := r.part.touched, r.part.best, r.s.bits, r.x.lens, r.norm
	end := uint32(bhi) << termShift
	for entries := rd.take(end); len(entries) > 0; entries = rd.take(end) {
		for _, e := range entries {
			n := e >> termShift
			// A match is below 1 before its share: a document holding a better match already is
			// passed over without working it out.
			j := int(n) - blo
			if bits[n>>6]&(1<<(n&63)) == 0 || best[j] >= share {
				continue
			}
			m := norm.saturation(uint8(e&countMask), lens[n]) * share
			switch old := best[j]; {
			case old == 0:
				touched = append(touched, uint32(j))
				best[j] = m
			case m > old:
				best[j] = m
			}
		}
	}
	r.part.touched = touched
}

// bestOfPhrase is bestOfWord for a synonym of several words: a document matches it when it
// holds every word, as well as it matches the least of them (as phraseMatch works it out). The
// first list (the shortest) is walked through rd, and each of its documents looked up in the
// others through theirs, which move on with it.
func (r *ranking) bestOfPhrase(rd *reader, others []reader, blo, bhi int) {
	end := uint32(bhi) << termShift
	for entries := rd.take(end); len(entries) > 0; entries = rd.take(end) {
	next:
		for _, e := range entries {
			n := e >> termShift
			if !r.s.has(n) {
				continue
			}
			m := min(1, r.norm.saturation(uint8(e&countMask), r.x.lens[n]))
			for i := range others {
				f, ok := others[i].skipTo(n << termShift)
				if !ok || f>>termShift != n {
					continue next
				}
				m = min(m, r.norm.saturation(uint8(f&countMask), r.x.lens[n]))
			}
			if m > 0 {
				j := int(n) - blo
				switch old := r.part.best[j]; {
				case old == 0:
					r.part.touched = append(r.part.touched, uint32(j))
					r.part.best[j] = m
				case m > old:
					r.part.best[j] = m
				}
			}
		}
	}
}

// phraseMatch is how well document n matches a synonym of several words, whose lists are lists:
// as well as the least of them, 0 if it lacks one.
func (x *Tenant) phraseMatch(lists []*plist, norm lengthNorm, n uint32) float64 {
	m := 1.0
	for _, list := range lists {
		count, ok := list.countOf(n)
		if !ok {
			return 0
		}
		m = min(m, norm.saturation(count, x.lens[n]))
	}
	return m
}

// countIn finds document n in a word's list: its weighted count of the word.
func countIn(list []uint32, n uint32) (uint8, bool) {
	j, _ := slices.BinarySearch(list, n<<termShift)
	if j == len(list) || list[j]>>termShift != n {
		return 0, false
	}
	return uint8(list[j] & countMask), true
}

// collect offers the block's matches to the page, those accept takes (all when nil) and after
// the boundary, clears their scores, and returns how many accept took. Reading every document's
// count of words matched costs less than listing the matches as they are met. It is offer
// written out, for the matches of a block ranked in one pass.
func (r *ranking) collect(blo, bhi int) int {
	count := 0
	page, boundary, total, accept, below := r.page, r.boundary, r.total, r.accept, r.below
	score, matched := r.part.score[:bhi-blo], r.part.matched[:bhi-blo]
	for i, m := range matched {
		if m == 0 {
			continue
		}
		raw := score[i]
		n := uint32(blo + i)
		if accept != nil && !accept(n) {
			continue
		}
		count++
		if raw < below {
			continue
		}
		sc := raw / total
		if boundary != nil && sc > boundary.score || len(page.h) == page.k && sc < page.h[0].score {
			continue
		}
		c := Candidate{agentID: r.x.docs[n].agentID, score: sc, matched: int(m)}
		if boundary == nil || less(*boundary, c) {
			page.offer(c)
			if len(page.h) == page.k {
				below = page.h[0].score * total * (1 - 1e-9)
			}
		}
	}
	r.below = below
	clear(score)
	clear(matched)
	return count
}

// offer offers document n, which matched m words for a score of raw before its division by
// total, to the page.
func (r *ranking) offer(n uint32, raw float64, m uint8) {
	if raw < r.below {
		return
	}
	// Most matches score below the page or above the cursor: they are passed over without
	// reading their documents, which only a tie needs.
	page, boundary := r.page, r.boundary
	sc := raw / r.total
	if boundary != nil && sc > boundary.score || len(page.h) == page.k && sc < page.h[0].score {
		return
	}
	c := Candidate{agentID: r.x.docs[n].agentID, score: sc, matched: int(m)}
	if boundary == nil || less(*boundary, c) {
		page.offer(c)
		if len(page.h) == page.k {
			r.below = page.h[0].score * r.total * (1 - 1e-9)
		}
	}
}

// required reports whether the next block is worth ranking in two passes (see rankRequired):
// the page is full, no term is a synonym of several words, and by the bounds of the last such
// block some terms are required, whose documents are likely few among the matches (as if the
// terms were independent, from their lists' lengths; see maxRequiredShare). The first block
// after the page filled is ranked so, to find the bounds.
func (r *ranking) required() bool {
	if r.shared != nil {
		r.below = max(r.below, r.shared.get())
	}
	if r.below == 0 {
		return false
	}
	for _, t := range r.terms {
		if len(t.phrases) > 0 {
			return false
		}
	}
	// Of the documents, the shares holding each term (worked out once a search), every required
	// term, and any term.
	shares := r.part.shares
	if len(shares) != len(r.terms) {
		for _, t := range r.terms {
			shares = append(shares, min(1, float64(t.entries())/float64(max(1, r.x.live))))
		}
		r.part.shares = shares
	}
	every, none := 1.0, 1.0
	for _, p := range shares {
		every *= p
		none *= 1 - p
	}
	worth := func(every float64) bool {
		return every <= maxRequiredShare*(1-none) || len(r.x.docs) >= parallelDocs
	}
	ubs := r.part.ubs
	if len(ubs) != len(r.terms) {
		return worth(every)
	}
	k, every := 0, 1.0
	for i := range ubs {
		if r.needs(ubs, i) {
			k++
			every *= shares[i]
		}
	}
	return k > 0 && worth(every)
}

// needs reports whether term i, in a block whose terms' bounds are ubs, is required there: a
// document lacking it scores at most the other terms' bounds, below the page. They are summed
// without term i's, not subtracted from the whole: one bound can be many orders of magnitude
// above the others (a word nearly every card holds weighs almost nothing), and the subtraction
// would lose the small ones' digits. The margin is far above the rounding of a sum of at most
// 32 bounds; below has one of its own.
func (r *ranking) needs(ubs []float64, i int) bool {
	others := 0.0
	for j, ub := range ubs {
		if j != i {
			others += ub
		}
	}
	return others*(1+1e-9) < r.below
}

// maxRequiredShare is the share of the matches likely to hold every required term above which
// a block of a small index is ranked in one pass: reading a block twice costs more than it
// saves there. On a large index the two passes cost less even when they save nothing: the first
// reads the lists straight into counts, and only the candidates' lengths are read.
var maxRequiredShare = 0.5

// When more than maxCandidateShare of a block's matches were scored in the second pass of
// rankRequired, and the matches are more than minDenseShare of its documents, the next
// onePassBlocks blocks are ranked in one pass: for the words of most documents, whose bounds
// exclude few of them, one pass costs less (its collection's test of each document is then
// mostly true, which the processor predicts). Below that density, the two passes cost less
// even when they score every match. The page only rises, so the blocks after those are tried
// in two again.
var (
	maxCandidateShare = 0.3
	minDenseShare     = 0.6
)

const onePassBlocks = 8

// entries is the number of entries in the term's lists.
func (t termList) entries() int {
	n := 0
	for _, w := range t.words {
		n += w.list.Len()
	}
	return n
}

// rankRequired ranks the block [blo, bhi) in two passes. The first reads every list's entries
// for the block into each term's best count per document, for a match of the word itself and
// for a longer word it begins (a match is monotone in the count, so the best count makes the
// best match), and the greatest count of each list; so a bound for each term in the block: its
// weight times the best of its lists' share times the match of that count in the tenant's
// shortest card. A document lacking a term scores at most the others' bounds; where that is
// below the page, the term is required. The second pass scores only the eligible documents
// holding every required term, from the counts, and offers them to the page; every eligible
// document holding a word is counted. A candidate whose counts would score below the page even
// in the shortest card is passed over without reading its length. It returns how many matches
// accept took, as collect does.
func (r *ranking) rankRequired(readers []reader, blo, bhi int) int {
	part := r.part
	size := bhi - blo
	words := (size + 63) / 64
	if n := (len(r.terms) + 3) * words; cap(part.sets) < n {
		part.sets = make([]uint64, n)
	}
	if n := 2 * len(r.terms); cap(part.counts) < n {
		part.counts = make([]blockCounts, n)
	}
	// The terms' weights, as termLists gave them (every term of the plan is one of r.terms).
	weights := r.s.weights[:len(r.terms)]
	seen, cand, eligible := part.sets[:words], part.sets[words:2*words], part.sets[2*words:3*words]
	clear(seen)
	end := uint32(bhi) << termShift
	shortest := r.x.shortest()
	ubs := part.ubs[:0]
	bound := 0.0
	k := 0
	for i, t := range r.terms {
		own, longer := part.termCounts(i)
		ub := 0.0
		for _, w := range t.words {
			counts := own
			if w.share != 1 {
				counts = longer
			}
			if most := readers[k].scatter(end, blo, counts); most > 0 {
				part.sat.upTo(most, r.norm, shortest)
				ub = max(ub, t.weight*w.share*part.sat.own[most])
			}
			k++
		}
		held := part.sets[(i+3)*words : (i+4)*words]
		nonzero(held, own, longer)
		for w, h := range held {
			seen[w] |= h
		}
		ubs = append(ubs, ub)
		bound += ub
	}
	part.ubs = ubs
	r.eligibleIn(eligible, blo, bhi)
	copy(cand, eligible)
	needed := false
	for i := range ubs {
		if r.needs(ubs, i) {
			needed = true
			for w, h := range part.sets[(i+3)*words : (i+4)*words] {
				cand[w] &= h
			}
		}
	}
	switch {
	case bound*(1+1e-9) < r.below:
		// No document of the block can reach the page.
		clear(cand)
	case !needed:
		for w, h := range seen {
			cand[w] &= h
		}
	}
	lens, norm, counts, sat := r.x.lens, r.norm, part.counts, &part.sat
	// held and scored are the block's eligible documents holding a word, and those scored among
	// them, for the choice of the next blocks' ranking.
	count, held, scored := 0, 0, 0
	for w := range seen {
		matches := seen[w] & eligible[w]
		k := bits.OnesCount64(matches)
		held += k
		if r.accept == nil {
			count += k
			// Only the candidates are scored.
			matches &= cand[w]
		}
		for m := matches; m != 0; m &= m - 1 {
			j := w<<6 | bits.TrailingZeros64(m)
			n := uint32(blo + j)
			if r.accept != nil {
				if !r.accept(n) {
					continue
				}
				count++
				if cand[w]&(1<<(j&63)) == 0 {
					continue
				}
			}
			// The candidate's bound, from its counts in the tenant's shortest card, worked out
			// as its score is, by the same steps: a candidate whose bound is below the page
			// scores below it.
			ub := 0.0
			for i, w := range weights {
				own, longer := countsAt(counts, i, j)
				ub += w * max(sat.own[own], sat.longer[longer])
			}
			if ub < r.below {
				continue
			}
			scored++
			raw, matched := 0.0, uint8(0)
			for i, w := range weights {
				own, longer := countsAt(counts, i, j)
				best := 0.0
				if own > 0 {
					best = norm.saturation(own, lens[n])
				}
				if longer > 0 {
					best = max(best, norm.saturation(longer, lens[n])*prefixShare)
				}
				if best > 0 {
					raw += w * best
					matched++
				}
			}
			if raw >= r.below {
				r.offer(n, raw, matched)
			}
		}
	}
	if float64(scored) > maxCandidateShare*float64(held) && float64(held) > minDenseShare*float64(size) {
		r.onePass = onePassBlocks
	}
	if r.shared != nil {
		r.shared.raise(r.below)
	}
	for i := range 2 * len(r.terms) {
		clear(counts[i][:size])
	}
	return count
}

// shortMatches are the matches of counts in the tenant's shortest card, of a word (own) and of a
// longer word the word being typed begins (longer, at prefixShare), for the counts below n; the
// others are not worked out yet. Every card matches a count at most as well.
type shortMatches struct {
	own, longer [maxCount + 1]float64
	n           int
}

// upTo works out the matches of the counts up to c.
func (m *shortMatches) upTo(c uint8, norm lengthNorm, shortest uint32) {
	for ; m.n <= int(c); m.n++ {
		v := 0.0
		if m.n > 0 {
			v = norm.saturation(uint8(m.n), shortest)
		}
		m.own[m.n], m.longer[m.n] = v, v*prefixShare
	}
}

// termCounts are term i's best counts of the block's documents, by their place in it: of its
// own words, and of the longer words it begins.
func (p *scorePart) termCounts(i int) (own, longer *blockCounts) {
	return &p.counts[2*i], &p.counts[2*i+1]
}

// countsAt are term i's best counts of the block's document j, as termCounts holds them.
func countsAt(counts []blockCounts, i, j int) (own, longer uint8) {
	j &= maxBlockDocs - 1
	return counts[2*i][j], counts[2*i+1][j]
}

// nonzero sets set, a word for each 64 documents of the block, to the documents whose count in
// a or b is not zero, eight counts at a time. The counts past the block's last are zero.
func nonzero(set []uint64, a, b *blockCounts) {
	for w := range min(len(set), maxBlockDocs/64) {
		a, b := (*[64]uint8)(a[w*64:]), (*[64]uint8)(b[w*64:])
		var v uint64
		for k := range 8 {
			ak, bk := (*[8]uint8)(a[k*8:]), (*[8]uint8)(b[k*8:])
			v |= nonzeroBytes(binary.LittleEndian.Uint64(ak[:])|binary.LittleEndian.Uint64(bk[:])) << (k * 8)
		}
		set[w] = v
	}
}

// nonzeroBytes has bit i set when byte i of v (from the low end) is not zero: each byte's high
// bit is set when the byte is, then the eight high bits are gathered by a multiplication.
func nonzeroBytes(v uint64) uint64 {
	const low7, high = 0x7F7F7F7F7F7F7F7F, 0x8080808080808080
	hi := ((v & low7) + low7 | v) & high
	return (hi >> 7) * 0x0102040810204080 >> 56
}

// eligibleIn sets set to the eligible documents of the block [blo, bhi), by their place in it.
func (r *ranking) eligibleIn(set []uint64, blo, bhi int) {
	src, shift := r.s.bits[blo>>6:], uint(blo&63)
	for w := range set {
		v := src[w] >> shift
		if shift != 0 && w+1 < len(src) {
			v |= src[w+1] << (64 - shift)
		}
		set[w] = v
	}
	if rest := (bhi - blo) & 63; rest != 0 {
		set[len(set)-1] &= 1<<rest - 1
	}
}

// threshold is the best page worst of the two rankers, as the raw score below which a match is
// passed over: a match below one ranker's page is below the merged page too.
type threshold struct{ v atomic.Uint64 }

func (t *threshold) get() float64 { return math.Float64frombits(t.v.Load()) }

// raise makes the threshold at least v.
func (t *threshold) raise(v float64) {
	for {
		old := t.v.Load()
		if math.Float64frombits(old) >= v || t.v.CompareAndSwap(old, math.Float64bits(v)) {
			return
		}
	}
}

// df is the number of live documents a term's weight counts (see term.df), or for a word being
// typed that none holds, those holding the most common longer word it begins.
func (x *Tenant) df(t term) int {
	df := t.df(x.holding)
	if df == 0 && t.prefix {
		// As termLists reads them: the words it begins from their bucket, then the completions.
		for _, w := range x.vocab3[t.raw[:minPrefix]] {
			if t.begins(w) {
				df = max(df, x.holding(w))
			}
		}
		for _, w := range t.completions {
			df = max(df, x.holding(w))
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
		list.each(func(entries []uint32) {
			for _, e := range entries {
				if hasBit(x.alive, e>>termShift) {
					n++
				}
			}
		})
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

// boundary is where the page starts (nil: at the first match): after the cursor's card as it
// ranks now, if it still matches, so that a change of the words' weights between two pages moves
// the cursor with the cards; else after the position the cursor recorded. total is the sum of
// the terms' weights.
func (x *Tenant) boundary(p *Plan, s *scratch, terms []termList, norm lengthNorm, accept func(uint32) bool, total float64) *Candidate {
	a := p.after
	if a == nil {
		return nil
	}
	if n, ok := x.byID.get(x.docs, a.AgentID); ok && s.has(n) && (accept == nil || accept(n)) {
		if raw, matched := x.scoreOne(terms, norm, n); matched > 0 {
			return &Candidate{agentID: a.AgentID, score: raw / total, matched: matched}
		}
	}
	return &Candidate{agentID: a.AgentID, score: a.Score, matched: a.Matched}
}

// scoreOne is the score of document n before its division by total, and its terms matched, as
// rank works them out, in the same order.
func (x *Tenant) scoreOne(terms []termList, norm lengthNorm, n uint32) (float64, int) {
	raw, matched := 0.0, 0
	for _, t := range terms {
		m := 0.0
		for _, w := range t.words {
			if count, ok := w.list.countOf(n); ok {
				m = max(m, norm.saturation(count, x.lens[n])*w.share)
			}
		}
		for _, lists := range t.phrases {
			m = max(m, x.phraseMatch(lists, norm, n))
		}
		if m > 0 {
			raw += t.weight * m
			matched++
		}
	}
	return raw, matched
}

// eligible sets s.bits to the documents worth scoring: the live ones among cand (every live one
// when cand is nil), narrowed by liveness when the plan filters on it.
func (x *Tenant) eligible(p *Plan, cand []uint32, s *scratch, online *Online) {
	switch {
	case s.preset: // the filters' documents already
	case cand == nil:
		copy(s.bits, x.alive)
	default:
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
