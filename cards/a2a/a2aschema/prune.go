package a2aschema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Prune removes from the JSON document doc the object members that the schema at loc (CardV1
// or CardV03) does not describe, at any depth, and returns the document left and the JSON
// Pointers of the members it removed, sorted. With nothing to remove, it returns doc itself.
//
// A2A 1.0.1 §5.7 asks readers to ignore members they do not recognise, while the 1.0 schema
// forbids them (additionalProperties: false): pruning first lets a card carrying another
// version's members, or a newer spec's, pass, and a validation after it is still strict about the
// members it names. A member is described when a schema that applies at its place names it in
// properties, matches it with patternProperties, or accepts it with an additionalProperties
// schema; $ref, allOf, anyOf, oneOf and if/then/else are followed, a member named by any of them
// being kept. An object whose schemas list no members (a free-form Struct) is kept whole. Values
// are only walked, never checked: a member named with the wrong type stays for the validation to
// refuse. A member under its proto field name (default_input_modes), which the 1.0 schema allows
// beside the JSON name and ProtoJSON readers accept, is renamed to the JSON name (defaultInputModes),
// the one the card is decoded by; given both, the proto-named one is removed.
func Prune(loc string, doc []byte) ([]byte, []string, error) {
	once.Do(load)
	if initErr != nil {
		return nil, nil, initErr
	}
	s, ok := compiled[loc]
	if !ok {
		return nil, nil, fmt.Errorf("no schema %q", loc)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return nil, nil, err
	}
	var removed []string
	renamed := false
	prune(inst, []*jsonschema.Schema{s}, "", &removed, &renamed)
	if len(removed) == 0 && !renamed {
		return doc, nil, nil
	}
	slices.Sort(removed)
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	// UnmarshalJSON read numbers as json.Number, which writes back the digits it read.
	if err := enc.Encode(inst); err != nil {
		return nil, nil, err
	}
	return bytes.TrimSpace(b.Bytes()), removed, nil
}

// pointerToken escapes a member name as a JSON Pointer token (RFC 6901).
var pointerToken = strings.NewReplacer("~", "~0", "/", "~1")

// prune walks v, an instance from jsonschema.UnmarshalJSON, under the schemas that apply at
// path, deleting the members none of them describes and appending their paths to removed, and
// renaming proto field names to JSON names (setting renamed).
func prune(v any, schemas []*jsonschema.Schema, path string, removed *[]string, renamed *bool) {
	all := expand(schemas)
	switch v := v.(type) {
	case map[string]any:
		var listing []*jsonschema.Schema
		for _, s := range all {
			if len(s.Properties) > 0 || len(s.PatternProperties) > 0 || s.AdditionalProperties != nil {
				listing = append(listing, s)
			}
		}
		if len(listing) == 0 {
			return // free-form: every member is the document's own
		}
		for _, name := range slices.Sorted(maps.Keys(v)) {
			child := v[name]
			if jn := jsonName(listing, name); jn != name {
				// A proto field name (snake_case), which ProtoJSON readers accept beside the JSON
				// name: read as the JSON name, which is the one decoded. Given both, the JSON
				// name's value is the one kept, and the other is dropped as a repeat.
				delete(v, name)
				if _, both := v[jn]; both {
					*removed = append(*removed, path+"/"+pointerToken.Replace(name))
					continue
				}
				*renamed = true
				name, v[jn] = jn, child
			}
			sub, known := memberSchemas(listing, name)
			at := path + "/" + pointerToken.Replace(name)
			if !known {
				delete(v, name)
				*removed = append(*removed, at)
				continue
			}
			prune(child, sub, at, removed, renamed)
		}
	case []any:
		for i, item := range v {
			prune(item, itemSchemas(all, i), path+"/"+strconv.Itoa(i), removed, renamed)
		}
	}
}

// expand returns schemas with every schema they apply through $ref and the combinators, once each.
func expand(schemas []*jsonschema.Schema) []*jsonschema.Schema {
	var out []*jsonschema.Schema
	seen := map[*jsonschema.Schema]bool{}
	var add func(s *jsonschema.Schema)
	add = func(s *jsonschema.Schema) {
		if s == nil || seen[s] {
			return
		}
		seen[s] = true
		out = append(out, s)
		add(s.Ref)
		for _, group := range [][]*jsonschema.Schema{s.AllOf, s.AnyOf, s.OneOf, {s.If, s.Then, s.Else}} {
			for _, c := range group {
				add(c)
			}
		}
	}
	for _, s := range schemas {
		add(s)
	}
	return out
}

// jsonName returns the name under which the listing schemas name a member: name itself if one
// of them names it, else its lowerCamelCase form (the JSON name ProtoJSON gives a proto field
// such as default_input_modes) if one of them names that, else name.
func jsonName(listing []*jsonschema.Schema, name string) string {
	named := func(n string) bool {
		for _, s := range listing {
			if _, ok := s.Properties[n]; ok {
				return true
			}
		}
		return false
	}
	if named(name) || !strings.Contains(name, "_") {
		return name
	}
	parts := strings.Split(name, "_")
	for i := 1; i < len(parts); i++ {
		if parts[i] != "" {
			parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
		}
	}
	if camel := strings.Join(parts, ""); named(camel) {
		return camel
	}
	return name
}

// memberSchemas returns the schemas that apply to the member name under the listing schemas, and
// whether any of them describes it.
func memberSchemas(listing []*jsonschema.Schema, name string) ([]*jsonschema.Schema, bool) {
	var sub []*jsonschema.Schema
	known := false
	for _, s := range listing {
		matched := false
		if p, ok := s.Properties[name]; ok {
			sub, matched = append(sub, p), true
		}
		for re, p := range s.PatternProperties {
			if re.MatchString(name) {
				sub, matched = append(sub, p), true
			}
		}
		if !matched {
			switch ap := s.AdditionalProperties.(type) {
			case *jsonschema.Schema:
				sub, matched = append(sub, ap), true
			case bool:
				matched = ap
			}
		}
		known = known || matched
	}
	return sub, known
}

// itemSchemas returns the schemas that apply to item i of an array (drafts 7 and 2020-12).
func itemSchemas(all []*jsonschema.Schema, i int) []*jsonschema.Schema {
	var sub []*jsonschema.Schema
	for _, s := range all {
		switch {
		case i < len(s.PrefixItems):
			sub = append(sub, s.PrefixItems[i])
		case s.Items2020 != nil:
			sub = append(sub, s.Items2020)
		}
		switch items := s.Items.(type) {
		case *jsonschema.Schema:
			sub = append(sub, items)
		case []*jsonschema.Schema:
			if i < len(items) {
				sub = append(sub, items[i])
			} else if ap, ok := s.AdditionalItems.(*jsonschema.Schema); ok {
				sub = append(sub, ap)
			}
		}
	}
	return sub
}
