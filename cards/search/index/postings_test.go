package index

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestIntersect(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		mk := func(n, max int) []uint32 {
			m := map[uint32]bool{}
			for range n {
				m[uint32(r.IntN(max))] = true
			}
			out := make([]uint32, 0, len(m))
			for v := range m {
				out = append(out, v)
			}
			slices.Sort(out)
			return out
		}
		a, b := mk(r.IntN(50), 200), mk(r.IntN(300), 200)
		var want []uint32
		for _, v := range a {
			if _, ok := slices.BinarySearch(b, v); ok {
				want = append(want, v)
			}
		}
		if got := intersect(a, b); fmt.Sprint(got) != fmt.Sprint(want) && !(len(got) == 0 && len(want) == 0) {
			t.Fatalf("intersect(%v, %v) = %v, want %v", a, b, got, want)
		}
	}
}
