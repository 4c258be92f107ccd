package search

import (
	"cmp"
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/liveness"
	"github.com/agentcards/agentcards/cards/search/index"
	"github.com/agentcards/agentcards/tenants"
)

var _ cards.Indexer = (*Index)(nil)

// Index keeps a search index per tenant in memory, built from the store on the tenant's first
// search and kept current from the change feed: synchronously after every write on this replica,
// and by Follow for writes on other replicas.
type Index struct {
	store cards.Store
	feed  Feed
	// Window is how far back each sync reads the feed again (see defaultFeedWindow); set it to
	// at least the longest a write's transaction can stay open (server.requestTimeout).
	Window time.Duration
	// WriteBound is about the longest a card write takes, from its start to its commit
	// (server.requestTimeout and a margin); 0 is defaultFeedWindow. Past it, what the index
	// remembers of a deleted card for writes under way (indexEntry.applied) is forgotten; a
	// write or read older than that re-reads the card (see forgetRemovals).
	WriteBound time.Duration
	clock      func() time.Time // time.Now when nil (tests set it)
	// Listening, if set, reports whether notices of every committed write reach Follow now
	// (Postgres LISTEN in effect); Follow then reads the whole window only now and then.
	Listening func() bool

	mu      sync.Mutex
	tenants map[tenants.ID]*indexEntry
	// closed ends the builds in progress (Close): a build serves every search waiting for it,
	// so it does not end with its first searcher's request, but it ends with the server.
	closed context.Context
	shut   context.CancelFunc
	// Snapshots, when set, writes large indexes out and reads them back at their build.
	Snapshots *Snapshots
	// Versions, when set, lists the versions of a tenant's cards in agent id order (storage's
	// CardStore), for Verify.
	Versions interface {
		Versions(ctx context.Context, tenant tenants.ID) ([]cards.Version, error)
	}
	// Copy, when set, keeps the cards of each loaded index for reads during an outage;
	// filling counts its fills under way, and writing the snapshots written after a build.
	Copy    *OutageCopy
	filling sync.WaitGroup
	writing sync.WaitGroup
	saving  sync.Mutex
	// building counts the builds under way (see entry) and those buildOnWrite starts.
	building sync.WaitGroup
	// BuildOnWrite is the most cards a tenant written before its first search may have for the
	// write to start its index's build (see buildOnWrite); 0: never. considered holds the
	// tenants a write has considered since the process began.
	BuildOnWrite int
	considered   map[tenants.ID]bool

	// MemoryBudget, when positive, bounds the bytes of the loaded indexes (see budget.go):
	// past it the least recently searched are evicted. trimming runs one trim at a time, and
	// trimDue asks for another; memoryInUse is what the last trim counted. evicted holds the
	// tenants evicted and not loaded since (under mu): their next build is a reload.
	MemoryBudget       int64
	trimming           sync.Mutex
	trimDue            atomic.Bool
	memoryInUse        atomic.Int64
	evictions, reloads atomic.Uint64
	evicted            map[tenants.ID]bool

	// synced is when (Unix ns) a round of Follow that began then last brought every loaded
	// index up to date.
	synced atomic.Int64

	// searching holds a token for each search running inside an index: GOMAXPROCS of them at
	// most (see search). inside and mostInside count them, and yielded the turns given back to
	// wait for a write, for tests.
	searching          chan struct{}
	inside, mostInside atomic.Int32
	yielded            atomic.Int64
}

// LastSynced is when the last round of Follow that brought every loaded index up to date began
// (zero before the first).
func (ix *Index) LastSynced() time.Time {
	if n := ix.synced.Load(); n != 0 {
		return time.Unix(0, n)
	}
	return time.Time{}
}

// TenantSize is one loaded index: its cards and, about, the bytes it holds.
type TenantSize struct {
	Tenant tenants.ID
	Cards  int
	Bytes  int64
	// CachedCards and CachedBytes are the encoded cards kept for answers (renderCache), and
	// the memory they hold, about (their JSON, the decoded cards and their tokens).
	CachedCards int
	CachedBytes int64
	// CopyCards and CopyBytes are the cards of the outage copy (OutageCopy) and the bytes
	// counted for them.
	CopyCards int
	CopyBytes int64
}

// Sizes reports the loaded indexes (built ones), for metrics.
func (ix *Index) Sizes() []TenantSize {
	entries := ix.builtEntries()
	out := make([]TenantSize, 0, len(entries))
	for t, e := range entries {
		e.x.RLock()
		size := TenantSize{Tenant: t, Cards: e.x.Live(), Bytes: e.x.ApproxBytes()}
		e.x.RUnlock()
		n, b := e.cache.size()
		size.CachedCards, size.CachedBytes = n, int64(b)
		n, b = e.cache.copySize()
		size.CopyCards, size.CopyBytes = n, int64(b)
		out = append(out, size)
	}
	return out
}

