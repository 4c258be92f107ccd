package index

import (
	"slices"
	"strings"

	"github.com/agentcards/agentcards/cards"
)

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

// Candidate is a card that matched, with what orders it: its score for q, then how many of the
// query's distinct words it matched.
type Candidate struct {
	agentID string
	score   float64
	matched int
}

// AgentID is the agent of the card that matched.
func (c Candidate) AgentID() string { return c.agentID }

// filters applies the plan's filters (all but q) to one analysed card.
func (p *Plan) filters(d *Doc) bool {
	return p.finds(d.status) && p.findsSigned(d.verified, d.trusted) && p.findsOnline(d.online) &&
		containsAll(d.protocols, p.protocols) && containsAll(d.tags, p.tags) && containsAll(d.capabilities, p.capabilities) &&
		(p.name == "" || strings.Contains(d.name, p.name)) && coversAll(d.resources, p.resources)
}

// Scan answers a plan from cards read one by one, for a search that reads every card of the
// tenant (search.index: none): Add each card, then Page. It is the reference semantics, and the
// index gives the same answers: the words' weights come from every card added, as the index's
// come from every card it holds.
type Scan struct {
	p      *Plan
	corpus corpus
	kept   []Doc
	df     map[string]int   // by word the terms match whole: the cards holding it
	longer []map[string]int // by term being typed: the cards holding each longer word it begins or completion
}

// Scan starts a scan of the plan.
func (p *Plan) Scan() *Scan {
	s := &Scan{p: p, df: map[string]int{}, longer: make([]map[string]int, len(p.terms))}
	for i, t := range p.terms {
		s.longer[i] = map[string]int{}
		for w := range t.words {
			s.df[w] = 0
		}
	}
	return s
}

// Add counts c, a card of the tenant, for the words' weights, and keeps it if the caller may
// read it (visible) and it passes the plan's filters; online says whether its agent is online.
func (s *Scan) Add(c cards.Card, visible, online bool) {
	d := Analyze(c)
	d.online = online
	s.add(d, visible)
}

// add is Add of a card analysed as d; it keeps d's terms map as it is.
func (s *Scan) add(d Doc, visible bool) {
	s.corpus.docs++
	s.corpus.length += uint64(d.length)
	for w, n := range s.df {
		if d.terms[w] > 0 {
			s.df[w] = n + 1
		}
	}
	for i, t := range s.p.terms {
		if t.prefix {
			for w := range d.terms {
				if t.prefixOf(w) {
					s.longer[i][w]++
				}
			}
		}
	}
	if visible && s.p.filters(&d) {
		d.terms = s.usedTerms(d.terms)
		s.kept = append(s.kept, d)
	}
}

// usedTerms keeps of a card's words those the plan's terms can match, which is all a kept card
// needs for its score.
func (s *Scan) usedTerms(terms map[string]uint8) map[string]uint8 {
	out := map[string]uint8{}
	for w, n := range terms {
		if _, ok := s.df[w]; ok || slices.ContainsFunc(s.p.terms, func(t term) bool { return t.prefixOf(w) }) {
			out[w] = n
		}
	}
	return out
}

// weights returns each term's weight from the cards that hold it: its stem, or for a word being
// typed that no card holds whole, the most common longer word it begins.
func (s *Scan) weights() []float64 {
	weights := make([]float64, len(s.p.terms))
	for i, t := range s.p.terms {
		df := t.df(func(w string) int { return s.df[w] })
		if df == 0 && t.prefix {
			for _, n := range s.longer[i] {
				df = max(df, n)
			}
		}
		weights[i] = s.corpus.idf(df)
	}
	return weights
}

// Page returns the page of the matches, their count, and the position of the next page.
func (s *Scan) Page() ([]Candidate, int, *Position) {
	weights := s.weights()
	s.p.settle(func(t term) int { return t.df(func(w string) int { return s.df[w] }) })
	norm := s.corpus.norm()
	total := 0.0
	for _, w := range weights {
		total += w
	}
	s.p.keepBasis(weights, total, s.corpus)
	var all []Candidate
	for i := range s.kept {
		d := &s.kept[i]
		c := Candidate{agentID: d.agentID}
		sum := 0.0
		for i, t := range s.p.terms {
			if m := norm.match(t, d.terms, d.length); m > 0 {
				sum += weights[i] * m
				c.matched++
			}
		}
		if len(s.p.terms) > 0 {
			if c.matched == 0 {
				continue
			}
			c.score = sum / total
		}
		all = append(all, c)
	}
	page, next := s.p.pageAfter(all, s.boundary(all))
	return page, len(all), next
}

