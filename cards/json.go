package cards

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Decode parses a card document as a client sends it. Unknown top-level fields are rejected by
// name, server-owned fields are dropped, and a wrong type names the field it was found in.
func Decode(data []byte) (Card, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return Card{}, describeJSONError(err)
	}
	if top == nil {
		return Card{}, fmt.Errorf("the card must be a JSON object: %w", ErrMalformed)
	}
	var unknown []string
	for k := range top {
		switch {
		case serverFields[k]:
			delete(top, k)
		case !clientFields[k]:
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return Card{}, fmt.Errorf("unknown field(s): %s: %w", strings.Join(unknown, ", "), ErrInvalid)
	}
	clean, err := json.Marshal(top)
	if err != nil {
		return Card{}, fmt.Errorf("re-encode card: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(clean))
	dec.DisallowUnknownFields()
	var c Card
	if err := dec.Decode(&c); err != nil {
		return Card{}, describeJSONError(err)
	}
	c.dropNulls()
	return c, nil
}

// DecodeStrict decodes one JSON value into v, refusing unknown fields and trailing data, with
// errors that name the field (ErrMalformed or ErrInvalid). The API uses it for every small body.
func DecodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return describeJSONError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("unexpected data after the JSON value: %w", ErrMalformed)
	}
	return nil
}

// describeJSONError turns encoding/json's errors into messages that name the field.
func describeJSONError(err error) error {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return fmt.Errorf("invalid JSON at byte %d: %s: %w", syntax.Offset, syntax.Error(), ErrMalformed)
	case errors.As(err, &typ):
		field := jsonPath(typ.Field)
		if field == "" {
			return fmt.Errorf("expected a JSON object, got %s: %w", typ.Value, ErrMalformed)
		}
		return fmt.Errorf("%s: expected %s, got %s: %w", field, jsonKind(typ.Type.Kind().String()), typ.Value, ErrInvalid)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("the body is empty or cut short: %w", ErrMalformed)
	}
	if msg, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return fmt.Errorf("unknown field %s: %w", msg, ErrInvalid)
	}
	return fmt.Errorf("%s: %w", strings.TrimPrefix(err.Error(), "json: "), ErrMalformed)
}

// jsonPath drops from encoding/json's field path the Go names of embedded structs (such as
// "Query." in "Query.protocols"): API field names start with a lower-case letter.
func jsonPath(field string) string {
	parts := strings.Split(field, ".")
	kept := parts[:0]
	for _, p := range parts {
		if r, _ := utf8.DecodeRuneInString(p); !unicode.IsUpper(r) {
			kept = append(kept, p)
		}
	}
	return strings.Join(kept, ".")
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "a string"
	case "slice", "array":
		return "an array"
	case "struct", "map":
		return "an object"
	case "bool":
		return "a boolean"
	case "int", "int64", "int32", "uint", "uint64", "float64", "float32":
		return "a number"
	}
	return goKind
}

// dropNulls treats an explicit JSON null in a free-form field as absent, and drops the
// server-owned import record a client may have echoed back.
func (c *Card) dropNulls() {
	c.Metadata = NonNull(c.Metadata)
	for i := range c.Capabilities {
		c.Capabilities[i].InputSchema = NonNull(c.Capabilities[i].InputSchema)
		c.Capabilities[i].OutputSchema = NonNull(c.Capabilities[i].OutputSchema)
	}
	if c.AuthRequirements != nil {
		c.AuthRequirements.Flows = NonNull(c.AuthRequirements.Flows)
	}
	if c.A2A != nil {
		c.A2A.Import = nil // server-owned
		c.A2A.Extensions = NonNull(c.A2A.Extensions)
		c.A2A.Interfaces = NonNull(c.A2A.Interfaces)
		c.A2A.SecuritySchemes = NonNull(c.A2A.SecuritySchemes)
		c.A2A.SecurityRequirements = NonNull(c.A2A.SecurityRequirements)
	}
}

// NonNull returns raw, or nil when it is empty or the JSON null: a null in a free-form field
// means the field is absent.
func NonNull(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return nil
	}
	return raw
}

// document is the card as its client wrote it: the JSON stored in the database and the base a
// merge patch applies to. Server-owned fields are not part of it.
func (c Card) document() ([]byte, error) {
	c.ID, c.Revision = "", 0
	var top map[string]json.RawMessage
	b, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &top); err != nil {
		return nil, err
	}
	for k := range serverFields {
		delete(top, k)
	}
	return json.Marshal(top)
}

// MarshalDocument returns the stored form of c: its client fields as compact JSON.
func MarshalDocument(c Card) ([]byte, error) { return c.document() }

// UnmarshalDocument reads a stored document back; stores call it and then set the server fields.
func UnmarshalDocument(doc []byte) (Card, error) {
	var c Card
	if err := json.Unmarshal(doc, &c); err != nil {
		return Card{}, fmt.Errorf("stored card document: %w", err)
	}
	c.normalize()
	return c, nil
}

// MergePatch applies an RFC 7396 JSON merge patch to the document doc.
func MergePatch(doc, patch []byte) ([]byte, error) {
	p, err := decodeAny(patch)
	if err != nil {
		return nil, describeJSONError(err)
	}
	if _, ok := p.(map[string]any); !ok {
		return nil, fmt.Errorf("a merge patch for a card must be a JSON object: %w", ErrMalformed)
	}
	target, err := decodeAny(doc)
	if err != nil {
		return nil, fmt.Errorf("stored card document: %w", err)
	}
	return json.Marshal(mergeValue(target, p))
}

// decodeAny decodes one JSON value, keeping numbers exact, and refuses trailing data.
func decodeAny(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("invalid character after the JSON value: %w", ErrMalformed)
	}
	return v, nil
}

func mergeValue(target, patch any) any {
	pm, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	tm, ok := target.(map[string]any)
	if !ok {
		tm = map[string]any{}
	}
	for k, v := range pm {
		if v == nil {
			delete(tm, k)
			continue
		}
		tm[k] = mergeValue(tm[k], v)
	}
	return tm
}
