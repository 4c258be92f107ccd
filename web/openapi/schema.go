package openapi

import (
	"encoding/json"
	"fmt"
	"path"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
)

var (
	timeType = reflect.TypeFor[time.Time]()
	rawType  = reflect.TypeFor[json.RawMessage]()
)

// schemas derives JSON schemas from Go types as encoding/json writes and the service's strict
// decoder reads them: a named struct becomes a component, referred to by its name.
type schemas struct {
	comp  openapi3.Schemas
	names map[reflect.Type]string
	taken map[string]reflect.Type
}

func newSchemas() *schemas {
	return &schemas{comp: openapi3.Schemas{}, names: map[reflect.Type]string{}, taken: map[string]reflect.Type{}}
}

// field is one JSON member of a struct, embedded structs' members in place.
type field struct {
	name     string
	in       string // where REST carries an input's field (package web/api)
	optional bool   // omitempty or omitzero: absent when empty
	doc      string
	enum     []string // the values it takes (its `enum` tag)
	min, max *float64 // the bounds of a number (its `min` and `max` tags)
	typ      reflect.Type
}

// fields lists t's JSON members as encoding/json sees them.
func fields(t reflect.Type) []field {
	var out []field
	for i := range t.NumField() {
		sf := t.Field(i)
		tag := sf.Tag.Get("json")
		if sf.Anonymous && sf.Type.Kind() == reflect.Struct && tag == "" {
			out = append(out, fields(sf.Type)...)
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" || !sf.IsExported() {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		optional := strings.Contains(","+opts+",", ",omitempty,") || strings.Contains(","+opts+",", ",omitzero,")
		var enum []string
		if e := sf.Tag.Get("enum"); e != "" {
			enum = strings.Split(e, ",")
		}
		out = append(out, field{name: name, in: sf.Tag.Get("in"), optional: optional, doc: sf.Tag.Get("doc"), enum: enum,
			min: bound(sf.Tag.Get("min")), max: bound(sf.Tag.Get("max")), typ: sf.Type})
	}
	return out
}

// bound reads a `min` or `max` tag; nil when there is none.
func bound(tag string) *float64 {
	n, err := strconv.ParseFloat(tag, 64)
	if err != nil {
		return nil
	}
	return &n
}

// ref is the schema of values of t.
func (s *schemas) ref(t reflect.Type) *openapi3.SchemaRef {
	switch {
	case t == timeType:
		return openapi3.NewSchemaRef("", openapi3.NewDateTimeSchema())
	case t == rawType:
		// Any JSON value: the member holds a document the service keeps as sent.
		return openapi3.NewSchemaRef("", openapi3.NewSchema())
	}
	switch t.Kind() {
	case reflect.Pointer:
		return nullable(s.ref(t.Elem()))
	case reflect.String:
		return openapi3.NewSchemaRef("", openapi3.NewStringSchema())
	case reflect.Bool:
		return openapi3.NewSchemaRef("", openapi3.NewBoolSchema())
	case reflect.Int64, reflect.Uint64:
		return openapi3.NewSchemaRef("", openapi3.NewInt64Schema())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32:
		return openapi3.NewSchemaRef("", openapi3.NewIntegerSchema())
	case reflect.Float32, reflect.Float64:
		return openapi3.NewSchemaRef("", openapi3.NewFloat64Schema())
	case reflect.Slice, reflect.Array:
		a := openapi3.NewArraySchema()
		a.Items = s.ref(t.Elem())
		return openapi3.NewSchemaRef("", a)
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			panic(fmt.Sprintf("openapi: %v: a map's keys must be strings", t))
		}
		return openapi3.NewSchemaRef("", openapi3.NewObjectSchema().WithAdditionalProperties(s.ref(t.Elem()).Value))
	case reflect.Struct:
		if t.Name() == "" {
			return openapi3.NewSchemaRef("", s.object(t, ""))
		}
		return s.named(t, t.Name(), func() *openapi3.Schema { return s.object(t, "") })
	}
	panic(fmt.Sprintf("openapi: %v: no JSON schema for its kind", t))
}

