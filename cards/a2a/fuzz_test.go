package a2a

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/agentcards/agentcards/cards"
)

// FuzzParseCard: any bytes parse as an A2A card (1.0 or 0.3) or are refused, never panic; a card
// that parses maps to a card of ours whose checks do not panic either.
func FuzzParseCard(f *testing.F) {
	samples, _ := filepath.Glob(filepath.Join("..", "..", "web", "testdata", "a2a-samples", "*.json"))
	for _, path := range samples {
		if raw, err := os.ReadFile(path); err == nil {
			f.Add(raw)
		}
	}
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"protocolVersion": "0.3.0", "name": "x", "url": "https://a.example", "skills": []}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		a, _, err := ParseCard(raw)
		if err != nil {
			return
		}
		c := ToCard("imported", a)
		_ = c.Validate()
		_, _ = cards.MarshalDocument(c)
	})
}
