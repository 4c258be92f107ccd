package index

import (
	"math"
	"slices"
	"strings"
)

// Ranking of free text, BM25 over weighted fields. Each word of the query weighs its inverse
// document frequency among the tenant's cards, so a rare word ("kubernetes") counts for more
// than a common one ("management"). A card matches a word by its weighted count of the word's
// stem (see Doc.terms), saturated and normalized by the card's length against the average, or,
// for the word being typed, at half of that for the best longer word it begins or, when no card
// holds it whole, the best of its completions (the stems of the words it may become; below, "a
// longer word it begins" stands for both). A card's score is the sum of its words' weights times
// how well it matches each, over the sum of the weights: 1 for a card that matches every word as
// well as a card can, 0 for none.

// The BM25 parameters: k1 is how fast repeating a word stops adding to its match, b how much a
// long card's matches are discounted against a short one's.
const (
	k1 = 1.2
	b  = 0.75
	// prefixShare is what a match of a longer word that the word being typed begins, or of one
	// of its completions, is worth against a match of the word itself.
	prefixShare = 0.5
)

// corpus is what a word's weight and a match's saturation depend on: the tenant's live cards and
// the sum of their lengths.
type corpus struct {
	docs   int
	length uint64
}

// idf is the weight of a word that df of the corpus's cards hold (Lucene's BM25 idf, never
// negative).
func (c corpus) idf(df int) float64 {
	return math.Log(1 + (float64(c.docs)-float64(df)+0.5)/(float64(df)+0.5))
}

// lengthNorm is BM25's discount of a card's matches by its length against the average, worked
// out once per search: k1·(1−b+b·length/average) is base+perLength·length.
type lengthNorm struct{ base, perLength float64 }

func (c corpus) norm() lengthNorm {
	avg := 1.0
	if c.docs > 0 && c.length > 0 {
		avg = float64(c.length) / float64(c.docs)
	}
	return lengthNorm{base: k1 * (1 - b), perLength: k1 * b / avg}
}

// saturation is how well a card of length matches a word it holds count times, between 0 and 1.
func (l lengthNorm) saturation(count uint8, length uint32) float64 {
	tf := float64(count)
	return tf / (tf + l.base + l.perLength*float64(length))
}

// prefixOf reports whether the vocabulary word w is a longer word that t, being typed, begins,
// or one of its completions.
func (t term) prefixOf(w string) bool {
	return t.begins(w) || t.prefix && w != t.text && slices.Contains(t.completions, w)
}

// begins reports whether the vocabulary word w is a longer word that t, being typed, begins.
func (t term) begins(w string) bool {
	return t.prefix && w != t.text && strings.HasPrefix(w, t.raw)
}

// coveredByPart reports whether the compound w, a longer word that t (being typed) begins, can
// add nothing to t's match: one of its words is t's own or another word t begins. Every
// occurrence of a compound in a card posts its words too, with the same weight, so a card
// holding w holds that word at least as often, and matches it at least as well as it matches w.
func (t term) coveredByPart(w string) bool {
	if !strings.ContainsFunc(w, isJoiner) {
		return false
	}
	for part := range strings.FieldsFuncSeq(w, isJoiner) {
		if p := stem(part); p == t.text && t.members == nil || t.prefixOf(p) {
			return true
		}
	}
	return false
}

// match is how well a card of length whose words are terms (a Doc's) matches t; 0 if it does
// not.
func (l lengthNorm) match(t term, terms map[string]uint8, length uint32) float64 {
	m := 0.0
	if n := terms[t.text]; n > 0 && t.members == nil {
		m = l.saturation(n, length)
	}
	for _, mem := range t.members {
		m = max(m, l.matchMember(mem, terms, length))
	}
	if t.prefix {
		for w, n := range terms {
			if t.prefixOf(w) {
				m = max(m, l.saturation(n, length)*prefixShare)
			}
		}
	}
	return m
}

// matchMember is how well a card matches a synonym: as well as the least of its words, 0 if it
// lacks one.
func (l lengthNorm) matchMember(mem member, terms map[string]uint8, length uint32) float64 {
	m := 1.0
	for _, w := range mem.words {
		n := terms[w]
		if n == 0 {
			return 0
		}
		m = min(m, l.saturation(n, length))
	}
	return m
}

// df is how many cards a term's weight counts, from holding (the cards holding a word): those
// holding its stem, or for a synonym, as many as hold its most common member (for a member of
// several words, the fewest holding one of them).
func (t term) df(holding func(w string) int) int {
	if t.members == nil {
		return holding(t.text)
	}
	df := 0
	for _, m := range t.members {
		n := holding(m.words[0])
		for _, w := range m.words[1:] {
			n = min(n, holding(w))
		}
		df = max(df, n)
	}
	return df
}

// words are the words a term can match whole: its stem, or its members'.
func (t term) words(yield func(string) bool) {
	if t.members == nil {
		yield(t.text)
		return
	}
	for _, m := range t.members {
		for _, w := range m.words {
			if !yield(w) {
				return
			}
		}
	}
}

// Score is how well c matched q (see the ranking above), between 0 and 1; ok is false for a
// query without q, which orders by agentId and scores nothing.
func (p *Plan) Score(c Candidate) (score float64, ok bool) {
	if len(p.terms) == 0 {
		return 0, false
	}
	return c.score, true
}
