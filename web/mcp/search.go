package mcp

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/web/api"
	"github.com/agentcards/agentcards/web/client"
)

// defaultView is what a search result shows of each card unless fields says otherwise: what an
// agent needs to pick one and call it, and no more, since it pays for every token.
var defaultView = []string{"agentId", "name", "description", "score", "matchedCapabilities", "endpoint"}

// hitFields are the members of a result beside the card's own fields.
var hitFields = []string{"score", "matchedCapabilities", "matchedResources", "card"}

// cardFields are the JSON names of a card's fields.
var cardFields = func() []string {
	var names []string
	t := reflect.TypeFor[cards.Card]()
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name != "" && name != "-" {
			names = append(names, name)
		}
	}
	return names
}()

// searchView checks the fields asked for; none asked is the default view.
func searchView(fields []string) ([]string, error) {
	if len(fields) == 0 {
		return defaultView, nil
	}
	for _, f := range fields {
		if !slices.Contains(cardFields, f) && !slices.Contains(hitFields, f) {
			return nil, &client.Error{Status: http.StatusBadRequest, Code: "invalid",
				Message: fmt.Sprintf("fields: %q is not a card field (%s) nor one of %s: invalid request",
					f, strings.Join(cardFields, ", "), strings.Join(hitFields, ", "))}
		}
	}
	return fields, nil
}

// compactResult is a search answer on the MCP door: each item holds the fields of the view.
type compactResult struct {
	Total      int              `json:"total"`
	Items      []map[string]any `json:"items"`
	NextCursor string           `json:"nextCursor,omitempty"`
}

func compact(r api.SearchResult, view []string) compactResult {
	out := compactResult{Total: r.Total, NextCursor: r.NextCursor, Items: make([]map[string]any, 0, len(r.Items))}
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
			case "card":
				item[f] = h.Card
			default:
				if v, ok := card[f]; ok {
					item[f] = v
				}
			}
		}
		out.Items = append(out.Items, item)
	}
	return out
}

// compactSchema is the output schema of cards_search: a page whose items may hold any field of
// a card and of a result, and no other.
func compactSchema() (*jsonschema.Schema, error) {
	card, err := jsonschema.ForType(reflect.TypeFor[cards.Card](), schemaOptions)
	if err != nil {
		return nil, err
	}
	item := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{},
		AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}}}
	for name, s := range card.Properties {
		item.Properties[name] = s
	}
	strs := &jsonschema.Schema{Type: "array", Items: &jsonschema.Schema{Type: "string"}}
	item.Properties["score"] = &jsonschema.Schema{Type: "number", Description: "the free-text score, with q"}
	item.Properties["matchedCapabilities"] = strs
	item.Properties["matchedResources"] = strs
	item.Properties["card"] = card
	return &jsonschema.Schema{
		Type: "object", Required: []string{"total", "items"},
		Properties: map[string]*jsonschema.Schema{
			"total":      {Type: "integer", Description: "how many cards match"},
			"items":      {Type: "array", Items: item},
			"nextCursor": {Type: "string", Description: "the cursor of the next page; none on the last"},
		},
	}, nil
}
