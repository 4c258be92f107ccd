package index

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/agentcards/agentcards/cards"
)

// Tenant is the in-memory search index of one tenant's cards: postings from protocols,
// capabilities, tags, text tokens and name trigrams to document numbers. Numbers only grow: a
// changed card is removed and added again, so posting lists stay sorted by appending, and removed
// documents are skipped until a compaction renumbers everything.
type Tenant struct {
	mu sync.RWMutex
	// writing is closed when the write that last asked for mu is through (see lock).
	writing atomic.Pointer[chan struct{}]
	// longReads counts the readers that hold mu for long or are about to (see rlockLong).
	longReads atomic.Int32
	docs      []idoc
	// lens holds each document's length (see Doc.length), apart from docs so that ranking reads
	// it without loading the documents.
	lens []uint32
	live int
	// disabled counts the live disabled cards: while there are none, a search for the default
	// statuses needs no check of them.
	disabled int
	// length is the sum of the live documents' lengths (see Doc.length), for their average.
	length uint64
	// lenFloor is one more than the shortest length a document made live has had (0 before
	// any): a floor of the live documents' lengths, for the bounds of ranking.
	lenFloor uint32
	alive    []uint64 // bitmap of the live documents
	byID     idTable
	order    []uint32 // live documents sorted by agentId: the answer order without q
	// unordered leaves order as it is while many documents change (see reorder).
	unordered bool

	postings

	// gen moves on with every change to the documents or postings (under mu), so that what is
	// derived from them, such as an Online or counts, can tell it is stale.
	gen uint64
	// compactions counts the compactions, which replace every posting list (see Loader).
	compactions uint64
	counts      wordCounts
	bitmaps     bitmaps
}

type idoc struct {
	agentID string
	name    string
	// The version indexed: the card's id and revision, to tell a cached rendering current.
	cardID   cardRef
	revision int64
	updated  int64 // the card's updatedAt, in µs since 1970 (see cards.Version)
	// resources is nil for a card that lists none (most).
	resources *[]resourcePattern
	status    uint8 // its bit (see statusBit)
	alive     bool
	public    bool
	verified  bool
	trusted   bool
}

// patterns returns the resources' patterns.
func (d *idoc) patterns() []resourcePattern {
	if d.resources == nil {
		return nil
	}
	return *d.resources
}

// lock takes mu for a write, and unlock lets it go (with what lock returned). Every write to a
// shared index takes mu through them (Install, Write, TryWrite), one at a time (the caller keeps
// writes apart), so that a search that finds mu taken or asked for can wait for the write in
// WaitWrite, holding no lock: a write that did not would leave writing at a finished write's
// closed channel, and such searches would take and give back turns until it let go.
func (x *Tenant) lock() chan struct{} {
	done := make(chan struct{})
	x.writing.Store(&done)
	x.mu.Lock()
	return done
}

func (x *Tenant) unlock(done chan struct{}) {
	x.mu.Unlock()
	close(done)
}

// RLockLong takes mu for a long read (a snapshot being encoded); RUnlockLong lets it go. A search
// that finds a write waiting while a long read holds mu can wait for the write elsewhere than in
// line (see LongRead). The count goes up before mu is taken, so that it is never 0 while such a
// read holds mu.
func (x *Tenant) RLockLong() {
	x.longReads.Add(1)
	x.mu.RLock()
}

func (x *Tenant) RUnlockLong() {
	x.mu.RUnlock()
	x.longReads.Add(-1)
}

