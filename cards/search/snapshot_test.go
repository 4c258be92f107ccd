package search

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"maps"
	"math/rand/v2"
	"os"
	"reflect"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/tenants"
)

// sameIndex fails unless b holds exactly what a holds: documents, order, bitmaps, counts, every
// posting list, and the words by prefix (as sets: their order within a prefix means nothing).
func sameIndex(t *testing.T, a, b *tenantIndex) {
	t.Helper()
	if !reflect.DeepEqual(a.docs, b.docs) {
		t.Fatalf("documents differ")
	}
	if !slices.Equal(a.order, b.order) || !slices.Equal(a.alive, b.alive) || a.live != b.live || a.disabled != b.disabled || !maps.Equal(a.byID, b.byID) {
		t.Fatalf("order, bitmap or counts differ: live %d/%d disabled %d/%d", a.live, b.live, a.disabled, b.disabled)
	}
	for i, pair := range [][2]map[string][]uint32{{a.protocols, b.protocols}, {a.tags, b.tags}, {a.caps, b.caps}, {a.trigrams, b.trigrams}} {
		if !maps.EqualFunc(pair[0], pair[1], func(x, y []uint32) bool { return slices.Equal(x, y) }) {
			t.Fatalf("posting map %d differs", i)
		}
	}
	if !maps.EqualFunc(a.terms, b.terms, func(x, y *[]uint32) bool { return slices.Equal(*x, *y) }) {
		t.Fatalf("term postings differ")
	}
	sorted := func(m map[string][]string) map[string][]string {
		out := map[string][]string{}
		for k, v := range m {
			out[k] = slices.Sorted(slices.Values(v))
		}
		return out
	}
	if !reflect.DeepEqual(sorted(a.vocab3), sorted(b.vocab3)) {
		t.Fatalf("words by prefix differ")
	}
}

