package cards

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/agentcards/agentcards/authz/fault"
)

// DefaultMaxJSONDepth is how deeply a free-form JSON value (a card's metadata, a capability's
// inputSchema) may nest when the configuration names no bound (server.maxJsonDepth). The A2A
// cards of the spec and its SDKs nest under ten levels, JSON Schemas of tools a few dozen at
// most; every consumer of a stored value (merge patches, A2A rendering, signatures, the index)
// walks it, and encoding/json alone would take 10,000 levels.
const DefaultMaxJSONDepth = 64

// Shape says which members of a JSON document are its structure and which are values of their
// own, whose nesting is counted from where they start. Each member a Shape names is structure:
// its object, or each object of its array, is described by the Shape it maps to; "*" stands for
// any member. Every other member is a value of its own, named by its path ("metadata",
// "capabilities[0].inputSchema") when it nests too deep. A nil Shape makes the whole document
// one value.
type Shape map[string]Shape

// cardShape is the structure of a card document (and of a merge patch of one) above its
// free-form values: metadata, each capability's inputSchema and outputSchema,
// authRequirements.flows, the a2a members, and each a2a.skillSecurityRequirements entry.
var cardShape = Shape{
	"capabilities":     {},
	"authRequirements": {},
	"a2a":              {"skillSecurityRequirements": {}},
}

// CheckDepth refuses a document in which a value nests more than max levels of objects and
// arrays below the member it belongs to (see Shape; {} is one level, {"a": []} two), naming
// that member's path under root (which may be empty) as fault.Invalid. It reads the document
// once without recursion and, only when the document as a whole is deeper than max, walks it
// again to find the member; it stops at the first level too deep, so a document nested
// thousands of levels costs no more than its bytes. Text that is not JSON is left to its
// decoder, which says what is wrong with it.
func CheckDepth(data []byte, root string, s Shape, max int) error {
	if deepest(data) <= max {
		return nil
	}
	w := depthWalk{b: data, max: max, root: root}
	if s == nil {
		w.value(skipSpace(data, 0), 0, nil, 0)
	} else {
		w.value(skipSpace(data, 0), 0, s, -1)
	}
	return w.err
}

// checkCardDepth is CheckDepth of a card document or a merge patch of one.
func checkCardDepth(data []byte, max int) error { return CheckDepth(data, "", cardShape, max) }

// deepest is the deepest nesting of objects and arrays in data, read as JSON text (brackets in
// strings do not count, nor closing brackets that close nothing).
func deepest(data []byte) int {
	depth, most := 0, 0
	for i := 0; i < len(data); i++ {
		switch data[i] {
		case '"':
			end, _, ok := stringEnd(data, i)
			if !ok {
				return most
			}
			i = end - 1
		case '{', '[':
			if depth++; depth > most {
				most = depth
			}
		case '}', ']':
			depth = max(depth-1, 0)
		}
	}
	return most
}

// depthWalk finds the first value of a document nested deeper than max below its member.
type depthWalk struct {
	b    []byte
	max  int
	root string
	// path is the members and indexes from the document to the value being read: a member's
	// name, or "[i]" for an element. path[:leaf] is the path of the value of its own that holds
	// it, which an error names.
	path []string
	leaf int
	err  error
}

// value reads the value at b[i] and returns the index after it, or -1 when the text is not JSON
// or a value is too deep (err then says which). depth is the number of objects and arrays around
// it. In structure, s is its shape; in a value of its own, s is nil and base is the depth that
// value began at, so that its objects and arrays may reach base+max.
func (w *depthWalk) value(i, depth int, s Shape, base int) int {
	if i >= len(w.b) {
		return -1
	}
	switch w.b[i] {
	case '"':
		end, _, ok := stringEnd(w.b, i)
		if !ok {
			return -1
		}
		return end
	case '{', '[':
	default:
		end, ok := valueEnd(w.b, i)
		if !ok {
			return -1
		}
		return end
	}
	depth++
	if s == nil && depth-base > w.max {
		w.err = fault.Errorf(fault.Invalid, "%s: nested deeper than %d levels: invalid", w.name(), w.max)
		return -1
	}
	if w.b[i] == '[' {
		return w.elements(i, depth, s, base)
	}
	return w.members(i, depth, s, base)
}

// members reads the object at b[i] (its opening brace), at depth.
func (w *depthWalk) members(i, depth int, s Shape, base int) int {
	i = skipSpace(w.b, i+1)
	if i < len(w.b) && w.b[i] == '}' {
		return i + 1
	}
	for {
		if i >= len(w.b) || w.b[i] != '"' {
			return -1
		}
		end, escaped, ok := stringEnd(w.b, i)
		if !ok {
			return -1
		}
		name := string(w.b[i+1 : end-1])
		if escaped && json.Unmarshal(w.b[i:end], &name) != nil {
			return -1
		}
		if i = skipSpace(w.b, end); i >= len(w.b) || w.b[i] != ':' {
			return -1
		}
		sub, nextBase := Shape(nil), base
		if s != nil {
			var ok bool
			if sub, ok = s[name]; !ok {
				sub = s["*"]
			}
			if sub == nil {
				nextBase = depth // a value of its own begins here
			}
		}
		w.path = append(w.path, name)
		if s != nil {
			w.leaf = len(w.path)
		}
		if i = w.value(skipSpace(w.b, i+1), depth, sub, nextBase); i < 0 {
			return -1
		}
		w.path = w.path[:len(w.path)-1]
		if i = skipSpace(w.b, i); i >= len(w.b) {
			return -1
		}
		switch w.b[i] {
		case ',':
			i = skipSpace(w.b, i+1)
		case '}':
			return i + 1
		default:
			return -1
		}
	}
}

// elements reads the array at b[i] (its opening bracket), at depth. In structure, its objects
// have the array's shape and anything else is a value of its own.
func (w *depthWalk) elements(i, depth int, s Shape, base int) int {
	i = skipSpace(w.b, i+1)
	if i < len(w.b) && w.b[i] == ']' {
		return i + 1
	}
	for n := 0; ; n++ {
		sub, nextBase := s, base
		if s != nil && (i >= len(w.b) || w.b[i] != '{') {
			sub, nextBase = nil, depth
		}
		w.path = append(w.path, "["+strconv.Itoa(n)+"]")
		if s != nil {
			w.leaf = len(w.path)
		}
		if i = w.value(i, depth, sub, nextBase); i < 0 {
			return -1
		}
		w.path = w.path[:len(w.path)-1]
		if i = skipSpace(w.b, i); i >= len(w.b) {
			return -1
		}
		switch w.b[i] {
		case ',':
			i = skipSpace(w.b, i+1)
		case ']':
			return i + 1
		default:
			return -1
		}
	}
}

// name is the path of the value that is too deep: its member under the document's structure,
// as the card's messages name fields ("capabilities[0].inputSchema").
func (w *depthWalk) name() string {
	var b strings.Builder
	b.WriteString(w.root)
	for _, seg := range w.path[:w.leaf] {
		if !strings.HasPrefix(seg, "[") && b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(seg)
	}
	if b.Len() == 0 {
		return "the body"
	}
	return b.String()
}
