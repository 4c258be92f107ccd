package cards

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/agentcards/agentcards/tenants"
)

// Change is one entry of the change feed that stores append in the transaction of every card
// write. OpPurge (with no agent) says the whole tenant is gone.
type Change struct {
	Seq     int64
	AgentID string
	Op      string
}

// OpPurge is the change-feed operation recorded when a tenant is deleted.
const OpPurge = "purge"

// Feed reads the change feed.
type Feed interface {
	// Changes returns the tenant's entries with seq > after in seq order, at most limit.
	Changes(ctx context.Context, tenant tenants.ID, after int64, limit int) ([]Change, error)
	// LastSeq returns the highest seq of the tenant's entries, 0 when there is none.
	LastSeq(ctx context.Context, tenant tenants.ID) (int64, error)
}

// feedLookback is how far behind the newest seen sequence number each sync reads again. On
// Postgres and MySQL a sequence number is taken when a row is inserted, not when its transaction
// commits, so an entry can appear after entries with higher numbers; it cannot lag by a
// thousand later writes, and re-reading is cheap because seen entries are remembered.
const feedLookback = 1000

// Index keeps a search index per tenant in memory, built from the store on the tenant's first
// search and kept current from the change feed: synchronously after every write on this replica,
// and by Follow for writes on other replicas.
type Index struct {
	store Store
	feed  Feed

	mu      sync.Mutex
	tenants map[tenants.ID]*indexEntry
}

type indexEntry struct {
	built chan struct{}
	err   error
	x     *tenantIndex
	cache renderCache

	syncMu  sync.Mutex
	lastSeq int64
	seen    map[int64]bool // entries applied within the lookback window
}

// NewIndex returns an empty index over store and feed.
func NewIndex(store Store, feed Feed) *Index {
	return &Index{store: store, feed: feed, tenants: map[tenants.ID]*indexEntry{}}
}

