package search

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/search/index"
	"github.com/agentcards/agentcards/cards/search/searchtest"
	"github.com/agentcards/agentcards/tenants"
)

// TestExplainAddsUpToTheScore asks every hand-worked query of free text for explanations, with
// and without the index: each result's words add up to its score, each word that added says
// what matched it and where, and a search without explain has none.
func TestExplainAddsUpToTheScore(t *testing.T) {
	for _, withIndex := range []bool{false, true} {
		t.Run(map[bool]string{false: "scan", true: "index"}[withIndex], func(t *testing.T) {
			s := handService(withIndex)
			for _, c := range searchtest.Cases() {
				if c.Q.Q == "" {
					continue
				}
				q := c.Q
				q.Explain = true
				res, err := s.Search(caller, "t", q)
				if err != nil {
					t.Fatalf("%s: %v", c.Name, err)
				}
				for _, h := range res.Items {
					checkExplanation(t, c.Name, h)
				}
				plain, err := s.Search(caller, "t", c.Q)
				if err != nil {
					t.Fatal(err)
				}
				for _, h := range plain.Items {
					if h.Explain != nil {
						t.Errorf("%s: %s explained unasked", c.Name, h.Card.AgentID)
					}
				}
			}
		})
	}
}

func checkExplanation(t *testing.T, name string, h Hit) {
	t.Helper()
	e := h.Explain
	if e == nil || h.Score == nil {
		t.Errorf("%s: %s has no explanation", name, h.Card.AgentID)
		return
	}
	sum, weights := 0.0, 0.0
	for _, w := range e.Words {
		sum += w.Adds
		weights += w.Weight
		if (w.Adds > 0) != (w.Matched != "") || (w.Adds > 0) != (len(w.Where) > 0) || (w.Adds > 0) != (w.By != "") || w.Adds > w.Weight {
			t.Errorf("%s: %s: word %+v", name, h.Card.AgentID, w)
		}
	}
	if math.Abs(sum-*h.Score) > 1e-12 || math.Abs(weights-1) > 1e-12 {
		t.Errorf("%s: %s scored %v, its words add %v (weights %v)", name, h.Card.AgentID, *h.Score, sum, weights)
	}
}

// TestExplainByHand checks one explanation against docs/search.md's formulas worked by hand:
// alpha for "review pull" (HandCorpus: 10 cards, lengths averaging 13.3; review in 8 of them,
// pull in alpha alone; alpha's length 17 holds review 7 times weighted, pull twice).
func TestExplainByHand(t *testing.T) {
	res, err := handService(true).Search(caller, "t", Query{Q: "Review pull", Explain: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Items) == 0 || res.Items[0].Card.AgentID != "alpha" {
		t.Fatalf("answer %+v", res.Items)
	}
	idf := func(df float64) float64 { return math.Log(1 + (10-df+0.5)/(df+0.5)) }
	sat := func(f, length float64) float64 { return f / (f + 1.2*(0.25+0.75*length/13.3)) }
	wReview, wPull := idf(8), idf(1)
	share := func(w float64) float64 { return w / (wReview + wPull) }
	want := &Explanation{Length: 17, AverageLength: 13.3, Words: []index.WordScore{
		{Word: "review", Weight: share(wReview), Matched: "review", By: "word", Count: 7, Adds: share(wReview) * sat(7, 17),
			Where: []string{"name", "description", "capabilities[review].name", "capabilities[review].description"}},
		{Word: "pull", Weight: share(wPull), Matched: "pull", By: "word", Count: 2, Adds: share(wPull) * sat(2, 17),
			Where: []string{"description", "capabilities[review].description"}},
	}}
	if got := rounded(t, res.Items[0].Explain); got != rounded(t, want) {
		t.Errorf("explanation\n%s\nwant\n%s", got, rounded(t, want))
	}

	// A synonym says which member matched: echo says translations and translator, not
	// localization.
	sets := []tenants.SynonymSet{{ID: "i18n", Words: []string{"Translation", "localization"}}}
	res, err = handService(true).Search(caller, "t", Query{Q: "localization", Explain: true, Synonyms: sets})
	if err != nil || len(res.Items) == 0 {
		t.Fatal(res, err)
	}
	w := res.Items[0].Explain.Words[0]
	if w.Word != "localization" || w.Matched != "translation" || w.By != "synonym" || w.Weight != 1 {
		t.Errorf("localization: %+v", w)
	}
}

// rounded is e's JSON with its numbers to four places.
func rounded(t *testing.T, e *Explanation) string {
	t.Helper()
	r := *e
	r.AverageLength = math.Round(r.AverageLength*1e4) / 1e4
	r.Words = append([]index.WordScore(nil), e.Words...)
	for i := range r.Words {
		r.Words[i].Weight = math.Round(r.Words[i].Weight*1e4) / 1e4
		r.Words[i].Adds = math.Round(r.Words[i].Adds*1e4) / 1e4
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// handService is a Service over searchtest.HandCorpus, with or without an index.
func handService(withIndex bool) *Service {
	store := &feedModel{cards: map[string]cards.Card{}}
	for _, c := range searchtest.HandCorpus() {
		store.cards[c.AgentID] = c
	}
	s := &Service{Store: store, Gate: admitAll{}, Authz: hiding(nil)}
	if withIndex {
		s.Index = NewIndex(store, store)
	}
	return s
}
