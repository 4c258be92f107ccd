package search

import (
	"bytes"
	"context"
	"log/slog"
	"time"

	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/search/index"
	"github.com/agentcards/agentcards/tenants"
)

// OutageCopy keeps, beside each loaded index, the stored document of every card the index holds
// (up to Bytes per tenant), so that while the database does not answer, a search page or a card
// read of any card of the tenant is answered from memory (see Remembered and Service.Search),
// not only one that searches or reads returned lately (the render cache). It is filled from the
// store in the background once the index is built or read back, and kept current by every
// install: a card written is encoded once more (MarshalDocument), by its writer before the index
// installs it (see wroteQueue), or as the index installs it when it was read back.
type OutageCopy struct {
	// Store pages through a tenant's cards, documents undecoded (storage's CardStore).
	Store interface {
		Documents(ctx context.Context, tenant tenants.ID, after string, limit int) ([]cards.Stored, error)
	}
	// Bytes bounds one tenant's copy: documents and an allowance per card for what keeps them.
	// Past it the fill stops and cards not yet kept are not (reads of them need the database).
	Bytes int
	Log   *slog.Logger
}

// copyPage is how many cards one read of the fill takes.
const copyPage = 1024

// keptOverhead is a kept card's memory beside its document and ids: its map entry and fields.
const keptOverhead = 96

// kept is a card of the outage copy: the version the index holds and its stored document.
type kept struct {
	cardID           string
	revision         int64
	created, updated int64 // UnixNano
	doc              []byte
}

func keptOf(s cards.Stored) kept {
	return kept{cardID: s.ID, revision: s.Revision, created: s.CreatedAt.UnixNano(), updated: s.UpdatedAt.UnixNano(), doc: s.Document}
}

func (k kept) size(agentID string) int {
	return keptOverhead + len(agentID) + len(k.cardID) + len(k.doc)
}

// is reports whether k is the version h the index holds.
func (k kept) is(h index.Held) bool {
	return k.cardID == h.CardID && k.revision == h.Revision && k.updated/1000 == h.Updated
}

func (k kept) stored(agentID string) cards.Stored {
	return cards.Stored{AgentID: agentID, ID: k.cardID, Revision: k.revision,
		CreatedAt: time.Unix(0, k.created), UpdatedAt: time.Unix(0, k.updated), Document: k.doc}
}

// keep puts k in the tenant's outage copy, replacing what it held of the agent, unless the agent
// is distrusted; false when the copy is full (k is not kept).
func (rc *renderCache) keep(agentID string, k kept) bool {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.distrusted[agentID] != 0 {
		return true
	}
	if old, ok := rc.copy[agentID]; ok {
		rc.copyBytes -= old.size(agentID)
		delete(rc.copy, agentID)
	}
	if rc.copyBytes+k.size(agentID) > rc.copyLimit {
		return false
	}
	if rc.copy == nil {
		rc.copy = map[string]kept{}
	}
	rc.copy[agentID] = k
	rc.copyBytes += k.size(agentID)
	return true
}

// copyOf returns the outage copy's card of the agent if it is the version h the index holds.
func (rc *renderCache) copyOf(agentID string, h index.Held) (cards.Stored, bool) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	k, ok := rc.copy[agentID]
	if !ok || !k.is(h) || rc.distrusted[agentID] != 0 {
		return cards.Stored{}, false
	}
	return k.stored(agentID), true
}

// copySize is the number of cards the outage copy holds and the bytes counted for them.
func (rc *renderCache) copySize() (int, int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.copy), rc.copyBytes
}

// encodeKept encodes the cards an install puts in the index, for the outage copy (nil when
// there is none); a card that does not encode is left out (a read of it needs the database).
func (e *indexEntry) encodeKept(current map[string]cards.Card) map[string]kept {
	if e.cache.copyLimit == 0 || len(current) == 0 {
		return nil
	}
	out := make(map[string]kept, len(current))
	for id, c := range current {
		if k, ok := keepCard(c); ok {
			out[id] = k
		}
	}
	return out
}

// keepCard encodes c for the outage copy; false if it does not encode.
func keepCard(c cards.Card) (kept, bool) {
	doc, err := cards.MarshalDocument(c)
	if err != nil {
		return kept{}, false
	}
	return keptOf(cards.Stored{AgentID: c.AgentID, ID: c.ID, Revision: c.Revision, CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt,
		Document: bytes.Clone(doc)}), true // its buffer had room for the server fields cut off
}

