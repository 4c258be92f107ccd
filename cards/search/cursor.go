package search

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
)

// position is where a page ends, in the order of the answer (see less). Without q, only agentId
// counts.
type position struct {
	Matched int    `json:"m,omitempty"`
	Exact   int    `json:"e,omitempty"`
	Weight  int    `json:"w,omitempty"`
	AgentID string `json:"a"`
	Query   uint64 `json:"f"`
}

// before reports whether the position comes before c in answer order.
func (p position) before(c candidate) bool {
	return less(candidate{agentID: p.AgentID, matched: p.Matched, exact: p.Exact, weight: p.Weight}, c)
}

func encodePosition(p position) string {
	b, _ := json.Marshal(p)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodePosition(s string) (position, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return position{}, err
	}
	var p position
	if err := json.Unmarshal(b, &p); err != nil || p.AgentID == "" ||
		p.Matched < 0 || p.Matched > 32 || p.Exact < 0 || p.Exact > p.Matched || p.Weight < 0 || p.Weight > 3*p.Matched {
		return position{}, fmt.Errorf("bad cursor")
	}
	return p, nil
}
