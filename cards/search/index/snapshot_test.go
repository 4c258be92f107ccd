package index

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/cardstest"
)

// churned indexes generated cards, then changes a share of them and removes another, so the
// index holds removed documents (with and without compaction, by removed).
func churned(t *testing.T, n, removed int) *Tenant {
	t.Helper()
	x := New()
	all := cardstest.Cards(t, 21, n)
	x.Load(all)
	r := rand.New(rand.NewPCG(5, 6))
	for _, i := range r.Perm(n)[:n/10] {
		c := all[i]
		c.Revision++
		c.Name += " renamed"
		x.Upsert(c)
	}
	for _, i := range r.Perm(n)[:removed] {
		x.Remove(all[i].AgentID)
	}
	return x
}

// TestSnapshotReadsBack: an index written out and read back is the same index, whether it holds
// removed documents or was compacted, and empty.
func TestSnapshotReadsBack(t *testing.T) {
	for _, tc := range []struct {
		name       string
		n, removed int
	}{{"empty", 0, 0}, {"changed and removed", 1500, 150}, {"compacted", 1500, 1300}} {
		t.Run(tc.name, func(t *testing.T) {
			x := churned(t, tc.n, tc.removed)
			b := encodeSnapshot(x, "acme", analyzerStamp(), false)
			y, err := decodeSnapshot(b, "acme", analyzerStamp())
			if err != nil {
				t.Fatal(err)
			}
			sameIndex(t, x, y)
			flatten(t, y) // every list ascending, order sorted, bitmap and ids agreeing
		})
	}
}

// TestSnapshotStreamed: a snapshot is written out as it is encoded: writing that of an index to
// a writer allocates a small share of the snapshot's size (7% here), not a copy of it, and a
// writer that fails (a full disk) has its error returned.
func TestSnapshotStreamed(t *testing.T) {
	x := churned(t, 20_000, 500)
	size := len(encodeSnapshot(x, "acme", "stamp", false))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if err := writeSnapshot(io.Discard, x, "acme", "stamp", false); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	// The keys of the index's maps are most of it (a copy would be above the size).
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > uint64(size)/4 {
		t.Errorf("writing a snapshot of %d bytes allocated %d", size, alloc)
	}
	for _, at := range []int{0, 100, size / 2, size - 1} {
		full := errors.New("disk full")
		if err := writeSnapshot(&failAfter{n: at, err: full}, x, "acme", "stamp", false); !errors.Is(err, full) {
			t.Errorf("a writer failing after %d bytes: %v", at, err)
		}
	}
}

// failAfter takes n bytes, then fails every write with err.
type failAfter struct {
	n   int
	err error
}

func (w *failAfter) Write(b []byte) (int, error) {
	if len(b) > w.n {
		k := w.n
		w.n = 0
		return k, w.err
	}
	w.n -= len(b)
	return len(b), nil
}

// TestSnapshotRefused: a snapshot of another tenant, another analysis (stamp), or damaged
// anywhere (cut short, a byte changed, even with its checksum made right again) is refused with
// errSnapshot, never read as an index or a panic.
func TestSnapshotRefused(t *testing.T) {
	x := churned(t, 60, 8)
	stamp := analyzerStamp()
	good := encodeSnapshot(x, "acme", stamp, false)
	if _, err := decodeSnapshot(good, "other", stamp); !errors.Is(err, errSnapshot) {
		t.Errorf("another tenant's snapshot: %v", err)
	}
	if _, err := decodeSnapshot(good, "acme", stamp+"x"); !errors.Is(err, errSnapshot) {
		t.Errorf("a snapshot of another analysis: %v", err)
	}
	for cut := range len(good) {
		if _, err := decodeSnapshot(good[:cut], "acme", stamp); !errors.Is(err, errSnapshot) {
			t.Fatalf("cut to %d bytes: %v", cut, err)
		}
	}
	r := rand.New(rand.NewPCG(7, 8))
	resummed := 0
	for range 1000 {
		b := slices.Clone(good)
		i := r.IntN(len(b) - 4)
		b[i] ^= byte(1 + r.IntN(255))
		if _, err := decodeSnapshot(b, "acme", stamp); !errors.Is(err, errSnapshot) {
			t.Fatalf("byte %d changed: %v", i, err)
		}
		// The checksum made right: what the decoder checks itself must hold the rest. A change
		// that still decodes names other strings or numbers, never documents out of range.
		binary.LittleEndian.PutUint32(b[len(b)-4:], crc32.Checksum(b[:len(b)-4], castagnoli))
		y, err := decodeSnapshot(b, "acme", stamp)
		if err != nil {
			if !errors.Is(err, errSnapshot) {
				t.Fatalf("byte %d changed, checksum right: %v", i, err)
			}
			continue
		}
		resummed++
		// What the decoder checks: every list ascending and naming documents that exist, the
		// order sorted, the ids and counts agreeing. The strings and numbers it cannot check
		// may be other than written.
		if err := y.Check(); err != nil {
			t.Fatalf("byte %d changed, checksum right: read back, but %v", i, err)
		}
	}
	t.Logf("%d of 1000 changes with the checksum made right still decoded", resummed)
}

