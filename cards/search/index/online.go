package index

import "math/bits"

// Online is which documents of a tenant's index are online, derived from the liveness of their
// agents, so that a search with the online filter tests a bit per document instead of asking
// for each card. It holds while the index does not change (Gen).
type Online struct {
	gen  uint64 // the index's gen when derived
	bits []uint64
	// count is the number of online live documents by status (the index of its status bit),
	// live the number of live documents.
	count, live [3]int
}

func (o *Online) has(n uint32) bool { return o.bits[n>>6]&(1<<(n&63)) != 0 }

// Gen is the index's Gen when o was derived: o describes the index while they are equal.
func (o *Online) Gen() uint64 { return o.gen }

// Online derives which live documents are online: online answers for each card by its agent and
// card id. The caller holds the read lock.
func (x *Tenant) Online(online func(agentID, cardID string) bool) *Online {
	o := &Online{gen: x.gen, bits: make([]uint64, (len(x.docs)+63)/64)}
	for w, word := range x.alive {
		for word != 0 {
			n := uint32(w*64 + bits.TrailingZeros64(word))
			word &= word - 1
			d := &x.docs[n]
			s := bits.TrailingZeros8(d.status)
			o.live[s]++
			if online(d.agentID, d.cardID.String()) {
				o.bits[n>>6] |= 1 << (n & 63)
				o.count[s]++
			}
		}
	}
	return o
}
