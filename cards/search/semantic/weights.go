package semantic

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
)

// graphModel is the part of a TF.js model.json that Load needs: the list of
// weights and the shard files that hold them.
type graphModel struct {
	WeightsManifest []struct {
		Paths   []string       `json:"paths"`
		Weights []weightRecord `json:"weights"`
	} `json:"weightsManifest"`
}

// weightRecord describes one weight in the manifest.
type weightRecord struct {
	Name  string `json:"name"`
	Shape []int  `json:"shape"`
	Dtype string `json:"dtype"`
}

// tensor is one weight decoded from the shards. Exactly one of floats and
// ints is set, according to the weight's dtype.
type tensor struct {
	shape  []int
	floats []float32
	ints   []int32
}

// weightSet holds every weight of the model by name.
type weightSet map[string]tensor

// readWeights reads model.json in dir and decodes every weight it lists from
// the shard files.
func readWeights(dir string) (weightSet, error) {
	path := filepath.Join(dir, "model.json")
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("semantic: read model: %w", err)
	}
	var model graphModel
	if err := json.Unmarshal(data, &model); err != nil {
		return nil, fmt.Errorf("semantic: parse %s: %w", path, err)
	}
	if len(model.WeightsManifest) == 0 {
		return nil, fmt.Errorf("semantic: %s has no weightsManifest", path)
	}
	weights := weightSet{}
	for _, group := range model.WeightsManifest {
		buf, err := readShards(dir, group.Paths)
		if err != nil {
			return nil, err
		}
		if err := weights.decode(group.Weights, buf); err != nil {
			return nil, fmt.Errorf("semantic: shards %v: %w", group.Paths, err)
		}
	}
	return weights, nil
}

// readShards concatenates the shard files of one manifest group.
func readShards(dir string, paths []string) ([]byte, error) {
	var buf []byte
	for _, p := range paths {
		part, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(p)))
		if err != nil {
			return nil, fmt.Errorf("semantic: read weights: %w", err)
		}
		buf = append(buf, part...)
	}
	return buf, nil
}

// decode splits buf into the listed weights, in order, and adds them to w.
func (w weightSet) decode(records []weightRecord, buf []byte) error {
	for _, r := range records {
		n := 1
		for _, d := range r.Shape {
			if d < 0 {
				return fmt.Errorf("weight %s has negative dimension in shape %v", r.Name, r.Shape)
			}
			n *= d
		}
		if len(buf) < 4*n {
			return fmt.Errorf("weight %s: shards end after %d of its %d bytes", r.Name, len(buf), 4*n)
		}
		t := tensor{shape: r.Shape}
		switch r.Dtype {
		case "float32":
			t.floats = make([]float32, n)
			for i := range t.floats {
				t.floats[i] = math.Float32frombits(binary.LittleEndian.Uint32(buf[4*i:]))
			}
		case "int32":
			t.ints = make([]int32, n)
			for i := range t.ints {
				t.ints[i] = int32(binary.LittleEndian.Uint32(buf[4*i:]))
			}
		default:
			return fmt.Errorf("weight %s has unsupported dtype %q", r.Name, r.Dtype)
		}
		w[r.Name] = t
		buf = buf[4*n:]
	}
	if len(buf) != 0 {
		return fmt.Errorf("%d bytes left over after the last weight", len(buf))
	}
	return nil
}

// floats returns the float32 weight called name, checking its shape.
func (w weightSet) floats(name string, shape ...int) ([]float32, error) {
	t, ok := w[name]
	switch {
	case !ok:
		return nil, fmt.Errorf("semantic: model has no weight %s", name)
	case t.floats == nil:
		return nil, fmt.Errorf("semantic: weight %s is not float32", name)
	case !slices.Equal(t.shape, shape):
		return nil, fmt.Errorf("semantic: weight %s has shape %v, want %v", name, t.shape, shape)
	}
	return t.floats, nil
}

// scalarFloat returns the float32 scalar weight called name.
func (w weightSet) scalarFloat(name string) (float32, error) {
	v, err := w.floats(name)
	if err != nil {
		return 0, err
	}
	return v[0], nil
}

// scalarInt returns the int32 scalar weight called name.
func (w weightSet) scalarInt(name string) (int, error) {
	t, ok := w[name]
	switch {
	case !ok:
		return 0, fmt.Errorf("semantic: model has no weight %s", name)
	case t.ints == nil || len(t.shape) != 0:
		return 0, fmt.Errorf("semantic: weight %s is not an int32 scalar", name)
	}
	return int(t.ints[0]), nil
}
