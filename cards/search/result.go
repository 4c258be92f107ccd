package search

import (
	"encoding/json"

	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/search/index"
)

// Hit is one card of a search answer. Score and MatchedCapabilities are set only for a q search;
// MatchedResources, the declared resource URIs that covered a URI asked for, only for a search
// by resource.
type Hit struct {
	Card                cards.Card `json:"card"`
	Score               *float64   `json:"score,omitempty"`
	MatchedCapabilities []string   `json:"matchedCapabilities,omitempty"`
	MatchedResources    []string   `json:"matchedResources,omitempty"`
	// Explain says why the card scored as it did, for a q search that asked (Query.Explain).
	Explain *Explanation `json:"explain,omitempty"`
	raw     []byte       // Card encoded, when known
}

// Explanation is why a card scored as it did (see index.Explanation).
type Explanation = index.Explanation

// AppendCardJSON appends the card as the API's JSON to b: as the search encoded it once (and
// cached), when it did, so that writing an answer does not encode its cards again.
func (h Hit) AppendCardJSON(b []byte) ([]byte, error) {
	if h.raw == nil {
		raw, err := json.Marshal(h.Card)
		return append(b, raw...), err
	}
	if h.Card.Liveness == nil {
		return append(b, h.raw...), nil
	}
	// The cached encoding has no liveness (it moves without the card): it goes in as the last
	// member.
	b = append(b, h.raw[:len(h.raw)-1]...)
	b = append(b, `,"liveness":`...)
	b, err := cards.AppendLiveness(b, h.Card.Liveness)
	return append(b, '}'), err
}

// Result is one page of a search. Total counts every match, not the page.
type Result struct {
	Total      int    `json:"total"`
	Items      []Hit  `json:"items"`
	NextCursor string `json:"nextCursor,omitempty"`
}
