package semantic_test

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentcards/agentcards/cards/search/semantic"
	"github.com/agentcards/agentcards/cards/search/semantic/semantictest"
)

// testModel returns the model, loaded once for the test binary (see semantictest), or skips.
func testModel(t testing.TB) *semantic.Model {
	t.Helper()
	m := semantictest.Model(t)
	if m == nil {
		t.Skip("the model is not installed: " + semantictest.Install)
	}
	return m
}

// reference is one entry of testdata/reference.json, written by
// testdata/reference.js from the JS implementation.
type reference struct {
	Text      string    `json:"text"`
	Tokens    []int     `json:"tokens"`
	Embedding []float32 `json:"embedding"`
}

func readReferences(t *testing.T) []reference {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "reference.json"))
	if err != nil {
		t.Fatal(err)
	}
	var refs []reference
	if err := json.Unmarshal(data, &refs); err != nil {
		t.Fatal(err)
	}
	return refs
}

// compare returns the cosine similarity of a and b and the largest
// absolute difference between their elements.
func compare(a, b []float32) (cosine, maxDiff float64) {
	var ab, aa, bb float64
	for i := range a {
		x, y := float64(a[i]), float64(b[i])
		ab += x * y
		aa += x * x
		bb += y * y
		maxDiff = max(maxDiff, math.Abs(x-y))
	}
	return ab / math.Sqrt(aa*bb), maxDiff
}

func TestTokensMatchJS(t *testing.T) {
	m := testModel(t)
	for _, ref := range readReferences(t) {
		got := m.Tokens(ref.Text)
		if !slices.Equal(got, ref.Tokens) {
			t.Errorf("Tokens(%q)\n got %v\nwant %v", ref.Text, got, ref.Tokens)
		}
	}
}

func TestEmbedMatchesJS(t *testing.T) {
	m := testModel(t)
	worstCos, worstDiff := 1.0, 0.0
	for _, ref := range readReferences(t) {
		got := m.Embed(ref.Text)
		if len(got) != semantic.Dim || len(ref.Embedding) != semantic.Dim {
			t.Fatalf("Embed(%q): %d floats, reference %d, want %d", ref.Text, len(got), len(ref.Embedding), semantic.Dim)
		}
		cos, diff := compare(got, ref.Embedding)
		if cos < 0.9999 || diff > 1e-4 {
			t.Errorf("Embed(%q): cosine %.7f, max abs difference %.2g", ref.Text, cos, diff)
		}
		worstCos, worstDiff = min(worstCos, cos), max(worstDiff, diff)
	}
	t.Logf("worst cosine %.10f (1 - cosine = %.2g), worst max abs difference %.3g", worstCos, 1-worstCos, worstDiff)
}

func TestEmbedIsUnitLength(t *testing.T) {
	m := testModel(t)
	for _, text := range []string{"", "a", "unit length"} {
		var sq float64
		for _, v := range m.Embed(text) {
			sq += float64(v) * float64(v)
		}
		if math.Abs(sq-1) > 1e-5 {
			t.Errorf("Embed(%q) has squared norm %v", text, sq)
		}
	}
}

func TestEmbedClipsToMaxLength(t *testing.T) {
	m := testModel(t)
	long := strings.Repeat("word ", 200)
	ids := m.Tokens(long)
	if len(ids) <= semantic.MaxLen(m) {
		t.Fatalf("test text has only %d tokens", len(ids))
	}
	clipped := strings.TrimSpace(strings.Repeat("word ", semantic.MaxLen(m)))
	if n := len(m.Tokens(clipped)); n != semantic.MaxLen(m) {
		t.Fatalf("clipped text has %d tokens, want %d", n, semantic.MaxLen(m))
	}
	if a, b := m.Embed(long), m.Embed(clipped); !slices.Equal(a, b) {
		t.Errorf("a text past %d tokens embeds differently from its first %d tokens", semantic.MaxLen(m), semantic.MaxLen(m))
	}
}

func TestEmbedConcurrently(t *testing.T) {
	m := testModel(t)
	texts := []string{"", "translate documents", "kubernetes cluster management", benchCard, "东京 café 🍕"}
	want := make([][]float32, len(texts))
	for i, text := range texts {
		want[i] = m.Embed(text)
	}
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for r := range 3 {
				i := (g + r) % len(texts)
				if got := m.Embed(texts[i]); !slices.Equal(got, want[i]) {
					t.Errorf("goroutine %d: Embed(%q) differs from a lone call", g, texts[i])
				}
			}
		})
	}
	wg.Wait()
}

// benchQuery is a search query of 8 tokens.
const benchQuery = "Kubernetes Cluster Management"

// benchCard is a card text of 64 tokens.
const benchCard = "This agent books meetings for you. It reads your calendar, finds a time that suits everyone, sends the invitations and moves events when plans change. It understands requests such as \"30 minutes with Ana next week\" and respects the working hours in each time zone."

func benchmarkEmbed(b *testing.B, text string, tokens int) {
	m := testModel(b)
	if n := len(m.Tokens(text)); n != tokens {
		b.Fatalf("benchmark text has %d tokens, want %d", n, tokens)
	}
	b.ReportAllocs()
	for b.Loop() {
		m.Embed(text)
	}
}

func BenchmarkEmbedQuery(b *testing.B) { benchmarkEmbed(b, benchQuery, 8) }

func BenchmarkEmbedCard(b *testing.B) { benchmarkEmbed(b, benchCard, 64) }

// TestPackedCosine: a packed embedding's cosine with another embedding is within 0.001 of the
// exact cosine, for every pair of the reference texts' embeddings.
func TestPackedCosine(t *testing.T) {
	refs := readReferences(t)
	worst := 0.0
	for _, a := range refs {
		p := semantic.Pack(a.Embedding)
		for _, b := range refs {
			exact := 0.0
			for i := range a.Embedding {
				exact += float64(a.Embedding[i]) * float64(b.Embedding[i])
			}
			worst = max(worst, math.Abs(p.Cosine(b.Embedding)-exact))
		}
	}
	if worst > 0.001 {
		t.Fatalf("packed cosines differ from the exact by up to %.5f", worst)
	}
	t.Logf("packed cosines differ from the exact by up to %.5f", worst)
	if z := semantic.Pack(make([]float32, semantic.Dim)); z.Cosine(refs[0].Embedding) != 0 {
		t.Fatalf("a zero vector packed has cosine %v", z.Cosine(refs[0].Embedding))
	}
}
