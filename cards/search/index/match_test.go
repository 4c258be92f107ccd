package index

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/agentcards/agentcards/bench/cardgen"
	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/tenants"
	"github.com/agentcards/agentcards/tenants/paging"
)

// TestMatchedCapabilitiesAgreesWithMatch: the capabilities MatchedCapabilities names are those
// in which the ranking's own rule (lengthNorm.match over the capability's words) finds a term,
// for random queries of whole words, words being typed, stopwords and synonym sets of words and
// phrases, over generated cards and cards of compounds and capitals.
func TestMatchedCapabilitiesAgreesWithMatch(t *testing.T) {
	cs := generatedCards(t, 300)
	cs = append(cs, cards.Card{AgentID: "compounds", Capabilities: []cards.Capability{
		{Name: "cost_center-Report", Description: "Costs per Cost-Center, costume budgets"},
		{Name: "ÉtéForecast", Description: "Prévisions de l'été: forecasting"},
		{Name: "empty"},
	}})
	words := append(cardgen.Words(), "cost", "center", "cost_center", "costu", "forecasts", "été", "the", "of")
	r := rand.New(rand.NewPCG(7, 42))
	pick := func() string { return words[r.IntN(len(words))] }
	// Each capability's words as a set, and as MatchedCapabilities takes them.
	sets := make([][]map[string]uint8, len(cs))
	capWords := make([]CapabilityWords, len(cs))
	for i, c := range cs {
		for _, cp := range c.Capabilities {
			set := map[string]uint8{}
			tokenize(cp.Name, func(tok string, _ bool) { set[stem(tok)] = 1 })
			tokenize(cp.Description, func(tok string, _ bool) { set[stem(tok)] = 1 })
			sets[i] = append(sets[i], set)
		}
		capWords[i] = CapabilityTerms(c)
	}
	// The rule the ranking scores a capability by, over the set of its words.
	reference := func(p *Plan, i int) []string {
		var out []string
		for j, set := range sets[i] {
			if slices.ContainsFunc(p.terms, func(t term) bool { return (corpus{}).norm().match(t, set, 0) > 0 }) {
				out = append(out, cs[i].Capabilities[j].Name)
			}
		}
		return out
	}
	matched := 0
	for i := range 600 {
		q := []string{pick()}
		for len(q) < 1+i%4 {
			q = append(q, pick())
		}
		last := q[len(q)-1]
		if i%3 == 0 && len(last) > 4 { // a word being typed
			q[len(q)-1] = last[:3+r.IntN(len(last)-3)]
		}
		var synonyms []tenants.SynonymSet
		if i%2 == 0 {
			synonyms = []tenants.SynonymSet{
				{ID: "a", Words: []string{q[0], pick(), pick() + " " + pick()}},
				{ID: "b", Words: []string{pick(), pick()}},
			}
		}
		p, err := Query{Q: strings.Join(q, " "), Synonyms: synonyms, Page: paging.Page{Limit: new(10)}}.Compile()
		if err != nil {
			t.Fatal(err)
		}
		for j, c := range cs {
			got, want := p.MatchedCapabilities(c, capWords[j]), reference(&p, j)
			if !slices.Equal(got, want) {
				t.Fatalf("q %q, synonyms %v, card %s: matched %q, the rule says %q", strings.Join(q, " "), synonyms, c.AgentID, got, want)
			}
			matched += len(got)
		}
	}
	if matched < 1000 {
		t.Fatalf("only %d capabilities matched in all: the queries test too little", matched)
	}
}

// BenchmarkCapabilityTerms: the words of a generated card's capabilities, as a first answer of
// a q search works them out for matchedCapabilities. -cpu 2 runs two at once.
func BenchmarkCapabilityTerms(b *testing.B) {
	cs := generatedCards(b, 1000)
	for _, c := range cs {
		CapabilityTerms(c) // every word's stem known, as in a tenant's steady state
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			CapabilityTerms(cs[i%len(cs)])
			i++
		}
	})
}

// generatedCards decodes n bench/cardgen cards (seed 42).
func generatedCards(tb testing.TB, n int) []cards.Card {
	tb.Helper()
	cs := make([]cards.Card, 0, n)
	for _, d := range cardgen.Documents(42, n) {
		c, err := cards.Decode(d)
		if err != nil {
			tb.Fatal(err)
		}
		cs = append(cs, c)
	}
	return cs
}
