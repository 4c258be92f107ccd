package cards

import (
	"testing"

	"github.com/agentcards/agentcards/bench/cardgen"
)

// BenchmarkDecode decodes generated client documents (~2 KB, 5–20 capabilities) as Decode does
// (segmentio/encoding for a plain card) and as encoding/json alone does.
func BenchmarkDecode(b *testing.B) {
	docs := cardgen.Documents(7, 256)
	for _, way := range []struct {
		name   string
		decode func([]byte) error
	}{
		{"Decode", func(d []byte) error { _, err := Decode(d); return err }},
		{"encoding-json", func(d []byte) error { _, err := decodeCard(d); return err }},
	} {
		b.Run(way.name, func(b *testing.B) {
			bytes := 0
			for i := range b.N {
				doc := docs[i%len(docs)]
				bytes += len(doc)
				if err := way.decode(doc); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(int64(bytes / max(b.N, 1)))
		})
	}
}
