package search

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// flatten renders the index's postings by agentId, checking every list ascends strictly.
func flatten(t *testing.T, x *tenantIndex) map[string]string {
	t.Helper()
	out := map[string][]string{}
	check := func(kind, k string, list []uint32, shift uint) {
		for i, e := range list {
			if i > 0 && list[i-1]>>shift >= e>>shift {
				t.Fatalf("%s %q not ascending/unique: %v", kind, k, list)
			}
			n := e >> shift
			if !x.docs[n].alive {
				continue
			}
			a := x.docs[n].agentID
			out[a] = append(out[a], fmt.Sprintf("%s:%s:%d", kind, k, e&(1<<shift-1)))
		}
	}
	for kind, m := range map[string]map[string][]uint32{"p": x.protocols, "t": x.tags, "c": x.caps, "g": x.trigrams} {
		for k, l := range m {
			check(kind, k, l, 0)
		}
	}
	for k, l := range x.terms {
		check("w", k, *l, 2)
	}
	for p, toks := range x.vocab3 {
		seen := map[string]bool{}
		for _, tk := range toks {
			if seen[tk] || !strings.HasPrefix(tk, p) {
				t.Fatalf("vocab3 %q: %v", p, toks)
			}
			seen[tk] = true
		}
	}
	for k := range x.terms {
		if len(k) >= minPrefix && !slices.Contains(x.vocab3[k[:minPrefix]], k) {
			t.Fatalf("vocab3 lacks %q", k)
		}
	}
	res := map[string]string{}
	for a, l := range out {
		slices.Sort(l)
		n := x.byID[a]
		res[a] = fmt.Sprintf("%s rev=%d %v", x.docs[n].cardID, x.docs[n].revision, l)
	}
	// order and byID
	if len(x.order) != x.live || len(x.byID) != x.live {
		t.Fatalf("order %d byID %d live %d", len(x.order), len(x.byID), x.live)
	}
	for i, n := range x.order {
		if i > 0 && x.docs[x.order[i-1]].agentID >= x.docs[n].agentID {
			t.Fatalf("order not sorted")
		}
		if !hasBit(x.alive, n) || x.byID[x.docs[n].agentID] != n {
			t.Fatalf("order/alive/byID disagree at %d", n)
		}
	}
	return res
}

// TestLoadMatchesUpsert: loading batches (new agents, agents already indexed, an agent twice in
// one batch) builds the same index as upserting the cards one by one, with every posting list
// ascending, and the same after removals that force a compaction.
func TestLoadMatchesUpsert(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	base := generated(t, 11, 3000)
	variants := generated(t, 12, 800)
	for i := range variants {
		variants[i].AgentID = base[r.IntN(len(base))].AgentID
		variants[i].Revision = int64(2 + i)
	}
	// Batches: sorted base in chunks, with variants (already indexed, or duplicate within a batch) mixed in.
	all := append(slices.Clone(base), variants...)
	r.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	want := newTenantIndex()
	got := newTenantIndex()
	for start := 0; start < len(all); {
		end := min(start+1+r.IntN(900), len(all))
		batch := all[start:end]
		for _, c := range batch {
			want.upsert(c)
		}
		got.load(batch)
		start = end
	}
	// Force a few removals and compaction on both.
	for _, c := range base[:2000] {
		want.remove(c.AgentID)
		got.remove(c.AgentID)
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
