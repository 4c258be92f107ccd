package index

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
)

// Check reports the first broken invariant of what search relies on, or nil: each posting list
// names existing documents, each once, in ascending order; every word is listed under its prefix;
// the order lists every live document once, by agent id; the bitmap, byID and the live count
// agree with it. The caller holds the read lock.
func (x *Tenant) Check() error {
	for kind, m := range map[string]map[string][]uint32{"protocol": x.protocols, "tag": x.tags, "capability": x.caps, "trigram": x.trigrams} {
		for k, l := range m {
			if err := x.checkList(l, 0); err != nil {
				return fmt.Errorf("%s %q: %w", kind, k, err)
			}
		}
	}
	for k, l := range x.terms {
		if err := x.checkList(*l, termShift); err != nil {
			return fmt.Errorf("word %q: %w", k, err)
		}
		if len(k) >= minPrefix && !slices.Contains(x.vocab3[k[:minPrefix]], k) {
			return fmt.Errorf("word %q is not listed under its prefix", k)
		}
	}
	for p, words := range x.vocab3 {
		for i, w := range words {
			if !strings.HasPrefix(w, p) || slices.Contains(words[:i], w) {
				return fmt.Errorf("the words of prefix %q: %v", p, words)
			}
		}
	}
	if len(x.lens) != len(x.docs) {
		return fmt.Errorf("%d lengths of %d documents", len(x.lens), len(x.docs))
	}
	if len(x.order) != x.live || len(x.byID) != x.live {
		return fmt.Errorf("order %d, ids %d, live %d", len(x.order), len(x.byID), x.live)
	}
	for i, n := range x.order {
		if !x.docs[n].alive || !hasBit(x.alive, n) || x.byID[x.docs[n].agentID] != n || (i > 0 && x.docs[x.order[i-1]].agentID >= x.docs[n].agentID) {
			return fmt.Errorf("order at %d: document %d", i, n)
		}
	}
	return nil
}

// checkList checks that the documents of a posting list (its entries shifted right by shift)
// exist and ascend strictly.
func (x *Tenant) checkList(l []uint32, shift uint) error {
	for i, e := range l {
		if int(e>>shift) >= len(x.docs) || (i > 0 && l[i-1]>>shift >= e>>shift) {
			return fmt.Errorf("not ascending, or past the documents: %v", l)
		}
	}
	return nil
}

// Contents describes what the index holds of each live card, by agent: the card's id and
// revision and every posting of its document (kind, key and, for words, the field), sorted. Two
// indexes of the same cards have the same contents however their documents are numbered. The
// caller holds the read lock.
func (x *Tenant) Contents() map[string]string {
	out := map[string][]string{}
	add := func(kind, k string, list []uint32, shift uint) {
		for _, e := range list {
			if d := &x.docs[e>>shift]; d.alive {
				out[d.agentID] = append(out[d.agentID], fmt.Sprintf("%s:%s:%d", kind, k, e&(1<<shift-1)))
			}
		}
	}
	for kind, m := range map[string]map[string][]uint32{"p": x.protocols, "t": x.tags, "c": x.caps, "g": x.trigrams} {
		for k, l := range m {
			add(kind, k, l, 0)
		}
	}
	for k, l := range x.terms {
		add("w", k, *l, termShift)
	}
	res := make(map[string]string, len(x.byID))
	for a, n := range x.byID {
		l := out[a]
		slices.Sort(l)
		res[a] = fmt.Sprintf("%s rev=%d %v", x.docs[n].cardID, x.docs[n].revision, l)
	}
	return res
}

// Diff names the first part in which y differs from x, or returns "" when y holds exactly what x
// holds: documents and their numbers, order, bitmap, counts, every posting list, and the words by
// prefix (as sets: their order within a prefix means nothing). The callers hold both read locks.
func (x *Tenant) Diff(y *Tenant) string {
	switch {
	case !reflect.DeepEqual(x.docs, y.docs) || !slices.Equal(x.lens, y.lens):
		return "documents differ"
	case !slices.Equal(x.order, y.order) || !slices.Equal(x.alive, y.alive) || x.live != y.live || x.disabled != y.disabled || !maps.Equal(x.byID, y.byID):
		return fmt.Sprintf("order, bitmap or counts differ: live %d/%d disabled %d/%d", x.live, y.live, x.disabled, y.disabled)
	}
	for i, pair := range [][2]map[string][]uint32{{x.protocols, y.protocols}, {x.tags, y.tags}, {x.caps, y.caps}, {x.trigrams, y.trigrams}} {
		if !maps.EqualFunc(pair[0], pair[1], func(a, b []uint32) bool { return slices.Equal(a, b) }) {
			return fmt.Sprintf("posting map %d differs", i)
		}
	}
	if !maps.EqualFunc(x.terms, y.terms, func(a, b *[]uint32) bool { return slices.Equal(*a, *b) }) {
		return "word postings differ"
	}
	sorted := func(m map[string][]string) map[string][]string {
		out := map[string][]string{}
		for k, v := range m {
			out[k] = slices.Sorted(slices.Values(v))
		}
		return out
	}
	if !reflect.DeepEqual(sorted(x.vocab3), sorted(y.vocab3)) {
		return "words by prefix differ"
	}
	return ""
}
