package search

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/search/index"
	"github.com/agentcards/agentcards/tenants"
)

// On Postgres and MySQL a sequence number is taken when a row is inserted, not when its
// transaction commits, so an entry can become visible after entries with higher numbers (of any
// tenant: the sequence is shared). Each sync therefore reads again everything inserted within
// the last Window: it starts after the highest sequence number it had seen Window ago, which is
// below every number handed out since. A write's transaction cannot stay open longer than a
// request, so Window is the request timeout plus a margin. Entries already applied are
// remembered, so reading them again costs a query, not a re-index.
const defaultFeedWindow = 35 * time.Second

// Notice says that a write of the tenant committed, with its change-feed entry when it is one
// (Seq 0: several entries, or unknown; Op "": only the entry's number is known). Postgres's
// LISTEN delivers one per write, in commit order.
type Notice struct {
	Tenant tenants.ID
	Change
}

// mark records the highest sequence number seen at a time.
type mark struct {
	at  time.Time
	seq int64
}

// Sync applies the tenant's new feed entries, if its index is loaded (waiting for a build in
// progress). Follow does the same for other replicas' writes, every round.
func (ix *Index) Sync(ctx context.Context, tenant tenants.ID) error {
	return ix.sync(ctx, tenant, true)
}

// Written applies the current state of the agents' cards to the tenant's index, if it is loaded:
// a write of this replica calls it before it answers, so the writer's next search sees the
// write. It reads those cards by their keys instead of the change feed's recent window, so a
// write costs the same however many writes came before it; the feed entry of the write, read
// later, finds its revision held and costs no re-read.
//
// Every apply must install a state of the card read no earlier than the one installed before
// it (a card deleted meanwhile is not put back). Written reads outside the tenant's lock, so
// that writes do not queue behind each other's reads; under the lock it installs what it read
// for each agent that nobody installed since its read began (whatever was installed before was
// read before), and reads the others again, under the lock, as the feed syncs do.
func (ix *Index) Written(ctx context.Context, tenant tenants.ID, agentIDs ...string) error {
	// A build in progress is waited for: it read the cards before or their feed entries after.
	e, err := ix.loaded(ctx, tenant, true)
	if e == nil {
		if err == nil {
			ix.buildOnWrite(tenant)
		}
		return err
	}
	return ix.refresh(ctx, tenant, e, sortedSet(agentIDs))
}

// Wrote applies cards that writes of this replica have just committed to the tenant's index, if
// it is loaded, as Written does, but without reading them back where the index can tell that the
// card written is newer than what it holds; started is when the writes began, before they reached
// the store. A card written is newer than the one the index holds if both are revisions of the
// same card (its id) and the index's is lower: one card's revisions commit in order. It is newer
// than no card at all if the index has installed nothing for its agent since its build, and the
// build ended before the write began: what the build found, absence, was the state before the
// write. In any other case (the index holds another card of the agent, one created anew; or it
// installed the agent's absence, which may be a delete that came after the write) the card is
// read back as Written does. A card the index holds at its revision or later is left as it is.
func (ix *Index) Wrote(ctx context.Context, tenant tenants.ID, started time.Time, written ...cards.Card) error {
	e, err := ix.loaded(ctx, tenant, true)
	if e == nil {
		if err == nil {
			ix.buildOnWrite(tenant)
		}
		return err
	}
	w := &wroteReq{written: written, ready: e.ready(written), started: started, done: make(chan struct{})}
	e.wrote.mu.Lock()
	e.wrote.queue = append(e.wrote.queue, w)
	e.wrote.entered++
	lead := !e.wrote.leading
	e.wrote.leading = true
	e.wrote.mu.Unlock()
	if !lead {
		if <-w.done; !w.served {
			lead = true // handed on by the last leader, w not yet applied
		}
	}
	if lead {
		e.applyWrote(w)
	}
	if len(w.again) == 0 {
		return nil
	}
	return ix.refresh(ctx, tenant, e, sortedSet(w.again))
}

