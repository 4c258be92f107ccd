package cards

import (
	"bytes"
	"testing"

	"github.com/agentcards/agentcards/bench/cardgen"
)

// BenchmarkDecode decodes generated client documents (~2 KB, 5–20 capabilities) as Decode does
// (segmentio/encoding for a plain card) and as encoding/json alone does, and the same documents
// read back and sent again, with their server fields, which Decode reads its general way.
func BenchmarkDecode(b *testing.B) {
	docs := cardgen.Documents(7, 256)
	readBack := make([][]byte, len(docs))
	for i, d := range docs {
		readBack[i] = append([]byte(`{"id":"5f0c6a52-8a59-4cf5-a1a4-0b0d3a1f4a11","revision":3,`), bytes.TrimPrefix(bytes.TrimSpace(d), []byte("{"))...)
	}
	for _, way := range []struct {
		name   string
		docs   [][]byte
		decode func([]byte) error
	}{
		{"Decode", docs, func(d []byte) error { _, err := Decode(d); return err }},
		{"encoding-json", docs, func(d []byte) error { _, err := decodeCard(d); return err }},
		{"Decode-read-back", readBack, func(d []byte) error { _, err := Decode(d); return err }},
	} {
		b.Run(way.name, func(b *testing.B) {
			bytes := 0
			for i := range b.N {
				doc := way.docs[i%len(way.docs)]
				bytes += len(doc)
				if err := way.decode(doc); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(int64(bytes / max(b.N, 1)))
		})
	}
}
