package cards

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	segjson "github.com/segmentio/encoding/json"

	"github.com/agentcards/agentcards/authz/fault"
)

// Decode parses a card document as a client sends it, its free-form values nested at most
// DefaultMaxJSONDepth levels (see DecodeWithin).
func Decode(data []byte) (Card, error) { return DecodeWithin(data, DefaultMaxJSONDepth) }

// DecodeWithin parses a card document as a client sends it. Unknown top-level fields are
// rejected by name, server-owned fields are dropped, and a wrong type names the field it was
// found in. A free-form value (metadata, a capability's inputSchema) nested more than maxDepth
// levels is refused, naming its field, before any decoder walks it.
func DecodeWithin(data []byte, maxDepth int) (Card, error) {
	// Most documents name client fields only, exactly as the card does: for them the strict
	// decoding below is all the work, and the map that checks the names would cost as much
	// again. Any other document, or one the decoder refuses, goes the general way, which reads
	// the same card from it or names its problem. The pass that tells a plain document also
	// measures how deeply its members nest; the depth of any other is measured on its own.
	plain, depth := scanClientObject(data)
	if !plain || depth > maxDepth {
		if err := checkCardDepth(data, maxDepth); err != nil {
			return Card{}, err
		}
	}
	if plain {
		if c, ok := decodeCardFast(data); ok {
			return c, nil
		}
		if c, err := decodeCard(data); err == nil {
			return c, nil
		}
	}
	return decodeAnyCard(data)
}

// decodeCardFast is decodeCard by segmentio/encoding, in about a third of the time: a document
// of valid UTF-8 that it takes whole is read as encoding/json reads it (FuzzDecodeCard compares
// the two on every input). Anything it refuses goes to encoding/json, whose errors the API
// shows; so does invalid UTF-8, which encoding/json replaces and segmentio might not.
func decodeCardFast(data []byte) (Card, bool) {
	if !utf8.Valid(data) {
		return Card{}, false
	}
	var c Card
	if rest, err := segjson.Parse(data, &c, segjson.DisallowUnknownFields); err != nil || len(rest) != 0 {
		return Card{}, false
	}
	c.dropNulls()
	return c, true
}

// decodeAnyCard is Decode's general way: the member names are checked on a map of them first.
func decodeAnyCard(data []byte) (Card, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return Card{}, describeJSONError(err)
	}
	if top == nil {
		return Card{}, fault.New(fault.Malformed, "the card must be a JSON object: malformed JSON")
	}
	var unknown []string
	server := false
	for k := range top {
		switch {
		case serverFields[k]:
			delete(top, k)
			server = true
		case !clientFields[k]:
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return Card{}, fault.Errorf(fault.Invalid, "unknown field(s): %s: invalid", strings.Join(unknown, ", "))
	}
	// The members' names are now known to be exactly the card's (encoding/json alone would
	// match them in any case). Without server fields the document decodes as it came; with
	// them (a card read back and sent again), it is encoded again without them, so that
	// whatever they hold is ignored.
	clean := data
	if server {
		var err error
		if clean, err = json.Marshal(top); err != nil {
			return Card{}, fmt.Errorf("re-encode card: %w", err)
		}
	}
	c, err := decodeCard(clean)
	if err != nil {
		return Card{}, describeJSONError(err)
	}
	return c, nil
}

// decodeCard decodes a document whose member names are known to be the card's, refusing
// unknown fields below them, and drops explicit nulls.
func decodeCard(data []byte) (Card, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var c Card
	if err := dec.Decode(&c); err != nil {
		return Card{}, err
	}
	c.dropNulls()
	return c, nil
}

// DecodeStrict decodes one JSON value into v, refusing unknown fields (by their exact names,
// all of them named: CheckNames) and trailing data, with errors that name the field
// (ErrMalformed or ErrInvalid). The API uses it for every small body.
func DecodeStrict(data []byte, v any) error {
	if err := CheckNames(data, reflect.TypeOf(v)); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return describeJSONError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fault.New(fault.Malformed, "unexpected data after the JSON value: malformed JSON")
	}
	return nil
}

// describeJSONError turns encoding/json's errors into messages that name the field. An error of
// our own passes as it is; one it does not know, such as a type's own UnmarshalJSON refusing a
// value (go-jose's for a key it cannot read), is kept for the log only: its text is a library's.
func describeJSONError(err error) error {
	if fault.KindOf(err) != "" {
		return err
	}
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return fault.Errorf(fault.Malformed, "invalid JSON at byte %d: %s: malformed JSON", syntax.Offset, syntax.Error())
	case errors.As(err, &typ):
		field := jsonPath(typ.Field)
		if field == "" {
			return fault.Errorf(fault.Malformed, "expected a JSON object, got %s: malformed JSON", typ.Value)
		}
		return fault.Errorf(fault.Invalid, "%s: expected %s, got %s: invalid", field, jsonKind(typ.Type.Kind().String()), typ.Value)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return fault.New(fault.Malformed, "the body is empty or cut short: malformed JSON")
	}
	if msg, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return fault.Errorf(fault.Invalid, "unknown field %s: invalid", msg)
	}
	return fault.Wrap(err, fault.Malformed, "a value in the body is not in a form its field takes: malformed JSON")
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

