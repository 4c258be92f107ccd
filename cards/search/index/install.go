package index

import (
	"slices"
	"strings"

	"github.com/agentcards/agentcards/cards"
)

// Install puts the agents' cards of current in the index, each analysed in analyzed, and removes
// the agents absent from current, under one write lock: searches wait only for the postings to
// change, not for the analysis.
func (x *Tenant) Install(agents []string, current map[string]cards.Card, analyzed map[string]Doc) {
	done := x.lock()
	for _, id := range agents {
		x.Remove(id)
		if c, ok := current[id]; ok {
			x.add(c, analyzed[id])
		}
	}
	x.unlock(done)
}

// Renew brings an index not yet shared (read back from a snapshot) to the cards of now: it
// removes the agents of gone and of again, and loads the cards read returns in batches (those of
// again). The order is put right once at the end: kept up card by card, each change in the middle
// of 100k documents would move half of them.
func (x *Tenant) Renew(gone, again []string, read func(load func([]cards.Card)) error) error {
	x.unordered = true
	for _, id := range gone {
		x.Remove(id)
	}
	for _, id := range again {
		x.Remove(id)
	}
	err := read(x.NewLoader().Load)
	x.reorder()
	return err
}

// Differences compares the index with the versions of the cards the database holds (vs, in
// agent id order): the agents whose card is gone from it, and those whose card is new or of
// another version. The caller holds the read lock, or x is not shared yet.
func (x *Tenant) Differences(vs []cards.Version) (gone, again []string) {
	i := 0
	for _, v := range vs {
		for i < len(x.order) && x.docs[x.order[i]].agentID < v.AgentID {
			gone = append(gone, x.docs[x.order[i]].agentID)
			i++
		}
		if i < len(x.order) && x.docs[x.order[i]].agentID == v.AgentID {
			d := &x.docs[x.order[i]]
			i++
			if d.cardID.is(v.ID) && d.revision == v.Revision && d.updated == v.UpdatedAt.UnixMicro() {
				continue
			}
		}
		again = append(again, v.AgentID)
	}
	for ; i < len(x.order); i++ {
		gone = append(gone, x.docs[x.order[i]].agentID)
	}
	return gone, again
}

// reorder lists the live documents in agent id order again, after changes made unordered.
func (x *Tenant) reorder() {
	x.order = x.order[:0]
	for n := range x.byID.all {
		x.order = append(x.order, n)
	}
	slices.SortFunc(x.order, func(a, b uint32) int { return strings.Compare(x.docs[a].agentID, x.docs[b].agentID) })
	x.unordered = false
}