// builtEntries returns the loaded indexes whose build has ended well.
func (ix *Index) builtEntries() map[tenants.ID]*indexEntry {
	ix.mu.Lock()
	entries := make(map[tenants.ID]*indexEntry, len(ix.tenants))
	for t, e := range ix.tenants {
		entries[t] = e
	}
	ix.mu.Unlock()
	for t, e := range entries {
		select {
		case <-e.built:
			if e.err == nil && e.x != nil {
				continue
			}
		default:
		}
		delete(entries, t)
	}
	return entries
}

func (e *indexEntry) now() time.Time {
	if e.clock != nil {
		return e.clock()
	}
	return time.Now()
}

type indexEntry struct {
	built  chan struct{}
	err    error
	x      *index.Tenant
	cache  renderCache
	online onlineCache

	syncMu sync.Mutex
	// wrote holds the writes of this replica waiting to be applied (see Wrote).
	wrote wroteQueue
	// epoch counts the installs of cards in the index; applied holds, by agent, the epoch of
	// its latest install (guarded by syncMu). See Written. removals lists, oldest first, the
	// installs that removed a card: once older than forgetAfter, their agents' entries go, so
	// that agents deleted for good do not accumulate in applied; forgotEpoch and forgotAt are
	// the latest of those forgotten (see forgetRemovals).
	epoch   atomic.Uint64
	applied map[string]uint64
	// reads counts the reads of cards that refresh began (see renderCache.distrust).
	reads       atomic.Uint64
	removals    []removal
	forgetAfter time.Duration
	forgotEpoch uint64
	forgotAt    time.Time
	// clock is time.Now but in tests.
	clock    func() time.Time
	snapshot int64     // the feed position the build's snapshot of the cards is after
	builtAt  time.Time // when the build ended (set before built is closed)
	// savedGen is x.gen when the index was last written out or read back, or found too small
	// to be written (see saveSnapshot); onDisk says its snapshot holds it as of savedGen.
	savedGen atomic.Uint64
	onDisk   atomic.Bool
	// saveQueued: the write of the index after its build is yet to run (see saveQueued).
	// dropped: the tenant's index was dropped and its snapshot removed; none is written again.
	saveQueued, dropped atomic.Bool
	lastSeq             int64 // the highest sequence number applied
	// used is when (Unix ns) a search last asked for the index; reload says a build loads it
	// again after its eviction. sized is when its index was last measured for the memory
	// budget, at sizedGen, as sizedBytes (guarded by Index.trimming).
	used   atomic.Int64
	reload bool
	// restored says the build read the index back from its snapshot (set before built is
	// closed).
	restored   bool
	sized      time.Time
	sizedGen   uint64
	sizedBytes int64
	marks      []mark         // lastSeq over the last feedWindow, oldest first
	seen       map[int64]bool // entries applied at or above the oldest mark
}

// NewIndex returns an empty index over store and feed.
func NewIndex(store cards.Store, feed Feed) *Index {
	closed, shut := context.WithCancel(context.Background())
	return &Index{store: store, feed: feed, tenants: map[tenants.ID]*indexEntry{}, Window: defaultFeedWindow, closed: closed, shut: shut,
		searching: make(chan struct{}, runtime.GOMAXPROCS(0))}
}

// Close ends the builds and outage-copy fills in progress and refuses new ones (the server is
// stopping): a warm-up of a large tenant does not hold the shutdown until it ends. It returns
// once the builds, fills and trims have stopped and the snapshots being written are written, so
// that nothing reads the database or writes a file after it.
func (ix *Index) Close() {
	// Under the lock goUnlessClosed takes: whatever it started is counted before the waits.
	ix.mu.Lock()
	ix.shut()
	ix.mu.Unlock()
	ix.building.Wait()
	ix.filling.Wait()
	ix.writing.Wait()
	// A trim under way (Follow's, a build's) may be writing an evicted index's snapshot; it
	// stops at its next eviction, and a trim begun from now on evicts nothing.
	ix.trimming.Lock()
	//lint:ignore SA2001 the wait is the point
	ix.trimming.Unlock()
}

// goUnlessClosed runs f in the background, counted in wg, unless the index is closed (then a
// queued snapshot is left to the SaveSnapshots of the stop).
func (ix *Index) goUnlessClosed(wg *sync.WaitGroup, f func()) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.closed.Err() == nil {
		wg.Go(f)
	}
}

