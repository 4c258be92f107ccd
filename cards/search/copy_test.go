package search_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentcards/agentcards/authz"
	"github.com/agentcards/agentcards/authz/authztest"
	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/bench/cardgen"
	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/search"
	"github.com/agentcards/agentcards/storage"
	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/tenants"
	"github.com/agentcards/agentcards/tenants/paging"
)

// copyCaller is the context of a caller of tenant "t" (authztest.AllowAll lets it do everything).
var copyCaller = authz.WithPrincipal(context.Background(), authz.Principal{Subject: "alice", Tenant: "t"})

// copyFixture is a SQLite store with n generated cards in tenant "t", the card service over it,
// and an index over the store with an outage copy bounded to limit bytes.
func copyFixture(t *testing.T, n, limit int) (*storage.CardStore, *cards.Service, *search.Index) {
	t.Helper()
	db := storagetest.Open(t, "sqlite")
	storagetest.CreateTenant(t, db, "t", time.Now())
	store := storage.NewCardStore(db)
	gate := &tenants.Service{Store: storage.NewTenantStore(db)}
	svc := &cards.Service{Store: store, Gate: gate, Authz: authztest.AllowAll{}}
	for _, doc := range cardgen.Documents(7, n) {
		if _, err := svc.Register(copyCaller, "t", doc); err != nil {
			t.Fatal(err)
		}
	}
	ix := search.NewIndex(store, store)
	ix.Copy = &search.OutageCopy{Store: store, Bytes: limit}
	svc.Index = ix
	return store, svc, ix
}

// filled builds the tenant's index and fills its outage copy, and waits for the fill the
// build started.
func filled(t *testing.T, ix *search.Index) {
	t.Helper()
	if err := ix.LoadCopy("t"); err != nil {
		t.Fatal(err)
	}
	ix.WaitFills()
}

// staleCaller is caller's context as the tenant gate leaves it when it found the database down.
func staleCaller() context.Context {
	ctx, _ := tenants.WithStaleMark(copyCaller)
	tenants.MarkStale(ctx)
	return ctx
}

// TestOutageCopyHoldsEveryCard: once an index is loaded, memory answers a read of any of its
// cards, at the version the database has, with nothing read before; writes keep the copy
// current, a delete drops the card, and a card whose write the index could not read back is not
// answered from it.
func TestOutageCopyHoldsEveryCard(t *testing.T) {
	ctx := context.Background()
	store, svc, ix := copyFixture(t, 300, 64<<20)
	// The build fills the copy in the background.
	if err := ix.Load("t"); err != nil {
		t.Fatal(err)
	}
	ix.WaitFills()
	if n, _ := ix.CopySize("t"); n != 300 {
		t.Fatalf("the copy holds %d cards, want 300", n)
	}
	if n := ix.CachedCards("t"); n != 0 {
		t.Fatalf("the render cache holds %d cards before any read", n)
	}
	ids, err := store.IDs(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		want, err := store.Get(ctx, "t", id)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := ix.Remembered("t", id)
		if !ok || !reflect.DeepEqual(got, want) {
			t.Fatalf("Remembered(%s) = %+v, %v; want the stored card %+v", id, got, ok, want)
		}
	}

	// A PATCH: the copy follows at once, without the render cache (which a write empties).
	patched, err := svc.Patch(copyCaller, "t", ids[0], []byte(`{"description": "patched while loaded"}`), cards.Precondition{})
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := ix.Remembered("t", ids[0]); !ok || got.Description != "patched while loaded" || got.Revision != patched.Revision ||
		!got.UpdatedAt.Equal(patched.UpdatedAt) {
		t.Fatalf("after a patch Remembered = %+v, %v", got, ok)
	}
	// A delete drops the card from the copy.
	if err := svc.Delete(copyCaller, "t", ids[1], cards.Precondition{}); err != nil {
		t.Fatal(err)
	}
	if _, ok := ix.Remembered("t", ids[1]); ok {
		t.Fatal("a deleted card is remembered")
	}
	if n, _ := ix.CopySize("t"); n != 299 {
		t.Fatalf("after a delete the copy holds %d cards, want 299", n)
	}
	// A card written elsewhere and not yet applied: the copy has the version the index holds.
	if _, ok := ix.Remembered("t", ids[2]); !ok {
		t.Fatal("a card is not remembered")
	}
	// The index could not read a card back after a write: it keeps nothing of it.
	ix.Distrust("t", ids[2])
	if _, ok := ix.Remembered("t", ids[2]); ok {
		t.Fatal("a distrusted card is remembered")
	}
	filled(t, ix)
	if _, ok := ix.Remembered("t", ids[2]); ok {
		t.Fatal("the fill kept a distrusted card")
	}
	// A copy entry of another version than the index's is never served.
	ix.CopyOlder("t", ids[3])
	if _, ok := ix.Remembered("t", ids[3]); ok {
		t.Fatal("a card of another revision than the index's was answered")
	}
	// A card changed in the database that the index has not installed yet: a fill reading it
	// keeps the copy at the index's version, not the database's.
	held, ok := ix.Remembered("t", ids[4])
	if !ok {
		t.Fatal("a card is not remembered")
	}
	newer := held
	newer.Description = "written behind the index's back"
	newer.Revision++
	if err := store.Replace(ctx, "t", newer, held.Revision); err != nil {
		t.Fatal(err)
	}
	filled(t, ix)
	if got, ok := ix.Remembered("t", ids[4]); !ok || !reflect.DeepEqual(got, held) {
		t.Fatalf("after a fill read a version the index does not hold: %+v, %v; want the index's %+v", got, ok, held)
	}
}

