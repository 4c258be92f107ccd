package index

import (
	"slices"
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
	if s, ok := known.get(tok); ok {
		return s
	}
	s := stemUncached(tok)
	known.put(tok, s)
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

// known holds the stems of the words met so far: the words of a tenant's cards recur, and
// stemming one costs more than finding it.
var known = memo[string]{m: map[string]string{}, most: 1 << 17}

// memo remembers what a function of a word gave, for up to most words: after that, the words
// met first stay and the others are worked out each time.
type memo[V any] struct {
	mu   sync.RWMutex
	m    map[string]V
	most int
}

func (c *memo[V]) get(w string) (V, bool) {
	c.mu.RLock()
	v, ok := c.m[w]
	c.mu.RUnlock()
	return v, ok
}

func (c *memo[V]) put(w string, v V) {
	c.mu.Lock()
	if len(c.m) < c.most {
		c.m[strings.Clone(w)] = v
	}
	c.mu.Unlock()
}

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

// completions are the stems of the words that the word being typed, raw, may become, which
// the stemmer cut back inside what was typed, so that they do not begin with raw: typing
// "translati" on the way to "translation" (stem "translat") or "deployi" on the way to
// "deploying" (stem "deploy") finds what the whole word finds. They are the stems of raw
// followed by each of the endings below, those that do not begin with raw and are not raw's own;
// the word being typed matches them as it matches a longer word it begins, when no card holds it
// whole (see Plan.settle). Only a word that stem stems, of at most maxCompleted letters, has
// any; the slice returned is shared and read only.
func completions(raw string) []string {
	if !stemmed(raw) || len(raw) > maxCompleted {
		return nil
	}
	out, ok := typing.get(raw)
	if ok {
		return out
	}
	own := stemUncached(raw)
	for _, e := range endings {
		s := stemUncached(raw + e)
		if s != own && !strings.HasPrefix(s, raw) && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	out = slices.Clip(out)
	typing.put(raw, out)
	return out
}

// maxCompleted is the longest word being typed that has completions: longer than any word of
// English, and a bound on the work and memory a query's last word costs.
const maxCompleted = 40

// endings complete a word being typed into one whose stem the stemmer cut inside it: what is
// left to type of -ing, -ed, -ion, -ness, -ility, -ive and the like. With these, every prefix
// of three letters or more of each of the 73,133 words of an English word list (Debian's
// wamerican, words of letters only) finds the stem of its word, by beginning it or by one of
// these; TestCompletionsFindTheWord checks it on the judged set's words.
var endings = []string{
	"al", "ative", "d", "ed", "ent", "es", "ess", "g", "ilities", "ion", "iti", "ive", "l", "lities",
	"m", "n", "nal", "ng", "nt", "on", "r", "s", "ss", "ted", "ti", "tion", "tive", "ul", "us", "ve",
	"y", "zation",
}

// stemUncached is stem without the cache of known words: the words completions tries are
// mostly not words at all.
func stemUncached(tok string) string {
	env := snowballstem.NewEnv(tok)
	english.Stem(env)
	return env.Current()
}

// typing holds the completions of the words being typed met so far.
var typing = memo[[]string]{m: map[string][]string{}, most: 1 << 14}