// named returns a reference to the component of t, called name (or, if another type has that
// name, name prefixed with t's package), building it with build the first time.
func (s *schemas) named(t reflect.Type, name string, build func() *openapi3.Schema) *openapi3.SchemaRef {
	if n, ok := s.names[t]; ok {
		return openapi3.NewSchemaRef("#/components/schemas/"+n, s.comp[n].Value)
	}
	if other, ok := s.taken[name]; ok && other != t {
		pkg := path.Base(t.PkgPath())
		name = strings.ToUpper(pkg[:1]) + pkg[1:] + name
	}
	s.names[t], s.taken[name] = name, t
	// Placed before it is built, so a type that contains itself refers to itself.
	v := &openapi3.Schema{}
	s.comp[name] = openapi3.NewSchemaRef("", v)
	*v = *build()
	return openapi3.NewSchemaRef("#/components/schemas/"+name, v)
}

// object is the schema of a struct's JSON members, those carried in the body when in is
// "body" (an input's untagged fields), else all of them. It admits no other member: the
// service decodes bodies strictly, and answers only the members its types name.
//
// Members named in optional are not required (a body member its route's path also carries),
// and the members ignoredMembers names for t or a struct it embeds are admitted, of any value.
func (s *schemas) object(t reflect.Type, in string, optional ...string) *openapi3.Schema {
	o := openapi3.NewObjectSchema().WithoutAdditionalProperties()
	o.Properties = openapi3.Schemas{}
	for _, f := range fields(t) {
		if in == "body" && f.in != "" {
			continue
		}
		o.Properties[f.name] = described(s.fieldRef(f), f.doc)
		if !f.optional && !slices.Contains(optional, f.name) {
			o.Required = append(o.Required, f.name)
		}
	}
	for _, e := range append([]reflect.Type{t}, embedded(t)...) {
		for name, doc := range ignoredMembers[e] {
			o.Properties[name] = openapi3.NewSchemaRef("", &openapi3.Schema{Description: doc})
		}
	}
	return o
}

// embedded are the structs t embeds, at any depth.
func embedded(t reflect.Type) []reflect.Type {
	var out []reflect.Type
	for i := range t.NumField() {
		if sf := t.Field(i); sf.Anonymous && sf.Type.Kind() == reflect.Struct {
			out = append(out, sf.Type)
			out = append(out, embedded(sf.Type)...)
		}
	}
	return out
}

// fieldRef is the schema of a field's values: its type's, narrowed to its enum or bounds if it
// has them.
func (s *schemas) fieldRef(f field) *openapi3.SchemaRef {
	r := s.ref(f.typ)
	if (f.min != nil || f.max != nil) && r.Ref == "" {
		v := *r.Value
		v.Min, v.Max = f.min, f.max
		return openapi3.NewSchemaRef("", &v)
	}
	if len(f.enum) == 0 || r.Ref != "" {
		return r
	}
	if f.typ.Kind() == reflect.Slice {
		// The enum of a list is its items'.
		a := *r.Value
		a.Items = s.fieldRef(field{typ: f.typ.Elem(), enum: f.enum})
		return openapi3.NewSchemaRef("", &a)
	}
	v := *r.Value
	v.Enum = nil
	for _, e := range f.enum {
		v.Enum = append(v.Enum, e)
	}
	if v.Nullable {
		v.Enum = append(v.Enum, nil) // OpenAPI 3.0: a nullable enum lists null too
	}
	return openapi3.NewSchemaRef("", &v)
}

// nullable is r, or null.
func nullable(r *openapi3.SchemaRef) *openapi3.SchemaRef {
	if r.Ref == "" {
		v := *r.Value
		v.Nullable = true
		return openapi3.NewSchemaRef("", &v)
	}
	// OpenAPI 3.0 ignores the siblings of a $ref: the reference goes in an allOf.
	return openapi3.NewSchemaRef("", &openapi3.Schema{Nullable: true, AllOf: openapi3.SchemaRefs{r}})
}

// described is r with a description (a reference wrapped in an allOf to carry it).
func described(r *openapi3.SchemaRef, doc string) *openapi3.SchemaRef {
	if doc == "" {
		return r
	}
	if r.Ref == "" {
		v := *r.Value
		v.Description = doc
		return openapi3.NewSchemaRef("", &v)
	}
	return openapi3.NewSchemaRef("", &openapi3.Schema{Description: doc, AllOf: openapi3.SchemaRefs{r}})
}