// entry returns the tenant's index, building it on first use; concurrent first searches wait for
// one build (see await).
func (ix *Index) entry(ctx context.Context, tenant tenants.ID) (*indexEntry, error) {
	return ix.entryUsed(ctx, tenant, time.Now().UnixNano())
}

// entryUsed is entry for a use at the time given (Unix ns), which orders the memory budget's
// evictions (the warm start gives the times its tenants were last searched, in order).
func (ix *Index) entryUsed(ctx context.Context, tenant tenants.ID, at int64) (*indexEntry, error) {
	start := time.Now()
	ix.mu.Lock()
	e, ok := ix.tenants[tenant]
	if !ok {
		e = &indexEntry{built: make(chan struct{}), forgetAfter: cmp.Or(ix.WriteBound, defaultFeedWindow), clock: ix.clock}
		e.use(at) // before the build's trim counts it
		if ix.Copy != nil {
			e.cache.copyLimit = ix.Copy.Bytes
		}
		if ix.closed.Err() != nil {
			e.err = errClosed
			close(e.built)
		} else {
			ix.tenants[tenant] = e
			e.reload = ix.evicted[tenant]
			delete(ix.evicted, tenant)
			// The build serves every search that waits for it, so it runs on its own, not in
			// the first searcher's request; it has a deadline of its own.
			buildCtx := context.WithoutCancel(ctx)
			ix.building.Go(func() { ix.runBuild(buildCtx, tenant, e) })
		}
	}
	ix.mu.Unlock()
	e.use(at)
	// A search that started the load waited for it, however soon it ended.
	waited := !ok
	select {
	case <-e.built:
	default:
		waited = true
	}
	got, err := ix.await(ctx, e)
	if waited {
		recordLoad(ctx, e, time.Since(start))
	}
	return got, err
}

// await waits for e's build within ctx. A search that cannot have the index in time is refused
// just before its deadline (answerMargin) as unavailable, with Retry-After (errBuilding), not
// left to time out: the build goes on, and the search is worth asking again.
func (ix *Index) await(ctx context.Context, e *indexEntry) (*indexEntry, error) {
	select {
	case <-e.built:
	default:
		wait := ctx
		if deadline, ok := ctx.Deadline(); ok {
			var cancel context.CancelFunc
			wait, cancel = context.WithDeadline(ctx, deadline.Add(-answerMargin))
			defer cancel()
		}
		select {
		case <-e.built:
		case <-wait.Done():
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, errBuilding
		}
	}
	if e.err != nil {
		return nil, e.err
	}
	return e, nil
}

// answerMargin is how long before its deadline a search waiting for a build gives up, so that
// it answers errBuilding before the request times out.
const answerMargin = 500 * time.Millisecond

// errBuilding answers a search that came while its tenant's index was being built and could not
// wait for it.
var errBuilding = fault.New(fault.Unavailable, "the search index of this tenant is being built; try again shortly")

// runBuild builds e, the tenant's new index, and makes it known: built, or forgotten if the
// build failed, so that the next search tries again.
func (ix *Index) runBuild(ctx context.Context, tenant tenants.ID, e *indexEntry) {
	buildCtx, cancel := context.WithTimeout(ctx, buildTimeout)
	stop := context.AfterFunc(ix.closed, cancel)
	e.err = ix.build(buildCtx, tenant, e)
	if e.err != nil && ix.closed.Err() != nil {
		e.err = errClosed // canceled by Close, not by a caller
	}
	stop()
	cancel()
	e.builtAt = time.Now()
	// Queued before the build is seen as done, so that a SaveSnapshots that sees it built
	// takes the queued write over (see saveQueued).
	queued := e.err == nil && ix.Snapshots != nil
	e.saveQueued.Store(queued)
	// The fill and the snapshot write are started before the build is seen as done, so that
	// whoever waited for it can wait for them too.
	if e.err == nil && ix.Copy != nil && ix.Copy.Bytes > 0 {
		ix.goUnlessClosed(&ix.filling, func() { ix.fillCopy(tenant, e) })
	}
	if queued {
		// Written out at once, off the searchers' path, so a restart (even after a crash)
		// finds it; saveSnapshot skips an index read back unchanged or too small.
		ix.goUnlessClosed(&ix.writing, func() {
			if err := ix.saveQueued(tenant, e); err != nil {
				ix.Snapshots.warn("search index snapshot not written", "tenant", tenant, "err", err)
			}
		})
	}
	close(e.built)
	if e.err != nil {
		ix.mu.Lock()
		if ix.tenants[tenant] == e {
			delete(ix.tenants, tenant)
		}
		if e.reload {
			ix.evicted[tenant] = true // not loaded after all
		}
		ix.mu.Unlock()
		return
	}
	if e.reload {
		ix.reloads.Add(1)
	}
	ix.trim()
}