// entry returns the tenant's index, building it on first use; concurrent first searches wait for
// one build.
func (ix *Index) entry(ctx context.Context, tenant tenants.ID) (*indexEntry, error) {
	ix.mu.Lock()
	e, ok := ix.tenants[tenant]
	if !ok {
		e = &indexEntry{built: make(chan struct{})}
		ix.tenants[tenant] = e
	}
	ix.mu.Unlock()
	if ok {
		select {
		case <-e.built:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if e.err != nil {
			return nil, e.err
		}
		return e, nil
	}
	e.err = ix.build(ctx, tenant, e)
	close(e.built)
	if e.err != nil {
		ix.mu.Lock()
		if ix.tenants[tenant] == e {
			delete(ix.tenants, tenant)
		}
		ix.mu.Unlock()
		return nil, e.err
	}
	return e, nil
}

// buildBatch is how many cards one query of the build reads.
const buildBatch = 500

func (ix *Index) build(ctx context.Context, tenant tenants.ID, e *indexEntry) error {
	// Note the feed position first: whatever changes after it is replayed below, so a write
	// racing with the build is never lost.
	last, err := ix.feed.LastSeq(ctx, tenant)
	if err != nil {
		return err
	}
	x := newTenantIndex()
	ids, err := ix.store.IDs(ctx, tenant)
	if err != nil {
		return err
	}
	for start := 0; start < len(ids); start += buildBatch {
		batch, err := ix.store.GetMany(ctx, tenant, ids[start:min(start+buildBatch, len(ids))])
		if err != nil {
			return err
		}
		x.load(batch)
	}
	e.x, e.lastSeq, e.seen = x, max(0, last-feedLookback), map[int64]bool{}
	return ix.syncEntry(ctx, tenant, e)
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
	delete(ix.tenants, tenant)
	ix.mu.Unlock()
}

// Sync applies the tenant's new feed entries, if its index is loaded. Writes call it before
// they return, so a client reads its own writes; Follow calls it for other replicas' writes.
func (ix *Index) Sync(ctx context.Context, tenant tenants.ID) error {
	ix.mu.Lock()
	e, ok := ix.tenants[tenant]
	ix.mu.Unlock()
	if !ok {
		return nil
	}
	select {
	case <-e.built:
	case <-ctx.Done():
		return ctx.Err()
	}
	if e.err != nil {
		return nil
	}
	return ix.syncEntry(ctx, tenant, e)
}

func (ix *Index) syncEntry(ctx context.Context, tenant tenants.ID, e *indexEntry) error {
	e.syncMu.Lock()
	defer e.syncMu.Unlock()
	const page = 1000
	after := max(0, e.lastSeq-feedLookback)
	var fresh []Change
	for {
		changes, err := ix.feed.Changes(ctx, tenant, after, page)
		if err != nil {
			return err
		}
		for _, c := range changes {
			if !e.seen[c.Seq] {
				fresh = append(fresh, c)
			}
			after = c.Seq
		}
		if len(changes) < page {
			break
		}
	}
	if len(fresh) == 0 {
		return nil
	}
	var agents []string
	for _, c := range fresh {
		if c.Op == OpPurge {
			ix.Drop(tenant)
			return nil
		}
		agents = append(agents, c.AgentID)
	}
	agents = sortedSet(agents)
	// Apply the current state of each changed card, not the entry's: replaying is idempotent
	// and the order of entries stops mattering.
	current := make(map[string]Card, len(agents))
	for start := 0; start < len(agents); start += buildBatch {
		batch, err := ix.store.GetMany(ctx, tenant, agents[start:min(start+buildBatch, len(agents))])
		if err != nil {
			return fmt.Errorf("sync index of %q: %w", tenant, err)
		}
		for _, c := range batch {
			current[c.AgentID] = c
		}
	}
	e.x.mu.Lock()
	for _, id := range agents {
		if c, ok := current[id]; ok {
			e.x.upsert(c)
		} else {
			e.x.remove(id)
		}
	}
	e.x.mu.Unlock()
	for _, c := range fresh {
		e.seen[c.Seq] = true
		e.lastSeq = max(e.lastSeq, c.Seq)
	}
	for seq := range e.seen {
		if seq <= e.lastSeq-feedLookback {
			delete(e.seen, seq)
		}
	}
	return nil
}

// Follow keeps every loaded tenant's index current with writes made by other replicas: it syncs
// them every interval, and a tenant at once when notify names it (Postgres LISTEN/NOTIFY). It
// returns when ctx ends. onError, if set, hears about failed syncs (the next round retries).
func (ix *Index) Follow(ctx context.Context, interval time.Duration, notify <-chan tenants.ID, onError func(tenants.ID, error)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	syncOne := func(tenant tenants.ID) {
		if err := ix.Sync(ctx, tenant); err != nil && ctx.Err() == nil && onError != nil {
			onError(tenant, err)
		}
	}
	for {
		select {
		case <-ctx.Done():
			return
		case tenant := <-notify:
			syncOne(tenant)
		case <-t.C:
			loaded := ix.Loaded()
			slices.Sort(loaded)
			for _, tenant := range loaded {
				syncOne(tenant)
			}
		}
	}
}

// search runs a compiled query on the tenant's index. For each card of the page it also returns
// the cached rendering of the indexed version, when there is one (nil otherwise).
func (ix *Index) search(ctx context.Context, tenant tenants.ID, p *plan, readable func(string) bool) ([]candidate, []*rendered, int, *position, error) {
	e, err := ix.entry(ctx, tenant)
	if err != nil {
		return nil, nil, 0, nil, err
	}
	e.x.mu.RLock()
	defer e.x.mu.RUnlock()
	page, total, next := e.x.search(p, readable)
	cached := make([]*rendered, len(page))
	for i, c := range page {
		d := &e.x.docs[e.x.byID[c.agentID]]
		cached[i] = e.cache.get(c.agentID, d.cardID, d.revision)
	}
	return page, cached, total, next, nil
}

// remember caches the rendering of c if c is the version the index holds, so later answers
// need neither the database nor JSON encoding.
func (ix *Index) remember(tenant tenants.ID, c Card, r *rendered) {
	ix.mu.Lock()
	e, ok := ix.tenants[tenant]
	ix.mu.Unlock()
	if !ok || e.x == nil {
		return
	}
	e.x.mu.RLock()
	defer e.x.mu.RUnlock()
	n, ok := e.x.byID[c.AgentID]
	if ok && e.x.docs[n].cardID == c.ID && e.x.docs[n].revision == c.Revision {
		e.cache.put(c.AgentID, r)
	}
}
