package index

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
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
		p, err := Query{Q: q}.Compile()
		if err != nil {
			t.Fatal(err)
		}
		if got := p.terms[len(p.terms)-1].prefix; got != want {
			t.Errorf("%q: prefix %v, want %v", q, got, want)
		}
	}
}

// TestWordRunesASCII: the ASCII shortcut of isWordRune agrees with the Unicode tables.
func TestWordRunesASCII(t *testing.T) {
	for r := rune(0); r < utf8.RuneSelf; r++ {
		if got, want := isWordRune(r), unicode.IsLetter(r) || unicode.IsDigit(r); got != want {
			t.Errorf("isWordRune(%q) = %v, want %v", r, got, want)
		}
	}
}

// tokenizeLowered is tokenize as first written: lowercase the whole text, then split it. The
// ASCII path of tokenize must give exactly its tokens.
func tokenizeLowered(s string) []string {
	s = strings.ToLower(s)
	var out []string
	n, i := len(s), 0
	for i < n {
		r, w := utf8.DecodeRuneInString(s[i:])
		if !isWordRune(r) {
			i += w
			continue
		}
		start, wordStart, parts := i, i, 0
		for i < n {
			r, w = utf8.DecodeRuneInString(s[i:])
			if isWordRune(r) {
				i += w
				continue
			}
			if isJoiner(r) && i+w < n {
				if next, _ := utf8.DecodeRuneInString(s[i+w:]); isWordRune(next) {
					out = append(out, s[wordStart:i])
					parts++
					i += w
					wordStart = i
					continue
				}
			}
			break
		}
		out = append(out, s[wordStart:i])
		if parts > 0 {
			out = append(out, s[start:i])
		}
	}
	return out
}

// TestTokenizeMatchesLowercaseFirst: random texts of capitals, digits, joiners, spaces and a
// few non-ASCII letters tokenize as when lowercased first.
func TestTokenizeMatchesLowercaseFirst(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	alphabet := []string{"a", "Z", "q", "M", "7", "_", "-", ".", ":", " ", ",", "É", "ß", "İ", "ω", "Ω", "x", "K"}
	for range 20000 {
		var b strings.Builder
		for range rng.IntN(24) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		s := b.String()
		var got []string
		tokenize(s, func(tok string, _ bool) { got = append(got, tok) })
		if want := tokenizeLowered(s); !slices.Equal(got, want) {
			t.Fatalf("tokenize(%q) = %q, want %q", s, got, want)
		}
	}
}

// TestTokenizeASCIIMatchesRunes: random ASCII texts of capitals, digits, joiners and other
// punctuation give the same tokens, lowercased, at the same ends, a byte at a time as a rune at
// a time once lowercased.
func TestTokenizeASCIIMatchesRunes(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 12))
	alphabet := []string{"a", "Z", "q", "M", "7", "0", "_", "-", ".", ":", " ", ",", "/", "x", "K", "@"}
	type token struct {
		tok   string
		atEnd bool
	}
	for range 50000 {
		var b strings.Builder
		for range rng.IntN(24) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		s := b.String()
		var got, want []token
		tokenizeASCII(s, func(tok string, atEnd bool) { got = append(got, token{tok, atEnd}) })
		tokenizeRunes(strings.ToLower(s), func(tok string, atEnd bool) { want = append(want, token{tok, atEnd}) })
		if !slices.Equal(got, want) {
			t.Fatalf("tokenizeASCII(%q) = %v, want %v", s, got, want)
		}
	}
}
