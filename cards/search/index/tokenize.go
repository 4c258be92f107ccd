package index

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Text fields of a card, and the weight of each occurrence of a word in them (see Doc): a word in
// a capability's name or title or in a tag says more about what the agent does than one in its
// name, and that says more than one in a description or an example.
const (
	fieldDescription uint8 = 1
	fieldName        uint8 = 3
	fieldCapOrTag    uint8 = 2
)

// isWordRune is what a token is made of: Unicode letters and digits.
func isWordRune(r rune) bool {
	if r < utf8.RuneSelf { // most text is ASCII: answer without the Unicode tables
		return 'a' <= r && r <= 'z' || '0' <= r && r <= '9' || 'A' <= r && r <= 'Z'
	}
	return unicode.IsLetter(r) || unicode.IsDigit(r)
}

// isJoiner joins words into a compound such as cost_center, ns:review_pr or v1.2.
func isJoiner(r rune) bool { return r == '_' || r == '-' || r == '.' || r == ':' }

// tokenize lowercases s and splits it on anything that is not a letter or digit. A compound of
// words joined by _ - . or : (cost_center) yields the compound and each of its words, so a query
// for either finds it. Whole tokens only: "cost" is not found in "costume".
//
// Each token is reported with whether it ends where s ends (the word being typed), for the
// prefix match of the query's last token.
func tokenize(s string, emit func(tok string, atEnd bool)) {
	if isASCII(s) {
		tokenizeASCII(s, emit)
		return
	}
	tokenizeRunes(strings.ToLower(s), emit)
}

// tokenizeRunes is tokenize for lowercased text, a rune at a time.
func tokenizeRunes(s string, out func(tok string, atEnd bool)) {
	n := len(s)
	i := 0
	next := func(i int) (rune, int) {
		if b := s[i]; b < utf8.RuneSelf {
			return rune(b), 1
		}
		return utf8.DecodeRuneInString(s[i:])
	}
	for i < n {
		// Skip to the start of a word.
		r, w := next(i)
		if !isWordRune(r) {
			i += w
			continue
		}
		start := i
		wordStart := i
		parts := 0
		for i < n {
			r, w = next(i)
			if isWordRune(r) {
				i += w
				continue
			}
			// A joiner continues the compound only when a word follows it.
			if isJoiner(r) && i+w < n {
				if r2, _ := next(i + w); isWordRune(r2) {
					out(s[wordStart:i], false)
					parts++
					i += w
					wordStart = i
					continue
				}
			}
			break
		}
		end := i == n
		out(s[wordStart:i], end)
		if parts > 0 {
			out(s[start:i], end)
		}
	}
}

// The classes of ASCII bytes tokenizeASCII reads them by.
const (
	asciiWord   = 1 << iota // a letter or digit
	asciiUpper              // a capital letter
	asciiJoiner             // see isJoiner
)

var asciiClass = func() (t [128]uint8) {
	for c := range t {
		switch r := rune(c); {
		case 'A' <= r && r <= 'Z':
			t[c] = asciiWord | asciiUpper
		case isWordRune(r):
			t[c] = asciiWord
		case isJoiner(r):
			t[c] = asciiJoiner
		}
	}
	return t
}()

// tokenizeASCII is tokenize for ASCII text, a byte at a time: each token is lowercased (copied)
// only when it holds a capital.
func tokenizeASCII(s string, emit func(tok string, atEnd bool)) {
	n := len(s)
	out := func(tok string, upper, atEnd bool) {
		if upper {
			tok = strings.ToLower(tok)
		}
		emit(tok, atEnd)
	}
	for i := 0; i < n; {
		if asciiClass[s[i]]&asciiWord == 0 {
			i++
			continue
		}
		start, wordStart := i, i
		upper, anyUpper, parts := false, false, 0
		for i < n {
			c := asciiClass[s[i]]
			if c&asciiWord != 0 {
				upper = upper || c&asciiUpper != 0
				i++
				continue
			}
			// A joiner continues the compound only when a word follows it.
			if c&asciiJoiner != 0 && i+1 < n && asciiClass[s[i+1]]&asciiWord != 0 {
				out(s[wordStart:i], upper, false)
				anyUpper = anyUpper || upper
				upper = false
				parts++
				i++
				wordStart = i
				continue
			}
			break
		}
		end := i == n
		out(s[wordStart:i], upper, end)
		if parts > 0 {
			out(s[start:i], anyUpper || upper, end)
		}
	}
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// tokens returns the distinct tokens of s.
func tokens(s string) []string {
	var out []string
	seen := map[string]bool{}
	tokenize(s, func(t string, _ bool) {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	})
	return out
}
