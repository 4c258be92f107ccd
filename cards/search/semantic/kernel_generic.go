package semantic

// panelWidth is how many output columns one packed panel of a weight matrix
// holds, and so how many columns one tile computes.
const panelWidth = 16

// tileRows is the most rows of the input one tile computes at once.
const tileRows = 4

// tileGeneric sets c[r*ldc : r*ldc+panelWidth], for each row r < m (m at most
// tileRows), to row r of a (a[r*lda : r*lda+k]) times the packed panel b
// (k rows of panelWidth floats). It is the portable version of the tile
// kernel and the oracle its assembly version is tested against.
func tileGeneric(k int, a []float32, lda int, b []float32, c []float32, ldc int, m int) {
	for r := range m {
		row := a[r*lda : r*lda+k]
		out := c[r*ldc : r*ldc+panelWidth]
		tileRowHalf(row, b, out[:8], 0)
		tileRowHalf(row, b, out[8:], 8)
	}
}

// tileRowHalf sets out (8 floats) to row times columns off to off+8 of the
// packed panel b.
func tileRowHalf(row, b, out []float32, off int) {
	var s0, s1, s2, s3, s4, s5, s6, s7 float32
	for kk, x := range row {
		w := b[kk*panelWidth+off : kk*panelWidth+off+8 : kk*panelWidth+off+8]
		s0 += x * w[0]
		s1 += x * w[1]
		s2 += x * w[2]
		s3 += x * w[3]
		s4 += x * w[4]
		s5 += x * w[5]
		s6 += x * w[6]
		s7 += x * w[7]
	}
	out[0], out[1], out[2], out[3] = s0, s1, s2, s3
	out[4], out[5], out[6], out[7] = s4, s5, s6, s7
}

// axpyGeneric adds a*x to y; y must be at least as long as x.
func axpyGeneric(y []float32, a float32, x []float32) {
	y = y[:len(x)]
	i := 0
	for ; i+4 <= len(x); i += 4 {
		y[i] += a * x[i]
		y[i+1] += a * x[i+1]
		y[i+2] += a * x[i+2]
		y[i+3] += a * x[i+3]
	}
	for ; i < len(x); i++ {
		y[i] += a * x[i]
	}
}

// dotGeneric returns the dot product of x and y; y must be at least as long
// as x.
func dotGeneric(x, y []float32) float32 {
	y = y[:len(x)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(x); i += 4 {
		s0 += x[i] * y[i]
		s1 += x[i+1] * y[i+1]
		s2 += x[i+2] * y[i+2]
		s3 += x[i+3] * y[i+3]
	}
	for ; i < len(x); i++ {
		s0 += x[i] * y[i]
	}
	return (s0 + s1) + (s2 + s3)
}
