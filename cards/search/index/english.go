package index

import (
	"strings"
	"sync"

	"github.com/blevesearch/snowballstem"
	"github.com/blevesearch/snowballstem/english"
)

// stem reduces a word of English to its stem with the Snowball (Porter2) stemmer, so that
// "devices" finds "device" and "posting" finds "posts". Only words of ASCII letters are stemmed:
// a compound (cost_center), a token with digits (v1, s3) or a word of another script stays as
// it is.
func stem(tok string) string {
	if !stemmed(tok) {
		return tok
	}
	known.RLock()
	s, ok := known.m[tok]
	known.RUnlock()
	if ok {
		return s
	}
	env := snowballstem.NewEnv(tok)
	english.Stem(env)
	s = env.Current()
	known.Lock()
	if len(known.m) < maxKnown {
		known.m[strings.Clone(tok)] = s
	}
	known.Unlock()
	return s
}

// stemmed reports whether stem looks tok up: a word of at least three ASCII letters.
func stemmed(tok string) bool {
	if len(tok) < 3 {
		return false
	}
	for i := 0; i < len(tok); i++ {
		if c := tok[i]; c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}

// known holds the stems of the words met so far, up to maxKnown of them: the words of a tenant's
// cards recur, and stemming one costs more than finding it.
var known = struct {
	sync.RWMutex
	m map[string]string
}{m: map[string]string{}}

const maxKnown = 1 << 17

// stopword reports whether a lowercased word is one of the English function words a free-text
// query drops ("find an agent that can summarize pdf documents" searches for find, agent,
// summarize, pdf and documents). A query made of nothing else keeps them.
func stopword(tok string) bool { return stopwords[tok] }

var stopwords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range []string{
		"a", "about", "above", "after", "again", "all", "am", "an", "and", "any", "are", "as", "at",
		"be", "because", "been", "before", "being", "below", "between", "both", "but", "by",
		"can", "could", "did", "do", "does", "doing", "down", "during", "each", "few", "for", "from",
		"further", "had", "has", "have", "having", "he", "her", "here", "hers", "herself", "him",
		"himself", "his", "how", "i", "if", "in", "into", "is", "it", "its", "itself", "just", "me",
		"more", "most", "my", "myself", "no", "nor", "not", "now", "of", "off", "on", "once", "only",
		"or", "other", "our", "ours", "ourselves", "out", "over", "own", "please", "same", "she",
		"should", "so", "some", "such", "than", "that", "the", "their", "theirs", "them",
		"themselves", "then", "there", "these", "they", "this", "those", "through", "to", "too",
		"under", "until", "up", "very", "want", "was", "we", "were", "what", "when", "where",
		"which", "while", "who", "whom", "why", "will", "with", "would", "you", "your", "yours",
		"yourself", "yourselves",
	} {
		m[w] = true
	}
	return m
}()
