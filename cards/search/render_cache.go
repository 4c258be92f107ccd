package search

import (
	"sync"

	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/search/index"
)

// rendered is a card as the API returns it, encoded once.
type rendered struct {
	card cards.Card
	json []byte
	mem  int // the memory it holds, about (memoryOf)

	termsOnce sync.Once
	capTerms  index.CapabilityWords // per capability, the words of its name and description
}

// capabilityTerms tokenizes the card's capabilities once, for matchedCapabilities.
func (r *rendered) capabilityTerms() index.CapabilityWords {
	r.termsOnce.Do(func() { r.capTerms = index.CapabilityTerms(r.card) })
	return r.capTerms
}

func render(c cards.Card) (*rendered, error) {
	b, err := cards.Marshal(c)
	if err != nil {
		return nil, err
	}
	r := &rendered{card: c, json: b}
	r.mem = memoryOf(r)
	return r, nil
}

// memoryOf estimates the heap r holds: its JSON, the decoded card (its text again, with a share
// for each capability's fields), and the words of the capabilities that a q search works out
// (capabilityTerms; counted from the start, as most cards a search returns get them). The
// constants are heap measurements of bench/cardgen cards: ~11 KB for a card of ~2 KB of JSON
// with 9 capabilities.
func memoryOf(r *rendered) int {
	n := 2 * len(r.json)
	for _, cp := range r.card.Capabilities {
		n += capabilityHeap + capabilityWordsHeap*(len(cp.Name)+len(cp.Description))
	}
	return n
}

const (
	// capabilityHeap is a decoded capability's memory beside its text: its struct, slice and
	// string headers, allocation rounding.
	capabilityHeap = 350
	// capabilityWordsHeap is the memory of a capability's words (index.CapabilityWords) per byte
	// of its name and description.
	capabilityWordsHeap = 4
)

// renderCacheBytes bounds the encoded cards one tenant's cache holds.
const renderCacheBytes = 32 << 20

// renderCache keeps the encoded form of recently returned cards, keyed by agent and checked
// against the version the index holds, so a cached card is never older than the index.
type renderCache struct {
	mu    sync.Mutex
	m     map[string]*rendered
	bytes int // their JSON, which renderCacheBytes bounds
	mem   int // their memory, about (rendered.mem)
	// distrusted are agents whose write the index could not read back: what it holds of them
	// may be older than the database (a card deleted), so nothing of theirs is cached or
	// answered until the index installs them from a read that began after (installed); the
	// value is the entry's read count when that happened (indexEntry.reads).
	distrusted map[string]uint64

	// copy is the outage copy (see OutageCopy): by agent, the stored card of the version the
	// index holds, up to copyLimit bytes (0: none kept).
	copy      map[string]kept
	copyBytes int
	copyLimit int
}

func (rc *renderCache) get(agentID, cardID string, revision int64) *rendered {
	r := rc.lookup(agentID)
	if r == nil || r.card.ID != cardID || r.card.Revision != revision {
		return nil
	}
	return r
}

// lookup returns the agent's cached rendering whatever its version, which its caller checks
// against the index (index.Tenant.Holds); nil for none, or for an agent distrusted.
func (rc *renderCache) lookup(agentID string) *rendered {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	r := rc.m[agentID]
	if r == nil || rc.distrusted[agentID] != 0 {
		return nil
	}
	return r
}

func (rc *renderCache) put(agentID string, r *rendered) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.distrusted[agentID] != 0 {
		return
	}
	if rc.m == nil {
		rc.m = map[string]*rendered{}
	}
	if old := rc.m[agentID]; old != nil {
		rc.bytes -= len(old.json)
		rc.mem -= old.mem
		delete(rc.m, agentID)
	}
	if rc.bytes+len(r.json) > renderCacheBytes {
		// Forget about a quarter of the bound (map order is random enough).
		for id, old := range rc.m {
			if rc.bytes+len(r.json) <= renderCacheBytes*3/4 {
				break
			}
			rc.bytes -= len(old.json)
			rc.mem -= old.mem
			delete(rc.m, id)
		}
	}
	rc.m[agentID] = r
	rc.bytes += len(r.json)
	rc.mem += r.mem
}

// installed drops the agents' entries, and their cards in the outage copy: the index installed
// them anew (replaced or deleted). An entry of an old version is never served (get checks it),
// but it would hold its memory until the bound pushed it out, and an agent id deleted for good
// never comes back to replace it. An agent distrusted is trusted again if the install comes from
// a read that began after it was distrusted (read, the entry's read count when it began; 0 for a
// writer's own card, which was not read back).
func (rc *renderCache) installed(agentIDs []string, read uint64) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.drop(agentIDs)
	for _, id := range agentIDs {
		if at, ok := rc.distrusted[id]; ok && read > at {
			delete(rc.distrusted, id)
		}
	}
}

// drop removes the agents' entries and copies; the caller holds mu.
func (rc *renderCache) drop(agentIDs []string) {
	for _, id := range agentIDs {
		if old := rc.m[id]; old != nil {
			rc.bytes -= len(old.json)
			rc.mem -= old.mem
			delete(rc.m, id)
		}
		if old, ok := rc.copy[id]; ok {
			rc.copyBytes -= old.size(id)
			delete(rc.copy, id)
		}
	}
}

// distrust forgets the agents' cards and keeps none of theirs until an install from a read that
// began after now (reads is the entry's read count now, at least 1).
func (rc *renderCache) distrust(agentIDs []string, reads uint64) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.drop(agentIDs)
	if rc.distrusted == nil {
		rc.distrusted = map[string]uint64{}
	}
	for _, id := range agentIDs {
		rc.distrusted[id] = max(reads, 1)
	}
}

// size is the number of cards cached and the memory they hold, about.
func (rc *renderCache) size() (int, int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.m), rc.mem
}