// TestAnalyzerStampFollowsAnalysis: the stamp is the same from run to run (it is written in
// every snapshot), and differs when what the index holds of its cards would.
func TestAnalyzerStampFollowsAnalysis(t *testing.T) {
	build := func(cs []cards.Card) string {
		x := New()
		x.Load(cs)
		return string(encodeSnapshot(x, "", "", true))
	}
	cs := stampCards()
	if build(cs) != build(stampCards()) {
		t.Fatal("the stamp's snapshot differs between two builds of the same cards")
	}
	cs[1].Description += " neu"
	if build(cs) == build(stampCards()) {
		t.Fatal("a card analysed otherwise gives the same stamp snapshot")
	}
	if len(analyzerStamp()) != 24 {
		t.Fatalf("stamp %q", analyzerStamp())
	}
}

// BenchmarkSnapshot writes out the index of 100k generated cards to a file, as the server does
// under the index's read lock (write-s), and reads it back (read-s; MiB: the snapshot's size);
// compare read-s with BenchmarkIndexBuild's build-s.
func BenchmarkSnapshot(b *testing.B) {
	_, x := benchCorpus(b, 100_000)
	stamp := analyzerStamp()
	path := filepath.Join(b.TempDir(), "snapshot")
	for range b.N {
		f, err := os.Create(path)
		if err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		err = writeSnapshot(f, x, "acme", stamp, false)
		t1 := time.Now()
		if err = errors.Join(err, f.Close()); err != nil {
			b.Fatal(err)
		}
		enc, err := os.ReadFile(path)
		if err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		y, err := decodeSnapshot(enc, "acme", stamp)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(t1.Sub(t0).Seconds(), "write-s")
		b.ReportMetric(time.Since(t2).Seconds(), "read-s")
		b.ReportMetric(float64(len(enc))/(1<<20), "MiB")
		runtime.KeepAlive(y)
	}
}

// TestSnapshotStructureChecked: a snapshot whose checksum holds but whose structure does not
// (written from a broken index, or forged) is refused: an agent twice in the order, the order
// unsorted, a list not ascending or naming a document twice, a count larger than the file.
func TestSnapshotStructureChecked(t *testing.T) {
	stamp := analyzerStamp()
	for _, tc := range []struct {
		name   string
		break_ func(x *Tenant)
	}{
		{"an agent twice in the order", func(x *Tenant) { x.order[1] = x.order[0] }},
		{"the order unsorted", func(x *Tenant) { x.order[0], x.order[1] = x.order[1], x.order[0] }},
		{"a list not ascending", func(x *Tenant) {
			for _, l := range x.tags {
				if len(l) > 1 {
					l[0], l[1] = l[1], l[0]
					return
				}
			}
			t.Fatal("no tag list of two")
		}},
		{"a document twice in a term's list", func(x *Tenant) {
			for k, pl := range x.terms {
				if l := pl.appendTo(nil); len(l) > 1 {
					l[1] = l[0]&^3 | 3
					if l[1] == l[0] {
						l[1] = l[0] &^ 3
					}
					x.terms[k] = &plist{tail: l} // unpacked: the encoder reads it as it is
					return
				}
			}
			t.Fatal("no term list of two")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := churned(t, 60, 0)
			tc.break_(x)
			if _, err := decodeSnapshot(encodeSnapshot(x, "acme", stamp, false), "acme", stamp); !errors.Is(err, errSnapshot) {
				t.Fatalf("read back: %v", err)
			}
		})
	}
	t.Run("a count larger than the file", func(t *testing.T) {
		b := append([]byte(snapshotMagic), snapshotFormat)
		for _, s := range []string{stamp, "acme"} {
			b = append(binary.AppendUvarint(b, uint64(len(s))), s...)
		}
		b = binary.AppendUvarint(b, 0)     // no strings
		b = binary.AppendUvarint(b, 1<<40) // documents
		b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
		if _, err := decodeSnapshot(b, "acme", stamp); !errors.Is(err, errSnapshot) {
			t.Fatalf("read back: %v", err)
		}
	})
}

