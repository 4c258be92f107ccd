package web

import (
	"encoding/json"
	"strconv"

	"github.com/agentcards/agentcards/cards/search"
)

// appendResult appends a search answer as the API's JSON. Cards go in as the search encoded them
// once (and cached), not through encoding/json again.
func appendResult(b []byte, r search.Result) ([]byte, error) {
	b = append(b, `{"total":`...)
	b = strconv.AppendInt(b, int64(r.Total), 10)
	b = append(b, `,"items":[`...)
	for i, h := range r.Items {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"card":`...)
		var err error
		if b, err = h.AppendCardJSON(b); err != nil {
			return nil, err
		}
		if h.Score != nil {
			b = append(b, `,"score":`...)
			b = strconv.AppendFloat(b, *h.Score, 'f', -1, 64)
		}
		if b, err = appendNames(b, "matchedCapabilities", h.MatchedCapabilities); err != nil {
			return nil, err
		}
		if b, err = appendNames(b, "matchedResources", h.MatchedResources); err != nil {
			return nil, err
		}
		if h.Explain != nil {
			enc, err := json.Marshal(h.Explain)
			if err != nil {
				return nil, err
			}
			b = append(b, `,"explain":`...)
			b = append(b, enc...)
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
