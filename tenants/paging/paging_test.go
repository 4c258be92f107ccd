package paging

import (
	"encoding/base64"
	"errors"
	"testing"

	"github.com/agentcards/agentcards/authz/fault"
)

// TestPageCheck: no limit is the list's default; 1 to max is taken; anything else, 0 included,
// is invalid and names limit.
func TestPageCheck(t *testing.T) {
	for _, c := range []struct {
		limit *int
		want  int
		ok    bool
	}{{nil, 20, true}, {new(1), 1, true}, {new(100), 100, true}, {new(0), 0, false}, {new(-1), 0, false}, {new(101), 0, false}} {
		got, err := Page{Limit: c.limit}.Check(20, 100)
		if c.ok && (err != nil || got != c.want) {
			t.Errorf("limit %v: %d, %v; want %d", c.limit, got, err, c.want)
		}
		if !c.ok && (!errors.Is(err, fault.Invalid) || fault.MessageOf(err) != "limit: must be between 1 and 100") {
			t.Errorf("limit %d: %d, %v; want invalid", *c.limit, got, err)
		}
	}
}

// TestCursor: a cursor gives back its position, in its own list only; a mangled one, or one of
// another list, is ErrCursor.
func TestCursor(t *testing.T) {
	type pos struct {
		A string `json:"a"`
		N int    `json:"n"`
	}
	c := EncodeCursor("things", pos{"agt_9", 3})
	var got pos
	if err := DecodeCursor("things", c, &got); err != nil || got != (pos{"agt_9", 3}) {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	b64 := base64.RawURLEncoding.EncodeToString
	for name, bad := range map[string]string{
		"another list":       EncodeCursor("others", pos{"agt_9", 3}),
		"a list's prefix":    EncodeCursor("thing", pos{"agt_9", 3}),
		"one more character": c + "x",
		"cut short":          c[:len(c)-2],
		"not base64url":      "!!" + c,
		"last character":     c[:len(c)-1] + "B",
		"no mark":            b64([]byte(`{"a":"agt_9","n":3}`)),
		"trailing data":      b64([]byte(`things:{"a":"agt_9","n":3} {}`)),
		"an unknown field":   b64([]byte(`things:{"a":"agt_9","n":3,"x":1}`)),
		"another shape":      b64([]byte(`things:"agt_9"`)),
		"empty":              "",
	} {
		if err := DecodeCursor("things", bad, &got); err != ErrCursor {
			t.Errorf("%s (%q): %v, want ErrCursor", name, bad, err)
		}
	}
	var id string
	if err := DecodeCursor("ids", EncodeCursor("ids", "0190c0de"), &id); err != nil || id != "0190c0de" {
		t.Errorf("a string position: %q, %v", id, err)
	}
}

// FuzzDecodeCursor: a cursor that decodes encodes back to one that decodes to the same value.
func FuzzDecodeCursor(f *testing.F) {
	type pos struct {
		AgentID string `json:"a"`
		N       int    `json:"n"`
	}
	f.Add(EncodeCursor("search", pos{AgentID: "rev", N: 3}))
	f.Add("")
	f.Add("not a cursor")
	f.Fuzz(func(t *testing.T, s string) {
		var p pos
		if DecodeCursor("search", s, &p) != nil {
			return
		}
		var q pos
		if err := DecodeCursor("search", EncodeCursor("search", p), &q); err != nil || q != p {
			t.Fatalf("%+v encodes to a cursor that decodes to %+v (%v)", p, q, err)
		}
		if DecodeCursor("delegations", s, &q) == nil {
			t.Fatalf("a search cursor decodes as another list's")
		}
	})
}
