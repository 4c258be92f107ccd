package web_test

import (
	"encoding/json"
	"testing"
)

// jsonOf is v as JSON, for a2atest.ValidateJSON.
func jsonOf(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