// validUTF8 makes the card's free-form values valid UTF-8 (ValidUTF8), as its strings are once
// decoded: its document is stored as text, which Postgres and MySQL refuse otherwise, and then
// reads the same on every database.
func (c *Card) validUTF8() {
	c.Metadata = ValidUTF8(c.Metadata)
	for i := range c.Capabilities {
		c.Capabilities[i].InputSchema = ValidUTF8(c.Capabilities[i].InputSchema)
		c.Capabilities[i].OutputSchema = ValidUTF8(c.Capabilities[i].OutputSchema)
	}
	if c.AuthRequirements != nil {
		c.AuthRequirements.Flows = ValidUTF8(c.AuthRequirements.Flows)
	}
	if a := c.A2A; a != nil {
		a.Extensions, a.Interfaces = ValidUTF8(a.Extensions), ValidUTF8(a.Interfaces)
		a.SecuritySchemes, a.SecurityRequirements = ValidUTF8(a.SecuritySchemes), ValidUTF8(a.SecurityRequirements)
		for k, v := range a.SkillSecurityRequirements {
			if !utf8.Valid(v) {
				a.SkillSecurityRequirements[k] = ValidUTF8(v)
			}
		}
	}
}

// ValidUTF8 returns raw JSON text with each byte that is not part of a UTF-8 character replaced
// by U+FFFD, which is how encoding/json reads such a byte in a string (the only place valid JSON
// may hold one); raw itself when it is valid.
func ValidUTF8(raw []byte) []byte {
	if utf8.Valid(raw) {
		return raw
	}
	out := make([]byte, 0, len(raw)+8)
	for len(raw) > 0 {
		r, n := utf8.DecodeRune(raw)
		if r == utf8.RuneError && n == 1 {
			out = utf8.AppendRune(out, utf8.RuneError)
		} else {
			out = append(out, raw[:n]...)
		}
		raw = raw[n:]
	}
	return out
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
	c.ID, c.Revision, c.CreatedAt, c.UpdatedAt = "", 0, time.Time{}, time.Time{}
	c.Liveness = nil
	b, err := Marshal(c)
	if err != nil {
		return nil, err
	}
	doc, ok := bytes.CutSuffix(b, serverSuffix)
	if !ok {
		return nil, errors.New("card document: the server fields are not the card's last")
	}
	return append(doc, '}'), nil
}

// serverSuffix is how Marshal ends a card whose server fields are zero. They are the last fields
// of Card, so cutting the suffix off leaves the client fields, in one encoding instead of an
// encoding, a decoding into a map and another encoding.
var serverSuffix = func() []byte {
	b, _ := Marshal(Card{})
	return b[bytes.Index(b, []byte(`,"id":`)):]
}()

// Marshal encodes a card as encoding/json does, byte for byte, in about half the time: by
// segmentio/encoding, which a write calls several times a card (its stored document, the index's
// outage copy, the answer). FuzzDecodeCard compares the two encoders on every card it decodes.
func Marshal(c Card) ([]byte, error) { return segjson.Marshal(c) }

// AppendMarshal appends Marshal(c) to b, doc being c's stored document (MarshalDocument of c):
// the document's client fields as they are, and the server fields encoded on their own, which is
// what Marshal writes, byte for byte (the server fields come last), without encoding the card
// again. A card's liveness, which its document does not hold, goes in between, where Marshal
// puts it.
func AppendMarshal(b []byte, c Card, doc []byte) ([]byte, error) {
	if len(doc) < 2 || doc[len(doc)-1] != '}' {
		m, err := Marshal(c)
		return append(b, m...), err
	}
	server, err := Marshal(Card{ID: c.ID, Revision: c.Revision, CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt})
	if err != nil {
		return b, err
	}
	at := bytes.Index(server, serverSuffix[:len(`,"id":`)])
	if at < 0 {
		return b, errors.New("card answer: the server fields are not the card's last")
	}
	b = append(b, doc[:len(doc)-1]...)
	if c.Liveness != nil {
		if b, err = AppendLiveness(append(b, `,"liveness":`...), c.Liveness); err != nil {
			return b, err
		}
	}
	return append(b, server[at:]...), nil
}

// AppendLiveness appends l as Marshal writes it; a liveness of a state alone (most cards', in
// most answers) without encoding it.
func AppendLiveness(b []byte, l *Liveness) ([]byte, error) {
	if l.LastSeenAt == nil && l.Probe == nil {
		b = append(b, `{"state":`...)
		b = strconv.AppendQuote(b, string(l.State))
		return append(b, '}'), nil
	}
	enc, err := segjson.Marshal(l)
	return append(b, enc...), err
}

// MarshalDocument returns the stored form of c: its client fields as compact JSON.
func MarshalDocument(c Card) ([]byte, error) { return c.document() }

// UnmarshalDocument reads a stored document back; stores call it and then set the server fields.
//
// Stored documents are the service's own encoding of validated cards, read back by every card
// read, search page and index build (100k of them in a build): they are decoded by
// segmentio/encoding, which reads the same card as encoding/json (FuzzDecodeCard compares them on
// every stored document) in about a third of the time. Clients' documents are read by it too
// when they are plain cards (Decode), and by encoding/json, for its error messages, otherwise.
func UnmarshalDocument(doc []byte) (Card, error) {
	var c Card
	if err := segjson.Unmarshal(doc, &c); err != nil {
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
		return nil, fault.New(fault.Malformed, "a merge patch for a card must be a JSON object: malformed JSON")
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
		return nil, fault.New(fault.Malformed, "invalid character after the JSON value: malformed JSON")
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
