package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"reflect"
	"slices"
	"strings"

	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/web/api"
	"github.com/agentcards/agentcards/web/catalog"
	"github.com/agentcards/agentcards/web/client"
)

// The CLI reads its caller's JSON (-f FILE, and the flags of fields holding JSON) as strictly as
// REST reads a body: a member the input has no field of is refused, and so is one that differs
// from a field's name only in case, which encoding/json alone would take. Every such member, at
// any depth, is named in one answer.

// readInputFile reads -f into the input and returns the problems of its content. A body field
// (cards.update's patch, a batch's cards) takes the whole file; otherwise the file's members are
// the input's fields. A card is read as the service reads one (its server-owned members, as
// `cards get` prints them, are dropped), so a card fetched, edited and sent back goes as it is.
// The error is a file that does not read.
func readInputFile(r catalog.Request, name string, in reflect.Value) ([]string, error) {
	var data []byte
	var err error
	if name == "-" {
		data, err = io.ReadAll(stdin)
	} else {
		data, err = os.ReadFile(name)
	}
	if err != nil {
		return nil, fmt.Errorf("-f: %w", err)
	}
	at := "-f " + name
	for _, f := range client.Fields(r.In) {
		if f.In != "body" {
			continue
		}
		target := in.Elem().FieldByIndex(f.Index)
		if f.Type == reflect.TypeFor[[]api.CardInput]() {
			var items []json.RawMessage
			if err := json.Unmarshal(data, &items); err != nil {
				return []string{at + ": want a JSON array of cards: " + jsonProblem(err)}, nil
			}
			list := make([]api.CardInput, len(items))
			var problems []string
			for i, item := range items {
				problems = append(problems, decodeCardInput(item, &list[i], fmt.Sprintf("%s: cards[%d]", at, i))...)
			}
			target.Set(reflect.ValueOf(list))
			return problems, nil
		}
		return decodeValue(data, target, at), nil
	}
	ci := in.Elem().FieldByName("CardInput")
	if !ci.IsValid() || ci.Type() != reflect.TypeFor[api.CardInput]() {
		return decodeValue(data, in.Elem(), at), nil
	}
	// The card's members, and the tenant (or an If-Match revision) beside them if given.
	var members map[string]json.RawMessage
	if err := json.Unmarshal(data, &members); err != nil || members == nil {
		return []string{at + ": want a JSON object"}, nil
	}
	card, rest := map[string]json.RawMessage{}, map[string]json.RawMessage{}
	for k, v := range members {
		if slices.Contains(api.CardFields, k) {
			card[k] = v
		} else {
			rest[k] = v // an input field, or a member the card and input lack, named below
		}
	}
	cardJSON, _ := json.Marshal(card)
	restJSON, _ := json.Marshal(rest)
	if unknown := append(unknownMembers(restJSON, r.In, ""), unknownMembers(cardJSON, reflect.TypeFor[cards.Card](), "")...); len(unknown) > 0 {
		slices.Sort(unknown)
		return []string{at + ": " + unknownList(unknown)}, nil
	}
	if err := cards.DecodeStrict(restJSON, in.Interface()); err != nil {
		return []string{at + ": " + trimKind(err.Error())}, nil
	}
	return decodeCardInput(cardJSON, ci.Addr().Interface().(*api.CardInput), at), nil
}

// decodeCardInput reads a card as the service does (cards.Decode) into a card input, its
// members' names checked exactly at every depth; it returns the problems, each starting with at.
func decodeCardInput(data []byte, ci *api.CardInput, at string) []string {
	if unknown := unknownMembers(data, reflect.TypeFor[cards.Card](), ""); len(unknown) > 0 {
		return []string{at + ": " + unknownList(unknown)}
	}
	c, err := cards.Decode(data)
	if err != nil {
		return []string{at + ": " + trimKind(err.Error())}
	}
	raw, _ := json.Marshal(c)
	_ = json.Unmarshal(raw, ci) // the card's members but those the server owns, which ci lacks
	return nil
}

