package index

import (
	"fmt"
	"strings"
	"testing"

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