// boundary is where the page starts: after the cursor's card as it ranks now, if it still
// matches, so that a change of the words' weights between two pages moves the cursor with the
// cards; else after the position the cursor recorded.
func (s *Scan) boundary(all []Candidate) *Candidate {
	a := s.p.after
	if a == nil {
		return nil
	}
	for _, c := range all {
		if c.agentID == a.AgentID {
			return &c
		}
	}
	return &Candidate{agentID: a.AgentID, score: a.Score, matched: a.Matched}
}

// AsksOnline reports whether the plan filters on liveness.
func (p *Plan) AsksOnline() bool { return p.online != 0 }

// FiltersResources reports whether the plan filters on resources.
func (p *Plan) FiltersResources() bool { return len(p.resources) > 0 }

// CapabilityWords are the words (stemmed) of each capability's name and description, for
// MatchedCapabilities: capability i's are words[ends[i-1]:ends[i]], in the text's order, and
// sigs[i] a signature of them that rules most capabilities out of a term without reading them.
type CapabilityWords struct {
	words []string
	ends  []int32
	sigs  []signature
}

// signature has a bit, of 256, for each of a capability's words (whole) and each of their
// first minPrefix bytes (the shortest word being typed that matches as a prefix).
type signature struct{ whole, start [4]uint64 }

// bit is the signature bit of s: FNV-1a's hash of s, mod 256.
func bit(s string) (int, uint64) {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h = (h ^ uint32(s[i])) * 16777619
	}
	return int(h>>6) & 3, 1 << (h & 63)
}

func (g *signature) add(w string) {
	i, m := bit(w)
	g.whole[i] |= m
	if len(w) >= minPrefix {
		i, m = bit(w[:minPrefix])
		g.start[i] |= m
	}
}

// mayHold reports whether the capability may hold the word w; false for certain.
func (g *signature) mayHold(w string) bool {
	i, m := bit(w)
	return g.whole[i]&m != 0
}

// mayBegin reports whether a word of the capability may begin with p (at least minPrefix
// bytes); false for certain.
func (g *signature) mayBegin(p string) bool {
	i, m := bit(p[:minPrefix])
	return g.start[i]&m != 0
}

// CapabilityTerms works out c's CapabilityWords: once per card, by a caller that keeps them.
func CapabilityTerms(c cards.Card) CapabilityWords {
	size := 0
	for _, cp := range c.Capabilities {
		size += len(cp.Name) + len(cp.Description)
	}
	// Room for a word every six bytes, about what texts hold: the words are not copied as they
	// grow.
	w := CapabilityWords{words: make([]string, 0, size/6+len(c.Capabilities)), ends: make([]int32, len(c.Capabilities)),
		sigs: make([]signature, len(c.Capabilities))}
	for i, cp := range c.Capabilities {
		sig := &w.sigs[i]
		add := func(tok string, _ bool) {
			s := stem(tok)
			w.words = append(w.words, s)
			sig.add(s)
		}
		tokenize(cp.Name, add)
		tokenize(cp.Description, add)
		w.ends[i] = int32(len(w.words))
	}
	w.words = slices.Clip(w.words)
	return w
}

// matches reports whether capability i holds a match of t: its stem, every word of one of its
// members, or for a word being typed, a longer word it begins or one of its completions. It agrees with
// lengthNorm.match(t, …) > 0 over the capability's words.
func (w CapabilityWords) matches(i int, t term) bool {
	sig := &w.sigs[i]
	start := int32(0)
	if i > 0 {
		start = w.ends[i-1]
	}
	words := w.words[start:w.ends[i]]
	has := func(x string) bool { return sig.mayHold(x) && slices.Contains(words, x) }
	if t.members == nil && has(t.text) {
		return true
	}
	for _, m := range t.members {
		if !slices.ContainsFunc(m.words, func(x string) bool { return !has(x) }) {
			return true
		}
	}
	return t.prefix && ((len(t.raw) < minPrefix || sig.mayBegin(t.raw)) && slices.ContainsFunc(words, t.prefixOf) ||
		slices.ContainsFunc(t.completions, has))
}

// MatchedCapabilities names the capabilities of c whose name or description matched a term;
// words is CapabilityTerms(c).
func (p *Plan) MatchedCapabilities(c cards.Card, words CapabilityWords) []string {
	var out []string
	for i := range c.Capabilities {
		if slices.ContainsFunc(p.terms, func(t term) bool { return words.matches(i, t) }) {
			out = append(out, c.Capabilities[i].Name)
		}
	}
	return out
}

// MatchedResources names the resources c declares that cover a URI asked for, in the card's
// order and each URI once, so a caller sees which of the card's resources its filter matched.
// Like MatchedCapabilities it is worked out from the card itself, so both search modes agree.
func (p *Plan) MatchedResources(c cards.Card) []string {
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
