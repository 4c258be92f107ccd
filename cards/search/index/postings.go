package index

import (
	"slices"
	"strings"
)

// postings are the lists of documents, in ascending order, for each value searched.
type postings struct {
	protocols, tags, caps map[string][]uint32
	// trigrams holds doc<<termShift for each 3-byte window of the names, packed as the words'
	// lists are (see plist).
	trigrams map[string]*plist
	// terms holds doc<<termShift | weighted count (see Doc.terms) for each word; by pointer, so
	// adding to a list costs one map lookup.
	terms map[string]*plist
	// vocab3 lists the tokens that start with each 3-byte prefix, for the prefix match.
	vocab3 map[string][]string
}

// termShift is where a document's number starts in an entry of a word's list; the bits below
// hold the word's weighted count in it. It bounds an index to 2^24 documents.
const (
	termShift = 8
	countMask = 1<<termShift - 1
	maxDocs   = 1 << (32 - termShift)
)

func newPostings() postings {
	return postings{protocols: map[string][]uint32{}, tags: map[string][]uint32{}, caps: map[string][]uint32{},
		trigrams: map[string]*plist{}, terms: map[string]*plist{}, vocab3: map[string][]string{}}
}

// post adds document n, analysed as d, to the lists; n is above every document listed. The
// terms are left out when d has none (analyzeWith posted them already).
func (p *postings) post(n uint32, d Doc) {
	p.postValues(n, d)
	eachTrigram(d.name, func(g string) { p.gramList(g).addOnce(false, n) })
	for tok, count := range d.terms {
		p.term(tok, n<<termShift|uint32(count))
	}
}

// postValues adds document n, analysed as d, to the lists of its protocols, tags and
// capabilities; n is above every document listed.
func (p *postings) postValues(n uint32, d Doc) {
	for _, v := range d.protocols {
		p.protocols[v] = append(p.protocols[v], n)
	}
	for _, t := range d.tags {
		p.tags[t] = append(p.tags[t], n)
	}
	for _, cp := range d.capabilities {
		p.caps[cp] = append(p.caps[cp], n)
	}
}

// eachTrigram calls fn with each 3-byte window of s, in order, repeats included.
func eachTrigram(s string, fn func(g string)) {
	for i := 0; i+3 <= len(s); i++ {
		fn(s[i : i+3])
	}
}

// term appends entries to the token's list, creating it (and its prefix entry) if new.
func (p *postings) term(tok string, entries ...uint32) {
	p.list(tok).add(false, entries...)
}

// list returns the token's list, creating it (and its prefix entry) if new. The index's own
// keys are copies: a token is often a part of a card's text, which it would keep.
func (p *postings) list(tok string) *plist { return p.termList(tok, false) }

// listOwned is list for a token that is a copy already, of its own memory.
func (p *postings) listOwned(tok string) *plist { return p.termList(tok, true) }

func (p *postings) termList(tok string, owned bool) *plist {
	list, key, made := listIn(p.terms, tok, owned)
	if made && len(key) >= minPrefix {
		p.vocab3[key[:minPrefix]] = append(p.vocab3[key[:minPrefix]], key)
	}
	return list
}

// gramList returns the trigram's list, creating it if new; the index's own keys are copies, as
// list's are.
func (p *postings) gramList(g string) *plist {
	list, _, _ := listIn(p.trigrams, g, false)
	return list
}

// gramListOwned is gramList for a trigram that is a copy already, of its own memory.
func (p *postings) gramListOwned(g string) *plist {
	list, _, _ := listIn(p.trigrams, g, true)
	return list
}

// listIn returns the list of key in m and the key m holds it by, making it if new (by a copy
// of key, unless owned) and saying so.
func listIn(m map[string]*plist, key string, owned bool) (list *plist, held string, made bool) {
	if list := m[key]; list != nil {
		return list, key, false
	}
	if !owned {
		key = strings.Clone(key)
	}
	list = &plist{}
	m[key] = list
	return list, key, true
}

// merge appends the protocols', tags' and capabilities' lists of q, whose documents all come
// after those of p (a build's workers keep their words' and trigrams' lists, see Loader).
func (p *postings) merge(q postings) {
	for _, pair := range []struct{ into, from map[string][]uint32 }{
		{p.protocols, q.protocols}, {p.tags, q.tags}, {p.caps, q.caps},
	} {
		for k, list := range pair.from {
			pair.into[k] = append(pair.into[k], list...)
		}
	}
}

// trigramsOf returns the distinct 3-byte windows of s (lowercased already).
func trigramsOf(s string) []string {
	if len(s) < 3 {
		return nil
	}
	out := make([]string, 0, len(s)-2)
	for i := 0; i+3 <= len(s); i++ {
		out = append(out, s[i:i+3])
	}
	return sortedSet(out)
}

// intersect returns the values in both sorted lists, a being the shorter. It gallops through b
// (exponential then binary search), so a short list against a long one costs |a|·log|b|.
func intersect(a, b []uint32) []uint32 {
	out := make([]uint32, 0, len(a))
	j := 0
	for _, v := range a {
		// Find the first index >= j with b[idx] >= v.
		step := 1
		hi := j
		for hi < len(b) && b[hi] < v {
			j = hi + 1
			hi += step
			step *= 2
		}
		hi = min(hi+1, len(b)) // b[hi] >= v, if it exists: the answer is in b[j:hi+1]
		k, found := slices.BinarySearch(b[j:hi], v)
		j += k
		if j >= len(b) {
			break
		}
		if found {
			out = append(out, v)
			j++
		}
	}
	return out
}
