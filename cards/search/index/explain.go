package index

import (
	"slices"

	"github.com/agentcards/agentcards/cards"
)

// Explanation says why a card scored as it did for q: for each term of the query, what it
// weighs, which of the card's words matched it and where, and what it added to the score. The
// adds of its words sum to the card's score, to rounding.
type Explanation struct {
	Words []WordScore `json:"words"`
	// Length is the card's length, its words' weighted counts summed; AverageLength is the
	// average over the tenant's cards, against which a long card's matches are discounted.
	Length        uint32  `json:"length"`
	AverageLength float64 `json:"averageLength"`
	// Similarity is the sentence encoder's part in the card's place, when the search re-ranked
	// it (package search).
	Similarity *Similarity `json:"similarity,omitempty"`
}

// Similarity is how a re-ranked card's place was worked out: the cosine of the sentence
// encoder's embeddings of q and of the card, its weight, and the card's rank: its score over the
// first match's score, plus weight times the cosine. The re-ranked block is in order of rank.
type Similarity struct {
	Cosine float64 `json:"cosine"`
	Weight float64 `json:"weight"`
	Rank   float64 `json:"rank"`
}

// WordScore is one term of q in an Explanation.
type WordScore struct {
	// Word is the query's word (lowercased), or its phrase that is a synonym.
	Word string `json:"word"`
	// Weight is the share of the score the word can add: its weight over the sum of the
	// query's words' weights.
	Weight float64 `json:"weight"`
	// Matched is the card's word (its stem) that matched best, or the synonym as its set writes
	// it; none when the card does not match the word.
	Matched string `json:"matched,omitempty"`
	// By is how it matched: "word" (the query's own word), "synonym" (another member of its
	// synonym set) or "prefix" (a longer word the query's last word begins, or the stem of a word
	// it may become, at half worth).
	By string `json:"by,omitempty"`
	// Where lists the card's fields that hold it: name, description, tags, and
	// capabilities[NAME].name, .title, .description, .tags or .examples.
	Where []string `json:"where,omitempty"`
	// Count is its weighted count in the card (3 in the name, 2 in a tag or a capability's name,
	// title or tag, 1 elsewhere; for a phrase, its least counted word's).
	Count int `json:"count,omitempty"`
	// Adds is what it added to the score: Weight times how well the card matches it, from 0 to 1
	// (BM25's saturation of Count, discounted by Length against AverageLength).
	Adds float64 `json:"adds"`
}

// basis is what a search's scores were computed from, kept on an explained plan for Explain:
// each term's weight, their sum, and the length norm.
type basis struct {
	weights []float64
	total   float64
	norm    lengthNorm
	average float64
}

// Explains reports whether the plan asks for explanations of its scores.
func (p *Plan) Explains() bool { return p.explain && len(p.terms) > 0 }

// keepBasis records, on a plan that asks for explanations, what its scores were computed from.
func (p *Plan) keepBasis(weights []float64, total float64, c corpus) {
	if !p.Explains() {
		return
	}
	avg := 1.0
	if c.docs > 0 && c.length > 0 {
		avg = float64(c.length) / float64(c.docs)
	}
	p.basis = &basis{weights: slices.Clone(weights), total: total, norm: c.norm(), average: avg}
}

// Explain explains c's score for the plan: nil unless the plan asks for it and has ranked. c is
// the card as the search scored it.
func (p *Plan) Explain(c cards.Card) *Explanation {
	b := p.basis
	if b == nil || b.total == 0 {
		return nil
	}
	d := Analyze(c)
	fields := fieldWords(c)
	e := &Explanation{Words: make([]WordScore, 0, len(p.terms)), Length: d.length, AverageLength: b.average}
	for i, t := range p.terms {
		w := WordScore{Word: t.raw, Weight: b.weights[i] / b.total}
		best, words := 0.0, []string(nil)
		consider := func(m float64, label, by string, ws []string) {
			if m > best {
				best, words, w.Matched, w.By = m, ws, label, by
			}
		}
		if t.members == nil {
			if n := d.terms[t.text]; n > 0 {
				consider(b.norm.saturation(n, d.length), t.text, "word", []string{t.text})
			}
		}
		for _, mem := range t.members {
			by := "synonym"
			if mem.key == t.text || mem.key == t.phrase {
				by = "word"
			}
			consider(b.norm.matchMember(mem, d.terms, d.length), mem.text, by, mem.words)
		}
		if t.prefix {
			for v, n := range d.terms {
				if t.prefixOf(v) {
					consider(b.norm.saturation(n, d.length)*prefixShare, v, "prefix", []string{v})
				}
			}
		}
		if best > 0 {
			w.Adds = w.Weight * best
			w.Count = maxCount
			for _, v := range words {
				w.Count = min(w.Count, int(d.terms[v]))
			}
			for _, f := range fields {
				if slices.ContainsFunc(words, func(v string) bool { return f.words[v] }) {
					w.Where = append(w.Where, f.path)
				}
			}
			w.Where = slices.Compact(w.Where)
		}
		e.Words = append(e.Words, w)
	}
	return e
}

// fieldText is one of a card's text fields, named as Explanation names it, with its words'
// stems.
type fieldText struct {
	path  string
	words map[string]bool
}

// fieldWords lists c's text fields as analyzeWith reads them.
func fieldWords(c cards.Card) []fieldText {
	var out []fieldText
	add := func(path string, texts ...string) {
		f := fieldText{path: path, words: map[string]bool{}}
		for _, text := range texts {
			tokenize(text, func(tok string, _ bool) { f.words[stem(tok)] = true })
		}
		out = append(out, f)
	}
	add("name", c.Name)
	add("description", c.Description)
	add("tags", c.Tags...)
	for _, cp := range c.Capabilities {
		at := "capabilities[" + cp.Name + "]."
		add(at+"name", cp.Name)
		add(at+"title", cp.Title)
		add(at+"description", cp.Description)
		add(at+"tags", cp.Tags...)
		add(at+"examples", cp.Examples...)
	}
	return out
}
