//go:build !amd64 || purego

package semantic

// tile computes one tile of a matrix product; see tileGeneric.
func tile(k int, a []float32, lda int, b []float32, c []float32, ldc int, m int) {
	tileGeneric(k, a, lda, b, c, ldc, m)
}

// axpy adds a*x to y; see axpyGeneric.
func axpy(y []float32, a float32, x []float32) { axpyGeneric(y, a, x) }

// dot returns the dot product of x and y; see dotGeneric.
func dot(x, y []float32) float32 { return dotGeneric(x, y) }