// WaitWrite waits until the write whose channel it finds in writing is through (the one holding
// or asking for mu when it is called, or a later one), or ctx ends. It holds no lock meanwhile:
// searches waiting in mu.RLock instead would all take the read lock at once when the write lets
// go, and the next write would wait for each of them.
func (x *Tenant) WaitWrite(ctx context.Context) error {
	w := x.writing.Load()
	if w == nil { // no write ever took mu through lock: wait for the lock itself
		x.mu.RLock()
		//lint:ignore SA2001 the wait is the point
		x.mu.RUnlock()
		return nil
	}
	select {
	case <-*w:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// RLock takes the index for a read: a search, or a look at what it holds. RUnlock lets it go.
func (x *Tenant) RLock()   { x.mu.RLock() }
func (x *Tenant) RUnlock() { x.mu.RUnlock() }

// TryRLock takes the read lock if no write holds it or waits for it, and reports whether it did.
func (x *Tenant) TryRLock() bool { return x.mu.TryRLock() }

// LongRead reports whether a long read (see RLockLong) holds the lock or is about to.
func (x *Tenant) LongRead() bool { return x.longReads.Load() != 0 }

// Write runs f holding the write lock, taken as every write takes it (see lock).
func (x *Tenant) Write(f func()) {
	done := x.lock()
	defer x.unlock(done)
	f()
}

// TryWrite runs f holding the write lock if no one holds the lock now, and reports whether it did.
func (x *Tenant) TryWrite(f func()) bool {
	if !x.mu.TryLock() {
		return false
	}
	done := make(chan struct{})
	x.writing.Store(&done)
	defer x.unlock(done)
	f()
	return true
}

// Held is the version of a card an index holds: its id, revision and updatedAt (in µs since
// 1970, as cards.Version).
type Held struct {
	CardID   string
	Revision int64
	Updated  int64
}

// Held returns the version of the agent's card the index holds, if it holds one. The caller
// holds the read lock.
func (x *Tenant) Held(agentID string) (Held, bool) {
	n, ok := x.byID.get(x.docs, agentID)
	if !ok {
		return Held{}, false
	}
	d := &x.docs[n]
	return Held{CardID: d.cardID.String(), Revision: d.revision, Updated: d.updated}, true
}

// Holds reports whether the index holds exactly this version of the agent's card: Held, without
// spelling the card's id out (a search asks it for every card of a page). The caller holds the
// read lock.
func (x *Tenant) Holds(agentID, cardID string, revision int64) bool {
	n, ok := x.byID.get(x.docs, agentID)
	if !ok {
		return false
	}
	d := &x.docs[n]
	return d.revision == revision && d.cardID.is(cardID)
}

// All yields every agent the index holds a card of, with the card's version, in no particular
// order. The caller holds the read lock while it runs.
func (x *Tenant) All() iter.Seq2[string, Held] {
	return func(yield func(string, Held) bool) {
		for n := range x.byID.all {
			d := &x.docs[n]
			if !yield(d.agentID, Held{CardID: d.cardID.String(), Revision: d.revision, Updated: d.updated}) {
				return
			}
		}
	}
}

// Live is the number of cards the index holds; Documents the number of its documents, removed
// ones included until a compaction. The caller holds the read lock.
func (x *Tenant) Live() int      { return x.live }
func (x *Tenant) Documents() int { return len(x.docs) }

// Gen moves on with every change to the index's documents: equal Gens, the same index. The caller
// holds the read lock.
func (x *Tenant) Gen() uint64 { return x.gen }

// PublicAfter returns up to limit agentIds of the public cards after the agentId after, in
// order, and whether more follow. The caller holds the read lock.
func (x *Tenant) PublicAfter(after string, limit int) ([]string, bool) {
	start, _ := slices.BinarySearchFunc(x.order, after, x.cmpAgent)
	var ids []string
	for _, n := range x.order[start:] {
		d := &x.docs[n]
		if !d.public || d.agentID == after {
			continue
		}
		if len(ids) == limit {
			return ids, true
		}
		ids = append(ids, d.agentID)
	}
	return ids, false
}

// New returns an empty index.
func New() *Tenant { return NewFor(0) }

// NewFor is New sized for n cards, as a build knows it will hold: its
// documents are not copied to a larger array batch after batch.
func NewFor(n int) *Tenant {
	return &Tenant{docs: make([]idoc, 0, n), lens: make([]uint32, 0, n), byID: newIDTable(n), order: make([]uint32, 0, n),
		alive: make([]uint64, 0, n/64+1), postings: newPostings()}
}

// Upsert indexes c, replacing what was indexed for its agent. The caller is inside Write, or x
// is not shared yet.
func (x *Tenant) Upsert(c cards.Card) {
	x.Remove(c.AgentID)
	x.add(c, Analyze(c))
}

func newIdoc(c cards.Card, d Doc) idoc {
	var resources *[]resourcePattern
	if len(d.resources) > 0 {
		resources = &d.resources
	}
	return idoc{agentID: d.agentID, name: d.name, resources: resources, alive: true,
		cardID: refOf(c.ID), revision: c.Revision, updated: c.UpdatedAt.UnixMicro(), public: c.Visibility == cards.VisibilityPublic && !c.Disabled(), status: statusBit(d.status),
		verified: d.verified, trusted: d.trusted}
}

// add indexes the analysed card d as a new document. The caller holds mu.
func (x *Tenant) add(c cards.Card, d Doc) {
	x.room(1)
	n := uint32(len(x.docs))
	x.docs = append(x.docs, newIdoc(c, d))
	x.lens = append(x.lens, d.length)
	x.register(n)
	x.post(n, d)
}

// room makes room for k more documents under maxDocs, compacting if the removed ones take it.
func (x *Tenant) room(k int) {
	if len(x.docs)+k <= maxDocs {
		return
	}
	x.compact()
	if len(x.docs)+k > maxDocs {
		panic(fmt.Sprintf("search index: a tenant's index holds at most %d cards", maxDocs))
	}
}

// number reports whether tok is made of digits only.
func number(tok string) bool {
	for i := 0; i < len(tok); i++ {
		if tok[i] < '0' || tok[i] > '9' {
			return false
		}
	}
	return true
}

// register makes document n, already in docs, live: found by id and in agentId order.
func (x *Tenant) register(n uint32) {
	x.gen++
	x.live++
	x.length += uint64(x.lens[n])
	x.floorLength(x.lens[n])
	if x.docs[n].status == bitDisabled {
		x.disabled++
	}
	for int(n>>6) >= len(x.alive) {
		x.alive = append(x.alive, 0)
	}
	setBit(x.alive, n)
	agentID := x.docs[n].agentID
	x.byID.put(x.docs, n)
	if x.unordered {
		return
	}
	// Loads come in agentId order, so this is nearly always an append.
	if k := len(x.order); k == 0 || x.cmpAgent(x.order[k-1], agentID) < 0 {
		x.order = append(x.order, n)
		return
	}
	i, _ := slices.BinarySearchFunc(x.order, agentID, x.cmpAgent)
	x.order = slices.Insert(x.order, i, n)
}

func (x *Tenant) cmpAgent(n uint32, agentID string) int {
	return strings.Compare(x.docs[n].agentID, agentID)
}

// floorLength lowers the floor of the lengths to l if it is shorter.
func (x *Tenant) floorLength(l uint32) {
	if x.lenFloor == 0 || l < x.lenFloor-1 {
		x.lenFloor = l + 1
	}
}

// shortest is at most the length of every live document.
func (x *Tenant) shortest() uint32 { return max(x.lenFloor, 1) - 1 }

// Remove drops the agent's card from the index, if indexed. The caller is inside Write, or x is
// not shared yet.
func (x *Tenant) Remove(agentID string) {
	n, ok := x.byID.get(x.docs, agentID)
	if !ok {
		return
	}
	x.gen++
	x.byID.remove(x.docs, agentID)
	x.docs[n].alive = false
	x.docs[n].resources = nil
	x.alive[n>>6] &^= 1 << (n & 63)
	x.live--
	x.length -= uint64(x.lens[n])
	if x.docs[n].status == bitDisabled {
		x.disabled--
	}
	if !x.unordered {
		if i, found := slices.BinarySearchFunc(x.order, agentID, x.cmpAgent); found {
			x.order = slices.Delete(x.order, i, i+1)
		}
	}
	if dead := len(x.docs) - x.live; dead > 1024 && dead > x.live {
		x.compact()
	}
}

// compact renumbers the live documents densely and rewrites every posting list without the
// removed ones, so memory and scan cost follow the live cards, not the history of writes.
func (x *Tenant) compact() {
	x.gen++
	x.compactions++
	renum := make([]uint32, len(x.docs))
	docs := make([]idoc, 0, x.live)
	lens := make([]uint32, 0, x.live)
	for i, d := range x.docs {
		if d.alive {
			renum[i] = uint32(len(docs))
			docs = append(docs, d)
			lens = append(lens, x.lens[i])
		}
	}
	alive := func(old uint32) bool { return x.docs[old].alive }
	rewriteList := func(list []uint32, shift uint) []uint32 {
		out := list[:0]
		for _, e := range list {
			old := e >> shift
			if alive(old) {
				out = append(out, renum[old]<<shift|e&(1<<shift-1))
			}
		}
		return slices.Clip(out)
	}
	rewrite := func(m map[string][]uint32) {
		for k, list := range m {
			if out := rewriteList(list, 0); len(out) == 0 {
				delete(m, k)
			} else {
				m[k] = out
			}
		}
	}
	rewrite(x.protocols)
	rewrite(x.tags)
	rewrite(x.caps)
	var buf []uint32
	for _, m := range []map[string]*plist{x.terms, x.trigrams} {
		for k, list := range m {
			buf = list.appendTo(buf[:0])
			if out := rewriteList(buf, termShift); len(out) == 0 {
				delete(m, k)
			} else {
				m[k] = newPlist(out)
			}
		}
	}
	for p, toks := range x.vocab3 {
		out := toks[:0]
		for _, t := range toks {
			if _, ok := x.terms[t]; ok {
				out = append(out, t)
			}
		}
		if len(out) == 0 {
			delete(x.vocab3, p)
		} else {
			x.vocab3[p] = out
		}
	}
	for i, n := range x.order {
		x.order[i] = renum[n]
	}
	x.byID.renumber(renum)
	x.docs, x.lens = docs, lens
	x.alive = make([]uint64, (len(docs)+63)/64)
	for n := range docs {
		setBit(x.alive, uint32(n))
	}
}

// ApproxBytes estimates the memory the index holds: documents, posting lists and their keys,
// with a fixed allowance per map entry. The caller holds the read lock.
func (x *Tenant) ApproxBytes() int64 {
	// A map entry's share: key and value headers, bucket overhead, the key's allocation
	// rounded up to its size class.
	const entry = 64
	n := int64(len(x.docs))*int64(unsafe.Sizeof(idoc{})) + int64(len(x.lens)+len(x.order))*4 + int64(len(x.alive))*8
	for _, d := range x.docs {
		n += int64(len(d.agentID) + len(d.name) + d.cardID.size())
	}
	for _, m := range []map[string][]uint32{x.protocols, x.tags, x.caps} {
		for k, l := range m {
			n += entry + int64(len(k)) + int64(cap(l))*4
		}
	}
	for k, l := range x.trigrams {
		n += entry + 32 + int64(len(k)) + l.bytes()
	}
	for k, l := range x.terms {
		n += entry + 32 + int64(len(k)) + l.bytes() // 32: the list's header it points to
	}
	for k, toks := range x.vocab3 {
		n += entry + int64(len(k)) + int64(cap(toks))*16
	}
	n += x.byID.bytes() + x.bitmaps.bytes()
	return n
}

func setBit(b []uint64, n uint32)      { b[n>>6] |= 1 << (n & 63) }
func hasBit(b []uint64, n uint32) bool { return b[n>>6]&(1<<(n&63)) != 0 }