// TestOutageCopyAnswersSearches: a search while the database is found down is answered from the
// copy with the cards the database would give, where without a copy it is refused.
func TestOutageCopyAnswersSearches(t *testing.T) {
	store, svc, ix := copyFixture(t, 200, 64<<20)
	filled(t, ix)
	gate := svc.Gate.(*tenants.Service)
	s := &search.Service{Store: store, Gate: gate, Authz: authztest.AllowAll{}, Index: ix}
	q := search.Query{Q: cardgen.Make(7, 11).Capabilities[0].Name, Page: paging.Page{Limit: new(50)}}
	stale, err := s.Search(staleCaller(), "t", q)
	if err != nil {
		t.Fatal(err)
	}
	if n := ix.CachedCards("t"); n != 0 {
		t.Fatalf("answers from the copy went to the render cache (%d cards)", n)
	}
	// The database's answer, through an index of its own that holds no card.
	plain := &search.Service{Store: store, Gate: gate, Authz: authztest.AllowAll{}, Index: search.NewIndex(store, store)}
	fresh, err := plain.Search(copyCaller, "t", q)
	if err != nil {
		t.Fatal(err)
	}
	if len(fresh.Items) < 2 {
		t.Fatalf("the query finds %d cards: too few to tell", len(fresh.Items))
	}
	a, _ := json.Marshal(stale)
	b, _ := json.Marshal(fresh)
	if string(a) != string(b) {
		t.Fatalf("from the copy:\n%s\nfrom the database:\n%s", a, b)
	}
	if n := ix.CachedCards("t"); n != 0 {
		t.Fatalf("the index of the copy holds %d cards of the render cache: the comparison is not with the database", n)
	}

	// The same without a copy, on an index that has not returned those cards: refused.
	bare := search.NewIndex(store, store)
	s.Index = bare
	if _, err := s.Search(copyCaller, "t", search.Query{Q: "nothing"}); err != nil { // loads it
		t.Fatal(err)
	}
	if _, err := s.Search(staleCaller(), "t", q); !errors.Is(err, fault.Unavailable) {
		t.Fatalf("without a copy: %v, want unavailable", err)
	}
}

// failing fails the first n reads of documents, then reads the store.
type failing struct {
	*storage.CardStore
	n atomic.Int32
}

func (f *failing) Documents(ctx context.Context, tenant tenants.ID, after string, limit int) ([]cards.Stored, error) {
	if f.n.Add(-1) >= 0 {
		return nil, errors.New("the database does not answer")
	}
	return f.CardStore.Documents(ctx, tenant, after, limit)
}

// TestOutageCopyFillRetries: a fill whose read fails tries again (after 1 s, then 2 s) and
// ends with every card kept.
func TestOutageCopyFillRetries(t *testing.T) {
	store, _, ix := copyFixture(t, 50, 64<<20)
	f := &failing{CardStore: store}
	f.n.Store(2)
	ix.Copy.Store = f
	if err := ix.Load("t"); err != nil {
		t.Fatal(err)
	}
	ix.WaitFills()
	if n, _ := ix.CopySize("t"); n != 50 || f.n.Load() >= 0 {
		t.Fatalf("after two failed reads the copy holds %d cards, want 50 (reads failed still to come: %d)", n, f.n.Load()+1)
	}
}