// TestSnapshotPackedChecked: a snapshot whose checksum holds but one of whose packed blocks does
// not (an unknown format, cut short, out of order, past the documents, a tail not after them)
// is refused, and the index it was written from reads back whole.
func TestSnapshotPackedChecked(t *testing.T) {
	stamp := analyzerStamp()
	fresh := func() (*Tenant, *plist) {
		x := New()
		x.Load(cardstest.Cards(t, 9, 1000))
		for _, l := range x.terms {
			if l.blocks() >= 2 && l.p.data[l.p.heads[0].off] == packNibbles {
				return x, l
			}
		}
		t.Fatal("no word with two packed blocks")
		return nil, nil
	}
	x, _ := fresh()
	y, err := decodeSnapshot(encodeSnapshot(x, "acme", stamp, false), "acme", stamp)
	if err != nil {
		t.Fatal(err)
	}
	sameIndex(t, x, y)
	for _, tc := range []struct {
		name   string
		break_ func(l *plist)
	}{
		{"an unknown format", func(l *plist) { l.p.data[l.p.heads[0].off] = 9 }},
		{"a block cut short", func(l *plist) { l.p.data = l.p.data[:len(l.p.data)-1] }},
		{"blocks out of order", func(l *plist) { l.p.heads[1].first = l.p.heads[0].first }},
		{"a block past the documents", func(l *plist) { l.p.heads[len(l.p.heads)-1].first = 5000 << termShift }},
		{"a tail before the blocks' end", func(l *plist) { l.tail[0] = l.p.heads[0].first }},
		{"no tail after the blocks", func(l *plist) { l.tail = nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x, l := fresh()
			tc.break_(l)
			if _, err := decodeSnapshot(encodeSnapshot(x, "acme", stamp, false), "acme", stamp); !errors.Is(err, errSnapshot) {
				t.Fatalf("read back: %v", err)
			}
		})
	}
}

// TestSnapshotPackedSizesBounded: a packed list whose block sizes are written so large that
// their sum wraps around (the checksum holding) is refused, not sliced out of range.
func TestSnapshotPackedSizesBounded(t *testing.T) {
	var b []byte
	b = binary.AppendUvarint(b, 2)                 // two blocks
	b = binary.AppendUvarint(b, 0)                 // the first's first entry
	b = binary.AppendUvarint(b, 128)               // and its size
	b = binary.AppendUvarint(b, 200<<8)            // the second's, after it
	b = binary.AppendUvarint(b, math.MaxUint64-63) // a size that takes the offset back to 64
	b = append(b, make([]byte, 256)...)
	d := &snapshotDecoder{b: b, entries: 1000}
	d.packed(1000, &plist{}, nil)
	if !errors.Is(d.err, errSnapshot) {
		t.Fatalf("read: %v, want errSnapshot", d.err)
	}
}

// TestSnapshotStamp: the stamp of the analysis and the snapshot format is the one the snapshots
// on disk were written with. A change to either that is meant makes older snapshots unreadable
// (each index is built again at the next start): set the new stamp here. One that is not meant
// fails here.
func TestSnapshotStamp(t *testing.T) {
	if got := analyzerStamp(); got != "36d0bc2e1ef968b3ac399cd9" {
		t.Errorf("analyzerStamp() = %s: the analysis of cards or the snapshot format changed", got)
	}
}
