package index

import (
	"slices"
)

// less orders the answer: more matched tokens first, then more whole-token matches, then better
// fields, then agentId.
func less(a, b Candidate) bool {
	if a.matched != b.matched {
		return a.matched > b.matched
	}
	if a.exact != b.exact {
		return a.exact > b.exact
	}
	if a.weight != b.weight {
		return a.weight > b.weight
	}
	return a.agentID < b.agentID
}

// Page picks the Page after p.after from all candidates, and the position to resume from.
func (p *Plan) Page(all []Candidate) ([]Candidate, *Position) {
	rest := all[:0:0]
	for _, c := range all {
		if p.after == nil || p.after.before(c) {
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
	return top, &Position{Matched: last.matched, Exact: last.exact, Weight: last.weight, AgentID: last.agentID, Query: p.fingerprint}
}

// topK returns the k smallest candidates in order, using a bounded max-heap: O(n log k).
func topK(cs []Candidate, k int) []Candidate {
	if len(cs) <= k {
		out := slices.Clone(cs)
		slices.SortFunc(out, cmpCandidates)
		return out
	}
	h := make([]Candidate, 0, k)
	for _, c := range cs {
		if len(h) < k {
			h = append(h, c)
			siftUp(h, len(h)-1)
			continue
		}
		if less(c, h[0]) {
			h[0] = c
			siftDown(h, 0)
		}
	}
	slices.SortFunc(h, cmpCandidates)
	return h
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

// The heap keeps the worst candidate (the greatest in answer order) at the root.
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
