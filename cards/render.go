package cards

import (
	"encoding/json"
	"strconv"
	"sync"
)

// rendered is a card as the API returns it, encoded once.
type rendered struct {
	card Card
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

func render(c Card) (*rendered, error) {
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

// AppendJSON appends the result as the API's JSON. Cards go in as encoded once (and cached),
// not through encoding/json again.
func (r Result) AppendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"total":`...)
	b = strconv.AppendInt(b, int64(r.Total), 10)
	b = append(b, `,"items":[`...)
	for i, h := range r.Items {
		if i > 0 {
			b = append(b, ',')
		}
		raw := h.raw
		if raw == nil {
			var err error
			if raw, err = json.Marshal(h.Card); err != nil {
				return nil, err
			}
		}
		b = append(b, `{"card":`...)
		b = append(b, raw...)
		if h.Score != nil {
			b = append(b, `,"score":`...)
			b = strconv.AppendFloat(b, *h.Score, 'f', -1, 64)
		}
		var err error
		if b, err = appendNames(b, "matchedCapabilities", h.MatchedCapabilities); err != nil {
			return nil, err
		}
		if b, err = appendNames(b, "matchedResources", h.MatchedResources); err != nil {
			return nil, err
		}
		b = append(b, '}')
	}
	b = append(b, ']')
	if r.NextCursor != "" {
		b = append(b, `,"nextCursor":`...)
		b = strconv.AppendQuote(b, r.NextCursor)
	}
	return append(b, '}'), nil
}

// appendNames appends `,"key":[...]` for a list of names, nothing for an empty one.
func appendNames(b []byte, key string, names []string) ([]byte, error) {
	if len(names) == 0 {
		return b, nil
	}
	list, err := json.Marshal(names)
	if err != nil {
		return nil, err
	}
	b = append(b, `,"`...)
	b = append(b, key...)
	b = append(b, `":`...)
	return append(b, list...), nil
}
