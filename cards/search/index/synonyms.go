package index

import (
	"slices"
	"strings"
	"sync"

	"github.com/agentcards/agentcards/tenants"
)

// Synonyms. A tenant's synonym sets (tenants.SynonymSet) apply when a query is read: a word of
// q, or a run of its words, that is a member of a set becomes one term matched by any member of
// the set. A member of one word matches the cards holding it (by stem, as any word); a member of
// several matches the cards holding every one of its words (its stopwords aside), as well as
// the least of them. The term weighs as its most common member, so a card that says the query's
// word and one that says its synonym rank alike.

// member is one word or phrase of a synonym set as the query and the cards are read: key is its
// words' stems, stopwords included, joined by spaces (what a run of the query must be); words
// are the stems a card must hold to match it.
type member struct {
	key   string
	stems []string // key's words
	words []string
	text  string // as the set writes it, lowercased
}

// synonymTable is a tenant's synonym sets ready for reading queries.
type synonymTable struct {
	sets [][]member
	// starts lists, by the first stem of a member, the members it begins, by set.
	starts map[string][]memberRef
	// longest is the most words a member has.
	longest int
}

type memberRef struct {
	set, member int
	length      int // words in key
}

// phraseWords splits text into the words a synonym's run is made of: each run of letters,
// digits and joiners is one word (a compound such as cost_center stays whole), lowercased and
// stemmed, with whether it is a stopword, and as written (lowercased).
func phraseWords(text string) (stems []string, stop []bool, raw []string) {
	for _, field := range strings.FieldsFunc(text, func(r rune) bool { return !isWordRune(r) && !isJoiner(r) }) {
		last := ""
		tokenize(field, func(tok string, _ bool) { last = tok })
		if last == "" {
			continue
		}
		stems = append(stems, stem(last))
		stop = append(stop, stopword(last))
		raw = append(raw, last)
	}
	return stems, stop, raw
}

// compileSynonyms reads the tenant's sets; nil when there are none.
func compileSynonyms(sets []tenants.SynonymSet) *synonymTable {
	if len(sets) == 0 {
		return nil
	}
	t := &synonymTable{starts: map[string][]memberRef{}}
	for _, set := range sets {
		var members []member
		seen := map[string]bool{}
		for _, w := range set.Words {
			stems, stop, raw := phraseWords(w)
			key := strings.Join(stems, " ")
			if len(stems) == 0 || seen[key] {
				continue
			}
			seen[key] = true
			m := member{key: key, stems: stems, text: strings.Join(raw, " ")}
			for i, s := range stems {
				if !stop[i] {
					m.words = append(m.words, s)
				}
			}
			if len(m.words) == 0 {
				m.words = stems
			}
			t.starts[stems[0]] = append(t.starts[stems[0]], memberRef{set: len(t.sets), member: len(members), length: len(stems)})
			t.longest = max(t.longest, len(stems))
			members = append(members, m)
		}
		if len(members) > 1 {
			t.sets = append(t.sets, members)
		} else {
			// A set whose words all read the same says nothing: its references are dropped.
			for _, m := range members {
				first := strings.SplitN(m.key, " ", 2)[0]
				refs := t.starts[first]
				t.starts[first] = refs[:len(refs)-1]
			}
		}
	}
	return t
}

// synonymTables keeps the compiled sets of the tenants searched, by the sets as the tenant's row
// holds them: a row read once is compiled once, and a new row (after a change) compiles anew.
var synonymTables = struct {
	sync.Mutex
	m map[*tenants.SynonymSet]*synonymTable
}{m: map[*tenants.SynonymSet]*synonymTable{}}

// maxSynonymTables bounds the tables kept; past it they are all dropped and compiled again as
// needed.
const maxSynonymTables = 1 << 10

func synonymsOf(sets []tenants.SynonymSet) *synonymTable {
	if len(sets) == 0 {
		return nil
	}
	key := &sets[0]
	synonymTables.Lock()
	t, ok := synonymTables.m[key]
	synonymTables.Unlock()
	if ok {
		return t
	}
	t = compileSynonyms(sets)
	synonymTables.Lock()
	if len(synonymTables.m) >= maxSynonymTables {
		clear(synonymTables.m)
	}
	synonymTables.m[key] = t
	synonymTables.Unlock()
	return t
}

// expand applies the synonym sets to the query's terms. q's words are read from the left, and
// where a member of a set starts, the longest such member is a run: a run of one word gives that
// word's term the members of its sets, a longer one becomes a term of its own, in place of the
// terms of its words that q does not also hold outside a run. words are q's words as phraseWords
// reads them, raw as written.
func (t *synonymTable) expand(terms []term, words, raw []string) []term {
	type run struct{ at, n int }
	var runs []run
	var runSets [][]int
	inPhrase := make([]bool, len(words))
	for i := 0; i < len(words); {
		n, sets := t.runAt(words[i:])
		if n == 0 {
			i++
			continue
		}
		runs, runSets = append(runs, run{i, n}), append(runSets, sets)
		for j := i; n > 1 && j < i+n; j++ {
			inPhrase[j] = true
		}
		i += n
	}
	outside := map[string]bool{}
	for i, w := range words {
		if !inPhrase[i] {
			outside[w] = true
		}
	}
	for k, r := range runs {
		words, sets := words[r.at:r.at+r.n], runSets[k]
		if r.n == 1 {
			// The word's own term takes the members (kept even if a stopword: it was asked for).
			i := indexOfTerm(terms, words[0])
			if i < 0 {
				terms = append(terms, term{text: words[0], raw: raw[r.at]})
				i = len(terms) - 1
			}
			terms[i].members = t.union(terms[i].members, sets)
			continue
		}
		terms = dropTerms(terms, words, outside)
		terms = append(terms, term{raw: strings.Join(raw[r.at:r.at+r.n], " "), phrase: strings.Join(words, " "),
			members: t.union(nil, sets)})
	}
	return terms
}

// runAt returns the length of the longest member of a set that words begins with, and the sets
// holding a member of that length there.
func (t *synonymTable) runAt(words []string) (int, []int) {
	best := 0
	var sets []int
	for _, r := range t.starts[words[0]] {
		if r.length > len(words) || r.length < best || !slices.Equal(t.sets[r.set][r.member].stems, words[:r.length]) {
			continue
		}
		if r.length > best {
			best, sets = r.length, sets[:0]
		}
		sets = append(sets, r.set)
	}
	return best, sets
}

// maxMembers bounds the members one term of a query takes from the sets of its word or run, in
// the sets' order: a word in many large sets would otherwise make every search of it read as
// many posting lists.
const maxMembers = 256

// union adds the members of sets to have, each once, up to maxMembers.
func (t *synonymTable) union(have []member, sets []int) []member {
	seen := make(map[string]bool, len(have))
	for _, h := range have {
		seen[h.key] = true
	}
	for _, s := range sets {
		for _, m := range t.sets[s] {
			if len(have) == maxMembers {
				return have
			}
			if !seen[m.key] {
				seen[m.key] = true
				have = append(have, m)
			}
		}
	}
	return have
}

func indexOfTerm(terms []term, text string) int {
	for i, t := range terms {
		if t.text == text {
			return i
		}
	}
	return -1
}

// dropTerms removes the plain terms of the words of a run, but for those q holds outside runs.
func dropTerms(terms []term, run []string, outside map[string]bool) []term {
	out := terms[:0]
	for _, t := range terms {
		drop := t.members == nil && !outside[t.text] && slices.Contains(run, t.text)
		if !drop {
			out = append(out, t)
		}
	}
	return out
}
