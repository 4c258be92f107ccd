package search

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/cardstest"
	"github.com/agentcards/agentcards/cards/search/index"
	"github.com/agentcards/agentcards/tenants"
)

// checkedContents checks x's invariants and returns its contents by agentId.
func checkedContents(t *testing.T, x *index.Tenant) map[string]string {
	t.Helper()
	if err := x.Check(); err != nil {
		t.Fatal(err)
	}
	return x.Contents()
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
// that is not a snapshot, the index is built from the cards.
func TestIndexRestoresFromSnapshot(t *testing.T) {
	f := newRestoreFixture(t)
	f.firstBuildSaved()
	f.unchangedReadsNothing()
	f.changeMeanwhile()
	f.restoreReadsTheChanged()
	f.mostChangedBuilt()
	f.damagedBuiltAndSaved()
}

// restoreFixture is TestIndexRestoresFromSnapshot's store of tenant acme's cards, at first all,
// and the directory its indexes' snapshots are written to.
type restoreFixture struct {
	t     *testing.T
	ctx   context.Context
	dir   string
	all   []cards.Card
	store *versioned
}

// newRestoreFixture fills the store with 1200 cards and makes an empty snapshot directory.
func newRestoreFixture(t *testing.T) *restoreFixture {
	all := cardstest.Cards(t, 31, 1200)
	store := &versioned{feedModel: &feedModel{cards: map[string]cards.Card{}}}
	for _, c := range all {
		store.cards[c.AgentID] = c
	}
	return &restoreFixture{t: t, ctx: context.Background(), dir: t.TempDir(), all: all, store: store}
}

// open is a new index over the store, with snapshots in the fixture's directory.
func (f *restoreFixture) open() *Index {
	ix := NewIndex(f.store, f.store)
	ix.Snapshots = &Snapshots{Dir: f.dir, Versions: f.store}
	return ix
}

// built is acme's index built from the store's cards, without snapshots.
func (f *restoreFixture) built() *index.Tenant {
	ix := NewIndex(f.store, f.store)
	e, err := ix.entry(f.ctx, "acme")
	if err != nil {
		f.t.Fatal(err)
	}
	return e.x
}

// load is acme's index of ix, with the store's count of cards read set to 0 before it loads.
func (f *restoreFixture) load(ix *Index) *index.Tenant {
	f.t.Helper()
	f.store.read.Store(0)
	e, err := ix.entry(f.ctx, "acme")
	if err != nil {
		f.t.Fatal(err)
	}
	return e.x
}

// firstBuildSaved checks that, with nothing on disk, the index is built from every card, and
// that it is written out.
func (f *restoreFixture) firstBuildSaved() {
	t := f.t
	ix := f.open()
	f.load(ix)
	if n := f.store.read.Load(); n != int64(len(f.all)) {
		t.Fatalf("the first build read %d cards, want %d", n, len(f.all))
	}
	if err := ix.SaveSnapshots(f.ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(ix.Snapshots.path("acme")); err != nil {
		t.Fatalf("no snapshot after the build: %v", err)
	}
}

// unchangedReadsNothing checks that a snapshot of unchanged cards is read back without reading a
// card, as the index a build gives.
func (f *restoreFixture) unchangedReadsNothing() {
	t := f.t
	x := f.load(f.open())
	if n := f.store.read.Load(); n != 0 {
		t.Fatalf("an unchanged snapshot read %d cards", n)
	}
	if d := f.built().Diff(x); d != "" {
		t.Fatal(d)
	}
}

// changeMeanwhile changes the store as other servers would while none runs: 50 cards updated, 20
// deleted, 10 re-created (a new card id, revisions going on), 30 new, and 5 written in another
// history of the database (one restored from a backup, then written to): the same card id and
// revision, another time and content.
func (f *restoreFixture) changeMeanwhile() {
	all, store := f.all, f.store
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
	for i, c := range cardstest.Cards(f.t, 32, 30) {
		c.AgentID = fmt.Sprintf("new-%02d", i)
		store.cards[c.AgentID] = c
	}
}

// restoreReadsTheChanged checks that, after changeMeanwhile, the restore reads only the 95
// changed or new cards and ends up with the documents a build gives.
func (f *restoreFixture) restoreReadsTheChanged() {
	t := f.t
	x := f.load(f.open())
	if n := f.store.read.Load(); n != 95 {
		t.Fatalf("the restore read %d cards, want the 95 changed or new", n)
	}
	// The same documents, possibly numbered otherwise: compared by what each agent has.
	want := f.built()
	if g, w := checkedContents(t, x), checkedContents(t, want); !maps.Equal(g, w) {
		t.Fatalf("restored index differs from a build: %d agents vs %d", len(g), len(w))
	}
}

// mostChangedBuilt checks that, with most cards changed, the index is built from the cards.
func (f *restoreFixture) mostChangedBuilt() {
	t, store := f.t, f.store
	for id, c := range store.cards {
		c.Revision++
		store.cards[id] = c
	}
	x := f.load(f.open())
	if n, cs := store.read.Load(), len(store.cards); n != int64(cs) {
		t.Fatalf("with every card changed the build read %d cards, want %d", n, cs)
	}
	if d := f.built().Diff(x); d != "" {
		t.Fatal(d)
	}
}

// damagedBuiltAndSaved checks that a file that is not a snapshot is built from the cards, and
// written anew.
func (f *restoreFixture) damagedBuiltAndSaved() {
	t := f.t
	ix := f.open()
	if err := os.WriteFile(ix.Snapshots.path("acme"), []byte("not an index"), 0o600); err != nil {
		t.Fatal(err)
	}
	x := f.load(ix)
	if n := f.store.read.Load(); n != int64(len(f.store.cards)) {
		t.Fatalf("with a damaged snapshot the build read %d cards", n)
	}
	if d := f.built().Diff(x); d != "" {
		t.Fatal(d)
	}
	if err := ix.SaveSnapshots(f.ctx); err != nil {
		t.Fatal(err)
	}
	f.load(f.open())
	if n := f.store.read.Load(); n != 0 {
		t.Fatalf("the snapshot written after the damaged one read %d cards", n)
	}
}

// TestSnapshotsSkipSmallIndexes: an index under MinCards is not written out.
func TestSnapshotsSkipSmallIndexes(t *testing.T) {
	store := &versioned{feedModel: &feedModel{cards: map[string]cards.Card{}}}
	for _, c := range cardstest.Cards(t, 41, 50) {
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

// TestChangedSnapshotsWaitForATenth: the periodic write skips an index until about a tenth of
// its cards changed since it was written; the one as the server stops writes any change.
func TestChangedSnapshotsWaitForATenth(t *testing.T) {
	ctx := context.Background()
	all := cardstest.Cards(t, 51, 2000)
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

// TestRestoreCompactsUnordered: a snapshot written with many removed documents, read back while
// more go, compacts the index in the middle of the restore (its order put right only at the
// end), and gives the index a build gives; when most of the snapshot's cards are gone, the
// index is built from the cards instead.
func TestRestoreCompactsUnordered(t *testing.T) {
	ctx := context.Background()
	all := cardstest.Cards(t, 61, 2400)
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
	if dead := e.x.Documents() - e.x.Live(); dead != 1100 {
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
	if e.x.Documents() >= 2400 {
		t.Fatalf("no compaction: %d documents, %d live", e.x.Documents(), e.x.Live())
	}
	built := NewIndex(store, store)
	want, err := built.entry(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	if g, w := checkedContents(t, e.x), checkedContents(t, want.x); !maps.Equal(g, w) {
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
	for _, c := range cardstest.Cards(t, 71, 30) {
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

// TestEvictSkipsADroppedIndex: an index dropped while an eviction was on its way to it (Verify
// dropped it, its tenant was deleted) is neither written to its snapshot nor counted evicted:
// its snapshot could replace a newer one.
func TestEvictSkipsADroppedIndex(t *testing.T) {
	ctx := context.Background()
	store := &versioned{feedModel: &feedModel{cards: map[string]cards.Card{}}}
	for _, c := range cardstest.Cards(t, 52, 30) {
		store.cards[c.AgentID] = c
	}
	ix := NewIndex(store, store)
	defer ix.Close()
	ix.Snapshots = &Snapshots{Dir: t.TempDir(), Versions: store} // 30 cards: not written at the build
	e, err := ix.entry(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	ix.mu.Lock()
	delete(ix.tenants, "acme")
	ix.mu.Unlock()
	if ix.evict("acme", e) {
		t.Fatal("a dropped index was evicted")
	}
	if _, err := os.Stat(ix.Snapshots.path("acme")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a dropped index was written to its snapshot: %v", err)
	}
	if n := ix.evictions.Load(); n != 0 {
		t.Fatalf("%d evictions counted", n)
	}
	// The index the tenant loads again is evicted, and written.
	e, err = ix.entry(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	if !ix.evict("acme", e) {
		t.Fatal("the loaded index was not evicted")
	}
	if _, err := os.Stat(ix.Snapshots.path("acme")); err != nil {
		t.Fatalf("the evicted index was not written: %v", err)
	}
}

// TestTrimKeepsAnIndexSearchedMeanwhile: an index searched while a trim is on its way to it
// (after the trim ordered the indexes) is not evicted: it is the index searched last now.
func TestTrimKeepsAnIndexSearchedMeanwhile(t *testing.T) {
	ctx := context.Background()
	store := &versioned{feedModel: &feedModel{cards: map[string]cards.Card{}}}
	for _, c := range cardstest.Cards(t, 53, 20) {
		store.cards[c.AgentID] = c
	}
	ix := NewIndex(store, store)
	defer ix.Close()
	older, err := ix.entry(ctx, "older")
	if err != nil {
		t.Fatal(err)
	}
	newer, err := ix.entry(ctx, "newer")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UnixNano()
	older.use(now - 2)
	newer.use(now - 1)
	trim := func() {
		ix.trimming.Lock()
		defer ix.trimming.Unlock()
		ix.trimLocked()
	}
	ix.building.Wait()  // the builds' own trims are done
	ix.MemoryBudget = 1 // any two indexes are over it
	loaded := func(tenant tenants.ID) bool {
		ix.mu.Lock()
		defer ix.mu.Unlock()
		return ix.tenants[tenant] != nil
	}
	if !loaded("older") || !loaded("newer") {
		t.Fatal("an index was evicted before the trim")
	}
	beforeEviction = func(tenant tenants.ID) {
		if tenant == "older" {
			older.use(time.Now().UnixNano()) // searched as the trim comes to it
		}
	}
	defer func() { beforeEviction = nil }()
	trim()
	if !loaded("older") {
		t.Fatal("the index searched during the trim was evicted")
	}
	beforeEviction = nil
	trim()
	if loaded("newer") || !loaded("older") {
		t.Fatalf("the next trim kept older %v, newer %v; want only the one searched last", loaded("older"), loaded("newer"))
	}
}

// TestCloseWaitsForATrim: Close returns only once a trim under way is done (it may be writing an
// evicted index's snapshot), and a trim after Close evicts nothing.
func TestCloseWaitsForATrim(t *testing.T) {
	ctx := context.Background()
	store := &versioned{feedModel: &feedModel{cards: map[string]cards.Card{}}}
	for _, c := range cardstest.Cards(t, 54, 20) {
		store.cards[c.AgentID] = c
	}
	ix := NewIndex(store, store)
	for i, tenant := range []tenants.ID{"a", "b", "c"} {
		e, err := ix.entry(ctx, tenant)
		if err != nil {
			t.Fatal(err)
		}
		e.use(int64(i + 1))
	}
	ix.building.Wait()
	ix.MemoryBudget = 1
	reached, release := make(chan struct{}), make(chan struct{})
	beforeEviction = func(tenants.ID) {
		select {
		case <-reached:
		default:
			close(reached)
			<-release
		}
	}
	defer func() { beforeEviction = nil }()
	go ix.trim()
	<-reached
	closed := make(chan struct{})
	go func() {
		ix.Close()
		close(closed)
	}()
	select {
	case <-closed:
		t.Fatal("Close returned while a trim was under way")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	<-closed
	ix.mu.Lock()
	left := len(ix.tenants)
	ix.mu.Unlock()
	ix.trim()
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if len(ix.tenants) != left {
		t.Fatalf("a trim after Close evicted: %d indexes, then %d", left, len(ix.tenants))
	}
}

// TestVerifiedDropIsNotWritten: an index Verify dropped is never written to its snapshot
// afterwards (an eviction already on its way to it, its queued write): the write could replace
// the snapshot its reload writes.
func TestVerifiedDropIsNotWritten(t *testing.T) {
	ctx := context.Background()
	store := &versioned{feedModel: &feedModel{cards: map[string]cards.Card{}}}
	all := cardstest.Cards(t, 55, 30)
	for _, c := range all {
		store.cards[c.AgentID] = c
	}
	ix := NewIndex(store, store)
	defer ix.Close()
	ix.Versions = store
	ix.Snapshots = &Snapshots{Dir: t.TempDir(), Versions: store} // 30 cards: not written at the build
	e, err := ix.entry(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	store.mu.Lock()
	delete(store.cards, all[3].AgentID) // the database lost a card
	store.mu.Unlock()
	if dropped := ix.Verify(ctx, nil); !slices.Equal(dropped, []tenants.ID{"acme"}) {
		t.Fatalf("Verify dropped %v, want [acme]", dropped)
	}
	ix.saving.Lock()
	err = ix.saveLocked("acme", e, 0, 1)
	ix.saving.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(ix.Snapshots.path("acme")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the dropped index was written: %v", err)
	}
}

// TestSnapshotWriteFailed: a snapshot whose writing fails (a full disk) is not put in place: its
// temporary file is removed, the error returned, and the snapshot written before kept.
func TestSnapshotWriteFailed(t *testing.T) {
	s := &Snapshots{Dir: t.TempDir()}
	f, err := s.create()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("the snapshot before"); err != nil {
		t.Fatal(err)
	}
	if err := s.commit("acme", f, nil); err != nil {
		t.Fatal(err)
	}
	if f, err = s.create(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("half a snapshot"); err != nil {
		t.Fatal(err)
	}
	full := errors.New("no space left on device")
	if err := s.commit("acme", f, full); !errors.Is(err, full) {
		t.Fatalf("commit after a failed write: %v", err)
	}
	if b, err := os.ReadFile(s.path("acme")); err != nil || string(b) != "the snapshot before" {
		t.Errorf("the snapshot after a failed write: %q, %v", b, err)
	}
	if files, err := os.ReadDir(s.Dir); err != nil || len(files) != 1 {
		t.Errorf("%d files left in the directory (%v), want the snapshot alone", len(files), err)
	}
}
