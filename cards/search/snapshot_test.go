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
		if err := sound(y); err != nil {
			t.Fatalf("byte %d changed, checksum right: read back, but %v", i, err)
		}
	}
	t.Logf("%d of 1000 changes with the checksum made right still decoded", resummed)
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
		out = append(out, cards.Version{AgentID: id, ID: c.ID, Revision: c.Revision, UpdatedAt: c.UpdatedAt})
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
	if err := ix.SaveSnapshots(ctx); err != nil {
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
	// on), 30 new, and 5 written in another history of the database (one restored from a
	// backup, then written to): the same card id and revision, another time and content.
	r := rand.New(rand.NewPCG(9, 10))
	perm := r.Perm(len(all))
	for _, i := range perm[80:85] {
		c := all[i]
		c.UpdatedAt = c.UpdatedAt.Add(time.Hour)
		c.Name = "Another history"
		store.cards[c.AgentID] = c
	}
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
	if n := store.read.Load(); n != 95 {
		t.Fatalf("the restore read %d cards, want the 95 changed or new", n)
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
	if err := ix.SaveSnapshots(ctx); err != nil {
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
	ctx := context.Background()
	ix := NewIndex(store, store)
	ix.Snapshots = &Snapshots{Dir: t.TempDir(), Versions: store, MinCards: 51}
	if _, err := ix.entry(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	if err := ix.SaveSnapshots(ctx); err != nil {
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
	if err := ix.SaveSnapshots(ctx); err != nil {
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
	if err := ix.SaveChangedSnapshots(ctx); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(onDisk(), first) {
		t.Fatal("written again after 150 of 2,000 cards changed")
	}
	change(all[150:210])
	if err := ix.SaveChangedSnapshots(ctx); err != nil {
		t.Fatal(err)
	}
	second := onDisk()
	if slices.Equal(second, first) {
		t.Fatal("not written again after 210 of 2,000 cards changed")
	}
	change(all[300:301])
	if err := ix.SaveChangedSnapshots(ctx); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(onDisk(), second) {
		t.Fatal("the periodic write took one change")
	}
	if err := ix.SaveSnapshots(ctx); err != nil {
		t.Fatal(err)
	}
	if slices.Equal(onDisk(), second) {
		t.Fatal("the write as the server stops skipped a change")
	}
}

// TestSnapshotStructureChecked: a snapshot whose checksum holds but whose structure does not
// (written from a broken index, or forged) is refused: an agent twice in the order, the order
// unsorted, a list not ascending or naming a document twice, a count larger than the file.
func TestSnapshotStructureChecked(t *testing.T) {
	stamp := analyzerStamp()
	for _, tc := range []struct {
		name   string
		break_ func(x *tenantIndex)
	}{
		{"an agent twice in the order", func(x *tenantIndex) { x.order[1] = x.order[0] }},
		{"the order unsorted", func(x *tenantIndex) { x.order[0], x.order[1] = x.order[1], x.order[0] }},
		{"a list not ascending", func(x *tenantIndex) {
			for _, l := range x.tags {
				if len(l) > 1 {
					l[0], l[1] = l[1], l[0]
					return
				}
			}
			t.Fatal("no tag list of two")
		}},
		{"a document twice in a term's list", func(x *tenantIndex) {
			for _, l := range x.terms {
				if len(*l) > 1 {
					(*l)[1] = (*l)[0]&^3 | 3
					if (*l)[1] == (*l)[0] {
						(*l)[1] = (*l)[0] &^ 3
					}
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
		e := &snapshotEncoder{}
		e.b = append(e.b, snapshotMagic...)
		e.uint(snapshotFormat)
		for _, s := range []string{stamp, "acme"} {
			e.count(len(s))
			e.b = append(e.b, s...)
		}
		e.count(0)      // no strings
		e.uint(1 << 40) // documents
		b := binary.LittleEndian.AppendUint32(e.b, crc32.Checksum(e.b, castagnoli))
		if _, err := decodeSnapshot(b, "acme", stamp); !errors.Is(err, errSnapshot) {
			t.Fatalf("read back: %v", err)
		}
	})
}

// TestRestoreCompactsUnordered: a snapshot written with many removed documents, read back while
// more go, compacts the index in the middle of the restore (its order put right only at the
// end), and gives the index a build gives; when most of the snapshot's cards are gone, the
// index is built from the cards instead.
func TestRestoreCompactsUnordered(t *testing.T) {
	ctx := context.Background()
	all := generated(t, 61, 2400)
	store := &versioned{feedModel: &feedModel{cards: map[string]cards.Card{}}}
	for _, c := range all {
		store.cards[c.AgentID] = c
	}
	dir := t.TempDir()
	ix := NewIndex(store, store)
	ix.Snapshots = &Snapshots{Dir: dir, Versions: store}
	e, err := ix.entry(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	// 1,100 removed: not yet compacted (dead <= live).
	var gone []string
	store.mu.Lock()
	for _, c := range all[:1100] {
		delete(store.cards, c.AgentID)
		gone = append(gone, c.AgentID)
	}
	store.mu.Unlock()
	if err := ix.Written(ctx, "acme", gone...); err != nil {
		t.Fatal(err)
	}
	if dead := len(e.x.docs) - e.x.live; dead != 1100 {
		t.Fatalf("set-up: %d removed documents held", dead)
	}
	if err := ix.SaveSnapshots(ctx); err != nil {
		t.Fatal(err)
	}
	// Then 300 more go and 50 change: the restore removes 350 documents, which compacts.
	store.mu.Lock()
	for _, c := range all[1100:1400] {
		delete(store.cards, c.AgentID)
	}
	for _, c := range all[1400:1450] {
		c.Revision++
		c.Name += " again"
		store.cards[c.AgentID] = c
	}
	store.mu.Unlock()
	restored := NewIndex(store, store)
	restored.Snapshots = &Snapshots{Dir: dir, Versions: store}
	store.read.Store(0)
	e, err = restored.entry(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	if n := store.read.Load(); n != 50 {
		t.Fatalf("the restore read %d cards, want the 50 changed", n)
	}
	// Without a compaction it would hold the snapshot's 2,400 documents and the 50 added.
	if len(e.x.docs) >= 2400 {
		t.Fatalf("no compaction: %d documents, %d live", len(e.x.docs), e.x.live)
	}
	built := NewIndex(store, store)
	want, err := built.entry(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	if g, w := flatten(t, e.x), flatten(t, want.x); !maps.Equal(g, w) {
		t.Fatalf("restored index differs from a build: %d agents vs %d", len(g), len(w))
	}

	// Most of the snapshot's cards gone: built from the cards.
	if err := restored.SaveSnapshots(ctx); err != nil {
		t.Fatal(err)
	}
	store.mu.Lock()
	for _, c := range all[1400:2000] {
		delete(store.cards, c.AgentID)
	}
	left := len(store.cards)
	store.mu.Unlock()
	again := NewIndex(store, store)
	again.Snapshots = &Snapshots{Dir: dir, Versions: store}
	store.read.Store(0)
	if _, err := again.entry(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	if n := store.read.Load(); n != int64(left) {
		t.Fatalf("with 600 of 1,000 cards gone the build read %d cards, want all %d", n, left)
	}
}

// TestSnapshotsForgotten: the snapshot of a tenant dropped (deleted, or created anew) is
// removed, and so is, at the periodic write, that of a tenant the database no longer has; an
// index that fell below MinCards removes its own.
func TestSnapshotsForgotten(t *testing.T) {
	ctx := context.Background()
	store := &versioned{feedModel: &feedModel{cards: map[string]cards.Card{}}}
	for _, c := range generated(t, 71, 30) {
		store.cards[c.AgentID] = c
	}
	dir := t.TempDir()
	exist := []tenants.ID{"acme", "beta"}
	ix := NewIndex(store, store)
	ix.Snapshots = &Snapshots{Dir: dir, Versions: store, MinCards: 20,
		Tenants: func(context.Context) ([]tenants.ID, error) { return exist, nil }}
	for _, tenant := range []tenants.ID{"acme", "beta", "gamma"} {
		if _, err := ix.entry(ctx, tenant); err != nil {
			t.Fatal(err)
		}
	}
	if err := ix.SaveSnapshots(ctx); err != nil {
		t.Fatal(err)
	}
	has := func(tenant tenants.ID) bool {
		_, err := os.Stat(ix.Snapshots.path(tenant))
		return err == nil
	}
	if !has("acme") || !has("beta") || !has("gamma") {
		t.Fatal("set-up: a snapshot missing")
	}
	ix.Drop("acme")
	if has("acme") {
		t.Error("the snapshot of a dropped tenant is kept")
	}
	// gamma is loaded here: its file stays while it is, even though the list lacks it.
	if err := ix.SaveChangedSnapshots(ctx); err != nil {
		t.Fatal(err)
	}
	if !has("gamma") {
		t.Error("the snapshot of a loaded index was swept")
	}
	ix.mu.Lock()
	delete(ix.tenants, "gamma") // no longer loaded, as on a replica that restarted
	ix.mu.Unlock()
	if err := ix.SaveChangedSnapshots(ctx); err != nil {
		t.Fatal(err)
	}
	if has("gamma") || !has("beta") {
		t.Errorf("after the sweep: gamma %v (want gone), beta %v (want kept)", has("gamma"), has("beta"))
	}
	// beta falls to 10 cards, below MinCards: its snapshot goes.
	var ids []string
	store.mu.Lock()
	for id := range store.cards {
		if len(ids) < 20 {
			ids = append(ids, id)
			delete(store.cards, id)
		}
	}
	store.mu.Unlock()
	if err := ix.Written(ctx, "beta", ids...); err != nil {
		t.Fatal(err)
	}
	if err := ix.SaveSnapshots(ctx); err != nil {
		t.Fatal(err)
	}
	if has("beta") {
		t.Error("the snapshot of an index below MinCards is kept")
	}
}

// sound checks what search relies on in an index: each posting list names existing documents,
// each once, in ascending order; the order lists every live document once, by agent id; byID
// and the live count agree with it.
func sound(x *tenantIndex) error {
	check := func(l []uint32, shift uint) error {
		for i, e := range l {
			if int(e>>shift) >= len(x.docs) || (i > 0 && l[i-1]>>shift >= e>>shift) {
				return fmt.Errorf("list %v", l)
			}
		}
		return nil
	}
	for _, m := range []map[string][]uint32{x.protocols, x.tags, x.caps, x.trigrams} {
		for _, l := range m {
			if err := check(l, 0); err != nil {
				return err
			}
		}
	}
	for _, l := range x.terms {
		if err := check(*l, 2); err != nil {
			return err
		}
	}
	if len(x.order) != x.live || len(x.byID) != x.live {
		return fmt.Errorf("order %d, ids %d, live %d", len(x.order), len(x.byID), x.live)
	}
	for i, n := range x.order {
		if !x.docs[n].alive || x.byID[x.docs[n].agentID] != n || (i > 0 && x.docs[x.order[i-1]].agentID >= x.docs[n].agentID) {
			return fmt.Errorf("order at %d", i)
		}
	}
	return nil
}