// wroteQueue holds the writes of this replica waiting to be applied to a tenant's index, and
// whether a writer is applying them. One writer, the leader, applies every write waiting, in one
// install, and wakes their writers; then it applies the writes that queued meanwhile, batch after
// batch, up to leadBatches, before it hands the lead to the first writer still waiting (or leaves
// it when none waits), so that no writer applies others' writes for long. Applying writes in
// batches spares each writer a turn at syncMu, and keeping the lead for several batches spares
// the writes queued behind a leader from waiting for a new leader to get a core as well as for
// their own wake-up; under many writers on few cores both waits are longer than the install.
//
// Each writer analyses its cards (and encodes them for the outage copy) before it queues, in its
// own time, so that a leader does only what needs the lock: the shorter the leader's turn, the
// fewer writes find one under way and wait for it, and each write that waits for it waits again
// for a core once woken.
type wroteQueue struct {
	mu      sync.Mutex
	queue   []*wroteReq
	leading bool
	// entered counts the writes queued, led the writes that led, and most is the most applied
	// together (for tests; leaders, one at a time, set led and most).
	entered, led, most int
}

// wroteReq is one call of Wrote: its cards (and each one's analysis, ready[i] of written[i]),
// when its writes began, and (once done is closed with served set) the agents whose cards are to
// be read back.
type wroteReq struct {
	written []cards.Card
	ready   []readyCard
	started time.Time
	again   []string
	served  bool
	done    chan struct{}
}

// leadBatches is the most batches a leader applies before it hands the lead on (see applyWrote).
const leadBatches = 8

// applyWrote applies, as the leader, the writes waiting (own among them: a leader's write is
// queued until it leads), batch after batch while writes wait, up to leadBatches, and then
// hands the lead on. A write's done is closed once: when it is applied, or when it is handed the
// lead (unapplied: it then applies itself, and closes no done of its own).
func (e *indexEntry) applyWrote(own *wroteReq) {
	e.wrote.mu.Lock()
	batch := e.wrote.queue
	e.wrote.queue = nil
	e.wrote.mu.Unlock()
	e.wrote.led++
	for n := 1; batch != nil; n++ {
		e.applyBatch(batch, own)
		batch = e.nextBatch(n)
	}
}

// applyBatch installs a leader's batch and wakes its writers. If the install panics, the
// batch's writers read their cards back, the lead is handed on, and the panic goes on in the
// leader's request, whichever write of the batch caused it.
func (e *indexEntry) applyBatch(batch []*wroteReq, own *wroteReq) {
	panicked := true
	defer func() {
		for _, w := range batch {
			if panicked {
				w.again = w.again[:0]
				for _, c := range w.written {
					w.again = append(w.again, c.AgentID)
				}
			}
			w.served = true
			if w != own {
				close(w.done)
			}
		}
		if panicked {
			e.nextBatch(leadBatches)
		}
	}()
	e.installWrote(batch)
	e.wrote.most = max(e.wrote.most, len(batch))
	panicked = false
}

// nextBatch is called by a leader that has applied n batches: it returns the writes queued
// meanwhile for it to apply next, or nil when none waits (the lead is left) or it has applied
// leadBatches (the lead goes to the first write waiting).
func (e *indexEntry) nextBatch(n int) []*wroteReq {
	e.wrote.mu.Lock()
	defer e.wrote.mu.Unlock()
	switch {
	case len(e.wrote.queue) == 0:
		e.wrote.leading = false
		return nil
	case n >= leadBatches:
		close(e.wrote.queue[0].done) // not served: it leads
		return nil
	}
	batch := e.wrote.queue
	e.wrote.queue = nil
	return batch
}

