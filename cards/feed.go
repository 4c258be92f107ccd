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
	// Revision is the card's revision after the write (for a delete, that of the card removed).
	Revision int64
}

// OpPurge is the change-feed operation recorded when a tenant is deleted; OpDelete when a card
// is.
const (
	OpPurge  = "purge"
	OpDelete = "delete"
)

// Feed reads the change feed.
type Feed interface {
	// Changes returns the tenant's entries with seq > after in seq order, at most limit.
	Changes(ctx context.Context, tenant tenants.ID, after int64, limit int) ([]Change, error)
	// LastSeq returns the highest seq of the tenant's entries, 0 when there is none.
	LastSeq(ctx context.Context, tenant tenants.ID) (int64, error)
	// SeqBefore returns the highest seq of the tenant's entries written before t, 0 when none.
	SeqBefore(ctx context.Context, tenant tenants.ID, t time.Time) (int64, error)
}

// On Postgres and MySQL a sequence number is taken when a row is inserted, not when its
// transaction commits, so an entry can become visible after entries with higher numbers (of any
// tenant: the sequence is shared). Each sync therefore reads again everything inserted within
// the last Window: it starts after the highest sequence number it had seen Window ago, which is
// below every number handed out since. A write's transaction cannot stay open longer than a
// request, so Window is the request timeout plus a margin. Entries already applied are
// remembered, so reading them again costs a query, not a re-index.
const defaultFeedWindow = 35 * time.Second

// mark records the highest sequence number seen at a time.
type mark struct {
	at  time.Time
	seq int64
}

// Index keeps a search index per tenant in memory, built from the store on the tenant's first
// search and kept current from the change feed: synchronously after every write on this replica,
// and by Follow for writes on other replicas.
type Index struct {
	store Store
	feed  Feed
	// Window is how far back each sync reads the feed again (see defaultFeedWindow); set it to
	// at least the longest a write's transaction can stay open (server.requestTimeout).
	Window time.Duration

	mu      sync.Mutex
	tenants map[tenants.ID]*indexEntry
}

type indexEntry struct {
	built chan struct{}
	err   error
	x     *tenantIndex
	cache renderCache

	syncMu   sync.Mutex
	snapshot int64          // the feed position the build's snapshot of the cards is after
	lastSeq  int64          // the highest sequence number applied
	marks    []mark         // lastSeq over the last feedWindow, oldest first
	seen     map[int64]bool // entries applied at or above the oldest mark
}

// NewIndex returns an empty index over store and feed.
func NewIndex(store Store, feed Feed) *Index {
	return &Index{store: store, feed: feed, tenants: map[tenants.ID]*indexEntry{}, Window: defaultFeedWindow}
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
	// The build serves every search that waits for it, so it does not end with the first
	// searcher's request; it has a deadline of its own.
	buildCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), buildTimeout)
	e.err = ix.build(buildCtx, tenant, e)
	cancel()
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

// buildTimeout bounds building one tenant's index.
const buildTimeout = 5 * time.Minute

// buildBatch is how many cards one query reads for an index build; scanBatch for the other
// reads of many cards (syncs, scans, and the A2A listing, which may stop after a batch).
const (
	buildBatch = 2000
	scanBatch  = 500
)

// getInBatches reads the cards of ids, scanBatch at a time, and hands each batch to fn.
func getInBatches(ctx context.Context, store Store, tenant tenants.ID, ids []string, fn func([]Card)) error {
	for start := 0; start < len(ids); start += scanBatch {
		batch, err := store.GetMany(ctx, tenant, ids[start:min(start+scanBatch, len(ids))])
		if err != nil {
			return err
		}
		fn(batch)
	}
	return nil
}

// loadInBatches is getInBatches for a build: the next batches are read (and decoded) while the
// current one is indexed, a few at a time, and handed to fn in order.
func loadInBatches(ctx context.Context, store Store, tenant tenants.ID, ids []string, fn func([]Card)) error {
	type result struct {
		cards []Card
		err   error
	}
	const ahead = 2 // reads in flight beside the indexing
	batches := (len(ids) + buildBatch - 1) / buildBatch
	results := make([]chan result, batches)
	for i := range results {
		results[i] = make(chan result, 1)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	slots := make(chan struct{}, ahead)
	go func() {
		for i := range batches {
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				return
			}
			go func() {
				batch, err := store.GetMany(ctx, tenant, ids[i*buildBatch:min((i+1)*buildBatch, len(ids))])
				results[i] <- result{batch, err}
			}()
		}
	}()
	for i := range batches {
		var r result
		select {
		case r = <-results[i]:
		case <-ctx.Done():
			return ctx.Err()
		}
		<-slots
		if r.err != nil {
			return r.err
		}
		fn(r.cards)
	}
	return nil
}

