package index

import (
	"slices"
	"strings"

	"github.com/agentcards/agentcards/cards"
)

// Doc is what search knows of one card: the filterable values, normalized, and every word of its
// text (stemmed, see stem) with its weighted count.
type Doc struct {
	agentID      string
	name         string // lowercased
	protocols    []string
	capabilities []string
	tags         []string
	resources    []resourcePattern
	// terms holds each word's count in the card's text, each occurrence weighted by its field
	// (see fieldDescription), at most maxCount; length is the sum of every word's.
	terms    map[string]uint8
	length   uint32
	status   cards.Status
	verified bool
	trusted  bool
	online   bool // set by the scan when the plan asks, not by analyze
}

// maxCount bounds a word's weighted count in one card: a card that repeats a word forty times
// is not forty times about it.
const maxCount = 255

// Analyze extracts what search needs from c. The memory index and the scan (search.index: none)
// both use it, so they cannot disagree on what a card contains.
func Analyze(c cards.Card) Doc {
	// Sized for a typical card (~100 distinct tokens), so the map is not regrown as it fills.
	terms := make(map[string]uint8, 128)
	d := analyzeWith(c, func(tok string, weight uint8) {
		w := stem(tok)
		terms[w] = uint8(min(int(terms[w])+int(weight), maxCount))
	})
	d.terms = terms
	return d
}

// analyzeWith is Analyze, except that each word of the card's text goes to term as it is, not
// yet stemmed (once per occurrence, with the weight of the field it occurs in), instead of into
// d.terms, which stays nil. An index build posts them straight into its lists.
func analyzeWith(c cards.Card, term func(tok string, weight uint8)) Doc {
	d := Doc{agentID: c.AgentID, name: strings.ToLower(c.Name), status: c.Status, verified: c.Verified(), trusted: c.Trusted()}
	add := func(text string, field uint8) {
		tokenize(text, func(tok string, _ bool) {
			d.length += uint32(field)
			term(tok, field)
		})
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
		for _, e := range cp.Examples {
			add(e, fieldDescription)
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
