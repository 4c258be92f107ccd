package search_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/agentcards/agentcards/authz/authztest"
	"github.com/agentcards/agentcards/bench/cardgen"
	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/search"
	"github.com/agentcards/agentcards/migrations"
	"github.com/agentcards/agentcards/storage"
	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/tenants"
	"github.com/agentcards/agentcards/tenants/paging"
)

// TestMemoryBudget: under search.memoryBudget the loaded indexes stay within the budget (but
// for the one searched last), the least recently searched evicted first, each written to its
// snapshot, even below the snapshots' MinCards; a search of an evicted tenant loads its index
// again, with the writes made while it was out, and answers as the database does; a write to
// an evicted tenant does not load it.
func TestMemoryBudget(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) {
		db := storagetest.Open(t, dialect)
		store := storage.NewCardStore(db)
		gate := &tenants.Service{Store: storage.NewTenantStore(db)}
		svc := &cards.Service{Store: store, Gate: gate, Authz: authztest.AllowAll{}}
		// Six tenants: the even ones large enough for a snapshot after their build (MinCards 20),
		// the odd ones not.
		const tenantCount = 6
		names := make([]tenants.ID, tenantCount)
		for i := range names {
			names[i] = tenants.ID(fmt.Sprintf("t%d", i))
			storagetest.CreateTenant(t, db, names[i], time.Now())
			n := 12
			if i%2 == 0 {
				n = 30
			}
			for _, doc := range cardgen.Documents(uint64(i+1), n) {
				if _, err := svc.Register(callerOf(names[i]), names[i], doc); err != nil {
					t.Fatal(err)
				}
			}
		}
		ix := search.NewIndex(store, store)
		defer ix.Close()
		dir := t.TempDir()
		ix.Snapshots = &search.Snapshots{Dir: dir, Versions: store, MinCards: 20}
		svc.Index = ix
		finder := &search.Service{Store: store, Gate: gate, Authz: authztest.AllowAll{}, Index: ix}
		scan := &search.Service{Store: store, Gate: gate, Authz: authztest.AllowAll{}}

		// The budget holds about two of the large tenants' indexes.
		if _, err := finder.Search(callerOf("t0"), "t0", search.Query{Q: "report"}); err != nil {
			t.Fatal(err)
		}
		ix.WaitBuilds()
		large := ix.Sizes()[0]
		ix.MemoryBudget = (large.Bytes + large.CachedBytes + large.CopyBytes) * 5 / 2

		r := rand.New(rand.NewPCG(5, 9))
		words := []string{"report", "invoice", "deploy cluster", "summarize", "audit log", "contract review"}
		var order []tenants.ID // tenants by last search, most recent last
		for round := range 80 {
			tenant := names[r.IntN(tenantCount)]
			switch r.IntN(4) {
			case 0: // a write to some tenant, loaded or not
				other := names[r.IntN(tenantCount)]
				if _, err := svc.Register(callerOf(other), other, newCard(t, round)); err != nil {
					t.Fatal(err)
				}
			case 1: // a card removed
				other := names[r.IntN(tenantCount)]
				list, err := scan.Search(callerOf(other), other, search.Query{Page: paging.Page{Limit: new(1)}})
				if err != nil {
					t.Fatal(err)
				}
				if len(list.Items) > 0 {
					if err := svc.Delete(callerOf(other), other, list.Items[0].Card.AgentID, cards.Precondition{}); err != nil {
						t.Fatal(err)
					}
				}
			}
			q := search.Query{Q: words[r.IntN(len(words))], Page: paging.Page{Limit: new(50)}}
			got, err := finder.Search(callerOf(tenant), tenant, q)
			if err != nil {
				t.Fatal(err)
			}
			want, err := scan.Search(callerOf(tenant), tenant, q)
			if err != nil {
				t.Fatal(err)
			}
			a, _ := json.Marshal(got)
			b, _ := json.Marshal(want)
			if string(a) != string(b) {
				t.Fatalf("round %d, %s %q: the index answers\n%s\nthe database\n%s", round, tenant, q.Q, a, b)
			}
			ix.WaitBuilds() // the trim after a build
			order = append(slices.DeleteFunc(order, func(t tenants.ID) bool { return t == tenant }), tenant)

			loaded := ix.Loaded()
			if !slices.Contains(loaded, tenant) {
				t.Fatalf("round %d: %s, searched last, is not loaded (%v)", round, tenant, loaded)
			}
			if use := ix.Memory(); use.Bytes > use.Budget && len(loaded) > 1 {
				t.Fatalf("round %d: %d bytes loaded (%v), over the budget of %d", round, use.Bytes, loaded, use.Budget)
			}
			// What is loaded is the most recently searched.
			recent := order[max(0, len(order)-len(loaded)):]
			for _, l := range loaded {
				if !slices.Contains(recent, l) {
					t.Fatalf("round %d: %v loaded, but the %d most recently searched are %v", round, loaded, len(loaded), recent)
				}
			}
		}
		use := ix.Memory()
		t.Logf("%+v, %d loaded", use, len(ix.Loaded()))
		if use.Evictions == 0 || use.Reloads == 0 {
			t.Fatalf("%+v: the budget was never reached", use)
		}
		if n := len(ix.Loaded()); n >= tenantCount || n < 2 {
			t.Fatalf("%d indexes loaded: the budget holds about two", n)
		}
		for _, tenant := range names {
			if _, err := os.Stat(filepath.Join(dir, string(tenant)+".index")); err != nil && !slices.Contains(ix.Loaded(), tenant) {
				t.Errorf("%s, evicted, has no snapshot: %v", tenant, err)
			}
		}

		// A write to an evicted tenant leaves it evicted, even where writes load the index of a
		// tenant not searched yet.
		ix.BuildOnWrite = 10000
		var out tenants.ID
		for _, t := range names {
			if !slices.Contains(ix.Loaded(), t) {
				out = t
			}
		}
		if _, err := svc.Register(callerOf(out), out, newCard(t, 999)); err != nil {
			t.Fatal(err)
		}
		ix.WaitBuilds()
		if slices.Contains(ix.Loaded(), out) {
			t.Fatalf("a write to %s, evicted, loaded its index", out)
		}
	})
}