// churned indexes generated cards, then changes a share of them and removes another, so the
// index holds removed documents (with and without compaction, by removed).
func churned(t *testing.T, n, removed int) *tenantIndex {
	t.Helper()
	x := newTenantIndex()
	all := generated(t, 21, n)
	x.load(all)
	r := rand.New(rand.NewPCG(5, 6))
	for _, i := range r.Perm(n)[:n/10] {
		c := all[i]
		c.Revision++
		c.Name += " renamed"
		x.upsert(c)
	}
	for _, i := range r.Perm(n)[:removed] {
		x.remove(all[i].AgentID)
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
	for range 3000 {
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
		for _, m := range []map[string][]uint32{y.protocols, y.tags, y.caps, y.trigrams} {
			for _, l := range m {
				for _, n := range l {
					if int(n) >= len(y.docs) {
						t.Fatalf("byte %d changed: document %d of %d", i, n, len(y.docs))
					}
				}
			}
		}
	}
	t.Logf("%d of 3000 changes with the checksum made right still decoded", resummed)
}

// TestAnalyzerStampFollowsAnalysis: the stamp is the same from run to run (it is written in
// every snapshot), and differs when what the index holds of its cards would.
func TestAnalyzerStampFollowsAnalysis(t *testing.T) {
	build := func(cs []cards.Card) string {
		x := newTenantIndex()
		x.load(cs)
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

// versioned is a card store that lists versions, as storage's does, and counts the cards read.
type versioned struct {
	*feedModel
	read atomic.Int64
}

func (v *versioned) Versions(ctx context.Context, tenant tenants.ID) ([]cards.Version, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := []cards.Version{}
	for _, id := range slices.Sorted(maps.Keys(v.cards)) {
		c := v.cards[id]
		out = append(out, cards.Version{AgentID: id, ID: c.ID, Revision: c.Revision})
	}
	return out, nil
}

func (v *versioned) GetMany(ctx context.Context, tenant tenants.ID, ids []string) ([]cards.Card, error) {
	v.read.Add(int64(len(ids)))
	return v.feedModel.GetMany(ctx, tenant, ids)
}

// TestIndexRestoresFromSnapshot: an index written out as the server stops is read back by the
// next one, which reads from the database only the cards that changed meanwhile (updated,
// re-created, new) and drops those deleted, and ends up the index a build from the cards gives;
// one read back unchanged reads no card; with nothing on disk, or most cards changed, or a file
// that is not a snapshot, the index is built from the cards as before.
func TestIndexRestoresFromSnapshot(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	all := generated(t, 31, 1200)
	store := &versioned{feedModel: &feedModel{cards: map[string]cards.Card{}}}
	for _, c := range all {
		store.cards[c.AgentID] = c
	}
	open := func() *Index {
		ix := NewIndex(store, store)
		ix.Snapshots = &Snapshots{Dir: dir, Versions: store}
		return ix
	}
	built := func() *tenantIndex {
		ix := NewIndex(store, store)
		e, err := ix.entry(ctx, "acme")
		if err != nil {
			t.Fatal(err)
		}
		return e.x
	}
	load := func(ix *Index) *tenantIndex {
		t.Helper()
		store.read.Store(0)
		e, err := ix.entry(ctx, "acme")
		if err != nil {
			t.Fatal(err)
		}
		return e.x
	}

	ix := open()
	load(ix)
	if n := store.read.Load(); n != int64(len(all)) {
		t.Fatalf("the first build read %d cards, want %d", n, len(all))
	}
	if err := ix.SaveSnapshots(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(ix.Snapshots.path("acme")); err != nil {
		t.Fatalf("no snapshot after the build: %v", err)
	}

	// Unchanged: nothing read.
	x := load(open())
	if n := store.read.Load(); n != 0 {
		t.Fatalf("an unchanged snapshot read %d cards", n)
	}
	sameIndex(t, built(), x)

	// Meanwhile: 50 cards updated, 20 deleted, 10 re-created (a new card id, revisions going
	// on), 30 new.
	r := rand.New(rand.NewPCG(9, 10))
	perm := r.Perm(len(all))
	for _, i := range perm[:50] {
		c := all[i]
		c.Revision++
		c.Description += " Now also summarises."
		store.cards[c.AgentID] = c
	}
	for _, i := range perm[50:70] {
		delete(store.cards, all[i].AgentID)
	}
	for _, i := range perm[70:80] {
		c := all[i]
		c.ID += "-again"
		c.Revision++
		c.Tags = append(c.Tags, "recreated")
		store.cards[c.AgentID] = c
	}
	for i, c := range generated(t, 32, 30) {
		c.AgentID = fmt.Sprintf("new-%02d", i)
		store.cards[c.AgentID] = c
	}
	x = load(open())
	if n := store.read.Load(); n != 90 {
		t.Fatalf("the restore read %d cards, want the 90 changed or new", n)
	}
	// The same documents, possibly numbered otherwise: compared by what each agent has.
	want := built()
	if g, w := flatten(t, x), flatten(t, want); !maps.Equal(g, w) {
		t.Fatalf("restored index differs from a build: %d agents vs %d", len(g), len(w))
	}

	// Most cards changed: built from the cards.
	for id, c := range store.cards {
		c.Revision++
		store.cards[id] = c
	}
	x = load(open())
	if n, cs := store.read.Load(), len(store.cards); n != int64(cs) {
		t.Fatalf("with every card changed the build read %d cards, want %d", n, cs)
	}
	sameIndex(t, built(), x)

	// Not a snapshot: built from the cards, and written anew.
	if err := os.WriteFile(ix.Snapshots.path("acme"), []byte("not an index"), 0o600); err != nil {
		t.Fatal(err)
	}
	ix = open()
	x = load(ix)
	if n := store.read.Load(); n != int64(len(store.cards)) {
		t.Fatalf("with a damaged snapshot the build read %d cards", n)
	}
	sameIndex(t, built(), x)
	if err := ix.SaveSnapshots(); err != nil {
		t.Fatal(err)
	}
	load(open())
	if n := store.read.Load(); n != 0 {
		t.Fatalf("the snapshot written after the damaged one read %d cards", n)
	}
}

// TestSnapshotsSkipSmallIndexes: an index under MinCards is not written out.
func TestSnapshotsSkipSmallIndexes(t *testing.T) {
	store := &versioned{feedModel: &feedModel{cards: map[string]cards.Card{}}}
	for _, c := range generated(t, 41, 50) {
		store.cards[c.AgentID] = c
	}
	ix := NewIndex(store, store)
	ix.Snapshots = &Snapshots{Dir: t.TempDir(), Versions: store, MinCards: 51}
	if _, err := ix.entry(context.Background(), "acme"); err != nil {
		t.Fatal(err)
	}
	if err := ix.SaveSnapshots(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(ix.Snapshots.path("acme")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("an index of 50 cards, MinCards 51, was written: %v", err)
	}
}

// BenchmarkSnapshot writes out and reads back the index of 100k generated cards (bytes: the
// snapshot's size); compare read-s with BenchmarkIndexBuild's build-s.
func BenchmarkSnapshot(b *testing.B) {
	_, x := benchCorpus(b, 100_000)
	stamp := analyzerStamp()
	for range b.N {
		t0 := time.Now()
		enc := encodeSnapshot(x, "acme", stamp, false)
		t1 := time.Now()
		y, err := decodeSnapshot(enc, "acme", stamp)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(t1.Sub(t0).Seconds(), "write-s")
		b.ReportMetric(time.Since(t1).Seconds(), "read-s")
		b.ReportMetric(float64(len(enc))/(1<<20), "MiB")
		runtime.KeepAlive(y)
	}
}

// TestChangedSnapshotsWaitForATenth: the periodic write skips an index until about a tenth of
// its cards changed since it was written; the one as the server stops writes any change.
func TestChangedSnapshotsWaitForATenth(t *testing.T) {
	ctx := context.Background()
	all := generated(t, 51, 2000)
	store := &versioned{feedModel: &feedModel{cards: map[string]cards.Card{}}}
	for _, c := range all {
		store.cards[c.AgentID] = c
	}
	ix := NewIndex(store, store)
	ix.Snapshots = &Snapshots{Dir: t.TempDir(), Versions: store}
	if _, err := ix.entry(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	if err := ix.SaveSnapshots(); err != nil {
		t.Fatal(err)
	}
	onDisk := func() []byte {
		b, err := os.ReadFile(ix.Snapshots.path("acme"))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	change := func(cs []cards.Card) {
		var ids []string
		store.mu.Lock()
		for _, c := range cs {
			c.Revision += 10
			c.Name += " changed"
			store.cards[c.AgentID] = c
			ids = append(ids, c.AgentID)
		}
		store.mu.Unlock()
		if err := ix.Written(ctx, "acme", ids...); err != nil {
			t.Fatal(err)
		}
	}
	first := onDisk()
	change(all[:150])
	if err := ix.SaveChangedSnapshots(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(onDisk(), first) {
		t.Fatal("written again after 150 of 2,000 cards changed")
	}
	change(all[150:210])
	if err := ix.SaveChangedSnapshots(); err != nil {
		t.Fatal(err)
	}
	second := onDisk()
	if slices.Equal(second, first) {
		t.Fatal("not written again after 210 of 2,000 cards changed")
	}
	change(all[300:301])
	if err := ix.SaveChangedSnapshots(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(onDisk(), second) {
		t.Fatal("the periodic write took one change")
	}
	if err := ix.SaveSnapshots(); err != nil {
		t.Fatal(err)
	}
	if slices.Equal(onDisk(), second) {
		t.Fatal("the write as the server stops skipped a change")
	}
}
