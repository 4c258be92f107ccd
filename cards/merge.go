package cards

import (
	"encoding/json"
	"unicode/utf8"
)

// mergeDocument is MergePatch for doc, a document as Marshal writes it (a valid JSON object),
// worked on the members as they are written instead of decoded values: members the patch does
// not name are copied as they are, values the patch sets are taken as it wrote them, and only
// objects both sides hold are taken apart, a level at a time. A card's PATCH spent more on
// decoding both documents into maps and encoding the map again than on anything else of its
// own. It reads the same JSON value as MergePatch gives (FuzzMergePatch compares them), members
// in another order; ok is false where it does not apply (a patch that is not valid UTF-8 JSON
// or not an object), and MergePatch, which says what is wrong, is used instead.
func mergeDocument(doc, patch []byte) ([]byte, bool) {
	if !utf8.Valid(patch) || !json.Valid(patch) {
		return nil, false
	}
	p, ok := membersOf(patch)
	if !ok {
		return nil, false
	}
	t, ok := membersOf(doc)
	if !ok {
		return nil, false
	}
	m := merger{out: make([]byte, 0, len(doc)+len(patch))}
	m.members(t, p)
	return m.out, m.ok()
}

// merger writes a merged object; bad is set if a value of the target was no object after all.
type merger struct {
	out []byte
	bad bool
}

func (m *merger) ok() bool { return !m.bad }

// member is one member of an object: its name (unescaped) and its name and value as written.
type member struct {
	name       string
	key, value []byte
}

// members is an object's members in order, a name repeated counting as its last occurrence
// (as a decoder into a map takes it), with nulls only as written.
type members []member

// membersOf splits the object b, valid JSON, into its members; ok is false if b is not an
// object.
func membersOf(b []byte) (members, bool) {
	i := skipSpace(b, 0)
	if i == len(b) || b[i] != '{' {
		return nil, false
	}
	var out members
	at := map[string]int{}
	for i = skipSpace(b, i+1); i < len(b) && b[i] != '}'; {
		end, escaped, ok := stringEnd(b, i)
		if !ok {
			return nil, false
		}
		key := b[i:end]
		name := string(key[1 : len(key)-1])
		if escaped && json.Unmarshal(key, &name) != nil {
			return nil, false
		}
		i = skipSpace(b, end)
		if i == len(b) || b[i] != ':' {
			return nil, false
		}
		i = skipSpace(b, i+1)
		vend, ok := valueEnd(b, i)
		if !ok {
			return nil, false
		}
		m := member{name: name, key: key, value: b[i:vend]}
		if n, seen := at[name]; seen {
			out[n] = m
		} else {
			at[name] = len(out)
			out = append(out, m)
		}
		if i = skipSpace(b, vend); i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
		}
	}
	return out, true
}

func isNull(v []byte) bool { return string(v) == "null" }

// members appends the object of the members t with the patch's members p merged in (RFC 7396):
// a null removes a member, an object merges into the member's object (or into an empty one),
// anything else replaces it.
func (m *merger) members(t, p members) {
	patched := make(map[string][]byte, len(p))
	for _, pm := range p {
		patched[pm.name] = pm.value
	}
	m.out = append(m.out, '{')
	n := 0
	key := func(k []byte) {
		if n > 0 {
			m.out = append(m.out, ',')
		}
		n++
		m.out = append(append(m.out, k...), ':')
	}
	held := make(map[string]bool, len(t))
	for _, tm := range t {
		held[tm.name] = true
		pv, ok := patched[tm.name]
		switch {
		case !ok:
			key(tm.key)
			m.out = append(m.out, tm.value...)
		case !isNull(pv):
			key(tm.key)
			m.value(tm.value, pv)
		}
	}
	for _, pm := range p {
		if !held[pm.name] && !isNull(pm.value) {
			key(pm.key)
			m.value(nil, pm.value)
		}
	}
	m.out = append(m.out, '}')
}

// value appends what the patch value p makes of the target value t (nil: none).
func (m *merger) value(t, p []byte) {
	if !isObject(p) {
		m.out = append(m.out, p...)
		return
	}
	pm, _ := membersOf(p) // an object of the patch, which is valid JSON
	var tm members
	if isObject(t) {
		var ok bool
		if tm, ok = membersOf(t); !ok {
			m.bad = true
		}
	}
	m.members(tm, pm)
}
