package webtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// maxDiffs bounds the differences reported, so that a wholly different document stays readable.
const maxDiffs = 20

// JSONEqual fails the test unless got and want are equal as JSON values (member order, spacing
// and number spelling aside), listing each differing member by its path, e.g. $.skills[0].id.
func JSONEqual(t testing.TB, what string, got, want []byte) {
	t.Helper()
	g, err := decode(got)
	if err != nil {
		t.Errorf("%s: got is not one JSON value: %v\n%s", what, err, got)
		return
	}
	w, err := decode(want)
	if err != nil {
		t.Errorf("%s: want is not one JSON value: %v\n%s", what, err, want)
		return
	}
	report(t, what, g, w)
}

// SameJSON is JSONEqual for decoded values (maps, slices, structs): both are compared as the
// JSON documents encoding/json makes of them.
func SameJSON(t testing.TB, what string, got, want any) {
	t.Helper()
	g, err := json.Marshal(got)
	if err != nil {
		t.Fatalf("%s: encode got: %v", what, err)
	}
	w, err := json.Marshal(want)
	if err != nil {
		t.Fatalf("%s: encode want: %v", what, err)
	}
	JSONEqual(t, what, g, w)
}

func report(t testing.TB, what string, got, want any) {
	t.Helper()
	var diffs []string
	diff("$", got, want, &diffs)
	if len(diffs) == 0 {
		return
	}
	if len(diffs) > maxDiffs {
		diffs = append(diffs[:maxDiffs], fmt.Sprintf("... and %d more", len(diffs)-maxDiffs))
	}
	t.Errorf("%s differs as JSON:\n%s", what, strings.Join(diffs, "\n"))
}

// decode reads exactly one JSON value, keeping numbers as written so that none is rounded.
func decode(doc []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("data after the value")
	}
	return v, nil
}

// diff appends to out one line per difference between got and want, below path.
func diff(path string, got, want any, out *[]string) {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			break
		}
		keys := make([]string, 0, len(g)+len(w))
		for k := range g {
			keys = append(keys, k)
		}
		for k := range w {
			if _, ok := g[k]; !ok {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			gv, inGot := g[k]
			wv, inWant := w[k]
			switch p := member(path, k); {
			case !inGot:
				*out = append(*out, fmt.Sprintf("%s: missing, want %s", p, compact(wv)))
			case !inWant:
				*out = append(*out, fmt.Sprintf("%s: unexpected %s", p, compact(gv)))
			default:
				diff(p, gv, wv, out)
			}
		}
		return
	case []any:
		g, ok := got.([]any)
		if !ok {
			break
		}
		if len(g) != len(w) {
			*out = append(*out, fmt.Sprintf("%s: %d elements, want %d", path, len(g), len(w)))
		}
		for i := range max(len(g), len(w)) {
			p := fmt.Sprintf("%s[%d]", path, i)
			switch {
			case i >= len(g):
				*out = append(*out, fmt.Sprintf("%s: missing, want %s", p, compact(w[i])))
			case i >= len(w):
				*out = append(*out, fmt.Sprintf("%s: unexpected %s", p, compact(g[i])))
			default:
				diff(p, g[i], w[i], out)
			}
		}
		return
	case json.Number:
		if g, ok := got.(json.Number); ok && sameNumber(g, w) {
			return
		}
	default: // string, bool or nil
		if got == want {
			return
		}
	}
	*out = append(*out, fmt.Sprintf("%s:\n  got  %s\n  want %s", path, compact(got), compact(want)))
}

var identifier = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$]*$`)

// member is the path of member k of the object at path.
func member(path, k string) string {
	if identifier.MatchString(k) {
		return path + "." + k
	}
	return fmt.Sprintf("%s[%q]", path, k)
}

// sameNumber compares two JSON numbers exactly, so 1, 1.0 and 1e0 are one value.
func sameNumber(a, b json.Number) bool {
	x, okx := new(big.Rat).SetString(a.String())
	y, oky := new(big.Rat).SetString(b.String())
	if !okx || !oky {
		return a == b
	}
	return x.Cmp(y) == 0
}

func compact(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%#v", v)
	}
	return string(b)
}
