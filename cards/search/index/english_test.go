package index

import (
	"strings"
	"testing"
)

// TestCompletionsFindTheWord: every prefix of three letters or more of every word of the judged
// set's cards (bench/relevance), typed as the last word of q, matches that word's stem: as its
// own stem, as a longer word it begins, or as one of its completions.
func TestCompletionsFindTheWord(t *testing.T) {
	seen := map[string]bool{}
	prefixes, byCompletion := 0, 0
	for _, c := range readJudged(t).cards {
		tokenize(c.Name+" "+c.Description, func(w string, _ bool) {
			if seen[w] || !stemmed(w) {
				return
			}
			seen[w] = true
			want := stem(w)
			for n := minPrefix; n < len(w); n++ {
				p := w[:n]
				terms := queryTerms(p, nil)
				if len(terms) != 1 || !terms[0].prefix {
					t.Fatalf("q %q: terms %+v, want one word being typed", p, terms)
				}
				prefixes++
				tm := terms[0]
				switch {
				case tm.text == want || tm.begins(want):
				case tm.prefixOf(want):
					byCompletion++
				default:
					t.Errorf("q %q (on the way to %q) does not match %q; its completions: %v", p, w, want, tm.completions)
				}
			}
		})
	}
	if len(seen) < 2000 || byCompletion == 0 {
		t.Fatalf("%d words, %d prefixes, %d by a completion: the set is not what this test expects", len(seen), prefixes, byCompletion)
	}
	t.Logf("%d words, %d prefixes, %d found by a completion", len(seen), prefixes, byCompletion)
}

// TestCompletions: what a word being typed completes to, worked out by hand from the stemmer's
// rules; a word it begins is not a completion, nor is its own stem, nor anything of a word
// that is not stemmed.
func TestCompletions(t *testing.T) {
	for raw, want := range map[string]string{
		"translati": "translat", // translation, translating
		"deployi":   "deploy",   // deploying
		"summariz":  "summar",   // summarize
		"availabi":  "avail",    // availability
	} {
		if got := completions(raw); !strings.Contains(" "+strings.Join(got, " ")+" ", " "+want+" ") {
			t.Errorf("completions(%q) = %v, want %q among them", raw, got, want)
		}
	}
	for _, raw := range []string{"review", "rev", "cost_center", "s3", "ab"} {
		for _, s := range completions(raw) {
			if strings.HasPrefix(s, raw) || s == stem(raw) {
				t.Errorf("completions(%q) holds %q, which it begins or is", raw, s)
			}
		}
	}
	if got := completions("cost_center"); got != nil {
		t.Errorf("completions of a compound: %v, want none", got)
	}
}
