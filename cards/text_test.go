package cards

import (
	"fmt"
	"testing"
)

func TestTokenize(t *testing.T) {
	cases := map[string]string{
		"Review a pull-request": "[review a pull request pull-request]",
		"cost_center budget":    "[cost center cost_center budget]",
		"costume":               "[costume]",
		"Déjà vu, 東京 2026!":     "[déjà vu 東京 2026]",
		"ns:review_pr.v1 end.":  "[ns review pr v1 ns:review_pr.v1 end]",
		"trailing_ joiner":      "[trailing joiner]",
		"  ":                    "[]",
		"ÄPFEL":                 "[äpfel]",
		"a--b":                  "[a b]",
	}
	for in, want := range cases {
		if got := fmt.Sprint(tokens(in)); got != want {
			t.Errorf("tokens(%q) = %s, want %s", in, got, want)
		}
	}
	var ends []string
	tokenize("review summar", func(tok string, atEnd bool) {
		if atEnd {
			ends = append(ends, tok)
		}
	})
	if fmt.Sprint(ends) != "[summar]" {
		t.Errorf("at end: %v", ends)
	}
	ends = nil
	tokenize("cost_cen", func(tok string, atEnd bool) {
		if atEnd {
			ends = append(ends, tok)
		}
	})
	if fmt.Sprint(ends) != "[cen cost_cen]" {
		t.Errorf("compound at end: %v", ends)
	}
}

func TestPrefixTermNeedsThreeCharacters(t *testing.T) {
	for q, want := range map[string]bool{"summar": true, "summar  ": true, "sum.": true, "su": false, "éa": false, "東京都": true} {
		p, err := Query{Q: q}.compile()
		if err != nil {
			t.Fatal(err)
		}
		if got := p.terms[len(p.terms)-1].prefix; got != want {
			t.Errorf("%q: prefix %v, want %v", q, got, want)
		}
	}
}
