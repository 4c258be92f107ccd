package index

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/tenants/paging"
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

// TestCompletionsOnlyForWordsNoCardHolds: a last word that some card holds whole is taken as
// typed whole ("model" does not find "mode" by way of "modely", nor "taxi" find "tax" by way
// of "taxing"); one that no card holds finds its completions ("filin" finds filing's file,
// "booki" booking's book). The index and the scan agree.
func TestCompletionsOnlyForWordsNoCardHolds(t *testing.T) {
	card := func(id, desc string) cards.Card {
		return cards.Card{AgentID: "completions-" + id, Name: id, Description: desc, ID: "id-completions-" + id, Revision: 1,
			Status: cards.StatusActive}
	}
	live := []cards.Card{
		card("dark", "Turns dark mode on and off."), card("lm", "Serves a language model."),
		card("filing", "Tax filing."), card("ride", "Book a taxi."),
	}
	x := New()
	x.Load(live)
	for q, want := range map[string][]string{
		"model": {"completions-lm"},
		"taxi":  {"completions-ride"},
		"filin": {"completions-filing"},
		"booki": {"completions-ride"},
		"mod":   {"completions-dark", "completions-lm"},
	} {
		for _, path := range []string{"index", "scan"} {
			p, err := Query{Q: q}.Compile()
			if err != nil {
				t.Fatal(err)
			}
			var page []Candidate
			if path == "index" {
				page, _, _ = x.Search(&p, nil, nil)
			} else {
				page, _, _ = naiveSearch(live, &p, nil)
			}
			var got []string
			for _, c := range page {
				got = append(got, c.agentID)
			}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("%s: q %q finds %v, want %v", path, q, got, want)
			}
		}
	}
}

// TestCompletionsAgree: for queries whose last word is typed part-way (so that completions
// count, or are settled away where a card holds it whole), over cards written in the judged
// set's words, the index answers as the scan does page after page, and each result's
// explanation adds up to its score.
func TestCompletionsAgree(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 5))
	var vocab []string
	seen := map[string]bool{}
	for _, c := range readJudged(t).cards[:300] {
		tokenize(c.Description, func(w string, _ bool) {
			if !seen[w] && stemmed(w) {
				seen[w] = true
				vocab = append(vocab, w)
			}
		})
	}
	text := func(n int) string {
		ws := make([]string, n)
		for i := range ws {
			ws[i] = vocab[r.IntN(len(vocab))]
		}
		return strings.Join(ws, " ")
	}
	var live []cards.Card
	for i := range 1000 {
		live = append(live, cards.Card{AgentID: fmt.Sprintf("ca-%04d", i), Name: text(2), Description: text(5 + r.IntN(30)),
			ID: fmt.Sprint("id-ca-", i), Revision: 1, Status: cards.StatusActive})
	}
	x := New()
	x.Load(live)
	withCompletions := 0
	for range 300 {
		w := vocab[r.IntN(len(vocab))]
		if len(w) > minPrefix {
			w = w[:minPrefix+r.IntN(len(w)-minPrefix)]
		}
		q := Query{Q: text(r.IntN(3)) + " " + w, Explain: true, Page: paging.Page{Limit: new(1 + r.IntN(8))}}
		for range 3 {
			p, err := q.Compile()
			if err != nil {
				t.Fatal(err)
			}
			if len(p.terms[len(p.terms)-1].completions) > 0 {
				withCompletions++
			}
			got, gotTotal, gotNext := x.Search(&p, nil, nil)
			scan, _ := q.Compile()
			want, wantTotal, wantNext := naiveSearch(live, &scan, nil)
			if fmt.Sprint(got, gotTotal, gotNext) != fmt.Sprint(want, wantTotal, wantNext) {
				t.Fatalf("q %q: index %v (%d), scan %v (%d)", q.Q, got, gotTotal, want, wantTotal)
			}
			for _, c := range got {
				i, _ := strconv.Atoi(strings.TrimPrefix(c.agentID, "ca-"))
				sum := 0.0
				for _, ws := range p.Explain(live[i]).Words {
					sum += ws.Adds
				}
				if math.Abs(sum-c.score) > 1e-9 {
					t.Fatalf("q %q, %s: explained %v, scored %v", q.Q, c.agentID, sum, c.score)
				}
			}
			if gotNext == nil {
				break
			}
			q.Cursor = encodePosition(*gotNext)
		}
	}
	if withCompletions < 50 {
		t.Fatalf("only %d searches had completions", withCompletions)
	}
}