// installWrote installs the cards of the writes in batch that the index can tell are newer than
// what it holds (see Wrote), in the writes' order, in one install, and sets each write's again to
// the agents whose cards must be read back.
func (e *indexEntry) installWrote(batch []*wroteReq) {
	put := map[string]cards.Card{}
	ready := map[string]readyCard{} // of the card in put
	var agents []string
	e.syncMu.Lock()
	defer e.syncMu.Unlock()
	e.x.RLock()
	for _, w := range batch {
		for i, c := range w.written {
			if p, ok := put[c.AgentID]; ok {
				// Written by an earlier write of the batch: the same card's later revision
				// replaces it; another card of the agent (created anew) is read back.
				switch {
				case p.ID != c.ID:
					w.again = append(w.again, c.AgentID)
				case p.Revision < c.Revision:
					put[c.AgentID], ready[c.AgentID] = c, w.ready[i]
				}
				continue
			}
			h, held := e.x.Held(c.AgentID)
			switch {
			case held && h.CardID == c.ID:
				if h.Revision < c.Revision {
					put[c.AgentID], ready[c.AgentID] = c, w.ready[i]
					agents = append(agents, c.AgentID)
				}
			case !held && e.applied[c.AgentID] == 0 && e.builtAt.Before(w.started) && e.forgotAt.Before(w.started):
				// Nothing installed for the agent since the build, nor (as far as applied can
				// tell) since the write began: what the write made is the newest.
				put[c.AgentID], ready[c.AgentID] = c, w.ready[i]
				agents = append(agents, c.AgentID)
			default:
				w.again = append(w.again, c.AgentID)
			}
		}
	}
	e.x.RUnlock()
	if len(agents) == 0 {
		return
	}
	analyzed := make(map[string]index.Doc, len(agents))
	copied := make(map[string]kept, len(agents))
	for _, id := range agents {
		r := ready[id]
		analyzed[id] = r.doc
		if r.keep {
			copied[id] = r.kept
		}
	}
	e.installAnalyzed(agents, put, 0, analyzed, copied)
}

// readyCard is a written card as an install puts it in the index: its analysis and, when the
// index keeps an outage copy and the card encodes, its copy (keep).
type readyCard struct {
	doc  index.Doc
	kept kept
	keep bool
}

// ready analyses the cards a write made, for installWrote.
func (e *indexEntry) ready(written []cards.Card) []readyCard {
	out := make([]readyCard, len(written))
	for i, c := range written {
		out[i].doc = index.Analyze(c)
		if e.cache.copyLimit > 0 {
			out[i].kept, out[i].keep = keepCard(c)
		}
	}
	return out
}

// refresh installs the current state of the agents' cards in e; the caller does not hold
// e.syncMu. See Written for why reading outside the lock is safe.
func (ix *Index) refresh(ctx context.Context, tenant tenants.ID, e *indexEntry, agents []string) error {
	start := e.epoch.Load()
	read := e.reads.Add(1)
	current, err := ix.read(ctx, tenant, agents)
	if err != nil {
		// The index keeps what it held until a later sync, but memory answers no read of these
		// cards meanwhile (a card deleted just now must not be served from it in an outage),
		// and takes none of them from an install whose read began before now.
		e.cache.distrust(agents, e.reads.Load())
		return err
	}
	e.syncMu.Lock()
	defer e.syncMu.Unlock()
	var again []string
	for _, id := range agents {
		// Installed meanwhile, or perhaps (a removal forgotten since the read began).
		if a := e.applied[id]; a > start || (a == 0 && e.forgotEpoch > start) {
			again = append(again, id)
		}
	}
	if len(again) > 0 {
		fresh, err := ix.read(ctx, tenant, again)
		if err != nil {
			e.cache.distrust(again, e.reads.Load())
			return err
		}
		for _, id := range again {
			if c, ok := fresh[id]; ok {
				current[id] = c
			} else {
				delete(current, id)
			}
		}
	}
	e.install(agents, current, read)
	return nil
}

// sync applies new feed entries to the tenant's index. An index still being built is waited
// for when wait is set (a write must be visible to its writer's next search); otherwise it is
// skipped, since the build reads the feed itself when it ends.
func (ix *Index) sync(ctx context.Context, tenant tenants.ID, wait bool) error {
	return ix.syncFrom(ctx, tenant, wait, 0)
}

// syncFrom is sync; from, if not 0, is the sequence number of a committed entry the caller was
// told of (see Notice): entries from it on are read, and none of the window before it.
func (ix *Index) syncFrom(ctx context.Context, tenant tenants.ID, wait bool, from int64) error {
	e, err := ix.loaded(ctx, tenant, wait)
	if e == nil {
		return err
	}
	return ix.syncEntry(ctx, tenant, e, from)
}