// decodeValue decodes JSON into target, a value of any type, refusing members its type lacks
// (naming them all) and values of the wrong type; it returns the problems, each starting with at.
func decodeValue(data []byte, target reflect.Value, at string) []string {
	if target.Type() == reflect.TypeFor[json.RawMessage]() {
		if !json.Valid(data) {
			return []string{at + ": not JSON"}
		}
		target.SetBytes(bytes.TrimSpace(data))
		return nil
	}
	if unknown := unknownMembers(data, target.Type(), ""); len(unknown) > 0 {
		return []string{at + ": " + unknownList(unknown)}
	}
	p := reflect.New(target.Type())
	if err := cards.DecodeStrict(data, p.Interface()); err != nil {
		return []string{at + ": " + trimKind(err.Error())}
	}
	target.Set(p.Elem())
	return nil
}

// unknownMembers lists the members of the JSON data, at any depth below path, that values of t
// do not have by that exact name, each with the name it may have meant. Free-form values (raw
// JSON, maps to anything, interfaces) hold any member; data that is not JSON, or not of t's
// shape, is left to the decoder to name.
func unknownMembers(data []byte, t reflect.Type, path string) []string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == reflect.TypeFor[json.RawMessage]():
		return nil
	case t.Kind() == reflect.Slice || t.Kind() == reflect.Array:
		var items []json.RawMessage
		if json.Unmarshal(data, &items) != nil {
			return nil
		}
		var out []string
		for i, item := range items {
			out = append(out, unknownMembers(item, t.Elem(), fmt.Sprintf("%s[%d]", path, i))...)
		}
		return out
	case t.Kind() == reflect.Map:
		var members map[string]json.RawMessage
		if json.Unmarshal(data, &members) != nil {
			return nil
		}
		var out []string
		for _, k := range slices.Sorted(mapKeys(members)) {
			out = append(out, unknownMembers(members[k], t.Elem(), join(path, k))...)
		}
		return out
	case t.Kind() != reflect.Struct || reflect.PointerTo(t).Implements(reflect.TypeFor[json.Unmarshaler]()):
		return nil
	}
	var members map[string]json.RawMessage
	if json.Unmarshal(data, &members) != nil {
		return nil
	}
	known := jsonMembers(t)
	names := make([]string, 0, len(known))
	for name := range known {
		names = append(names, name)
	}
	var out []string
	for _, k := range slices.Sorted(mapKeys(members)) {
		ft, ok := known[k]
		if !ok {
			out = append(out, unknownName(join(path, k), k, names))
			continue
		}
		out = append(out, unknownMembers(members[k], ft, join(path, k))...)
	}
	return out
}

// jsonMembers are the members of struct t by their JSON names, as encoding/json writes them:
// an embedded struct's in place.
func jsonMembers(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		sf := t.Field(i)
		tag := sf.Tag.Get("json")
		if sf.Anonymous && sf.Type.Kind() == reflect.Struct && tag == "" {
			for k, v := range jsonMembers(sf.Type) {
				out[k] = v
			}
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if name == "-" || !sf.IsExported() {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		out[name] = sf.Type
	}
	return out
}

// unknownName names a member that is not one, with the one it may have meant.
func unknownName(path, name string, names []string) string {
	if near := nearest(name, names); near != "" {
		return fmt.Sprintf("%s (did you mean %s?)", path, near)
	}
	return path
}

// unknownList is the problem of unknown members, in REST's words.
func unknownList(paths []string) string {
	return "unknown field(s): " + strings.Join(paths, ", ")
}

// trimKind drops the error kind REST's messages end with (": invalid"): the CLI says it once.
func trimKind(msg string) string {
	return strings.TrimSuffix(msg, ": invalid")
}

// jsonProblem is a JSON error's message without encoding/json's prefix.
func jsonProblem(err error) string {
	return strings.TrimPrefix(err.Error(), "json: ")
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
