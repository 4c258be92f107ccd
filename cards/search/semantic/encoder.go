package semantic

import "math"

// scratch is the working memory of one Embed call; the Model keeps spares
// in a pool.
type scratch struct {
	tokens tokenBuffers
	a, b   []float32 // the residual stream, alternating between layers
	norm   []float32 // layer-norm output
	qkv    []float32
	attn   []float32 // attention output, heads side by side
	tmp    []float32 // a sublayer's output before the residual is added
	hidden []float32 // feed-forward hidden layer
	scores []float32 // one row of attention weights
	pooled [Dim]float32
	final  [Dim]float32
}

// Tokens returns the SentencePiece ids of text, exactly as the JS tokenizer
// computes them: NFKC normalization, no lowercasing, every one of the ids
// even past the encoder's maximum length.
func (m *Model) Tokens(text string) []int {
	return m.tokenizer.encode(text, &tokenBuffers{})
}

// Embed returns the unit-length embedding of text, as the JS
// model.embed([text])[0] does. Only the first 128 tokens count, as in the
// graph. The empty string has no tokens; the JS fails on it alone, and the
// graph gives it, inside a batch, the vector of an average over no tokens
// (the normalized tanh of the last layer's bias), which Embed returns.
func (m *Model) Embed(text string) []float32 {
	s := m.scratch.Get().(*scratch)
	defer m.scratch.Put(s)
	ids := m.tokenizer.encode(text, &s.tokens)
	ids = ids[:min(len(ids), m.maxLen)]
	out := make([]float32, Dim)
	m.encode(ids, s, out)
	return out
}

// encode computes into out the embedding of the piece ids.
func (m *Model) encode(ids []int, s *scratch, out []float32) {
	n := len(ids)
	s.grow(n)
	x := s.a[:n*embedDim]
	m.embed(x, ids)
	for i := range m.layers {
		next := s.b[:n*Dim]
		m.layers[i].forward(next, x, n, m.epsilon, s)
		x, s.a, s.b = next, s.b, s.a
	}
	m.pool(s.pooled[:], x, n)
	m.tanh.mul(s.final[:], s.pooled[:], 1)
	add(s.final[:], m.tanhBias)
	for i, v := range s.final {
		s.final[i] = float32(math.Tanh(float64(v)))
	}
	m.normalize(out, s.final[:])
}

// embed sets the rows of x to the graph's layer-0 input: each token's
// embedding e plus (e plus the timing signal at its position), since the
// graph adds the embeddings to their sum with the timing signal.
func (m *Model) embed(x []float32, ids []int) {
	for p, id := range ids {
		e := m.embedding[id*embedDim : (id+1)*embedDim]
		t := m.timing[p*embedDim : (p+1)*embedDim]
		row := x[p*embedDim : (p+1)*embedDim]
		for i := range row {
			row[i] = e[i] + (e[i] + t[i])
		}
	}
}

// pool sets dst to the mean of the n rows of x; with no rows it is zero,
// since the graph divides by max(n, 1).
func (m *Model) pool(dst, x []float32, n int) {
	var acc [Dim]float64
	for r := range n {
		for i, v := range x[r*Dim : (r+1)*Dim] {
			acc[i] += float64(v)
		}
	}
	count := float32(max(n, 1))
	for i := range dst {
		dst[i] = float32(acc[i]) / count
	}
}

// normalize sets dst to v scaled by rsqrt(max(|v|², l2Epsilon)).
func (m *Model) normalize(dst, v []float32) {
	var sq float64
	for _, x := range v {
		sq += float64(x * x)
	}
	inv := rsqrt(max(float32(sq), m.l2Epsilon))
	for i, x := range v {
		dst[i] = x * inv
	}
}

// forward runs the layer on the n rows of x (of l.width floats) and writes
// the n output rows (of Dim floats) to out, which must not overlap x.
func (l *layer) forward(out, x []float32, n int, eps float32, s *scratch) {
	norm := s.norm[:n*l.width]
	qkv := s.qkv[:n*3*l.width]
	attn := s.attn[:n*l.width]
	tmp := s.tmp[:n*Dim]

	if l.residual != nil {
		l.residual.mul(out, x, n)
		addRows(out, l.residualBias)
	} else {
		copy(out, x)
	}
	layerNorm(norm, x, l.width, l.attnNormScale, l.attnNormBias, eps)
	l.qkv.mul(qkv, norm, n)
	addRows(qkv, l.qkvBias)
	l.attend(attn, qkv, n, s.scores[:n])
	l.out.mul(tmp, attn, n)
	addRows(tmp, l.outBias)
	add(out, tmp)

	norm = s.norm[:n*Dim]
	hidden := s.hidden[:n*hiddenDim]
	layerNorm(norm, out, Dim, l.ffnNormScale, l.ffnNormBias, eps)
	l.ffn1.mul(hidden, norm, n)
	addRows(hidden, l.ffn1Bias)
	relu(hidden)
	l.ffn2.mul(tmp, hidden, n)
	addRows(tmp, l.ffn2Bias)
	add(out, tmp)
}

// attend runs multi-head dot-product attention over the n rows of qkv
// (queries, keys and values side by side) and writes each row's heads side
// by side to dst. Every token attends to every token: a single text has no
// padding, so the graph's padding bias is zero.
func (l *layer) attend(dst, qkv []float32, n int, scores []float32) {
	w, d := l.width, l.headDim
	stride := 3 * w
	for i := range n {
		q := qkv[i*stride : i*stride+w]
		for j := range q {
			q[j] *= l.scale
		}
	}
	for h := range l.heads {
		for i := range n {
			q := qkv[i*stride+h*d : i*stride+(h+1)*d]
			for j := range n {
				scores[j] = dot(q, qkv[j*stride+w+h*d:j*stride+w+(h+1)*d])
			}
			softmax(scores)
			o := dst[i*w+h*d : i*w+(h+1)*d]
			clear(o)
			for j, p := range scores {
				axpy(o, p, qkv[j*stride+2*w+h*d:j*stride+2*w+(h+1)*d])
			}
		}
	}
}

// grow makes the buffers of s large enough for n tokens.
func (s *scratch) grow(n int) {
	s.a = grown(s.a, n*Dim)
	s.b = grown(s.b, n*Dim)
	s.norm = grown(s.norm, n*Dim)
	s.qkv = grown(s.qkv, n*3*Dim)
	s.attn = grown(s.attn, n*Dim)
	s.tmp = grown(s.tmp, n*Dim)
	s.hidden = grown(s.hidden, n*hiddenDim)
	s.scores = grown(s.scores, n)
}

// grown returns buf if it holds at least n floats, or a new buffer that
// does.
func grown(buf []float32, n int) []float32 {
	if cap(buf) >= n {
		return buf[:cap(buf)]
	}
	return make([]float32, n)
}
