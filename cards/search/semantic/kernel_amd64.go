//go:build !purego

package semantic

import "golang.org/x/sys/cpu"

// useAVX2 selects the assembly kernels, which need AVX2 and FMA.
var useAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// tile4x16AVX2 sets c[r*ldc : r*ldc+16], for r < m, to row r times the
// packed panel b (k rows of 16 floats), where row r starts at ar for
// r = 0..3. It always reads all four rows, so callers point unused rows at a
// used one.
//
//go:noescape
func tile4x16AVX2(k int, a0, a1, a2, a3, b, c *float32, ldc, m int)

// axpyAVX2 adds a*x[0:n] to y[0:n].
//
//go:noescape
func axpyAVX2(y, x *float32, a float32, n int)

// dotAVX2 returns the dot product of x[0:n] and y[0:n].
//
//go:noescape
func dotAVX2(x, y *float32, n int) float32

// tile computes one tile of a matrix product; see tileGeneric.
func tile(k int, a []float32, lda int, b []float32, c []float32, ldc int, m int) {
	if !useAVX2 || k == 0 {
		tileGeneric(k, a, lda, b, c, ldc, m)
		return
	}
	_ = a[(m-1)*lda+k-1]
	_ = b[k*panelWidth-1]
	_ = c[(m-1)*ldc+panelWidth-1]
	row := func(r int) *float32 { return &a[min(r, m-1)*lda] }
	tile4x16AVX2(k, row(0), row(1), row(2), row(3), &b[0], &c[0], ldc, m)
}

// axpy adds a*x to y; see axpyGeneric.
func axpy(y []float32, a float32, x []float32) {
	if !useAVX2 || len(x) == 0 {
		axpyGeneric(y, a, x)
		return
	}
	_ = y[len(x)-1]
	axpyAVX2(&y[0], &x[0], a, len(x))
}

// dot returns the dot product of x and y; see dotGeneric.
func dot(x, y []float32) float32 {
	if !useAVX2 || len(x) == 0 {
		return dotGeneric(x, y)
	}
	_ = y[len(x)-1]
	return dotAVX2(&x[0], &y[0], len(x))
}
