package search

import (
	"encoding/json"
	"sync"

	"github.com/agentcards/agentcards/cards"
)

// rendered is a card as the API returns it, encoded once.
type rendered struct {
	card cards.Card
	json []byte

	termsOnce sync.Once
	capTerms  []map[string]uint8 // per capability, the tokens of its name and description
}

// capabilityTerms tokenizes the card's capabilities once, for matchedCapabilities.
func (r *rendered) capabilityTerms() []map[string]uint8 {
	r.termsOnce.Do(func() {
		r.capTerms = make([]map[string]uint8, len(r.card.Capabilities))
		for i, cp := range r.card.Capabilities {
			terms := map[string]uint8{}
			tokenize(cp.Name, func(tok string, _ bool) { terms[tok] = 1 })
			tokenize(cp.Description, func(tok string, _ bool) { terms[tok] = 1 })
			r.capTerms[i] = terms
		}
	})
	return r.capTerms
}

func render(c cards.Card) (*rendered, error) {
	b, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	return &rendered{card: c, json: b}, nil
}

// renderCacheBytes bounds the encoded cards one tenant's cache holds.
const renderCacheBytes = 32 << 20

// renderCache keeps the encoded form of recently returned cards, keyed by agent and checked
// against the version the index holds, so a cached card is never older than the index.
type renderCache struct {
	mu    sync.Mutex
	m     map[string]*rendered
	bytes int
	// distrusted are agents whose write the index could not read back: what it holds of them
	// may be older than the database (a card deleted), so nothing of theirs is cached until
	// the index installs them again (forget).
	distrusted map[string]bool

	// copy is the outage copy (see OutageCopy): by agent, the stored card of the version the
	// index holds, up to copyLimit bytes (0: none kept); copyFull is set once a card did not fit.
	copy      map[string]kept
	copyBytes int
	copyLimit int
	copyFull  bool
}

func (rc *renderCache) get(agentID, cardID string, revision int64) *rendered {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	r := rc.m[agentID]
	if r == nil || r.card.ID != cardID || r.card.Revision != revision {
		return nil
	}
	return r
}

func (rc *renderCache) put(agentID string, r *rendered) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.distrusted[agentID] {
		return
	}
	if rc.m == nil {
		rc.m = map[string]*rendered{}
	}
	if old := rc.m[agentID]; old != nil {
		rc.bytes -= len(old.json)
		delete(rc.m, agentID)
	}
	if rc.bytes+len(r.json) > renderCacheBytes {
		// Forget about a quarter of the bound (map order is random enough).
		for id, old := range rc.m {
			if rc.bytes+len(r.json) <= renderCacheBytes*3/4 {
				break
			}
			rc.bytes -= len(old.json)
			delete(rc.m, id)
		}
	}
	rc.m[agentID] = r
	rc.bytes += len(r.json)
}

// forget drops the agents' entries, and their cards in the outage copy: their cards were
// replaced or deleted. An entry of an old version is never served (get checks it), but it would
// hold its memory until the bound pushed it out, and an agent id deleted for good never comes
// back to replace it.
func (rc *renderCache) forget(agentIDs []string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, id := range agentIDs {
		if old := rc.m[id]; old != nil {
			rc.bytes -= len(old.json)
			delete(rc.m, id)
		}
		if old, ok := rc.copy[id]; ok {
			rc.copyBytes -= old.size(id)
			delete(rc.copy, id)
		}
		delete(rc.distrusted, id)
	}
}

// distrust forgets the agents' cards and caches none of theirs until they are installed again.
func (rc *renderCache) distrust(agentIDs []string) {
	rc.forget(agentIDs)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.distrusted == nil {
		rc.distrusted = map[string]bool{}
	}
	for _, id := range agentIDs {
		rc.distrusted[id] = true
	}
}

// size is the number of cards cached and their encoded bytes.
func (rc *renderCache) size() (int, int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.m), rc.bytes
}
