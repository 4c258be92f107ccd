package search

import (
	"encoding/json"

	"github.com/agentcards/agentcards/cards"
)

// Hit is one card of a search answer. Score and MatchedCapabilities are set only for a q search;
// MatchedResources, the declared resource URIs that covered a URI asked for, only for a search
// by resource.
type Hit struct {
	Card                cards.Card `json:"card"`
	Score               *float64   `json:"score,omitempty"`
	MatchedCapabilities []string   `json:"matchedCapabilities,omitempty"`
	MatchedResources    []string   `json:"matchedResources,omitempty"`
	raw                 []byte     // Card encoded, when known
}

// CardJSON returns the card as the API's JSON: as the search encoded it once (and cached), when
// it did, so that writing an answer does not encode its cards again.
func (h Hit) CardJSON() ([]byte, error) {
	if h.raw == nil {
		return json.Marshal(h.Card)
	}
	if h.Card.Liveness == nil {
		return h.raw, nil
	}
	// The cached encoding has no liveness (it moves without the card): it goes in as the last
	// member.
	l, err := json.Marshal(h.Card.Liveness)
	if err != nil {
		return nil, err
	}
	b := make([]byte, 0, len(h.raw)+len(l)+16)
	b = append(b, h.raw[:len(h.raw)-1]...)
	b = append(b, `,"liveness":`...)
	b = append(b, l...)
	return append(b, '}'), nil
}

// Result is one page of a search. Total counts every match, not the page.
type Result struct {
	Total      int    `json:"total"`
	Items      []Hit  `json:"items"`
	NextCursor string `json:"nextCursor,omitempty"`
}
