package semantic

import "math"

// matrix is a rows×cols weight matrix (inputs × outputs) packed into panels
// of panelWidth columns: panel p holds, row after row, the floats of
// columns p*panelWidth to (p+1)*panelWidth, so the tile kernel reads it in
// one sequential sweep.
type matrix struct {
	rows, cols int
	panels     []float32
}

// packMatrix packs the row-major rows×cols matrix w; cols must be a
// multiple of panelWidth.
func packMatrix(w []float32, rows, cols int) matrix {
	m := matrix{rows: rows, cols: cols, panels: make([]float32, 0, rows*cols)}
	for p := 0; p < cols; p += panelWidth {
		for r := range rows {
			m.panels = append(m.panels, w[r*cols+p:r*cols+p+panelWidth]...)
		}
	}
	return m
}

// mul sets dst (n×cols) to x (n×rows) times the matrix. Each panel is
// loaded once and kept in cache while every row of x goes through it.
func (m *matrix) mul(dst, x []float32, n int) {
	size := m.rows * panelWidth
	for p := 0; p*panelWidth < m.cols; p++ {
		panel := m.panels[p*size : (p+1)*size]
		for i := 0; i < n; i += tileRows {
			tile(m.rows, x[i*m.rows:], m.rows, panel, dst[i*m.cols+p*panelWidth:], m.cols, min(tileRows, n-i))
		}
	}
}

// addRows adds v to every row of the row-major matrix x.
func addRows(x, v []float32) {
	for i := 0; i < len(x); i += len(v) {
		row := x[i : i+len(v)]
		for j, b := range v {
			row[j] += b
		}
	}
}

// add sets dst to dst + x.
func add(dst, x []float32) {
	x = x[:len(dst)]
	for i := range dst {
		dst[i] += x[i]
	}
}

// relu replaces the negative values of x with 0.
func relu(x []float32) {
	for i, v := range x {
		x[i] = max(v, 0)
	}
}

// layerNorm sets each row of dst (rows of width floats) to the matching row
// of x normalized as the graph does: (x - mean) * (scale * rsqrt(variance +
// eps)) + bias.
func layerNorm(dst, x []float32, width int, scale, bias []float32, eps float32) {
	for i := 0; i < len(x); i += width {
		row, out := x[i:i+width], dst[i:i+width]
		mean := float32(sum(row) / float64(width))
		var sq float64
		for _, v := range row {
			d := v - mean
			sq += float64(d * d)
		}
		variance := float32(sq / float64(width))
		inv := rsqrt(variance + eps)
		for j, v := range row {
			out[j] = scale[j]*inv*(v-mean) + bias[j]
		}
	}
}

// softmax replaces x with its softmax.
func softmax(x []float32) {
	top := x[0]
	for _, v := range x[1:] {
		top = max(top, v)
	}
	var total float64
	for i, v := range x {
		e := float32(math.Exp(float64(v - top)))
		x[i] = e
		total += float64(e)
	}
	t := float32(total)
	for i := range x {
		x[i] /= t
	}
}

// sum returns the sum of x, accumulated in float64.
func sum(x []float32) float64 {
	var s float64
	for _, v := range x {
		s += float64(v)
	}
	return s
}

// rsqrt returns 1/sqrt(x) rounded to float32.
func rsqrt(x float32) float32 {
	return float32(1 / math.Sqrt(float64(x)))
}