// buildOnWrite starts, once per tenant, the build of the index of a tenant written before its
// first search, if it has at most BuildOnWrite cards (counted without reading more): a tenant
// filled from its first card on is then indexed as it grows, each write applied as it commits
// (Wrote, Written), and its first search finds the index ready however large the tenant has
// grown by then. A larger tenant is left to its first search or the warm start, so that a write
// never waits for a long build it started.
func (ix *Index) buildOnWrite(tenant tenants.ID) {
	if ix.BuildOnWrite <= 0 {
		return
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if _, ok := ix.tenants[tenant]; ok || ix.considered[tenant] || ix.closed.Err() != nil {
		return
	}
	if ix.considered == nil {
		ix.considered = map[tenants.ID]bool{}
	}
	ix.considered[tenant] = true
	ix.building.Go(func() {
		ctx, cancel := context.WithTimeout(ix.closed, countTimeout)
		n, err := ix.store.CountUpTo(ctx, tenant, ix.BuildOnWrite+1)
		cancel()
		if err == nil && n <= ix.BuildOnWrite {
			_, _ = ix.entry(ix.closed, tenant)
		}
	})
}

// countTimeout bounds buildOnWrite's count of a tenant's cards.
const countTimeout = 10 * time.Second

// errClosed refuses a build once the index is closed: the server is stopping.
var errClosed = fault.New(fault.Unavailable, "the server is stopping; try again later")

// buildTimeout bounds building one tenant's index.
const buildTimeout = 5 * time.Minute

func (ix *Index) build(ctx context.Context, tenant tenants.ID, e *indexEntry) error {
	// Note the feed position first: whatever changes after it is replayed below, so a write
	// racing with the build is never lost. The first sync reads back to the entries written a
	// Window before the build began, for writes whose numbers were taken before the snapshot
	// but committed after it.
	if ix.closed.Err() != nil {
		return errClosed
	}
	start := time.Now()
	last, err := ix.feed.LastSeq(ctx, tenant)
	if err != nil {
		return err
	}
	floor, err := ix.feed.SeqBefore(ctx, tenant, start.Add(-ix.Window))
	if err != nil {
		return err
	}
	x, unchanged, err := ix.restore(ctx, tenant)
	if err != nil {
		return err
	}
	e.restored = x != nil
	if unchanged {
		e.savedGen.Store(x.Gen())
		e.onDisk.Store(true)
	}
	if x == nil {
		ids, err := ix.store.IDs(ctx, tenant)
		if err != nil {
			return err
		}
		x = index.NewFor(len(ids))
		if err := loadInBatches(cards.WithBatchRead(ctx), ix.store, tenant, ids, x.NewLoader().Load); err != nil {
			return err
		}
	}
	e.x, e.snapshot, e.lastSeq, e.seen = x, last, last, map[int64]bool{}
	e.marks = []mark{{at: start, seq: floor}}
	return ix.syncEntry(ctx, tenant, e, 0)
}

// Loaded reports the tenants whose index is in memory.
func (ix *Index) Loaded() []tenants.ID {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	out := make([]tenants.ID, 0, len(ix.tenants))
	for t := range ix.tenants {
		out = append(out, t)
	}
	return out
}

// Drop forgets the tenant's index (the tenant was deleted); a later search rebuilds it.
func (ix *Index) Drop(tenant tenants.ID) {
	ix.mu.Lock()
	e := ix.tenants[tenant]
	delete(ix.tenants, tenant)
	ix.mu.Unlock()
	ix.forgetSnapshot(tenant, e)
}

// dropEntry forgets e if it is still the tenant's index (not a newer one built meanwhile): the
// tenant was deleted.
func (ix *Index) dropEntry(tenant tenants.ID, e *indexEntry) {
	ix.mu.Lock()
	dropped := ix.tenants[tenant] == e
	if dropped {
		delete(ix.tenants, tenant)
	}
	ix.mu.Unlock()
	if dropped {
		ix.forgetSnapshot(tenant, e)
	}
}

// search runs a compiled query on the tenant's index. For each card of the page it also returns
// the cached rendering of the indexed version, when there is one (nil otherwise).
func (ix *Index) search(ctx context.Context, tenant tenants.ID, p *index.Plan, readable func(string) bool, tr *liveness.Tracker) ([]index.Candidate, []*rendered, int, *index.Position, error) {
	e, err := ix.entry(ctx, tenant)
	if err != nil {
		return nil, nil, 0, nil, err
	}
	// A search holds the index's read lock while it runs, and a write waiting for the lock
	// (installWrote) waits for every search already holding it. Let any number of searches in
	// and, under a load of many searchers on few cores, a write waits for each of them to get
	// a core and finish; so at most as many searches as there are cores run inside the indexes
	// at once, and the others wait for a turn outside, holding no lock.
	//
	// While a write waits for the lock, no new reader gets it. Most often the write waits for
	// searches, which end soon: a search then waits in line, keeping its turn. But a write may
	// wait behind a long reader (a snapshot being written out), and searches waiting for it with
	// their turns would hold up every tenant's searches until the snapshot is written: a search
	// that cannot take the lock while a long reader is counted (holding mu, or about to) gives
	// its turn back, waits for the write without it, and takes a turn again. This is best
	// effort: a search that found no long reader and is descheduled before its RLock may find
	// one there when it runs, and wait behind it with its turn. Turns are not given back for
	// every write waited for: the searches woken together after each write would then go ahead
	// of the writes queued behind it.
	for {
		select {
		case ix.searching <- struct{}{}:
		case <-ctx.Done():
			return nil, nil, 0, nil, ctx.Err()
		}
		if e.x.TryRLock() {
			break
		}
		if !e.x.LongRead() {
			e.x.RLock()
			break
		}
		<-ix.searching
		ix.yielded.Add(1)
		if err := e.x.WaitWrite(ctx); err != nil {
			return nil, nil, 0, nil, err
		}
	}
	for n, most := ix.inside.Add(1), ix.mostInside.Load(); n > most && !ix.mostInside.CompareAndSwap(most, n); {
		most = ix.mostInside.Load()
	}
	defer func() {
		e.x.RUnlock()
		ix.inside.Add(-1)
		<-ix.searching
	}()
	var online *index.Online
	if p.AsksOnline() {
		if online, err = e.onlineSet(ctx, tenant, tr); err != nil {
			return nil, nil, 0, nil, err
		}
	}
	page, total, next := e.x.Search(p, readable, online)
	cached := make([]*rendered, len(page))
	for i, c := range page {
		if r := e.cache.lookup(c.AgentID()); r != nil && e.x.Holds(c.AgentID(), r.card.ID, r.card.Revision) {
			cached[i] = r
		}
	}
	return page, cached, total, next, nil
}

// Remembered returns the agent's card as the tenant's loaded index holds it, when memory has
// that version: its encoded form (a search returned it, or a read fed it to the index), or its
// document in the outage copy. It is what a read can be answered with while the database does
// not answer. The card's liveness is not set.
func (ix *Index) Remembered(tenant tenants.ID, agentID string) (cards.Card, bool) {
	e, _ := ix.loaded(context.Background(), tenant, false)
	if e == nil {
		return cards.Card{}, false
	}
	e.x.RLock()
	h, ok := e.x.Held(agentID)
	if !ok {
		e.x.RUnlock()
		return cards.Card{}, false
	}
	r := e.cache.get(agentID, h.CardID, h.Revision)
	s, copied := e.cache.copyOf(agentID, h)
	e.x.RUnlock()
	switch {
	case r != nil:
		return r.card, true
	case copied:
		c, err := s.Card()
		return c, err == nil
	}
	return cards.Card{}, false
}

// Keep puts c, just read from the database, in the memory Remembered answers from, if c is the
// version the tenant's loaded index holds.
func (ix *Index) Keep(tenant tenants.ID, c cards.Card) {
	e, _ := ix.loaded(context.Background(), tenant, false)
	if e == nil || e.cache.get(c.AgentID, c.ID, c.Revision) != nil {
		return
	}
	e.x.RLock()
	h, ok := e.x.Held(c.AgentID)
	held := ok && h.CardID == c.ID && h.Revision == c.Revision
	e.x.RUnlock()
	if !held {
		return // the index holds another version: nothing to encode
	}
	c.Liveness = nil
	r, err := render(c)
	if err != nil {
		return
	}
	ix.remember(tenant, c, r)
}

// remember caches the rendering of c if c is the version the index holds, so later answers
// need neither the database nor JSON encoding.
func (ix *Index) remember(tenant tenants.ID, c cards.Card, r *rendered) {
	e, _ := ix.loaded(context.Background(), tenant, false) // still building: e.x is not ours yet
	if e == nil {
		return
	}
	e.x.RLock()
	defer e.x.RUnlock()
	if h, ok := e.x.Held(c.AgentID); ok && h.CardID == c.ID && h.Revision == c.Revision {
		e.cache.put(c.AgentID, r)
	}
}
