package search

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
	if !p.finds(d.status) || !p.findsVerified(d.verified) || !p.findsOnline(d.online) {
		return candidate{}, false
	}
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
func (p *plan) matchedResources(c cards.Card) []string {
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
