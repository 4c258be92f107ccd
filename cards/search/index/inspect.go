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
	for kind, m := range map[string]map[string][]uint32{"protocol": x.protocols, "tag": x.tags, "capability": x.caps} {
		for k, l := range m {
			if err := x.checkList(l, 0); err != nil {
				return fmt.Errorf("%s %q: %w", kind, k, err)
			}
		}
	}
	for k, l := range x.trigrams {
		if err := x.checkList(l.appendTo(nil), termShift); err != nil {
			return fmt.Errorf("trigram %q: %w", k, err)
		}
		if err := l.check(); err != nil {
			return fmt.Errorf("trigram %q: %w", k, err)
		}
	}
	for k, l := range x.terms {
		if err := x.checkList(l.appendTo(nil), termShift); err != nil {
			return fmt.Errorf("word %q: %w", k, err)
		}
		if err := l.check(); err != nil {
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
	if len(x.order) != x.live || x.byID.Len() != x.live {
		return fmt.Errorf("order %d, ids %d, live %d", len(x.order), x.byID.Len(), x.live)
	}
	for i, n := range x.order {
		if !x.docs[n].alive || !hasBit(x.alive, n) || !x.found(n) || (i > 0 && x.docs[x.order[i-1]].agentID >= x.docs[n].agentID) {
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
	for kind, m := range map[string]map[string][]uint32{"p": x.protocols, "t": x.tags, "c": x.caps} {
		for k, l := range m {
			add(kind, k, l, 0)
		}
	}
	for k, l := range x.trigrams {
		add("g", k, l.appendTo(nil), termShift)
	}
	for k, l := range x.terms {
		add("w", k, l.appendTo(nil), termShift)
	}
	res := make(map[string]string, x.byID.Len())
	for n := range x.byID.all {
		a := x.docs[n].agentID
		l := out[a]
		slices.Sort(l)
		res[a] = fmt.Sprintf("%s rev=%d %v", x.docs[n].cardID.String(), x.docs[n].revision, l)
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
	case !slices.Equal(x.order, y.order) || !slices.Equal(x.alive, y.alive) || x.live != y.live || x.disabled != y.disabled || !maps.Equal(x.ids(), y.ids()):
		return fmt.Sprintf("order, bitmap or counts differ: live %d/%d disabled %d/%d", x.live, y.live, x.disabled, y.disabled)
	}
	samePacked := func(a, b *plist) bool { return slices.Equal(a.appendTo(nil), b.appendTo(nil)) }
	if !maps.EqualFunc(x.trigrams, y.trigrams, samePacked) {
		return "trigram postings differ"
	}
	for i, pair := range [][2]map[string][]uint32{{x.protocols, y.protocols}, {x.tags, y.tags}, {x.caps, y.caps}} {
		if !maps.EqualFunc(pair[0], pair[1], func(a, b []uint32) bool { return slices.Equal(a, b) }) {
			return fmt.Sprintf("posting map %d differs", i)
		}
	}
	if !maps.EqualFunc(x.terms, y.terms, samePacked) {
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

// found reports whether document n is the one its agentId finds.
func (x *Tenant) found(n uint32) bool {
	m, ok := x.byID.get(x.docs, x.docs[n].agentID)
	return ok && m == n
}

// ids returns the document of each agent.
func (x *Tenant) ids() map[string]uint32 {
	out := make(map[string]uint32, x.byID.Len())
	for n := range x.byID.all {
		out[x.docs[n].agentID] = n
	}
	return out
}
