package index

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// randomList returns n ascending entries whose documents lie gap apart at most, with counts
// below maxCount+1.
func randomList(r *rand.Rand, n, gap, count int) []uint32 {
	out := make([]uint32, 0, n)
	doc := uint32(r.IntN(gap))
	for range n {
		out = append(out, doc<<termShift|uint32(1+r.IntN(count)))
		doc += 1 + uint32(r.IntN(gap))
	}
	return out
}

// TestPlistReads: a list packed as it is appended to, or all at once, reads back its entries
// whole, from any position (seek and take, or scatter, up to any end), intersected with a list of documents
// (skipTo), and one document at a time, in each of the block formats.
func TestPlistReads(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, shape := range []struct {
		name       string
		gap, count int
	}{{"nibbles", 16, 15}, {"bytes", 200, 255}, {"varints", 5000, 255}, {"mixed", 300, 20}} {
		for _, n := range []int{0, 1, 127, 128, 129, 256, 257, 1000} {
			want := randomList(r, n, shape.gap, shape.count)
			appended := &plist{}
			for i := 0; i < len(want); {
				k := min(len(want)-i, 1+r.IntN(300))
				appended.add(false, want[i:i+k]...)
				i += k
			}
			for _, l := range []*plist{appended, newPlist(want)} {
				if got := l.appendTo(nil); !slices.Equal(got, want) || l.Len() != n || l.check() != nil {
					t.Fatalf("%s %d: read back %d entries, want %d (%v)", shape.name, n, len(got), n, l.check())
				}
				var all []uint32
				l.each(func(e []uint32) { all = append(all, e...) })
				if !slices.Equal(all, want) {
					t.Fatalf("%s %d: each differs", shape.name, n)
				}
				for range 50 {
					lo := uint32(r.IntN(int(maxDocOf(want)) + 2))
					var rd reader
					rd.seek(l, lo<<termShift)
					var got []uint32
					for end := lo; len(got) < n && end < maxDocOf(want)+2; {
						end += uint32(1 + r.IntN(400))
						for e := rd.take(end << termShift); len(e) > 0; e = rd.take(end << termShift) {
							got = append(got, e...)
						}
					}
					i, _ := slices.BinarySearch(want, lo<<termShift)
					if !slices.Equal(got, want[i:]) {
						t.Fatalf("%s %d: from document %d read %d entries, want %d", shape.name, n, lo, len(got), len(want)-i)
					}
				}
				for range 50 {
					// scatter, block by block, from any position.
					from := uint32(r.IntN(int(maxDocOf(want)) + 2))
					var rd reader
					rd.seek(l, from<<termShift)
					for from <= maxDocOf(want)+1 {
						end := from + uint32(1+r.IntN(600))
						var counts blockCounts
						most := rd.scatter(end<<termShift, int(from), &counts)
						got := counts[:end-from]
						wantCounts, wantMost := make([]uint8, end-from), uint8(0)
						for _, e := range want {
							if d := e >> termShift; d >= from && d < end {
								wantCounts[d-from] = uint8(e & countMask)
								wantMost = max(wantMost, uint8(e&countMask))
							}
						}
						if !slices.Equal(got, wantCounts) || most != wantMost || slices.ContainsFunc(counts[end-from:], func(c uint8) bool { return c != 0 }) {
							t.Fatalf("%s %d: scatter of documents %d to %d: most %d, want %d; counts differ: %v", shape.name, n, from, end, most, wantMost, !slices.Equal(got, wantCounts))
						}
						from = end
					}
				}
				for k := range 6 {
					// As dense as the list (read beside it), or far sparser (skipped to).
					step := 1 + shape.gap
					if k%2 == 1 {
						step *= 40
					}
					var docs, in []uint32
					for d := uint32(r.IntN(3)); d <= maxDocOf(want)+2; d += 1 + uint32(r.IntN(step)) {
						docs = append(docs, d)
						if _, ok := slices.BinarySearchFunc(want, d, func(e, d uint32) int { return int(e>>termShift) - int(d) }); ok {
							in = append(in, d)
						}
					}
					if got := l.intersect(docs); !slices.Equal(got, in) {
						t.Fatalf("%s %d: intersection of %d documents: %d, want %d", shape.name, n, len(docs), len(got), len(in))
					}
				}
				for _, e := range want {
					if c, ok := l.countOf(e >> termShift); !ok || uint32(c) != e&countMask {
						t.Fatalf("%s %d: count of document %d: %d %v", shape.name, n, e>>termShift, c, ok)
					}
					if _, ok := l.countOf(e>>termShift + 1); ok && !slices.ContainsFunc(want, func(v uint32) bool { return v>>termShift == e>>termShift+1 }) {
						t.Fatalf("%s %d: document %d found, not listed", shape.name, n, e>>termShift+1)
					}
				}
			}
		}
	}
}

func maxDocOf(l []uint32) uint32 {
	if len(l) == 0 {
		return 0
	}
	return l[len(l)-1] >> termShift
}

// TestCardRef: every id reads back as it was given, and is matches it and nothing else.
func TestCardRef(t *testing.T) {
	ids := []string{"", "0b4f3a52-7c1e-4d9b-9f0e-2a6c8d1e5f37", "0B4F3A52-7C1E-4D9B-9F0E-2A6C8D1E5F37",
		"00000000-0000-0000-0000-000000000000", "card-1", "0b4f3a52_7c1e-4d9b-9f0e-2a6c8d1e5f37", "0b4f3a52-7c1e-4d9b-9f0e-2a6c8d1e5f3g"}
	for _, id := range ids {
		r := refOf(id)
		if r.String() != id {
			t.Fatalf("%q read back as %q", id, r.String())
		}
		for _, other := range ids {
			if r.is(other) != (other == id) {
				t.Fatalf("%q is %q: %v", id, other, r.is(other))
			}
		}
	}
	if r := refOf(ids[1]); r.other != nil || r.size() != 0 {
		t.Fatal("a UUID is kept as a string")
	}
}

// TestIDTable: a table of ids put, replaced and removed at random finds what a map finds.
func TestIDTable(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	var docs []idoc
	want := map[string]uint32{}
	tab := newIDTable(0)
	for range 20000 {
		id := fmt.Sprintf("agent-%d", r.IntN(3000))
		switch r.IntN(3) {
		case 0, 1: // a new document for id
			docs = append(docs, idoc{agentID: id})
			n := uint32(len(docs) - 1)
			tab.put(docs, n)
			want[id] = n
		default:
			tab.remove(docs, id)
			delete(want, id)
		}
		if tab.Len() != len(want) {
			t.Fatalf("%d ids, want %d", tab.Len(), len(want))
		}
	}
	for i := range 3000 {
		id := fmt.Sprintf("agent-%d", i)
		n, ok := tab.get(docs, id)
		if w, wok := want[id]; ok != wok || n != w && ok {
			t.Fatalf("%s: %d %v, want %d %v", id, n, ok, w, wok)
		}
	}
	seen := 0
	for n := range tab.all {
		if want[docs[n].agentID] != n {
			t.Fatalf("document %d listed", n)
		}
		seen++
	}
	if seen != len(want) {
		t.Fatalf("all listed %d, want %d", seen, len(want))
	}
}