// newCard is a generated card of its own agentId.
func newCard(t *testing.T, n int) []byte {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(cardgen.Documents(uint64(100+n), 1)[0], &doc); err != nil {
		t.Fatal(err)
	}
	doc["agentId"] = fmt.Sprintf("written-%d", n)
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// recentList is an activity store that lists the tenants given, most recently searched first.
type recentList []tenants.ID

func (recentList) Searched(context.Context, tenants.ID, time.Time) error { return nil }
func (l recentList) Recent(context.Context, time.Time) ([]tenants.ID, error) {
	return l, nil
}

// TestWarmStartWithinBudget: under a memory budget the warm start loads the most recently
// searched tenants' indexes until the budget is full, and keeps those, not the ones it would
// have loaded last.
func TestWarmStartWithinBudget(t *testing.T) {
	db := storagetest.Open(t, "sqlite")
	store := storage.NewCardStore(db)
	svc := &cards.Service{Store: store, Gate: &tenants.Service{Store: storage.NewTenantStore(db)}, Authz: authztest.AllowAll{}}
	var list recentList
	for i := range 6 {
		tenant := tenants.ID(fmt.Sprintf("t%d", i))
		storagetest.CreateTenant(t, db, tenant, time.Now())
		for _, doc := range cardgen.Documents(uint64(i+1), 20) {
			if _, err := svc.Register(callerOf(tenant), tenant, doc); err != nil {
				t.Fatal(err)
			}
		}
		list = append(list, tenant)
	}
	sizer := search.NewIndex(store, store)
	defer sizer.Close()
	if err := sizer.Entry(context.Background(), "t0"); err != nil {
		t.Fatal(err)
	}
	one := sizer.Sizes()[0]
	ix := search.NewIndex(store, store)
	defer ix.Close()
	ix.MemoryBudget = (one.Bytes + one.CachedBytes + one.CopyBytes) * 5 / 2
	w := &search.Warmer{Store: list, Index: ix}
	w.Warm(context.Background(), time.Hour)
	ix.WaitBuilds()
	loaded := ix.Loaded()
	slices.Sort(loaded)
	if !slices.Equal(loaded, list[:2]) {
		t.Fatalf("after the warm start %v are loaded, want the two most recently searched, %v", loaded, list[:2])
	}
	if n := ix.Memory().Evictions; n != 1 {
		t.Fatalf("the warm start evicted %d indexes, want the one load past the budget: it stops there", n)
	}
}

// BenchmarkIndexReload: what a search that reloads an evicted tenant's index waits for, at 100
// and 1,000 cards in SQLite: a build from the cards, or a read back from the snapshot (with the
// comparison against the database's versions) where a snapshot is written.
func BenchmarkIndexReload(b *testing.B) {
	for _, n := range []int{100, 1000} {
		store, _ := benchStoreOf(b, n)
		dir := b.TempDir()
		for _, mode := range []string{"build", "snapshot"} {
			b.Run(fmt.Sprintf("cards=%d/%s", n, mode), func(b *testing.B) {
				open := func() *search.Index {
					ix := search.NewIndex(store, store)
					if mode == "snapshot" {
						ix.Snapshots = &search.Snapshots{Dir: dir, Versions: store, MinCards: 1}
					}
					return ix
				}
				first := open()
				if err := first.Entry(context.Background(), "bench"); err != nil {
					b.Fatal(err)
				}
				first.Close() // the snapshot written after the build, if any
				b.ResetTimer()
				for range b.N {
					ix := open()
					if err := ix.Entry(context.Background(), "bench"); err != nil {
						b.Fatal(err)
					}
					b.StopTimer()
					ix.Close()
					b.StartTimer()
				}
			})
		}
	}
}

// TestMemoryCounted: what the budget counts of loaded indexes (the index, its cached answers,
// its outage copy: Sizes) is the heap they hold, within a quarter, for many small tenants and
// for one larger one, so that a budget bounds the process's memory and not a fraction of it.
func TestMemoryCounted(t *testing.T) {
	db := storagetest.Open(t, "sqlite")
	store := storage.NewCardStore(db)
	gate := &tenants.Service{Store: storage.NewTenantStore(db)}
	svc := &cards.Service{Store: store, Gate: gate, Authz: authztest.AllowAll{}}
	add := func(tenant tenants.ID, seed uint64, n int) {
		storagetest.CreateTenant(t, db, tenant, time.Now())
		body := append(append([]byte("["), bytes.Join(cardgen.Documents(seed, n), []byte(","))...), ']')
		if _, err := svc.RegisterBatch(callerOf(tenant), tenant, body); err != nil {
			t.Fatal(err)
		}
	}
	var small []tenants.ID
	for i := range 40 {
		small = append(small, tenants.ID(fmt.Sprintf("s%d", i)))
		add(small[i], uint64(i+1), 100)
	}
	add("large", 99, 1000)
	for _, group := range [][]tenants.ID{small, {"large"}} {
		ix := search.NewIndex(store, store)
		ix.Copy = &search.OutageCopy{Store: store, Bytes: 64 << 20}
		finder := &search.Service{Store: store, Gate: gate, Authz: authztest.AllowAll{}, Index: ix}
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for _, tenant := range group {
			// Searches that cache their pages' cards, with their capabilities' tokens.
			for _, q := range []string{"report", "deploy cluster", "invoice"} {
				if _, err := finder.Search(callerOf(tenant), tenant, search.Query{Q: q, Page: paging.Page{Limit: new(20)}}); err != nil {
					t.Fatal(err)
				}
			}
		}
		ix.WaitBuilds()
		ix.WaitFills()
		runtime.GC()
		runtime.ReadMemStats(&after)
		var counted int64
		for _, s := range ix.Sizes() {
			counted += s.Bytes + s.CachedBytes + s.CopyBytes
		}
		heap := int64(after.HeapAlloc) - int64(before.HeapAlloc)
		ratio := float64(counted) / float64(heap)
		t.Logf("%d tenants: %d KiB counted, %d KiB of heap (%.2fx)", len(group), counted>>10, heap>>10, ratio)
		if ratio < 0.8 || ratio > 1.25 {
			t.Errorf("%d tenants: %d bytes counted for %d bytes of heap (%.2fx)", len(group), counted, heap, ratio)
		}
		runtime.KeepAlive(finder)
		ix.Close()
	}
}

// TestVerifyDropsIndexesTheDatabaseNoLongerHolds: Verify leaves an index that holds exactly the
// database's cards, and drops one that holds a card the database lost (as a promoted standby
// loses the last writes of an asynchronous primary), whose next search then answers as the
// database does.
func TestVerifyDropsIndexesTheDatabaseNoLongerHolds(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) {
		ctx := context.Background()
		db := storagetest.Open(t, dialect)
		store := storage.NewCardStore(db)
		gate := &tenants.Service{Store: storage.NewTenantStore(db)}
		svc := &cards.Service{Store: store, Gate: gate, Authz: authztest.AllowAll{}}
		for _, tenant := range []tenants.ID{"kept", "lost"} {
			storagetest.CreateTenant(t, db, tenant, time.Now())
			for _, doc := range cardgen.Documents(3, 5) {
				if _, err := svc.Register(callerOf(tenant), tenant, doc); err != nil {
					t.Fatal(err)
				}
			}
		}
		ix := search.NewIndex(store, store)
		defer ix.Close()
		ix.Versions = store
		finder := &search.Service{Store: store, Gate: gate, Authz: authztest.AllowAll{}, Index: ix}
		for _, tenant := range []tenants.ID{"kept", "lost"} {
			if _, err := finder.Search(callerOf(tenant), tenant, search.Query{}); err != nil {
				t.Fatal(err)
			}
		}
		if dropped := ix.Verify(ctx, nil); len(dropped) != 0 {
			t.Fatalf("Verify dropped %v, which agree with the database", dropped)
		}
		// The database loses a card with no trace in its feed.
		if _, err := db.SQL().ExecContext(ctx, "DELETE FROM cards WHERE tenant_id = 'lost' AND agent_id = 'agent-0000002'"); err != nil {
			t.Fatal(err)
		}
		if dropped := ix.Verify(ctx, nil); !slices.Equal(dropped, []tenants.ID{"lost"}) {
			t.Fatalf("Verify dropped %v, want [lost]", dropped)
		}
		res, err := finder.Search(callerOf("lost"), "lost", search.Query{})
		if err != nil {
			t.Fatal(err)
		}
		if res.Total != 4 {
			t.Fatalf("after the reload the search finds %d cards, want the database's 4", res.Total)
		}
	})
}

