package search

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/agentcards/agentcards/tenants"
)

// The memory budget (Index.MemoryBudget, search.memoryBudget) bounds what the loaded indexes
// hold: each index with its cached answers and its outage copy, as Sizes counts them. After a
// build, an outage copy's fill and every round of Follow, the indexes past the budget are
// evicted, the least recently searched first: written out to their snapshot (with Snapshots,
// whatever their size, unless the snapshot holds them as they are), then dropped from memory.
// The next search of an evicted tenant loads its index again (a reload): read back from its
// snapshot, or built from its cards without one. The index searched last is never evicted, so
// one tenant larger than the budget is served, alone.

// sizeEvery bounds how often an index that changes is measured again for the budget: its size
// is a walk over the index (ApproxBytes).
const sizeEvery = 10 * time.Second

// use notes that the index was asked for at (Unix ns), unless it was asked for later already.
func (e *indexEntry) use(at int64) {
	for old := e.used.Load(); at > old && !e.used.CompareAndSwap(old, at); old = e.used.Load() {
	}
}

// memory returns the bytes the budget counts for e: its index, measured again if it changed
// and was last measured sizeEvery ago (or never), its cached answers and its outage copy. The
// caller holds ix.trimming.
func (e *indexEntry) memory() int64 {
	e.x.RLock()
	gen := e.x.Gen()
	if e.sized.IsZero() || (gen != e.sizedGen && time.Since(e.sized) >= sizeEvery) {
		e.sizedBytes, e.sizedGen, e.sized = e.x.ApproxBytes(), gen, time.Now()
	}
	e.x.RUnlock()
	_, cached := e.cache.size()
	_, copied := e.cache.copySize()
	return e.sizedBytes + int64(cached) + int64(copied)
}

// trim evicts indexes until the loaded ones fit the budget (see MemoryBudget). Calls that come
// while one trims leave it to trim again once done, so that no build ends unaccounted.
func (ix *Index) trim() {
	if ix.MemoryBudget <= 0 || ix.closed.Err() != nil {
		return
	}
	ix.trimDue.Store(true)
	for ix.trimDue.Load() && ix.trimming.TryLock() {
		ix.trimDue.Store(false)
		ix.trimLocked()
		ix.trimming.Unlock()
	}
}

// trimLocked is one trim; the caller holds ix.trimming.
func (ix *Index) trimLocked() {
	type loaded struct {
		tenant tenants.ID
		e      *indexEntry
		bytes  int64
		used   int64
	}
	entries := ix.builtEntries()
	list := make([]loaded, 0, len(entries))
	var total int64
	for t, e := range entries {
		l := loaded{tenant: t, e: e, bytes: e.memory(), used: e.used.Load()}
		total += l.bytes
		list = append(list, l)
	}
	ix.memoryInUse.Store(total)
	if total <= ix.MemoryBudget || len(list) < 2 {
		return
	}
	// Least recently used first; the last one is the index searched last, kept.
	slices.SortFunc(list, func(a, b loaded) int {
		if a.used != b.used {
			return cmp.Compare(a.used, b.used)
		}
		return cmp.Compare(b.bytes, a.bytes)
	})
	for _, l := range list[:len(list)-1] {
		if total <= ix.MemoryBudget || ix.closed.Err() != nil {
			break
		}
		if beforeEviction != nil {
			beforeEviction(l.tenant)
		}
		// Searched since the trim began (an eviction before it may have been slow): it may be
		// the index searched last now, and is kept; the next trim weighs it again.
		if l.e.used.Load() != l.used {
			continue
		}
		// Gone either way: evicted now, or dropped meanwhile.
		ix.evict(l.tenant, l.e)
		total -= l.bytes
	}
	ix.memoryInUse.Store(total)
}

// beforeEviction, when set (by tests), is called as a trim comes to each index it may evict.
var beforeEviction func(tenants.ID)

// evict drops the tenant's loaded index e to stay within the budget, after writing it out to
// its snapshot unless the snapshot holds it as it is. An index of any size is written: at its
// reload, reading back 100 cards takes about a fifth of building them (BenchmarkIndexReload).
// False if e is no longer the tenant's index (dropped meanwhile).
func (ix *Index) evict(tenant tenants.ID, e *indexEntry) bool {
	// An entry dropped meanwhile (Verify, a deleted tenant) is neither written nor evicted: its
	// snapshot could replace a newer one.
	ix.mu.Lock()
	current := ix.tenants[tenant] == e
	ix.mu.Unlock()
	if !current {
		return false
	}
	if ix.Snapshots != nil {
		ix.saving.Lock()
		e.saveQueued.Store(false) // what the write queued after its build would do, done now
		err := ix.saveLocked(tenant, e, 0, 1)
		ix.saving.Unlock()
		if err != nil {
			// Evicted all the same: the budget holds, and a build from the cards serves the
			// next search.
			ix.Snapshots.warn("search index snapshot not written before its eviction", "tenant", tenant, "err", err)
		}
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.tenants[tenant] != e {
		return false
	}
	delete(ix.tenants, tenant)
	if ix.evicted == nil {
		ix.evicted = map[tenants.ID]bool{}
	}
	ix.evicted[tenant] = true
	// A write does not load the index of a tenant evicted; its next search does.
	if ix.considered == nil {
		ix.considered = map[tenants.ID]bool{}
	}
	ix.considered[tenant] = true
	ix.evictions.Add(1)
	return true
}

// MemoryUse reports the memory budget's view of the loaded indexes: the bytes counted at the
// last trim (0 without a budget), the budget, and how many indexes were evicted and loaded
// again since the process began.
type MemoryUse struct {
	Bytes, Budget      int64
	Evictions, Reloads uint64
}

// Memory returns the memory budget's counters (see MemoryUse).
func (ix *Index) Memory() MemoryUse {
	return MemoryUse{Bytes: ix.memoryInUse.Load(), Budget: ix.MemoryBudget, Evictions: ix.evictions.Load(), Reloads: ix.reloads.Load()}
}

// trimNow trims at once, after any trim under way, and returns the evictions so far: the warm
// start stops once its loads evict.
func (ix *Index) trimNow() uint64 {
	ix.trimming.Lock()
	ix.trimLocked()
	ix.trimming.Unlock()
	ix.trim() // one asked for meanwhile
	return ix.evictions.Load()
}

// Load is how a search found its tenant's index: how long it waited for it to load (0 when it
// was loaded already), and whether that load read the index back from its snapshot or built it
// from the cards.
type Load struct {
	Took     time.Duration
	Snapshot bool
}

type loadKey struct{}

// WithLoad returns ctx in which a search records in *l how it found its tenant's index.
func WithLoad(ctx context.Context, l *Load) context.Context {
	return context.WithValue(ctx, loadKey{}, l)
}

// recordLoad records a wait of d for e's load where ctx asks for it.
func recordLoad(ctx context.Context, e *indexEntry, d time.Duration) {
	if l, ok := ctx.Value(loadKey{}).(*Load); ok {
		l.Took += d
		select {
		case <-e.built:
			l.Snapshot = e.restored
		default: // it gave up waiting
		}
	}
}
