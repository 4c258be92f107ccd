package semantic

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// smallVocab is a vocabulary with the six reserved pieces and one more.
const smallVocab = `[["�",0],["<s>",0],["</s>",0],["e1",0],["e2",0],["e3",0],["▁x",null]]`

// writeModel writes a model.json listing weights, one shard holding shard,
// and vocab.json, into a new directory.
func writeModel(t *testing.T, weights []weightRecord, shard []byte, vocab string) string {
	t.Helper()
	dir := t.TempDir()
	manifest := map[string]any{
		"modelTopology": map[string]any{"node": []any{}},
		"weightsManifest": []any{map[string]any{
			"paths":   []string{"group1-shard1of1"},
			"weights": weights,
		}},
	}
	data, err := json.Marshal(manifest)
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string][]byte{
		"model.json":       data,
		"group1-shard1of1": shard,
		"vocab.json":       []byte(vocab),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// constantWeights returns the graph's scalar constants and a timing signal
// of timingWidth floats, as manifest records and shard bytes.
func constantWeights(timingWidth int) ([]weightRecord, []byte) {
	records := []weightRecord{
		{Name: maxLenName, Shape: []int{}, Dtype: "int32"},
		{Name: epsilonName, Shape: []int{}, Dtype: "float32"},
		{Name: l2EpsilonName, Shape: []int{}, Dtype: "float32"},
		{Name: timingName, Shape: []int{1, timingWidth}, Dtype: "float32"},
	}
	var shard []byte
	shard = binary.LittleEndian.AppendUint32(shard, 128)
	shard = binary.LittleEndian.AppendUint32(shard, math.Float32bits(1e-6))
	shard = binary.LittleEndian.AppendUint32(shard, math.Float32bits(1e-12))
	for range timingWidth {
		shard = binary.LittleEndian.AppendUint32(shard, math.Float32bits(1))
	}
	return records, shard
}

func TestLoadErrors(t *testing.T) {
	records, shard := constantWeights(embedDim / 2)
	badRecords, badShard := constantWeights(embedDim/2 - 1)
	tests := []struct {
		name string
		dir  string
		want string
	}{
		{"missing directory", filepath.Join(t.TempDir(), "absent"), "read vocabulary"},
		{"malformed vocabulary", writeModel(t, records, shard, `[["a", 0]`), "parse"},
		{"vocabulary entry not a pair", writeModel(t, records, shard, `[["a"],["b",0],["c",0],["d",0],["e",0],["f",0],["g",0]]`), "want [piece, score]"},
		{"short shard", writeModel(t, records, shard[:len(shard)-4], smallVocab), "shards end"},
		{"long shard", writeModel(t, records, append(shard, 0, 0, 0, 0), smallVocab), "left over"},
		{"unexpected shape", writeModel(t, badRecords, badShard, smallVocab), "want [1 128]"},
		{"missing weight", writeModel(t, records, shard, smallVocab), embeddingName + " is missing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(tt.dir)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Load: error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestLoadMalformedModelJSON(t *testing.T) {
	dir := writeModel(t, nil, nil, smallVocab)
	if err := os.WriteFile(filepath.Join(dir, "model.json"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "parse") {
		t.Fatalf("Load: error %v, want a parse error", err)
	}
}
