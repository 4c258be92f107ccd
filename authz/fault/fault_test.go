package fault

import (
	"errors"
	"fmt"
	"io/fs"
	"testing"
)

// TestKindAndMessage: the kind and the client message of an error survive wrapping, and the
// text of a cause never reaches the message.
func TestKindAndMessage(t *testing.T) {
	cause := fmt.Errorf("dial tcp 10.0.0.7:5432: %w", fs.ErrNotExist)
	for _, c := range []struct {
		name string
		err  error
		kind Kind
		msg  string
	}{
		{"Errorf", Errorf(NotFound, "card %q not found", "agt_1"), NotFound, `card "agt_1" not found`},
		{"wrapped Errorf", fmt.Errorf("import: %w", Errorf(Invalid, "limit: must be between 1 and %d", 100)), Invalid, "limit: must be between 1 and 100"},
		{"Wrap", Wrap(cause, FetchFailed, "the URL could not be fetched"), FetchFailed, "the URL could not be fetched"},
		{"bare kind", fmt.Errorf("secret %s: %w", "x", Conflict), Conflict, "conflict"},
		{"no kind", cause, "", ""},
		{"nil", nil, "", ""},
	} {
		if got := KindOf(c.err); got != c.kind {
			t.Errorf("%s: kind %q, want %q", c.name, got, c.kind)
		}
		if got := MessageOf(c.err); got != c.msg {
			t.Errorf("%s: message %q, want %q", c.name, got, c.msg)
		}
		if c.kind != "" && !errors.Is(c.err, c.kind) {
			t.Errorf("%s: errors.Is(err, %s) is false", c.name, c.kind)
		}
	}
	w := Wrap(cause, FetchFailed, "the URL could not be fetched")
	if !errors.Is(w, fs.ErrNotExist) || errors.Is(w, NotFound) {
		t.Errorf("Wrap: the cause is not reachable, or the kind matches another kind")
	}
	if got := w.Error(); got != "the URL could not be fetched: dial tcp 10.0.0.7:5432: file does not exist" {
		t.Errorf("Error() for the logs: %q", got)
	}
}
