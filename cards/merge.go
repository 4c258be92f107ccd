package cards

import (
	"encoding/json"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/agentcards/agentcards/authz/fault"
)

// applyPatch merges the JSON merge patch into doc, a card's document as Marshal writes it, and
// returns the card it makes, decoded (DecodeWithin maxDepth), of the agent agentID and validated.
// The merge of written members (mergeDocument) is taken when it applies and its card is valid;
// anything else, errors included, is as MergePatch's document makes it: the two write members in
// other orders (so a decoder names another field first) and free-form values in other forms (so
// documents differ in size), and a patch's errors are best told once, the same way.
func applyPatch(doc, patch []byte, agentID string, maxDepth int) (Card, error) {
	if merged, ok := mergeDocument(doc, patch); ok {
		if c, err := patchedCard(merged, agentID, maxDepth); err == nil {
			return c, nil
		}
	}
	merged, err := MergePatch(doc, patch)
	if err != nil {
		return Card{}, err
	}
	return patchedCard(merged, agentID, maxDepth)
}

// patchedCard decodes (DecodeWithin maxDepth) and validates a patched document of the agent
// agentID.
func patchedCard(merged []byte, agentID string, maxDepth int) (Card, error) {
	c, err := DecodeWithin(merged, maxDepth)
	if err != nil {
		return Card{}, err
	}
	if c.AgentID != agentID {
		return Card{}, fault.Errorf(fault.Invalid, "agentId cannot be changed (it is %q): invalid", agentID)
	}
	if _, err := prepare(&c); err != nil {
		return Card{}, err
	}
	return c, nil
}

// maxMergeDepth is the deepest nesting of a patch that mergeDocument takes (each level of a
// merge reads what lies below it again); a deeper one goes to MergePatch.
const maxMergeDepth = 32

// mergeDocument is MergePatch for doc, a document as Marshal writes it (a valid JSON object),
// worked on the members as they are written instead of decoded values: members the patch does
// not name are copied as they are, values the patch sets are taken as it wrote them, and only
// objects both sides hold are taken apart, a level at a time. A card's PATCH spent more on
// decoding both documents into maps and encoding the map again than on anything else of its
// own. It reads the same JSON value as MergePatch gives (FuzzMergePatch compares them), members
// in another order; ok is false where it does not apply, and MergePatch, which says what is
// wrong, is used instead: a patch that is not valid UTF-8 JSON, not an object, nested deeper
// than maxMergeDepth, or with member names that a decoder could take for one another (they
// differ only in case: encoding/json matches a struct's fields so, and the last one written
// wins, so that the order of the members, which the two merges write differently, would
// decide), and a stored document that is not valid UTF-8.
func mergeDocument(doc, patch []byte) ([]byte, bool) {
	if !utf8.Valid(patch) || !json.Valid(patch) || !utf8.Valid(doc) || !plainPatch(patch, 0) {
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

// plainPatch reports whether the value v of a patch (valid JSON), at depth, and what it holds
// are no deeper than maxMergeDepth and hold no object with two member names that differ only
// in case.
func plainPatch(v []byte, depth int) bool {
	if depth > maxMergeDepth {
		return false
	}
	i := skipSpace(v, 0)
	if i == len(v) {
		return true
	}
	switch v[i] {
	case '{':
		ms, ok := membersOf(v)
		if !ok {
			return false
		}
		folded := make(map[string]bool, len(ms))
		for _, m := range ms {
			k := foldName(m.name)
			if folded[k] {
				return false
			}
			folded[k] = true
			if !plainPatch(m.value, depth+1) {
				return false
			}
		}
	case '[':
		for i = skipSpace(v, i+1); i < len(v) && v[i] != ']'; {
			end, ok := valueEnd(v, i)
			if !ok || !plainPatch(v[i:end], depth+1) {
				return false
			}
			if i = skipSpace(v, end); i < len(v) && v[i] == ',' {
				i = skipSpace(v, i+1)
			}
		}
	}
	return true
}

// foldName is the name with every character replaced by the smallest of those it equals
// ignoring case (Unicode simple folding, which covers encoding/json's: "K" and the Kelvin sign
// fold to "k"), so that two names equal ignoring case have the same foldName.
func foldName(name string) string {
	ascii := true
	for i := 0; i < len(name); i++ {
		if name[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return strings.ToUpper(name) // an ASCII letter's smallest equal is its capital
	}
	return strings.Map(func(r rune) rune {
		least := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			least = min(least, f)
		}
		return least
	}, name)
}

// merger writes a merged object; bad is set where the merge is not mergeDocument's to make (a
// value of the target that is no object after all, a patch name equal but for case to another
// of its object in the target).
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
	var folded map[string]bool // the target's names, folded (foldName)
	for _, pm := range p {
		if held[pm.name] || isNull(pm.value) {
			continue
		}
		if folded == nil {
			folded = make(map[string]bool, len(t))
			for _, tm := range t {
				folded[foldName(tm.name)] = true
			}
		}
		if folded[foldName(pm.name)] {
			m.bad = true // a new name equal but for case to one the target holds
		}
		key(pm.key)
		m.value(nil, pm.value)
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
