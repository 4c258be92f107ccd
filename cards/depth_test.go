package cards

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentcards/agentcards/authz/fault"
)

// nested is a JSON value of exactly depth levels: objects inside one another, an array at the
// bottom when arrays is set ({"a":{"a":[]}} is three).
func nested(depth int, arrays bool) string {
	if depth == 0 {
		return `"x"`
	}
	inner := "{}"
	if arrays {
		inner = "[1]"
	}
	return strings.Repeat(`{"a":`, depth-1) + inner + strings.Repeat("}", depth-1)
}

// TestCheckCardDepth: each free-form value of a card may nest max levels, counted from the
// member it is (metadata, capabilities[i].inputSchema, a2a.skillSecurityRequirements.x): at the
// bound it is taken, one deeper it is refused as invalid, naming that member, by DecodeWithin
// too. Each document holds its value at %s, inside extra levels of its own.
func TestCheckCardDepth(t *testing.T) {
	const max = 8
	for _, c := range []struct {
		doc, field string
		extra      int
	}{
		{`{"agentId":"a","metadata":%s}`, "metadata", 0},
		{`{"agentId":"a","capabilities":[{"name":"c"},{"name":"d","inputSchema":%s}]}`, "capabilities[1].inputSchema", 0},
		{`{"agentId":"a","capabilities":[{"outputSchema":%s}]}`, "capabilities[0].outputSchema", 0},
		{`{"agentId":"a","authRequirements":{"type":"oauth2","flows":%s}}`, "authRequirements.flows", 0},
		{`{"a2a":{"streaming":true,"securitySchemes":%s}}`, "a2a.securitySchemes", 0},
		{`{"a2a":{"extensions":[%s]}}`, "a2a.extensions", 1},
		{`{"a2a":{"skillSecurityRequirements":{"c":[1],"d\u0065":%s}}}`, "a2a.skillSecurityRequirements.de", 0},
		{`{"tags":%s}`, "tags", 0},
		{`{"capabilities":[[%s]]}`, "capabilities[0]", 1},
		{` { "agentId" : "a" , "metadata" : {"s": "}}]]{{[[\"", "v": %s} } `, "metadata", 1},
	} {
		for _, arrays := range []bool{false, true} {
			at := strings.Replace(c.doc, "%s", nested(max-c.extra, arrays), 1)
			if err := checkCardDepth([]byte(at), max); err != nil {
				t.Errorf("at the bound: %v\n%s", err, at)
			}
			if _, err := DecodeWithin([]byte(at), max); fault.MessageOf(err) == c.field+": nested deeper than 8 levels: invalid" {
				t.Errorf("DecodeWithin at the bound: %v\n%s", err, at)
			}
			deeper := strings.Replace(c.doc, "%s", nested(max-c.extra+1, arrays), 1)
			want := c.field + ": nested deeper than 8 levels: invalid"
			if err := checkCardDepth([]byte(deeper), max); !errors.Is(err, fault.Invalid) || fault.MessageOf(err) != want {
				t.Errorf("one deeper: %v, want %q\n%s", err, want, deeper)
			}
			if _, err := DecodeWithin([]byte(deeper), max); fault.MessageOf(err) != want {
				t.Errorf("DecodeWithin one deeper: %v, want %q\n%s", err, want, deeper)
			}
		}
	}
}

// TestCheckDepthOtherShapes: a document checked as one value (nil Shape) is named by its root;
// malformed text is left to its decoder; a document thousands of levels deep is refused at
// once, without recursion through it.
func TestCheckDepthOtherShapes(t *testing.T) {
	if err := CheckDepth([]byte(nested(5, true)), "context", nil, 5); err != nil {
		t.Fatal(err)
	}
	if err := CheckDepth([]byte(nested(6, true)), "context", nil, 5); fault.MessageOf(err) != "context: nested deeper than 5 levels: invalid" {
		t.Fatalf("context one deeper: %v", err)
	}
	if err := CheckDepth([]byte(`{"card":{"skills":[{"x":`+nested(6, false)+`}]}}`), "", Shape{"card": {"skills": {}}}, 5); fault.MessageOf(err) != "card.skills[0].x: nested deeper than 5 levels: invalid" {
		t.Fatalf("a skill's member: %v", err)
	}
	// Text that is not JSON before it is too deep is its decoder's to refuse; text too deep
	// before it ends is refused for its depth.
	for _, bad := range []string{`{"metadata":{"a" 1}}` + strings.Repeat("[", 20), `{"metadata":"` + strings.Repeat("[", 20), `{"metadata":[1,,` + strings.Repeat("[", 20)} {
		if err := checkCardDepth([]byte(bad), 5); err != nil {
			t.Errorf("malformed %q: %v", bad, err)
		}
	}
	if err := checkCardDepth([]byte(`{"metadata":`+strings.Repeat("[", 20)), 5); fault.MessageOf(err) != "metadata: nested deeper than 5 levels: invalid" {
		t.Errorf("unterminated and too deep: %v", err)
	}
	deep := `{"agentId":"a","metadata":` + strings.Repeat("[", 500_000) + strings.Repeat("]", 500_000) + "}"
	if _, err := DecodeWithin([]byte(deep), DefaultMaxJSONDepth); fault.MessageOf(err) != "metadata: nested deeper than 64 levels: invalid" {
		t.Fatalf("500,000 levels: %v", err)
	}
}

