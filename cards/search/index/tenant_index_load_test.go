package index

import (
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/agentcards/agentcards/cards/cardstest"
)

// sameIndex fails unless b holds exactly what a holds (see Diff).
func sameIndex(t *testing.T, a, b *Tenant) {
	t.Helper()
	if d := a.Diff(b); d != "" {
		t.Fatal(d)
	}
}

// flatten checks the index's invariants and returns its contents by agentId.
func flatten(t *testing.T, x *Tenant) map[string]string {
	t.Helper()
	if err := x.Check(); err != nil {
		t.Fatal(err)
	}
	return x.Contents()
}

// TestLoadMatchesUpsert: loading batches (new agents, agents already indexed, an agent twice in
// one batch) builds the same index as upserting the cards one by one, with every posting list
// ascending, and the same after removals that force a compaction.
func TestLoadMatchesUpsert(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	base := cardstest.Cards(t, 11, 3000)
	variants := cardstest.Cards(t, 12, 800)
	for i := range variants {
		variants[i].AgentID = base[r.IntN(len(base))].AgentID
		variants[i].Revision = int64(2 + i)
	}
	// Batches: sorted base in chunks, with variants (already indexed, or duplicate within a batch) mixed in.
	all := append(slices.Clone(base), variants...)
	r.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	want := New()
	got := New()
	for start := 0; start < len(all); {
		end := min(start+1+r.IntN(900), len(all))
		batch := all[start:end]
		for _, c := range batch {
			want.Upsert(c)
		}
		got.Load(batch)
		start = end
	}
	// Force a few removals and compaction on both.
	for _, c := range base[:2000] {
		want.Remove(c.AgentID)
		got.Remove(c.AgentID)
	}
	g, w := flatten(t, got), flatten(t, want)
	if len(g) != len(w) {
		t.Fatalf("agents %d vs %d", len(g), len(w))
	}
	for _, a := range slices.Sorted(maps.Keys(w)) {
		if g[a] != w[a] {
			t.Fatalf("agent %s:\nload   %s\nupsert %s", a, g[a], w[a])
		}
	}
}