// TestVerifyDropsAnIndexPastTheFeed: an index that applied feed entries the database then lost,
// here a card created and deleted (so that the cards agree), is dropped by Verify: the database
// gives their numbers out again, and the index would pass over the writes that take them as
// applied. Its next search finds a card written after the loss.
func TestVerifyDropsAnIndexPastTheFeed(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) {
		ctx := context.Background()
		db := storagetest.Open(t, dialect)
		store := storage.NewCardStore(db)
		gate := &tenants.Service{Store: storage.NewTenantStore(db)}
		svc := &cards.Service{Store: store, Gate: gate, Authz: authztest.AllowAll{}}
		storagetest.CreateTenant(t, db, "t", time.Now())
		docs := cardgen.Documents(4, 7)
		for _, doc := range docs[:5] {
			if _, err := svc.Register(callerOf("t"), "t", doc); err != nil {
				t.Fatal(err)
			}
		}
		ix := search.NewIndex(store, store)
		defer ix.Close()
		ix.Versions = store
		finder := &search.Service{Store: store, Gate: gate, Authz: authztest.AllowAll{}, Index: ix}
		if _, err := finder.Search(callerOf("t"), "t", search.Query{}); err != nil {
			t.Fatal(err)
		}
		before, err := store.HighestSeq(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// A card created and deleted, applied by the index.
		lost, err := svc.Register(callerOf("t"), "t", docs[5])
		if err != nil {
			t.Fatal(err)
		}
		if err := svc.Delete(callerOf("t"), "t", lost.AgentID, cards.Precondition{}); err != nil {
			t.Fatal(err)
		}
		ix.SyncLoaded(ctx, nil)
		// The database loses both entries, and will number the next write as the first of them.
		for _, stmt := range append([]string{"DELETE FROM card_changes WHERE seq > " + strconv.FormatInt(before, 10)}, resetSeq(dialect, before)...) {
			if _, err := db.SQL().ExecContext(ctx, stmt); err != nil {
				t.Fatal(stmt, err)
			}
		}
		if dropped := ix.Verify(ctx, nil); !slices.Equal(dropped, []tenants.ID{"t"}) {
			t.Fatalf("Verify dropped %v, want [t]", dropped)
		}
		written, err := svc.Register(callerOf("t"), "t", docs[6])
		if err != nil {
			t.Fatal(err)
		}
		res, err := finder.Search(callerOf("t"), "t", search.Query{})
		if err != nil {
			t.Fatal(err)
		}
		if res.Total != 6 || !slices.ContainsFunc(res.Items, func(h search.Hit) bool { return h.Card.AgentID == written.AgentID }) {
			t.Fatalf("after the reload the search finds %d cards, want 6 with %s", res.Total, written.AgentID)
		}
	})
}