func (ix *Index) build(ctx context.Context, tenant tenants.ID, e *indexEntry) error {
	// Note the feed position first: whatever changes after it is replayed below, so a write
	// racing with the build is never lost. The first sync reads back to the entries written a
	// Window before the build began, for writes whose numbers were taken before the snapshot
	// but committed after it.
	start := time.Now()
	last, err := ix.feed.LastSeq(ctx, tenant)
	if err != nil {
		return err
	}
	floor, err := ix.feed.SeqBefore(ctx, tenant, start.Add(-ix.Window))
	if err != nil {
		return err
	}
	x := newTenantIndex()
	ids, err := ix.store.IDs(ctx, tenant)
	if err != nil {
		return err
	}
	if err := loadInBatches(ctx, ix.store, tenant, ids, x.load); err != nil {
		return err
	}
	e.x, e.snapshot, e.lastSeq, e.seen = x, last, last, map[int64]bool{}
	e.marks = []mark{{at: start, seq: floor}}
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

// dropEntry forgets e if it is still the tenant's index (not a newer one built meanwhile).
func (ix *Index) dropEntry(tenant tenants.ID, e *indexEntry) {
	ix.mu.Lock()
	if ix.tenants[tenant] == e {
		delete(ix.tenants, tenant)
	}
	ix.mu.Unlock()
}

// Sync applies the tenant's new feed entries, if its index is loaded. Writes call it before
// they return, so a client reads its own writes; Follow calls it for other replicas' writes.
func (ix *Index) Sync(ctx context.Context, tenant tenants.ID) error {
	return ix.sync(ctx, tenant, true)
}

// sync applies new feed entries to the tenant's index. An index still being built is waited
// for when wait is set (a write must be visible to its writer's next search); otherwise it is
// skipped, since the build reads the feed itself when it ends.
func (ix *Index) sync(ctx context.Context, tenant tenants.ID, wait bool) error {
	ix.mu.Lock()
	e, ok := ix.tenants[tenant]
	ix.mu.Unlock()
	if !ok {
		return nil
	}
	if wait {
		select {
		case <-e.built:
		case <-ctx.Done():
			return ctx.Err()
		}
	} else {
		select {
		case <-e.built:
		default:
			return nil
		}
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
	now := time.Now()
	// Read from the newest mark that is at least feedWindow old (or the oldest one).
	floor := 0
	for i, m := range e.marks {
		if now.Sub(m.at) >= ix.Window {
			floor = i
		}
	}
	e.marks = e.marks[floor:]
	after := e.marks[0].seq
	for seq := range e.seen {
		if seq <= after {
			delete(e.seen, seq)
		}
	}
	defer func() {
		// Stamped after the read: the later the stamp, the longer this mark stays a floor.
		if last := e.marks[len(e.marks)-1]; last.seq != e.lastSeq {
			e.marks = append(e.marks, mark{at: time.Now(), seq: e.lastSeq})
		}
	}()
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
	e.x.mu.RLock()
	for _, c := range fresh {
		if c.Op == OpPurge {
			if c.Seq <= e.snapshot {
				// The tenant was deleted and created again before this index's snapshot.
				e.seen[c.Seq] = true
				continue
			}
			e.x.mu.RUnlock()
			ix.dropEntry(tenant, e)
			return nil
		}
		// An entry for a revision the index already holds (one the build's snapshot saw, or a
		// card re-read by an earlier sync) needs no re-read. A delete always does: revisions
		// start again when an agent's card is created anew, and a new card's entries cannot be
		// numbered before the delete that made way for it committed.
		if n, ok := e.x.byID[c.AgentID]; ok && c.Op != OpDelete && c.Revision <= e.x.docs[n].revision {
			continue
		}
		agents = append(agents, c.AgentID)
	}
	e.x.mu.RUnlock()
	if len(agents) > 0 {
		if err := ix.apply(ctx, tenant, e, sortedSet(agents)); err != nil {
			return err
		}
	}
	for _, c := range fresh {
		e.seen[c.Seq] = true
		e.lastSeq = max(e.lastSeq, c.Seq)
	}
	return nil
}

// apply brings the agents' cards in the index to their current state in the store.
func (ix *Index) apply(ctx context.Context, tenant tenants.ID, e *indexEntry, agents []string) error {
	// Apply the current state of each changed card, not the entry's: replaying is idempotent
	// and the order of entries stops mattering.
	current := make(map[string]Card, len(agents))
	err := getInBatches(ctx, ix.store, tenant, agents, func(batch []Card) {
		for _, c := range batch {
			current[c.AgentID] = c
		}
	})
	if err != nil {
		return fmt.Errorf("sync index of %q: %w", tenant, err)
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
	return nil
}

// Follow keeps every loaded tenant's index current with writes made by other replicas: it syncs
// them every interval, and a tenant at once when notify names it (Postgres LISTEN/NOTIFY). It
// returns when ctx ends. onError, if set, hears about failed syncs (the next round retries).
func (ix *Index) Follow(ctx context.Context, interval time.Duration, notify <-chan tenants.ID, onError func(tenants.ID, error)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case tenant := <-notify:
			ix.syncFollowed(ctx, tenant, onError)
		case <-t.C:
			ix.SyncLoaded(ctx, onError)
		}
	}
}

// SyncLoaded syncs every loaded tenant's index once, in tenant order. Follow does it every
// interval; a change-feed listener does it each time its LISTEN is (re)established, to catch up
// on the notifications sent while none was in effect, which nobody heard.
func (ix *Index) SyncLoaded(ctx context.Context, onError func(tenants.ID, error)) {
	loaded := ix.Loaded()
	slices.Sort(loaded)
	for _, tenant := range loaded {
		ix.syncFollowed(ctx, tenant, onError)
	}
}

// syncFollowed syncs the tenant for a follower (an index still building is left to its build)
// and reports a failure to onError.
func (ix *Index) syncFollowed(ctx context.Context, tenant tenants.ID, onError func(tenants.ID, error)) {
	if err := ix.sync(ctx, tenant, false); err != nil && ctx.Err() == nil && onError != nil {
		onError(tenant, err)
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
	if !ok {
		return
	}
	select {
	case <-e.built:
	default:
		return // still building: e.x is not ours to read yet
	}
	if e.err != nil {
		return
	}
	e.x.mu.RLock()
	defer e.x.mu.RUnlock()
	n, ok := e.x.byID[c.AgentID]
	if ok && e.x.docs[n].cardID == c.ID && e.x.docs[n].revision == c.Revision {
		e.cache.put(c.AgentID, r)
	}
}
