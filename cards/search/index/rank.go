package index

import (
	"slices"
)

// less orders the answer: a higher score first, then more of the query's words matched, then
// agentId. Without q every score is 0 and the order is agentId's.
func less(a, b Candidate) bool {
	if a.score != b.score {
		return a.score > b.score
	}
	if a.matched != b.matched {
		return a.matched > b.matched
	}
	return a.agentID < b.agentID
}

// pageAfter picks the page after boundary (nil: from the first) from all candidates, and the
// position to resume from.
func (p *Plan) pageAfter(all []Candidate, boundary *Candidate) ([]Candidate, *Position) {
	rest := all[:0:0]
	for _, c := range all {
		if boundary == nil || less(*boundary, c) {
			rest = append(rest, c)
		}
	}
	top := topK(rest, p.limit+1)
	return p.cut(top)
}

// cut trims a sorted slice of up to limit+1 candidates to the page and its next position.
func (p *Plan) cut(top []Candidate) ([]Candidate, *Position) {
	if len(top) <= p.limit {
		return top, nil
	}
	top = top[:p.limit]
	last := top[len(top)-1]
	return top, &Position{Score: last.score, Matched: last.matched, AgentID: last.agentID, Query: p.fingerprint}
}

// topK returns the k smallest candidates in order, using a bounded max-heap: O(n log k).
func topK(cs []Candidate, k int) []Candidate {
	if len(cs) <= k {
		out := slices.Clone(cs)
		slices.SortFunc(out, cmpCandidates)
		return out
	}
	t := best{k: k, h: make([]Candidate, 0, k)}
	for _, c := range cs {
		t.offer(c)
	}
	return t.sorted()
}

// best keeps the k smallest candidates offered, in a max-heap: the worst of them (the greatest
// in answer order) at the root.
type best struct {
	k int
	h []Candidate
}

func (t *best) offer(c Candidate) {
	if len(t.h) < t.k {
		t.h = append(t.h, c)
		siftUp(t.h, len(t.h)-1)
		return
	}
	if t.k > 0 && less(c, t.h[0]) {
		t.h[0] = c
		siftDown(t.h, 0)
	}
}

// sorted returns the candidates kept, in answer order.
func (t *best) sorted() []Candidate {
	slices.SortFunc(t.h, cmpCandidates)
	return t.h
}

func cmpCandidates(a, b Candidate) int {
	switch {
	case less(a, b):
		return -1
	case less(b, a):
		return 1
	}
	return 0
}

func siftUp(h []Candidate, i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if !less(h[parent], h[i]) {
			return
		}
		h[parent], h[i] = h[i], h[parent]
		i = parent
	}
}

func siftDown(h []Candidate, i int) {
	for {
		l, r, worst := 2*i+1, 2*i+2, i
		if l < len(h) && less(h[worst], h[l]) {
			worst = l
		}
		if r < len(h) && less(h[worst], h[r]) {
			worst = r
		}
		if worst == i {
			return
		}
		h[i], h[worst] = h[worst], h[i]
		i = worst
	}
}