// TestOutageCopyBounded: the copy stops at its bound, and the cards it could not keep are not
// answered from memory.
func TestOutageCopyBounded(t *testing.T) {
	ctx := context.Background()
	store, _, ix := copyFixture(t, 100, 0)
	ids, err := store.IDs(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	one, err := store.Get(ctx, "t", ids[0])
	if err != nil {
		t.Fatal(err)
	}
	doc, _ := cards.MarshalDocument(one)
	limit := 20 * (len(doc) + search.KeptOverhead + 2*len(one.ID))
	ix.Copy.Bytes = limit
	filled(t, ix)
	n, b := ix.CopySize("t")
	if n < 10 || n >= 100 || b > limit {
		t.Fatalf("the copy holds %d cards in %d bytes, bound %d", n, b, limit)
	}
	answered := 0
	for _, id := range ids {
		if _, ok := ix.Remembered("t", id); ok {
			answered++
		}
	}
	if answered != n {
		t.Fatalf("%d cards answered from memory, the copy holds %d", answered, n)
	}
	// With no copy, nothing is kept.
	_, _, ix = copyFixture(t, 10, 0)
	ix.Copy = nil
	if err := ix.LoadCopy("t"); err != nil {
		t.Fatal(err)
	}
	if n, _ := ix.CopySize("t"); n != 0 {
		t.Fatalf("without a copy %d cards are kept", n)
	}
}

// BenchmarkOutageCopy measures what the outage copy costs over 10k generated cards in SQLite:
// the memory the loaded index holds with it and without (heap in use after a GC, the store's
// own memory subtracted), the time its fill takes, and the time a card write (PATCH, index
// loaded) takes with it and without, the two setups taking turns in each run. The fill runs
// here after the build, not beside it as in a server.
func BenchmarkOutageCopy(b *testing.B) {
	store, gate := benchStore(b)
	ctx := benchCaller
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	load := func(copied bool) *search.Index {
		ix := search.NewIndex(store, store)
		if copied {
			ix.Copy = &search.OutageCopy{Store: store, Bytes: 1 << 30}
		}
		if err := ix.LoadCopy("bench"); err != nil {
			b.Fatal(err)
		}
		ix.WaitFills()
		return ix
	}
	b.Run("memory", func(b *testing.B) {
		var without, with float64
		var build, fill time.Duration
		for range b.N {
			before := heap()
			t0 := time.Now()
			ix := load(false)
			build += time.Since(t0)
			without += float64(heap()) - float64(before)
			runtime.KeepAlive(ix)
			ix = nil
			before = heap()
			t0 = time.Now()
			ix = load(true)
			fill += time.Since(t0)
			with += float64(heap()) - float64(before)
			runtime.KeepAlive(ix)
		}
		b.ReportMetric(without/float64(b.N)/(1<<20), "index-MiB")
		b.ReportMetric(with/float64(b.N)/(1<<20), "with-copy-MiB")
		b.ReportMetric(with/without, "with/without")
		b.ReportMetric(float64(build.Milliseconds())/float64(b.N), "build-ms")
		b.ReportMetric(float64(fill.Milliseconds())/float64(b.N), "build+fill-ms")
	})
	b.Run("writes", func(b *testing.B) {
		ids, err := store.IDs(ctx, "bench")
		if err != nil {
			b.Fatal(err)
		}
		spent := map[bool]time.Duration{}
		svcs := map[bool]*cards.Service{}
		for _, copied := range []bool{false, true} {
			ix := load(copied)
			svcs[copied] = &cards.Service{Store: store, Gate: gate, Authz: authztest.AllowAll{}, Index: ix}
		}
		b.ResetTimer()
		for i := range b.N {
			copied := i%2 == 1
			patch := fmt.Appendf(nil, `{"description": "edited %d"}`, i)
			t0 := time.Now()
			if _, err := svcs[copied].Patch(ctx, "bench", ids[i%len(ids)], patch, cards.Precondition{}); err != nil {
				b.Fatal(err)
			}
			spent[copied] += time.Since(t0)
		}
		b.ReportMetric(float64(spent[true])/float64(spent[false]), "with/without")
	})
}

// TestIndexCloseWaitsForFills: Close returns only once the outage-copy fill it ends has stopped
// reading, so that nothing reads the database after the server closes it.
func TestIndexCloseWaitsForFills(t *testing.T) {
	store, _, ix := copyFixture(t, 5, 64<<20)
	f := &slowReads{failing: failing{CardStore: store}}
	f.n.Store(1 << 30) // every read fails: the fill waits and tries again until Close
	ix.Copy.Store = f
	if err := ix.Load("t"); err != nil {
		t.Fatal(err)
	}
	for f.active.Load() == 0 {
		runtime.Gosched()
	}
	ix.Close() // while a read is under way
	if n := f.active.Load(); n != 0 {
		t.Fatalf("Close returned with %d reads of the fill under way", n)
	}
	after := f.reads.Load()
	time.Sleep(1500 * time.Millisecond) // past the fill's first retry
	if n := f.reads.Load(); n != after {
		t.Fatalf("the fill read %d more times after Close", n-after)
	}
}

// slowReads is failing, each read taking 100 ms whatever its context says (as a query the
// database is running does), counting its reads and those under way.
type slowReads struct {
	failing
	reads, active atomic.Int64
}

func (r *slowReads) Documents(ctx context.Context, tenant tenants.ID, after string, limit int) ([]cards.Stored, error) {
	r.active.Add(1)
	defer r.active.Add(-1)
	r.reads.Add(1)
	time.Sleep(100 * time.Millisecond)
	return r.failing.Documents(ctx, tenant, after, limit)
}

// readCounter is a card store that counts the cards GetMany reads.
type readCounter struct {
	*storage.CardStore
	read atomic.Int64
}

func (r *readCounter) GetMany(ctx context.Context, tenant tenants.ID, agentIDs []string) ([]cards.Card, error) {
	r.read.Add(int64(len(agentIDs)))
	return r.CardStore.GetMany(ctx, tenant, agentIDs)
}

// TestSearchAnswersFromTheCopy: with the database up, a search page's cards answered for the
// first time come from the outage copy, not the database, and read the same, byte for byte, as
// the database's; a card the copy holds in another version than the index found, or of an agent
// distrusted, is read from the database.
func TestSearchAnswersFromTheCopy(t *testing.T) {
	store, svc, ix := copyFixture(t, 300, 64<<20)
	filled(t, ix)
	counted := &readCounter{CardStore: store}
	fromCopy := &search.Service{Store: counted, Gate: svc.Gate.(*tenants.Service), Authz: authztest.AllowAll{}, Index: ix}
	fromDB := &search.Service{Store: store, Gate: fromCopy.Gate, Authz: authztest.AllowAll{}, Index: search.NewIndex(store, store)}
	words := cardgen.Words()
	answers := 0
	for i := range 30 {
		q := search.Query{Q: words[i] + " " + words[len(words)-1-i], Page: paging.Page{Limit: new(20)}}
		ix.ForgetAnswers("t")
		got, err := fromCopy.Search(copyCaller, "t", q)
		if err != nil {
			t.Fatal(err)
		}
		fromDB.Index.ForgetAnswers("t")
		want, err := fromDB.Search(copyCaller, "t", q)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Items) != len(want.Items) || got.Total != want.Total {
			t.Fatalf("q %q: %d of %d from the copy, %d of %d from the database", q.Q, len(got.Items), got.Total, len(want.Items), want.Total)
		}
		for j := range got.Items {
			g, _ := got.Items[j].AppendCardJSON(nil)
			w, _ := want.Items[j].AppendCardJSON(nil)
			if string(g) != string(w) || !reflect.DeepEqual(got.Items[j].Card, want.Items[j].Card) ||
				!reflect.DeepEqual(got.Items[j].MatchedCapabilities, want.Items[j].MatchedCapabilities) {
				t.Fatalf("q %q, hit %d: from the copy\n%s\nfrom the database\n%s", q.Q, j, g, w)
			}
		}
		answers += len(got.Items)
	}
	if answers < 100 {
		t.Fatalf("only %d cards answered: the queries test too little", answers)
	}
	if n := counted.read.Load(); n != 0 {
		t.Fatalf("the database was read for %d cards, want none", n)
	}

	// An agent distrusted, and a card the copy holds one revision older than the index's.
	page, err := fromCopy.Search(copyCaller, "t", search.Query{Q: words[0], Page: paging.Page{Limit: new(2)}})
	if err != nil || len(page.Items) != 2 {
		t.Fatal(len(page.Items), err)
	}
	distrusted, older := page.Items[0].Card.AgentID, page.Items[1].Card.AgentID
	ix.Distrust("t", distrusted)
	ix.CopyOlder("t", older)
	ix.ForgetAnswers("t")
	if _, err := fromCopy.Search(copyCaller, "t", search.Query{Q: words[0], Page: paging.Page{Limit: new(2)}}); err != nil {
		t.Fatal(err)
	}
	if n := counted.read.Load(); n != 2 {
		t.Fatalf("the database was read for %d cards, want the 2 the copy could not answer", n)
	}
}