// TestDecodeWithinSamples: cards as clients send them decode within the default bound, by the
// short way and the general one (server fields) alike.
func TestDecodeWithinSamples(t *testing.T) {
	for _, doc := range []string{seedCard, `{"agentId":"a","name":"n","revision":3,"metadata":` + nested(DefaultMaxJSONDepth, false) + `}`} {
		if _, err := Decode([]byte(doc)); err != nil {
			t.Errorf("%v\n%s", err, doc)
		}
	}
	if _, err := Decode([]byte(`{"agentId":"a","name":"n","revision":3,"metadata":` + nested(DefaultMaxJSONDepth+1, false) + `}`)); fault.MessageOf(err) != "metadata: nested deeper than 64 levels: invalid" {
		t.Fatalf("a read-back card one deeper: %v", err)
	}
}

// FuzzCheckDepth: on JSON text, checkCardDepth refuses every document in which a value nests
// deeper than the bound below its member (as a walk of the decoded document finds), and
// refuses none that is not deeper than the bound as a whole; DecodeWithin refuses the same.
func FuzzCheckDepth(f *testing.F) {
	for _, s := range []string{seedCard, `{"metadata":{"a":[{}]}}`, `{"capabilities":[{"inputSchema":[[[]]]},[[1]]]}`,
		`{"a2a":{"skillSecurityRequirements":{"x":[[[]]]},"extensions":[{"a":{}}]}}`, `[[[[{}]]]]`, `{"metadata":"[[[[[["}`,
		`{"metadata":{}, "metadata":[[[[[]]]]]}`, `{"capabilities":[{"n\u0061me":[[[[]]]]}]}`} {
		f.Add([]byte(s))
	}
	const max = 3
	f.Fuzz(func(t *testing.T, data []byte) {
		err := checkCardDepth(data, max)
		if err != nil && deepest(data) <= max {
			t.Fatalf("refused %q, no deeper than %d: %v", data, max, err)
		}
		if err != nil && (!errors.Is(err, fault.Invalid) || !strings.Contains(fault.MessageOf(err), ": nested deeper than 3 levels: invalid")) {
			t.Fatalf("refused %q with %v", data, err)
		}
		if _, derr := DecodeWithin(data, max); err != nil && fault.MessageOf(derr) != fault.MessageOf(err) {
			t.Fatalf("DecodeWithin refuses %q with %v, the check with %v", data, derr, err)
		}
		var v any
		if json.Unmarshal(data, &v) != nil {
			return
		}
		if tooDeep(v, cardShape, max) && err == nil {
			t.Fatalf("took %q, deeper than %d", data, max)
		}
	})
}

// tooDeep reports whether the decoded document v, of shape s, holds a value of its own nested
// deeper than max: CheckDepth's rule, walked on the values.
func tooDeep(v any, s Shape, max int) bool {
	switch x := v.(type) {
	case map[string]any:
		for k, m := range x {
			sub, ok := s[k]
			if !ok {
				sub = s["*"]
			}
			if sub == nil && depthOf(m) > max || sub != nil && tooDeep(m, sub, max) {
				return true
			}
		}
	case []any:
		for _, el := range x {
			if _, obj := el.(map[string]any); obj && tooDeep(el, s, max) || !obj && depthOf(el) > max {
				return true
			}
		}
	}
	return false
}

// depthOf is how deeply v nests objects and arrays.
func depthOf(v any) int {
	d := 0
	switch x := v.(type) {
	case map[string]any:
		for _, m := range x {
			d = max(d, depthOf(m))
		}
		return d + 1
	case []any:
		for _, el := range x {
			d = max(d, depthOf(el))
		}
		return d + 1
	}
	return 0
}
