package mcp

import (
	"reflect"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/web/api"
)

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
	// Each schema appears once in the tree (a schema must be a tree to resolve): the lists of
	// strings are two, and the card's members under "card" are copies.
	strs := func() *jsonschema.Schema {
		return &jsonschema.Schema{Type: "array", Items: &jsonschema.Schema{Type: "string"}}
	}
	item.Properties["score"] = &jsonschema.Schema{Type: "number", Description: "the free-text score, with q"}
	item.Properties["matchedCapabilities"] = strs()
	item.Properties["matchedResources"] = strs()
	explain, err := jsonschema.ForType(reflect.TypeFor[api.Explanation](), schemaOptions)
	if err != nil {
		return nil, err
	}
	item.Properties["explain"] = explain
	item.Properties["card"] = card.CloneSchemas()
	return &jsonschema.Schema{
		Type: "object", Required: []string{"total", "items"},
		Properties: map[string]*jsonschema.Schema{
			"total":      {Type: "integer", Description: "how many cards match"},
			"items":      {Type: "array", Items: item},
			"nextCursor": {Type: "string", Description: "the cursor of the next page; none on the last"},
		},
	}, nil
}
