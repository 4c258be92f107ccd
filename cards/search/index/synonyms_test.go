package index

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/tenants"
)

// TestSynonymTerms checks how the sets turn a query's words into terms: each term is shown as
// its stem, or its members in braces (a member of several words joined by +).
func TestSynonymTerms(t *testing.T) {
	sets := []tenants.SynonymSet{
		{ID: "i18n", Words: []string{"translation", "localization", "i18n"}},
		{ID: "llm", Words: []string{"LLM", "large language model"}},
		{ID: "lm", Words: []string{"language model", "lm"}},
		{ID: "k8s", Words: []string{"kubernetes", "k8s"}},
		{ID: "it", Words: []string{"IT", "information technology"}},
		{ID: "cc", Words: []string{"cost_center", "cost centre"}},
		{ID: "same", Words: []string{"review", "reviews"}}, // one stem: says nothing
		{ID: "orch", Words: []string{"kubernetes", "orchestrator"}},
		{ID: "tts", Words: []string{"text to speech", "tts"}},
		{ID: "pos", Words: []string{"point of sale", "POS"}},
		{ID: "ab", Words: []string{"alpha beta", "ab"}},
		{ID: "bgd", Words: []string{"beta gamma delta", "bgd"}},
	}
	cases := map[string]string{
		"translations service": "[{translat local i18n} servic*]",
		"k8s":                  "[{kubernet k8s}*]",          // the set of k8s alone
		"kubernetes":           "[{kubernet k8s orchestr}*]", // both sets of kubernetes,
		// The longest run wins: large language model, not language model.
		"large language model router": "[router* {llm larg+languag+model}]",
		"language model":              "[{languag+model lm}]",
		// A stopword asked for as a synonym is kept; the stopwords of a phrase are not required.
		"it support":     "[support* {it inform+technolog}]",
		"text to speech": "[{text+speech tts}]",
		"cost_center":    "[cost center* {cost_center cost+centr}*]",
		"reviews":        "[review*]",
		// The last word may be a prefix (*), beside its members.
		"kube":        "[kube*]",
		"plain words": "[plain word*]",
		// A word of a run that q also says on its own keeps its own term.
		"sale point of sale": "[sale* {point+sale pos}]",
		// Runs are read from the left: alpha beta, then gamma and delta alone.
		"alpha beta gamma delta": "[gamma delta* {alpha+beta ab}]",
	}
	table := synonymsOf(sets)
	for q, want := range cases {
		var got []string
		for _, tm := range queryTerms(q, table) {
			s := tm.text
			if tm.members != nil {
				var ms []string
				for _, m := range tm.members {
					ms = append(ms, strings.Join(m.words, "+"))
				}
				s = "{" + strings.Join(ms, " ") + "}"
			}
			if tm.prefix {
				s += "*"
			}
			got = append(got, s)
		}
		if fmt.Sprint(got) != want {
			t.Errorf("%q: %v, want %v", q, got, want)
		}
	}
	if synonymsOf(sets) != table {
		t.Error("the same sets compiled twice")
	}
}

// TestSynonymMembersBounded: a word in many sets takes at most maxMembers members.
func TestSynonymMembersBounded(t *testing.T) {
	var sets []tenants.SynonymSet
	for i := range 20 {
		set := tenants.SynonymSet{ID: fmt.Sprint("s", i), Words: []string{"hub"}}
		for j := range 31 {
			set.Words = append(set.Words, fmt.Sprintf("w%dx%d", i, j))
		}
		sets = append(sets, set)
	}
	terms := queryTerms("hub", synonymsOf(sets))
	if len(terms) != 1 || len(terms[0].members) != maxMembers {
		t.Fatalf("%d terms, the first with %d members; want 1 with %d", len(terms), len(terms[0].members), maxMembers)
	}
}

// TestExplainPhraseByWord: the query's own phrase is explained as matched by its word, whatever
// its inflection; the set's other member as a synonym.
func TestExplainPhraseByWord(t *testing.T) {
	x := New()
	c := cards.Card{AgentID: "a", Name: "Large language model router", ID: "id-a", Revision: 1}
	x.Upsert(c)
	sets := []tenants.SynonymSet{{ID: "llm", Words: []string{"large language model", "LLM"}}}
	for q, by := range map[string]string{"Large Language Models": "word", "llm": "synonym"} {
		p, err := Query{Q: q, Explain: true, Synonyms: sets}.Compile()
		if err != nil {
			t.Fatal(err)
		}
		if page, _, _ := x.Search(&p, nil, nil); len(page) != 1 {
			t.Fatalf("%q: %v", q, page)
		}
		if w := p.Explain(c).Words[0]; w.By != by || w.Matched != "large language model" {
			t.Errorf("%q: %+v, want by %s", q, w, by)
		}
	}
}
