package cards_test

import (
	"testing"

	"github.com/agentcards/agentcards/cards"
)

// TestClip: a text is cut to a byte bound, never inside a character.
func TestClip(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{
		{"answered 503", 200, "answered 503"},
		{"answered 503", 8, "answered"},
		{"héllo", 2, "h"}, // é is bytes 1 and 2: cutting at 2 would split it
		{"héllo", 3, "hé"},
		{"日本", 5, "日"},
		{"", 0, ""},
	} {
		if got := cards.Clip(c.s, c.n); got != c.want {
			t.Errorf("Clip(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
}
