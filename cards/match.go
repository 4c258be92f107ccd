package cards

import (
	"slices"
	"strings"
)

// doc is what search knows of one card: the filterable values, normalized, and every text token
// with the best field it occurs in.
type doc struct {
	agentID      string
	name         string // lowercased
	protocols    []string
	capabilities []string
	tags         []string
	resources    []resourcePattern
	terms        map[string]uint8
}

// analyze extracts what search needs from c. The memory index and the scan (search.index: none)
// both use it, so they cannot disagree on what a card contains.
func analyze(c Card) doc {
	// Sized for a typical card (~100 distinct tokens), so the map is not regrown as it fills.
	terms := make(map[string]uint8, 128)
	d := analyzeWith(c, func(tok string, field uint8) {
		if terms[tok] < field {
			terms[tok] = field
		}
	})
	d.terms = terms
	return d
}

// analyzeWith is analyze, except that each token of the card's text goes to term (once per
// occurrence, with the field it occurs in) instead of into d.terms, which stays nil. An index
// build posts them straight into its lists.
func analyzeWith(c Card, term func(tok string, field uint8)) doc {
	d := doc{agentID: c.AgentID, name: strings.ToLower(c.Name)}
	add := func(text string, field uint8) {
		tokenize(text, func(tok string, _ bool) { term(tok, field) })
	}
	for _, p := range c.Protocols {
		d.protocols = append(d.protocols, strings.ToLower(p))
	}
	for _, t := range c.Tags {
		d.tags = append(d.tags, strings.ToLower(t))
		add(t, fieldCapOrTag)
	}
	add(c.Name, fieldName)
	add(c.Description, fieldDescription)
	for _, cp := range c.Capabilities {
		d.capabilities = append(d.capabilities, cp.Name)
		add(cp.Name, fieldCapOrTag)
		add(cp.Title, fieldCapOrTag)
		add(cp.Description, fieldDescription)
		for _, t := range cp.Tags {
			add(t, fieldCapOrTag)
		}
	}
	for _, r := range c.Resources {
		if rp, err := parseResource(r.URI); err == nil {
			d.resources = append(d.resources, rp)
		}
	}
	d.protocols = sortedSet(d.protocols)
	d.tags = sortedSet(d.tags)
	d.capabilities = sortedSet(d.capabilities)
	return d
}

func sortedSet(s []string) []string {
	slices.Sort(s)
	return slices.Compact(s)
}

// coversAll reports whether the card's resources cover every URI asked for.
func coversAll(have []resourcePattern, want []resourcePattern) bool {
	for _, w := range want {
		if !slices.ContainsFunc(have, func(h resourcePattern) bool { return h.covers(w) }) {
			return false
		}
	}
	return true
}

// containsAll reports whether the sorted set have holds every value of want.
func containsAll(have, want []string) bool {
	for _, w := range want {
		if _, ok := slices.BinarySearch(have, w); !ok {
			return false
		}
	}
	return true
}

// matchTerm returns the best field in which t occurs in terms (0: nowhere): the whole token, or
// for the word being typed, any token it begins; exact says whether the whole token occurs.
func matchTerm(terms map[string]uint8, t term) (best uint8, exact bool) {
	best = terms[t.text]
	exact = best > 0
	if t.prefix && best < fieldCapOrTag {
		for tok, f := range terms {
			if f > best && strings.HasPrefix(tok, t.text) {
				best = f
			}
		}
	}
	return best, exact
}

// candidate is a card that matched, with what orders it: how many distinct query tokens it
// matched, how many of those as whole tokens (a prefix match of the word being typed ranks
// below the word itself), and the sum of the best fields they matched in.
type candidate struct {
	agentID string
	matched int
	exact   int
	weight  int
}

// evaluate applies the plan to one analyzed card: whether it matches and, for q, how well.
// This is the reference semantics; the memory index must give the same answers.
func (p *plan) evaluate(d doc) (candidate, bool) {
	if !containsAll(d.protocols, p.protocols) || !containsAll(d.tags, p.tags) || !containsAll(d.capabilities, p.capabilities) {
		return candidate{}, false
	}
	if p.name != "" && !strings.Contains(d.name, p.name) {
		return candidate{}, false
	}
	if !coversAll(d.resources, p.resources) {
		return candidate{}, false
	}
	c := candidate{agentID: d.agentID}
	for _, t := range p.terms {
		if f, exact := matchTerm(d.terms, t); f > 0 {
			c.matched++
			c.weight += int(f)
			if exact {
				c.exact++
			}
		}
	}
	if len(p.terms) > 0 && c.matched == 0 {
		return candidate{}, false
	}
	return c, true
}

// less orders the answer: more matched tokens first, then more whole-token matches, then better
// fields, then agentId.
func less(a, b candidate) bool {
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

// page picks the page after p.after from all candidates, and the position to resume from.
func (p *plan) page(all []candidate) ([]candidate, *position) {
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
func (p *plan) cut(top []candidate) ([]candidate, *position) {
	if len(top) <= p.limit {
		return top, nil
	}
	top = top[:p.limit]
	last := top[len(top)-1]
	return top, &position{Matched: last.matched, Exact: last.exact, Weight: last.weight, AgentID: last.agentID, Query: p.fingerprint}
}

// topK returns the k smallest candidates in order, using a bounded max-heap: O(n log k).
func topK(cs []candidate, k int) []candidate {
	if len(cs) <= k {
		out := slices.Clone(cs)
		slices.SortFunc(out, cmpCandidates)
		return out
	}
	h := make([]candidate, 0, k)
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

func cmpCandidates(a, b candidate) int {
	switch {
	case less(a, b):
		return -1
	case less(b, a):
		return 1
	}
	return 0
}

// The heap keeps the worst candidate (the greatest in answer order) at the root.
func siftUp(h []candidate, i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if !less(h[parent], h[i]) {
			return
		}
		h[parent], h[i] = h[i], h[parent]
		i = parent
	}
}

func siftDown(h []candidate, i int) {
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

// matchedCapabilities names the capabilities of r's card whose name or description matched a
// term.
func (p *plan) matchedCapabilities(r *rendered) []string {
	var out []string
	for i, terms := range r.capabilityTerms() {
		for _, t := range p.terms {
			if f, _ := matchTerm(terms, t); f > 0 {
				out = append(out, r.card.Capabilities[i].Name)
				break
			}
		}
	}
	return out
}

// matchedResources names the resources c declares that cover a URI asked for, in the card's
// order and each URI once, so a caller sees which of the card's resources its filter matched.
// Like matchedCapabilities it is worked out from the card itself, so both search modes agree.
func (p *plan) matchedResources(c Card) []string {
	var out []string
	for _, r := range c.Resources {
		d, err := parseResource(r.URI)
		if err != nil || slices.Contains(out, r.URI) {
			continue
		}
		if slices.ContainsFunc(p.resources, d.covers) {
			out = append(out, r.URI)
		}
	}
	return out
}
