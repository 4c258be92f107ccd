package index

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"runtime"
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
// one batch) through one Loader builds the same index as upserting the cards one by one, with
// every posting list ascending: with the workers' lists kept from batch to batch and with them
// started again every few words, across a compaction between two batches, and after removals
// that force another.
func TestLoadMatchesUpsert(t *testing.T) {
	for _, words := range []int{maxWords, 40} {
		t.Run(fmt.Sprintf("words=%d", words), func(t *testing.T) {
			defer func(w int) { maxWords = w }(maxWords)
			maxWords = words
			// Four workers a batch, whatever the machine: a batch of fewer than 512 cards has
			// fewer, after one that had four.
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
			r := rand.New(rand.NewPCG(3, 4))
			base := cardstest.Cards(t, 11, 3000)
			variants := cardstest.Cards(t, 12, 800)
			for i := range variants {
				variants[i].AgentID = base[r.IntN(len(base))].AgentID
				variants[i].Revision = int64(2 + i)
			}
			// Batches: base and the variants shuffled (already indexed, or twice in a batch).
			all := append(slices.Clone(base), variants...)
			r.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
			want := New()
			got := New()
			ld := got.NewLoader()
			compacted := false
			for start := 0; start < len(all); {
				end := min(start+1+r.IntN(900), len(all))
				batch := all[start:end]
				for _, c := range batch {
					want.Upsert(c)
				}
				ld.Load(batch)
				start = end
				if !compacted && start > len(all)/2 {
					// Remove most of what is indexed, so that both compact.
					compacted = true
					before := got.compactions
					for _, c := range all[:start*3/4] {
						want.Remove(c.AgentID)
						got.Remove(c.AgentID)
					}
					if got.compactions == before {
						t.Fatal("the removals did not compact the index")
					}
				}
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
		})
	}
}