// resetSeq returns the statements that make the change feed number its next entry after seq.
func resetSeq(dialect string, seq int64) []string {
	n := strconv.FormatInt(seq, 10)
	switch dialect {
	case migrations.Postgres:
		return []string{"SELECT setval(pg_get_serial_sequence('card_changes', 'seq'), " + n + ")"}
	case migrations.MySQL:
		return []string{"ALTER TABLE card_changes AUTO_INCREMENT = " + strconv.FormatInt(seq+1, 10)}
	}
	return []string{"UPDATE sqlite_sequence SET seq = " + n + " WHERE name = 'card_changes'"}
}

// heldReads is a card store whose GetMany returns the cards it read only once released: a
// build that read the cards before the database changed, and finishes after.
type heldReads struct {
	cards.Store
	read, release chan struct{}
	once          sync.Once
}

func (h *heldReads) GetMany(ctx context.Context, tenant tenants.ID, ids []string) ([]cards.Card, error) {
	cs, err := h.Store.GetMany(ctx, tenant, ids)
	h.once.Do(func() { close(h.read) })
	<-h.release
	return cs, err
}

// TestVerifyWaitsForABuild: Verify, called while a tenant's index is being built from cards read
// before the database lost one of them, waits for the build and drops the index it ends with.
func TestVerifyWaitsForABuild(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) {
		ctx := context.Background()
		db := storagetest.Open(t, dialect)
		store := storage.NewCardStore(db)
		gate := &tenants.Service{Store: storage.NewTenantStore(db)}
		svc := &cards.Service{Store: store, Gate: gate, Authz: authztest.AllowAll{}}
		storagetest.CreateTenant(t, db, "t", time.Now())
		for _, doc := range cardgen.Documents(5, 5) {
			if _, err := svc.Register(callerOf("t"), "t", doc); err != nil {
				t.Fatal(err)
			}
		}
		held := &heldReads{Store: store, read: make(chan struct{}), release: make(chan struct{})}
		ix := search.NewIndex(held, store)
		defer ix.Close()
		ix.Versions = store
		finder := &search.Service{Store: store, Gate: gate, Authz: authztest.AllowAll{}, Index: ix}
		first := make(chan error, 1)
		go func() {
			_, err := finder.Search(callerOf("t"), "t", search.Query{})
			first <- err
		}()
		<-held.read
		if _, err := db.SQL().ExecContext(ctx, "DELETE FROM cards WHERE tenant_id = 't' AND agent_id = 'agent-0000002'"); err != nil {
			t.Fatal(err)
		}
		verified := make(chan []tenants.ID, 1)
		go func() { verified <- ix.Verify(ctx, nil) }()
		time.Sleep(100 * time.Millisecond) // Verify meets the build under way
		close(held.release)
		if err := <-first; err != nil {
			t.Fatal(err)
		}
		if dropped := <-verified; !slices.Equal(dropped, []tenants.ID{"t"}) {
			t.Fatalf("Verify dropped %v, want [t]", dropped)
		}
		res, err := finder.Search(callerOf("t"), "t", search.Query{})
		if err != nil {
			t.Fatal(err)
		}
		if res.Total != 4 {
			t.Fatalf("after the reload the search finds %d cards, want the database's 4", res.Total)
		}
	})
}
