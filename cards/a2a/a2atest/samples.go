package a2atest

import (
	"os"
	"path/filepath"
	"testing"
)

// SamplesDir is the directory of the A2A cards published by the spec and the SDKs
// (web/testdata/a2a-samples), found above the test's working directory, which is the directory
// of the package under test, wherever in the module that package is.
func SamplesDir(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "web", "testdata", "a2a-samples")
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the working directory: the A2A samples cannot be found")
		}
		dir = parent
	}
}

// ReadSample is the sample file as it is published.
func ReadSample(t testing.TB, file string) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(SamplesDir(t), file))
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// SampleV1 is the spec's 1.0 sample card, a fresh copy on each call.
func SampleV1(t testing.TB) map[string]any {
	t.Helper()
	return DecodeCard(t, ReadSample(t, "spec-v1.0-georoute-agent-card.json"))
}
