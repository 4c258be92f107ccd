package search

import (
	"context"
	"math/bits"
	"sync"
	"time"

	"github.com/agentcards/agentcards/cards/liveness"
	"github.com/agentcards/agentcards/tenants"
)

// onlineSet is which documents of a tenant's index are online: derived from the liveness
// tracker, and kept while it stays true (the same documents, the same liveness version, and no
// TTL of an online card run out), so a search with the online filter tests a bit per document
// instead of asking the tracker.
type onlineSet struct {
	gen     uint64 // the index's gen when derived
	version uint64 // the tracker's version when derived
	until   time.Time
	bits    []uint64
	// count is the number of online live documents by status (the index of its status bit),
	// live the number of live documents.
	count, live [3]int
}

func (o *onlineSet) has(n uint32) bool { return o.bits[n>>6]&(1<<(n&63)) != 0 }

// onlineCache holds a tenant index's current onlineSet.
type onlineCache struct {
	mu  sync.Mutex
	set *onlineSet
}

// onlineSet returns which documents of e are online now. The caller holds e.x.mu for reading.
func (e *indexEntry) onlineSet(ctx context.Context, tenant tenants.ID, tr *liveness.Tracker) (*onlineSet, error) {
	version, err := tr.Version(ctx, tenant)
	if err != nil {
		return nil, err
	}
	e.online.mu.Lock()
	defer e.online.mu.Unlock()
	if o := e.online.set; o != nil && o.gen == e.x.gen && o.version == version && tr.Now().Before(o.until) {
		return o, nil
	}
	x := e.x
	o := &onlineSet{gen: x.gen, bits: make([]uint64, (len(x.docs)+63)/64)}
	o.version, o.until, err = tr.Online(ctx, tenant, func(online func(agentID, cardID string) bool) {
		for w, word := range x.alive {
			for word != 0 {
				n := uint32(w*64 + bits.TrailingZeros64(word))
				word &= word - 1
				d := &x.docs[n]
				s := bits.TrailingZeros8(statusBit(d.status))
				o.live[s]++
				if online(d.agentID, d.cardID) {
					o.bits[n>>6] |= 1 << (n & 63)
					o.count[s]++
				}
			}
		}
	})
	if err != nil {
		return nil, err
	}
	e.online.set = o
	return o, nil
}
