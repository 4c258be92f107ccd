package api

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/agentcards/agentcards/cards"
)

// DefaultView is what a door that shapes search results (MCP, the CLI) shows of each card unless
// the search's fields say otherwise: what a caller needs to pick an agent and call it, and no
// more, since an agent pays for every token. A card's status (and deprecation, with its successor) is there only when it is not active.
var DefaultView = []string{"agentId", "name", "description", "score", "matchedCapabilities", "endpoint", "status", "deprecation"}

// HitFields are the members of a search result beside the card's own fields.
var HitFields = []string{"score", "matchedCapabilities", "matchedResources", "explain", "card"}

// CardFields are the JSON names of a card's fields.
var CardFields = func() []string {
	var names []string
	t := reflect.TypeFor[cards.Card]()
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name != "" && name != "-" {
			names = append(names, name)
		}
	}
	return names
}()

// SearchView checks the fields a search asks for; none asked is DefaultView. The error names
// the fields there are.
func SearchView(fields []string) ([]string, error) {
	if len(fields) == 0 {
		return DefaultView, nil
	}
	for _, f := range fields {
		if !slices.Contains(CardFields, f) && !slices.Contains(HitFields, f) {
			return nil, fmt.Errorf("fields: %q is not a card field (%s) nor one of %s",
				f, strings.Join(CardFields, ", "), strings.Join(HitFields, ", "))
		}
	}
	return fields, nil
}

// CompactResult is a page of search results shaped by a view: each item holds the fields of
// the view that the result has.
type CompactResult struct {
	Total      int              `json:"total"`
	Items      []map[string]any `json:"items"`
	NextCursor string           `json:"nextCursor,omitempty"`
}

// Compact shapes a page of search results by a view (from SearchView). A result's explanation,
// asked for by explain, is shown whatever the view.
func Compact(r SearchResult, view []string) CompactResult {
	out := CompactResult{Total: r.Total, NextCursor: r.NextCursor, Items: make([]map[string]any, 0, len(r.Items))}
	for _, h := range r.Items {
		raw, _ := json.Marshal(h.Card)
		var card map[string]json.RawMessage
		_ = json.Unmarshal(raw, &card)
		item := map[string]any{}
		for _, f := range view {
			switch f {
			case "score":
				if h.Score != nil {
					item[f] = *h.Score
				}
			case "matchedCapabilities":
				if len(h.MatchedCapabilities) > 0 {
					item[f] = h.MatchedCapabilities
				}
			case "matchedResources":
				if len(h.MatchedResources) > 0 {
					item[f] = h.MatchedResources
				}
			case "explain":
			case "card":
				item[f] = h.Card
			default:
				if v, ok := card[f]; ok {
					item[f] = v
				}
			}
		}
		if h.Explain != nil {
			item["explain"] = h.Explain
		}
		out.Items = append(out.Items, item)
	}
	return out
}