// fillCopy reads the tenant's cards into e's outage copy, a page at a time, keeping each that is
// the version the index holds (a card written since is kept by its install, and one the fill
// reads before the index installs it is skipped here and kept by that install). It stops when
// the copy is full or the index is dropped or closed; a read that fails is tried again, after
// 1 s, then twice as long each time up to a minute, from where it failed (meanwhile the copy
// holds the cards read so far and those installed since).
func (ix *Index) fillCopy(tenant tenants.ID, e *indexEntry) {
	defer ix.trim() // the copy counts in the memory budget
	start := time.Now()
	after := ""
	wait := time.Duration(0)
	for {
		ix.mu.Lock()
		current := ix.tenants[tenant] == e
		ix.mu.Unlock()
		if !current || ix.closed.Err() != nil {
			return
		}
		ctx, cancel := context.WithTimeout(cards.WithBatchRead(ix.closed), time.Minute)
		page, err := ix.Copy.Store.Documents(ctx, tenant, after, copyPage)
		cancel()
		if err != nil {
			if ix.closed.Err() != nil {
				return
			}
			if wait == 0 {
				ix.Copy.log(slog.LevelWarn, "the outage copy of a search index is incomplete: reading the cards failed; trying again", "tenant", tenant, "err", err)
			}
			wait = min(max(2*wait, time.Second), time.Minute)
			select {
			case <-time.After(wait):
			case <-ix.closed.Done():
			}
			continue
		}
		if wait != 0 {
			ix.Copy.log(slog.LevelInfo, "the outage copy of a search index is being filled again", "tenant", tenant)
			wait = 0
		}
		full := false
		e.x.RLock()
		for _, s := range page {
			h, ok := e.x.Held(s.AgentID)
			if !ok {
				continue
			}
			k := keptOf(s)
			if k.is(h) && !e.cache.keep(s.AgentID, k) {
				full = true
				break
			}
		}
		live := e.x.Live()
		e.x.RUnlock()
		if full {
			n, b := e.cache.copySize()
			ix.Copy.log(slog.LevelInfo, "the outage copy of a search index is full: reads of the other cards need the database (search.outageCopyBytes)",
				"tenant", tenant, "kept", n, "cards", live, "bytes", b)
			return
		}
		if len(page) < copyPage {
			n, b := e.cache.copySize()
			ix.Copy.log(slog.LevelDebug, "outage copy filled", "tenant", tenant, "kept", n, "bytes", b, "took", time.Since(start))
			return
		}
		after = page[len(page)-1].AgentID
	}
}

func (c *OutageCopy) log(level slog.Level, msg string, args ...any) {
	if c.Log != nil {
		c.Log.Log(context.Background(), level, msg, args...)
	}
}

// recall returns, for each of the agents that the tenant's loaded index holds, its card from the
// outage copy (rendered) if the copy holds the version the index does; lacking lists the agents
// the index holds and the copy does not. Agents the index no longer holds are in neither (their
// cards were removed since a search answered). For answers while the database does not answer;
// while it does, pageCards answers from the copy through copied.
func (ix *Index) recall(tenant tenants.ID, agents []string) (got map[string]*rendered, lacking []string) {
	got, lacking, _ = ix.copied(tenant, agents)
	// Not put in the render cache: what a search answers with once the database is back comes
	// from the database, not from this copy.
	return got, lacking
}

// copied is recall, and gone lists the agents the index no longer holds (all of them when the
// tenant's index is not loaded).
func (ix *Index) copied(tenant tenants.ID, agents []string) (got map[string]*rendered, lacking, gone []string) {
	got = map[string]*rendered{}
	e, _ := ix.loaded(context.Background(), tenant, false)
	if e == nil {
		return got, nil, agents
	}
	stored := make([]cards.Stored, 0, len(agents))
	e.x.RLock()
	for _, id := range agents {
		h, ok := e.x.Held(id)
		if !ok {
			gone = append(gone, id)
		} else if s, ok := e.cache.copyOf(id, h); ok {
			stored = append(stored, s)
		} else {
			lacking = append(lacking, id)
		}
	}
	e.x.RUnlock()
	for _, s := range stored {
		c, err := s.Card()
		if err != nil {
			lacking = append(lacking, s.AgentID)
			continue
		}
		// Encoded anew, not copied from the document: a document stored by an earlier version
		// may not be in the form decoding normalizes the card to.
		r, err := render(c)
		if err != nil {
			lacking = append(lacking, s.AgentID)
			continue
		}
		got[s.AgentID] = r
	}
	return got, lacking, gone
}
