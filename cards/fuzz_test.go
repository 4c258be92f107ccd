package cards

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

// seedCard is a valid card document, the fuzzers' starting point.
const seedCard = `{"agentId": "rev", "name": "Code Reviewer", "description": "Reviews pull requests.",
 "protocols": ["a2a", "http"], "capabilities": [{"name": "review_pr", "inputSchema": {"type": "object"}, "tags": ["code"]}],
 "authRequirements": {"type": "bearer", "scopes": ["read"]}, "endpoint": "https://agents.example.com/rev",
 "resources": [{"uri": "https://github.com/acme/*", "access": "read"}], "tags": ["code"], "metadata": {"team": "web", "n": 12345678901234567890},
 "visibility": "public", "status": "deprecated", "deprecation": {"message": "use rev2", "successor": "rev2"}}`

// FuzzDecodeCard: decoding never panics, and a card that decodes and validates is stored as a
// document that decodes to the same document again (what is stored reads back as stored), and
// that UnmarshalDocument reads as encoding/json does.
func FuzzDecodeCard(f *testing.F) {
	for _, s := range []string{seedCard, `{}`, `[]`, `{"agentId": 1}`, `{"agentId": "a", "name": "b", "id": "x", "revision": 3}`,
		`{"agentId": "a", "name": "b", "capabilities": [{"name": "c", "inputSchema": null}]}`, `{"agentId": "a\u0000"}`,
		// Where two decoders could part: case, repeated members, escapes, raw values, nulls.
		`{"agentId": "a", "name": "b", "capabilities": [{"NAME": "x", "Tags": ["t"]}]}`,
		`{"agentId": "a", "name": "b", "metadata": { "k" : [1, 2.50, 1e3, "\u00e9"] }}`,
		`{"agentId": "a", "name": "\ud800x\udc00"}`,
		`{"agentId": "a", "name": "b", "authRequirements": {"type": "bearer"}, "authRequirements": {"scopes": ["s"]}}`,
		`{"agentId": "a", "name": "b", "capabilities": [{"name": "c", "tags": null, "examples": [null]}]}`,
		`{"agentId": "a", "tags": ["x"], "tags": null}`,
		`{"agentId": "a", "name": "b", "a2a": {"streaming": true, "skillSecurityRequirements": {"c": [{"s": []}]}, "provider": null}}`,
		`{"agentId": "a", "name": "\u00e9\t\/"}`,
		`{"agentId": "a", "deprecation": {"message": "m"}, "deprecation": {"successor": "s"}}`,
		`{"agentId": "a", "capabilities": [{"name": "c"}], "capabilities": [{"title": "t"}]}`,
		`{"agentId": "a", "a2a": {"streaming": 1}}`, `{"agentId": "a", "tags": [1]}`, `{"agentId": "a", "name": "b", "capabilities": {}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// Clients' documents: the fast decoder takes only what encoding/json takes, and reads it
		// the same.
		if fast, ok := decodeCardFast(data); ok && plainClientObject(data) {
			std, err := decodeCard(data)
			if err != nil {
				t.Fatalf("the fast decoder takes a document encoding/json refuses (%v):\n%s", err, data)
			}
			if !reflect.DeepEqual(fast, std) {
				t.Fatalf("the fast decoder reads a document otherwise than encoding/json:\n%#v\n%#v\n%s", fast, std, data)
			}
		}
		c, err := Decode(data)
		if err != nil {
			return
		}
		sameEncoding(t, c)
		doc, err := prepare(&c)
		if err != nil {
			return
		}
		sameAnswer(t, c, doc)
		again, err := Decode(doc)
		if err != nil {
			t.Fatalf("a stored document does not decode: %v\n%s", err, doc)
		}
		// The stored document reads back (UnmarshalDocument, the fast decoder) as encoding/json
		// reads it.
		fast, err := UnmarshalDocument(doc)
		if err != nil {
			t.Fatalf("a stored document does not read back: %v\n%s", err, doc)
		}
		var std Card
		if err := json.Unmarshal(doc, &std); err != nil {
			t.Fatalf("encoding/json refuses a stored document: %v\n%s", err, doc)
		}
		std.normalize()
		if !reflect.DeepEqual(fast, std) {
			t.Fatalf("the stored document reads back otherwise than encoding/json reads it:\n%#v\n%#v\n%s", fast, std, doc)
		}
		doc2, err := prepare(&again)
		if err != nil {
			t.Fatalf("a stored document does not validate: %v\n%s", err, doc)
		}
		if !bytes.Equal(doc, doc2) {
			t.Fatalf("the document changed on the way back:\n%s\n%s", doc, doc2)
		}
	})
}

// sameAnswer fails t unless AppendMarshal, given the card's stored document, appends what Marshal
// gives, for the card with server fields, and with liveness (which the document does not hold).
func sameAnswer(t *testing.T, c Card, doc []byte) {
	t.Helper()
	c.ID, c.Revision = "0190c3a4-5b6d-7e8f-9a0b-1c2d3e4f5a6b", int64(len(doc))
	c.CreatedAt, c.UpdatedAt = time.Unix(1700000000, 123456789).UTC(), time.Unix(1700000000+int64(len(doc)), 0).In(time.FixedZone("x", 3600))
	seen := time.Unix(1700000001, 5).UTC()
	for _, live := range []*Liveness{nil, {State: Unknown}, {State: Online, LastSeenAt: &seen}} {
		c.Liveness = live
		want, err := Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		got, err := AppendMarshal([]byte("[1,"), c, doc)
		if err != nil || string(got) != "[1,"+string(want) {
			t.Fatalf("AppendMarshal over the stored document: %v\n%s\nwant Marshal's\n[1,%s", err, got, want)
		}
	}
}

// FuzzMergePatch: applying a merge patch never panics, gives JSON, and applying the same patch
// to its result changes nothing more (RFC 7396 patches are idempotent).
func FuzzMergePatch(f *testing.F) {
	f.Add([]byte(seedCard), []byte(`{"description": "x", "tags": null, "metadata": {"team": null, "a": {"b": 1}}}`))
	f.Add([]byte(`{"a": [1, 2]}`), []byte(`{"a": {"b": 1}}`))
	f.Add([]byte(`{}`), []byte(`null`))
	f.Add([]byte(`{"a": 1}`), []byte(`[1]`))
	// Where the merge of written members could part from the merge of decoded values: names
	// repeated or escaped, nulls at depth, objects replacing other values and the reverse.
	f.Add([]byte(seedCard), []byte(`{"metadata": {"a": 1}, "metadata": {"b": null, "c": {"d": null}}}`))
	f.Add([]byte(seedCard), []byte(`{"na\u006de": "x", "tags": ["a", null], "description": null, "a2a": {"provider": {"organization": "o", "url": null}}}`))
	f.Add([]byte(`{"agentId": "a", "name": "b", "metadata": {"k": 1, "k": {"x": 1}, "\u003c": [null]}}`), []byte(`{"metadata": {"k": {"y": 2}, "<": null}}`))
	f.Add([]byte(`{"agentId": "a", "name": "b", "metadata": {"k": [1]}}`), []byte(`{"metadata": {"k": {"y": null, "z": 1.50}}, "capabilities": {"x": 1}}`))
	f.Add([]byte(seedCard), []byte("{\"name\": \"\xff\"}"))
	f.Add([]byte(seedCard), []byte(`{"Name": "x", "id": "y"}`))
	f.Add([]byte(seedCard), []byte(`{"version": "2", "version": null, "metadata": {"new": {"a": 1}, "new": null}}`))
	// Names equal but for case (a decoder takes the last written), errors a decoder names in
	// document order, a size the limit judges, deep nesting.
	f.Add([]byte(seedCard), []byte(`{"authRequirements": {"TYPE": "none"}}`))
	f.Add([]byte(seedCard), []byte(`{"deprecation": {"message": "a", "Message": "b"}}`))
	f.Add([]byte(seedCard), []byte(`{"capabilities": [{"name": "y", "Name": "x"}]}`))
	f.Add([]byte(seedCard), []byte(`{"a2a": {"interfaces": [{"url": "https://a.example/x", "URL": "https://b.example/y", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}]}}`))
	f.Add([]byte(seedCard), []byte(`{"authRequirements": {"ſcopes": ["x"]}}`))
	f.Add([]byte(seedCard), []byte(`{"authRequirements": {"zz": 1, "aa": 2}}`))
	f.Add([]byte(seedCard), []byte(`{"a2a": 1, "name": 2}`))
	f.Add([]byte("{\"agentId\": \"a\", \"name\": \"n\", \"metadata\": {\"k\": \"\xff\", \"\xfe\": 1}}"), []byte(`{"metadata": {"\ufffd": null}}`))
	f.Add([]byte(seedCard), []byte(`{"capabilities": [{"name": "c", "zz": 1, "aa": 2}]}`))
	f.Add([]byte(seedCard), []byte(`{"metadata": {"k": "`+strings.Repeat(`\u0041`, 50000)+`"}}`))
	f.Add([]byte(seedCard), []byte(`{"metadata": `+strings.Repeat(`{"a": `, 40)+`[0]`+strings.Repeat(`}`, 40)+`}`))
	seedDoc := func() []byte {
		c, err := Decode([]byte(seedCard))
		if err != nil {
			f.Fatal(err)
		}
		doc, err := prepare(&c)
		if err != nil {
			f.Fatal(err)
		}
		return doc
	}()
	f.Fuzz(func(t *testing.T, doc, patch []byte) {
		// A card's document patched as Service.Patch does (mergeDocument) gives the JSON value
		// MergePatch gives, and a card from it as MergePatch's does.
		sameMerge(t, seedDoc, patch)
		if c, err := Decode(doc); err == nil {
			if stored, err := prepare(&c); err == nil {
				sameMerge(t, stored, patch)
			}
		}
		once, err := MergePatch(doc, patch)
		if err != nil {
			return
		}
		if !json.Valid(once) {
			t.Fatalf("not JSON: %s", once)
		}
		twice, err := MergePatch(once, patch)
		if err != nil {
			t.Fatalf("the patch applies once but not twice: %v", err)
		}
		if !jsonEqual(t, once, twice) {
			t.Fatalf("not idempotent:\n%s\n%s", once, twice)
		}
	})
}

// sameEncoding: Marshal encodes c, with server fields or without, as encoding/json does.
func sameEncoding(t *testing.T, c Card) {
	t.Helper()
	for _, server := range []bool{false, true} {
		if server {
			at := time.Date(2026, 12, 3, 8, 0, 0, 123456000, time.UTC)
			c.ID, c.Revision, c.CreatedAt, c.UpdatedAt = "id-1", 7, at, at.Add(time.Hour)
			c.Liveness = &Liveness{State: Online, LastSeenAt: &at}
		}
		fast, ferr := Marshal(c)
		std, serr := json.Marshal(c)
		if (ferr == nil) != (serr == nil) || !bytes.Equal(fast, std) {
			t.Fatalf("Marshal encodes a card otherwise than encoding/json (%v, %v):\n%s\n%s", ferr, serr, fast, std)
		}
	}
}

// sameMerge: where mergeDocument applies it gives MergePatch's JSON value, and the card
// Service.Patch makes of a patch (applyPatch) is the card, or the error, that MergePatch's
// document makes.
func sameMerge(t *testing.T, doc, patch []byte) {
	t.Helper()
	std, err := MergePatch(doc, patch)
	if fast, ok := mergeDocument(doc, patch); ok {
		if err != nil {
			t.Fatalf("mergeDocument applies a patch MergePatch refuses (%v):\n%s\n%s", err, doc, patch)
		}
		if !jsonEqual(t, fast, std) {
			t.Fatalf("mergeDocument and MergePatch part:\n%s\n%s\n%s\n%s", doc, patch, fast, std)
		}
	}
	cur, derr := UnmarshalDocument(doc)
	if derr != nil {
		t.Fatalf("the document does not read back: %v\n%s", derr, doc)
	}
	fc, ferr := applyPatch(doc, patch, cur.AgentID, DefaultMaxJSONDepth)
	var sc Card
	serr := err
	if err == nil {
		sc, serr = patchedCard(std, cur.AgentID, DefaultMaxJSONDepth)
	}
	if (ferr == nil) != (serr == nil) || (ferr != nil && ferr.Error() != serr.Error()) {
		t.Fatalf("applyPatch and MergePatch part (%v, %v):\n%s\n%s", ferr, serr, doc, patch)
	}
	if ferr != nil {
		return
	}
	// The same card, but free-form members (metadata, schemas) keep their members in the order
	// written where MergePatch sorts them: compared as JSON values, and as what is read from them.
	fdoc, _ := Marshal(fc)
	sdoc, _ := Marshal(sc)
	if !jsonEqual(t, fdoc, sdoc) || !reflect.DeepEqual(fc.A2AInterfaces(), sc.A2AInterfaces()) {
		t.Fatalf("applyPatch and MergePatch make other cards:\n%s\n%s\n%s", patch, fdoc, sdoc)
	}
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	norm := func(b []byte) string {
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("not JSON: %v", err)
		}
		out, _ := json.Marshal(v)
		return string(out)
	}
	return norm(a) == norm(b)
}
