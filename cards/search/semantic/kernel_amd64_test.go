//go:build !purego

package semantic

import (
	"math"
	"math/rand/v2"
	"testing"
)

// randomFloats returns n floats in [-1, 1).
func randomFloats(rng *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = 2*rng.Float32() - 1
	}
	return v
}

// near reports whether got and want agree to rounding error for a sum of
// k products of values in [-1, 1).
func near(got, want float32, k int) bool {
	return math.Abs(float64(got-want)) <= 1e-6*float64(k+1)
}

func requireAVX2(t *testing.T) {
	if !useAVX2 {
		t.Skip("CPU lacks AVX2 and FMA")
	}
}

func TestTileAVX2MatchesGeneric(t *testing.T) {
	requireAVX2(t)
	rng := rand.New(rand.NewPCG(1, 2))
	for _, k := range []int{1, 2, 3, 7, 17, 31, 255, 513} {
		for m := 1; m <= tileRows; m++ {
			lda, ldc := k+3, panelWidth+5
			a := randomFloats(rng, (m-1)*lda+k)
			b := randomFloats(rng, k*panelWidth)
			want := randomFloats(rng, (m-1)*ldc+panelWidth)
			got := append([]float32(nil), want...)
			tileGeneric(k, a, lda, b, want, ldc, m)
			tile(k, a, lda, b, got, ldc, m)
			for i := range got {
				if !near(got[i], want[i], k) {
					t.Fatalf("k=%d m=%d: element %d is %v, want %v", k, m, i, got[i], want[i])
				}
			}
		}
	}
}

func TestAxpyAVX2MatchesGeneric(t *testing.T) {
	requireAVX2(t)
	rng := rand.New(rand.NewPCG(3, 4))
	for n := range 80 {
		x := randomFloats(rng, n)
		want := randomFloats(rng, n+1)
		got := append([]float32(nil), want...)
		a := 2*rng.Float32() - 1
		axpyGeneric(want, a, x)
		axpy(got, a, x)
		for i := range got {
			if !near(got[i], want[i], 1) {
				t.Fatalf("n=%d: element %d is %v, want %v", n, i, got[i], want[i])
			}
		}
	}
}

func TestDotAVX2MatchesGeneric(t *testing.T) {
	requireAVX2(t)
	rng := rand.New(rand.NewPCG(5, 6))
	for n := range 300 {
		x, y := randomFloats(rng, n), randomFloats(rng, n)
		if got, want := dot(x, y), dotGeneric(x, y); !near(got, want, n) {
			t.Fatalf("n=%d: dot is %v, want %v", n, got, want)
		}
	}
}
