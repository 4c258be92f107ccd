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

// Candidate is a card that matched, with what orders it: how many distinct query tokens it
// matched, how many of those as whole tokens (a prefix match of the word being typed ranks
// below the word itself), and the sum of the best fields they matched in.
type Candidate struct {
	agentID string
	matched int
	exact   int
	weight  int
}

// evaluate applies the plan to one analyzed card: whether it matches and, for q, how well.
// This is the reference semantics; the memory index must give the same answers.
func (p *Plan) evaluate(d Doc) (Candidate, bool) {
	if !p.finds(d.status) || !p.findsVerified(d.verified) || !p.findsOnline(d.online) {
		return Candidate{}, false
	}
	if !containsAll(d.protocols, p.protocols) || !containsAll(d.tags, p.tags) || !containsAll(d.capabilities, p.capabilities) {
		return Candidate{}, false
	}
	if p.name != "" && !strings.Contains(d.name, p.name) {
		return Candidate{}, false
	}
	if !coversAll(d.resources, p.resources) {
		return Candidate{}, false
	}
	c := Candidate{agentID: d.agentID}
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
		return Candidate{}, false
	}
	return c, true
}

// AgentID is the agent of the card that matched.
func (c Candidate) AgentID() string { return c.agentID }

// Match analyses c and applies the plan to it (online: whether its agent is online), as a
// search that reads every card does; the index gives the same answers.
func (p *Plan) Match(c cards.Card, online bool) (Candidate, bool) {
	d := Analyze(c)
	d.online = online
	return p.evaluate(d)
}

// AsksOnline reports whether the plan filters on liveness.
func (p *Plan) AsksOnline() bool { return p.online != 0 }

// FiltersResources reports whether the plan filters on resources.
func (p *Plan) FiltersResources() bool { return len(p.resources) > 0 }

// Score is how well c matched q, the share of its distinct tokens matched; ok is false for a
// query without q, which orders by agentId and scores nothing.
func (p *Plan) Score(c Candidate) (score float64, ok bool) {
	if len(p.terms) == 0 {
		return 0, false
	}
	return float64(c.matched) / float64(len(p.terms)), true
}

// CapabilityTerms are the tokens of each capability's name and description, for
// MatchedCapabilities: worked out once per card by a caller that keeps them.
func CapabilityTerms(c cards.Card) []map[string]uint8 {
	out := make([]map[string]uint8, len(c.Capabilities))
	for i, cp := range c.Capabilities {
		terms := map[string]uint8{}
		tokenize(cp.Name, func(tok string, _ bool) { terms[tok] = 1 })
		tokenize(cp.Description, func(tok string, _ bool) { terms[tok] = 1 })
		out[i] = terms
	}
	return out
}

// MatchedCapabilities names the capabilities of c whose name or description matched a term;
// terms is CapabilityTerms(c).
func (p *Plan) MatchedCapabilities(c cards.Card, terms []map[string]uint8) []string {
	var out []string
	for i, terms := range terms {
		for _, t := range p.terms {
			if f, _ := matchTerm(terms, t); f > 0 {
				out = append(out, c.Capabilities[i].Name)
				break
			}
		}
	}
	return out
}

// MatchedResources names the resources c declares that cover a URI asked for, in the card's
// order and each URI once, so a caller sees which of the card's resources its filter matched.
// Like matchedCapabilities it is worked out from the card itself, so both search modes agree.
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
