package cards

import (
	"bytes"
	"encoding"
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/agentcards/agentcards/authz/fault"
)

// encoding/json matches a member to a field in any case ("AGENTID" fills agentId), and refuses
// only the first member it does not know. The API's names are exact, and a caller is told every
// member that is not one of them at once: CheckNames reads the members of a JSON value against
// the type it decodes into, at every depth.

// CheckNames refuses the members of data that t does not have, by their exact JSON names:
// each one named, with the name it differs from only in case where there is one. Values decoded
// by their own decoder, any JSON (json.RawMessage, interfaces) and maps' keys are not checked.
// data that is not JSON passes: the decoder says what is wrong with it.
func CheckNames(data []byte, t reflect.Type) error {
	unknown := UnknownMembers(data, t)
	if len(unknown) == 0 {
		return nil
	}
	problems := make([]string, len(unknown))
	for i, u := range unknown {
		problems[i] = u.Path + ": unknown member"
		for _, known := range u.Known {
			if strings.EqualFold(known, u.Name) {
				problems[i] += " (the name is " + known + ")"
				break
			}
		}
	}
	return fault.Errorf(fault.Invalid, "%s: invalid", strings.Join(problems, "; "))
}

// UnknownMember is a member of a JSON value that the type it decodes into does not have: where it is
// (as "capabilities[0].Name"), its name, and the names its object does have, sorted.
type UnknownMember struct {
	Path, Name string
	Known      []string
}

// UnknownMembers lists the members of data that t does not have by their exact JSON names, at
// every depth, in the order of their paths' keys; CheckNames words them for the API, and a door
// may word them its own way.
func UnknownMembers(data []byte, t reflect.Type) []UnknownMember {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return nil
	}
	var unknown []UnknownMember
	checkNames(v, t, "", &unknown)
	return unknown
}

var (
	rawMessage  = reflect.TypeFor[json.RawMessage]()
	unmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textual     = reflect.TypeFor[encoding.TextUnmarshaler]()
)

func checkNames(v any, t reflect.Type, path string, unknown *[]UnknownMember) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == rawMessage || reflect.PointerTo(t).Implements(unmarshaler) || reflect.PointerTo(t).Implements(textual) {
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			return
		}
		fields := jsonFields(t)
		var known []string
		for _, name := range sortedKeys(obj) {
			if ft, ok := fields[name]; ok {
				checkNames(obj[name], ft, join(path, name), unknown)
				continue
			}
			if known == nil {
				known = slices.Sorted(maps.Keys(fields))
			}
			*unknown = append(*unknown, UnknownMember{Path: join(path, name), Name: name, Known: known})
		}
	case reflect.Slice, reflect.Array:
		if list, ok := v.([]any); ok {
			for i, item := range list {
				checkNames(item, t.Elem(), path+"["+strconv.Itoa(i)+"]", unknown)
			}
		}
	case reflect.Map:
		if obj, ok := v.(map[string]any); ok {
			for _, k := range sortedKeys(obj) {
				checkNames(obj[k], t.Elem(), join(path, k), unknown)
			}
		}
	}
}

// jsonFields are the JSON names of a struct's fields, those of embedded structs included, as
// encoding/json reads them.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	fields := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		ft := f.Type
		if f.Anonymous && name == "" {
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				for n, et := range jsonFields(ft) {
					if _, ok := fields[n]; !ok {
						fields[n] = et
					}
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fields[name] = ft
	}
	return fields
}

func sortedKeys(m map[string]any) []string { return slices.Sorted(maps.Keys(m)) }

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}