// loaded returns the tenant's index if it is loaded and built, waiting for a build in progress
// when wait is set; nil (and no error) for a tenant not loaded, still building without wait, or
// whose build failed.
func (ix *Index) loaded(ctx context.Context, tenant tenants.ID, wait bool) (*indexEntry, error) {
	ix.mu.Lock()
	e, ok := ix.tenants[tenant]
	ix.mu.Unlock()
	if !ok {
		return nil, nil
	}
	if wait {
		select {
		case <-e.built:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	} else {
		select {
		case <-e.built:
		default:
			return nil, nil
		}
	}
	if e.err != nil {
		return nil, nil
	}
	return e, nil
}

// syncEntry reads the feed and applies what is new to e. The read runs outside e's lock, so
// that writes applying their own cards (Written) do not wait for it; what it read is then
// applied under the lock, each card in its current state in the store, so two syncs that read
// overlapping entries, or a sync and a write, may finish in either order.
//
// from, if not 0, is a committed entry's sequence number: the read starts at it, or after the
// highest entry applied if that is lower, instead of a Window back. Whatever a Window-long read
// would find besides is left to the next full sync (Follow's poll).
func (ix *Index) syncEntry(ctx context.Context, tenant tenants.ID, e *indexEntry, from int64) error {
	read, err := ix.readFeed(ctx, tenant, e, from)
	if err != nil {
		return err
	}
	return ix.applyChanges(ctx, tenant, e, read)
}

// readFeed reads the feed entries a sync of e looks at (see syncEntry).
func (ix *Index) readFeed(ctx context.Context, tenant tenants.ID, e *indexEntry, from int64) ([]Change, error) {
	e.syncMu.Lock()
	var after int64
	if from > 0 {
		after = min(from-1, e.lastSeq)
	} else {
		now := time.Now()
		// Read from the newest mark that is at least Window old (or the oldest one).
		floor := 0
		for i, m := range e.marks {
			if now.Sub(m.at) >= ix.Window {
				floor = i
			}
		}
		e.marks = e.marks[floor:]
		after = e.marks[0].seq
		for seq := range e.seen {
			if seq <= after {
				delete(e.seen, seq)
			}
		}
	}
	e.syncMu.Unlock()

	const page = 1000
	var read []Change
	for {
		changes, err := ix.feed.Changes(ctx, tenant, after, page)
		if err != nil {
			return nil, err
		}
		read = append(read, changes...)
		if len(changes) < page {
			return read, nil
		}
		after = changes[len(changes)-1].Seq
	}
}

// applyNotified applies entries of the tenant's feed heard of in notices (committed, whole),
// without reading the feed, if its index is loaded and built.
func (ix *Index) applyNotified(ctx context.Context, tenant tenants.ID, entries []Change) error {
	e, err := ix.loaded(ctx, tenant, false)
	if e == nil {
		return err
	}
	return ix.applyChanges(ctx, tenant, e, entries)
}

// applyChanges applies feed entries to e: those not applied before, each card re-read in its
// current state (see refresh) unless e holds its revision already.
func (ix *Index) applyChanges(ctx context.Context, tenant tenants.ID, e *indexEntry, read []Change) error {
	e.syncMu.Lock()
	var fresh []Change
	for _, c := range read {
		if !e.seen[c.Seq] {
			fresh = append(fresh, c)
		}
	}
	var agents []string
	e.x.RLock()
	for _, c := range fresh {
		if c.Op == OpPurge {
			if c.Seq <= e.snapshot {
				// The tenant was deleted and created again before this index's snapshot.
				continue
			}
			e.x.RUnlock()
			e.syncMu.Unlock()
			ix.dropEntry(tenant, e)
			return nil
		}
		// An entry for a revision the index already holds (one the build's snapshot saw, or a
		// card re-read by an earlier sync) needs no re-read. A delete always does: a new card's
		// entries cannot be numbered before the delete that made way for it committed (and an
		// agent id deleted before migration 12 starts its revisions again at 1).
		if h, ok := e.x.Held(c.AgentID); ok && c.Op != OpDelete && c.Revision <= h.Revision {
			continue
		}
		agents = append(agents, c.AgentID)
	}
	e.x.RUnlock()
	e.syncMu.Unlock()
	if len(fresh) == 0 {
		return nil
	}
	if len(agents) > 0 {
		if err := ix.refresh(ctx, tenant, e, sortedSet(agents)); err != nil {
			return err
		}
	}
	e.syncMu.Lock()
	defer e.syncMu.Unlock()
	for _, c := range fresh {
		e.seen[c.Seq] = true
		e.lastSeq = max(e.lastSeq, c.Seq)
	}
	// Stamped after the read: the later the stamp, the longer this mark stays a floor.
	if last := e.marks[len(e.marks)-1]; last.seq != e.lastSeq {
		e.marks = append(e.marks, mark{at: time.Now(), seq: e.lastSeq})
	}
	return nil
}

// read returns the agents' cards in the store, by agent; an agent without one is absent.
func (ix *Index) read(ctx context.Context, tenant tenants.ID, agents []string) (map[string]cards.Card, error) {
	current := make(map[string]cards.Card, len(agents))
	err := getInBatches(ctx, ix.store, tenant, agents, func(batch []cards.Card) {
		for _, c := range batch {
			current[c.AgentID] = c
		}
	})
	if err != nil {
		return nil, fmt.Errorf("sync index of %q: %w", tenant, err)
	}
	return current, nil
}

// install puts the agents' cards of current in the index (removing those absent) and notes
// when each was installed; read is the entry's read count when current was read (0: a writer's
// own cards, not read back; see renderCache.installed). The caller holds e.syncMu.
func (e *indexEntry) install(agents []string, current map[string]cards.Card, read uint64) {
	// Analysed before the index's lock is taken: searches wait only for the postings to change.
	analyzed := make(map[string]index.Doc, len(current))
	for _, id := range agents {
		if c, ok := current[id]; ok {
			analyzed[id] = index.Analyze(c)
		}
	}
	e.installAnalyzed(agents, current, read, analyzed, e.encodeKept(current))
}

// installAnalyzed is install with the cards of current analysed (analyzed) and encoded for the
// outage copy (copied: those it keeps).
func (e *indexEntry) installAnalyzed(agents []string, current map[string]cards.Card, read uint64, analyzed map[string]index.Doc, copied map[string]kept) {
	e.x.Install(agents, current, analyzed)
	e.cache.installed(agents, read)
	for id, k := range copied {
		e.cache.keep(id, k)
	}
	if e.applied == nil {
		e.applied = map[string]uint64{}
	}
	now := e.now()
	for _, id := range agents {
		epoch := e.epoch.Add(1)
		e.applied[id] = epoch
		if _, ok := current[id]; !ok {
			e.removals = append(e.removals, removal{agent: id, epoch: epoch, at: now})
		}
	}
	e.forgetRemovals(now)
}

// removal is an install that removed the agent's card, at epoch.
type removal struct {
	agent string
	epoch uint64
	at    time.Time
}

// forgetRemovals drops from applied the agents whose latest install removed their card more
// than forgetAfter ago, and notes the latest such install forgotten (forgotEpoch, forgotAt):
// Wrote and refresh ask applied whether anything was installed for an agent since a write or a
// read began, and one that began before a forgotten removal cannot tell, so it reads the card
// again. forgetAfter is only how long that stays rare. The caller holds syncMu.
func (e *indexEntry) forgetRemovals(now time.Time) {
	n := 0
	for n < len(e.removals) && now.Sub(e.removals[n].at) > e.forgetAfter {
		if r := e.removals[n]; e.applied[r.agent] == r.epoch {
			delete(e.applied, r.agent)
			e.forgotEpoch = max(e.forgotEpoch, r.epoch)
			if r.at.After(e.forgotAt) {
				e.forgotAt = r.at
			}
		}
		n++
	}
	if n > 0 {
		e.removals = slices.Delete(e.removals, 0, n)
	}
}

// Follow keeps every loaded tenant's index current with writes made by other replicas: it syncs
// them every interval, reading back a Window of the feed, and a tenant at once when notify names
// it (Postgres LISTEN/NOTIFY), reading only from the notified entry on. Notices that arrive
// together are served by one read per tenant. It returns when ctx ends. onError, if set, hears
// about failed syncs (the next round retries).
func (ix *Index) Follow(ctx context.Context, interval time.Duration, notify <-chan Notice, onError func(tenants.ID, error)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	// lastFull is when a round last read every loaded tenant's whole window; needFull asks the
	// next round for one (a notice could not be applied).
	lastFull, needFull := time.Now(), false
	failures := 0 // in the current round
	failed := func(tenant tenants.ID, err error) {
		if err != nil && ctx.Err() == nil {
			failures++
			needFull = true
			if onError != nil {
				onError(tenant, err)
			}
		}
	}
	for {
		select {
		case <-ctx.Done():
			return
		case n := <-notify:
			// Take the notices waiting as well. A tenant whose notices all carry their entry
			// has them applied as they are; otherwise one read serves them, from the lowest
			// entry (a notice without a number asks for a full sync).
			heard := map[tenants.ID][]Notice{}
			heard[n.Tenant] = append(heard[n.Tenant], n)
		drain:
			for len(heard) < 1024 {
				select {
				case n := <-notify:
					heard[n.Tenant] = append(heard[n.Tenant], n)
				default:
					break drain
				}
			}
			order := slices.Sorted(maps.Keys(heard))
			for _, tenant := range order {
				if ix.unheldNotices(tenant, heard[tenant]) {
					// A write of this replica applies its own card (Written) just after it
					// commits, and its notice often arrives here first: one moment's wait for
					// the round lets it, so that its entry is then found held instead of read
					// again. Other replicas' writes are applied that much later.
					select {
					case <-time.After(notifiedGrace):
					case <-ctx.Done():
						return
					}
					break
				}
			}
			for _, tenant := range order {
				failed(tenant, ix.followNotices(ctx, tenant, heard[tenant]))
			}
		case <-t.C:
			failures = 0
			start := time.Now()
			if ix.Listening != nil && ix.Listening() && !needFull && time.Since(lastFull) < listeningFullPeriod {
				// Notices bring every committed write; read only what is new, in case one was
				// lost, and the whole window now and then (see listeningFullPeriod).
				for _, tenant := range ix.sortedLoaded() {
					failed(tenant, ix.syncNew(ctx, tenant))
				}
			} else {
				lastFull, needFull = time.Now(), false
				for _, tenant := range ix.sortedLoaded() {
					failed(tenant, ix.sync(ctx, tenant, false))
				}
			}
			if failures == 0 {
				ix.synced.Store(start.UnixNano())
			}
			// Writes and cached answers grow the indexes between builds.
			ix.trim()
		}
	}
}

// listeningFullPeriod is how often Follow's rounds read the feed's whole window again while
// notices are heard; the others read only entries after the highest applied. A window read costs
// in proportion to the writes of the last Window (tens of thousands of entries under load, every
// round); notices already carry each committed entry, so the window is read only to catch one
// whose notice was lost (a connection that failed unnoticed, an apply that failed, an index
// still building when it came). It is below the 5 s margin of Window over the longest write
// transaction: a full read then still reaches back past any entry committed since the last one.
const listeningFullPeriod = 4 * time.Second

// syncNew applies the tenant's feed entries after the highest one applied, if its index is
// loaded and built.
func (ix *Index) syncNew(ctx context.Context, tenant tenants.ID) error {
	e, err := ix.loaded(ctx, tenant, false)
	if e == nil {
		return err
	}
	e.syncMu.Lock()
	from := e.lastSeq + 1
	e.syncMu.Unlock()
	return ix.syncEntry(ctx, tenant, e, from)
}

func (ix *Index) sortedLoaded() []tenants.ID {
	loaded := ix.Loaded()
	slices.Sort(loaded)
	return loaded
}

// followNotices brings the tenant's index up to the writes notices told of (see Follow).
func (ix *Index) followNotices(ctx context.Context, tenant tenants.ID, notices []Notice) error {
	entries := make([]Change, 0, len(notices))
	from := notices[0].Seq
	for _, n := range notices {
		if n.Seq == 0 {
			return ix.sync(ctx, tenant, false)
		}
		from = min(from, n.Seq)
		if n.Op != "" && entries != nil {
			entries = append(entries, n.Change)
		} else {
			entries = nil
		}
	}
	if entries != nil {
		return ix.applyNotified(ctx, tenant, entries)
	}
	return ix.syncFrom(ctx, tenant, false, from)
}

// notifiedGrace is how long a round of Follow waits before it reads again the cards of notified
// entries the index does not hold yet.
const notifiedGrace = 5 * time.Millisecond

// unheldNotices reports whether notices carry an entry that a loaded index of the tenant lacks
// the revision of (or must read the card of again, for a delete).
func (ix *Index) unheldNotices(tenant tenants.ID, notices []Notice) bool {
	e, _ := ix.loaded(context.Background(), tenant, false)
	if e == nil {
		return false
	}
	e.x.RLock()
	defer e.x.RUnlock()
	for _, c := range notices {
		if c.Op == "" {
			continue // not an entry: read from the feed
		}
		if h, ok := e.x.Held(c.AgentID); !ok || c.Op == OpDelete || c.Revision > h.Revision {
			return true
		}
	}
	return false
}

// SyncLoaded syncs every loaded tenant's index once, in tenant order. Follow does it every
// interval; a change-feed listener does it each time its LISTEN is (re)established, to catch up
// on the notifications sent while none was in effect, which nobody heard.
func (ix *Index) SyncLoaded(ctx context.Context, onError func(tenants.ID, error)) {
	for _, tenant := range ix.sortedLoaded() {
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

// sortedSet sorts s and drops its repeated values.
func sortedSet(s []string) []string {
	slices.Sort(s)
	return slices.Compact(s)
}

// Verify compares every loaded index with the versions of its tenant's cards in the database,
// and its position in the change feed with the feed's newest entry, and drops each that differs
// or is past it, so that its next search loads it again from the database
// (through its snapshot, which a load compares the same way). A listener calls it each time its
// LISTEN is (re)established, after SyncLoaded: the database may have gone back meanwhile (a
// standby promoted after an asynchronous failover lost the last writes), and then an index can
// hold cards the database lost, and skip the entries whose numbers the new primary gives out
// again (they are among those it applied). An index that differs is synced and compared again
// before it is dropped, so that a write another replica committed since the last sync does not
// drop it; one committed during that second look still may, which costs a reload. A build in
// progress is waited for, and its index compared once built. It does nothing without Versions,
// and returns the tenants whose index it dropped.
func (ix *Index) Verify(ctx context.Context, onError func(tenants.ID, error)) []tenants.ID {
	if ix.Versions == nil {
		return nil
	}
	var dropped []tenants.ID
	drop := func(tenant tenants.ID, e *indexEntry) {
		ix.mu.Lock()
		if ix.tenants[tenant] == e {
			delete(ix.tenants, tenant)
			dropped = append(dropped, tenant)
		}
		ix.mu.Unlock()
		// No write of e's snapshot follows (a queued one, an eviction's): it could replace
		// the one its reload writes. Its snapshot on disk stays, compared at that reload.
		ix.saving.Lock()
		e.noMoreSaves()
		ix.saving.Unlock()
	}
	// An index that applied feed entries past the database's newest lost them with the
	// database: their numbers will be given out again, to writes it would pass over as applied.
	// The indexes' positions are read before the database's newest, which only grows meanwhile.
	// (With every tenant's feed pruned empty, the newest is 0 and every index loads again.)
	loaded := ix.sortedLoaded()
	entries, positions := make([]*indexEntry, len(loaded)), make([]int64, len(loaded))
	for i, tenant := range loaded {
		// A build in progress is waited for: it may have read cards the database lost since.
		if e, _ := ix.loaded(ctx, tenant, true); e != nil {
			e.syncMu.Lock()
			entries[i], positions[i] = e, e.lastSeq
			e.syncMu.Unlock()
		}
	}
	high, err := ix.feed.HighestSeq(ctx)
	if err != nil && ctx.Err() == nil && onError != nil {
		onError("", err)
	}
	for i, tenant := range loaded {
		e := entries[i]
		if e == nil {
			continue
		}
		if err == nil && positions[i] > high {
			drop(tenant, e)
			continue
		}
		vs, err := ix.Versions.Versions(cards.WithBatchRead(ctx), tenant)
		if err != nil {
			if ctx.Err() == nil && onError != nil {
				onError(tenant, err)
			}
			continue
		}
		if ix.agrees(e, vs) {
			continue
		}
		// A write another replica committed since the last sync differs too: sync, and look
		// again at the versions as they are then.
		ix.syncFollowed(ctx, tenant, onError)
		if vs, err = ix.Versions.Versions(cards.WithBatchRead(ctx), tenant); err == nil && ix.agrees(e, vs) {
			continue
		}
		drop(tenant, e)
	}
	return dropped
}

// agrees reports whether e holds exactly the cards of vs, each at its version (card id,
// revision and time of update, as a snapshot's read-back compares them).
func (ix *Index) agrees(e *indexEntry, vs []cards.Version) bool {
	e.x.RLock()
	defer e.x.RUnlock()
	if e.x.Live() != len(vs) {
		return false
	}
	for _, v := range vs {
		if h, ok := e.x.Held(v.AgentID); !ok || h.CardID != v.ID || h.Revision != v.Revision || h.Updated != v.UpdatedAt.UnixMicro() {
			return false
		}
	}
	return true
}
