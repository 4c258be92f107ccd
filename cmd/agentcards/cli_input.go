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
	if unknown := append(unknownMembers(restJSON, r.In), unknownMembers(cardJSON, reflect.TypeFor[cards.Card]())...); len(unknown) > 0 {
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
	if unknown := unknownMembers(data, reflect.TypeFor[cards.Card]()); len(unknown) > 0 {
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
	if unknown := unknownMembers(data, target.Type()); len(unknown) > 0 {
		return []string{at + ": " + unknownList(unknown)}
	}
	p := reflect.New(target.Type())
	if err := cards.DecodeStrict(data, p.Interface()); err != nil {
		return []string{at + ": " + trimKind(err.Error())}
	}
	target.Set(p.Elem())
	return nil
}

// unknownMembers names the members of data that t does not have (cards.UnknownMembers), each
// with the name it may have meant.
func unknownMembers(data []byte, t reflect.Type) []string {
	var out []string
	for _, u := range cards.UnknownMembers(data, t) {
		out = append(out, unknownName(u.Path, u.Name, u.Known))
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
