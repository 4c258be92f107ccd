package cards

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentcards/agentcards/bench/cardgen"
	"github.com/agentcards/agentcards/web/webtest"
)

// TestMergePatchRFC7396 runs the examples of RFC 7396, appendix A.
func TestMergePatchRFC7396(t *testing.T) {
	cases := []struct{ target, patch, want string }{
		{`{"a":"b"}`, `{"a":"c"}`, `{"a":"c"}`},
		{`{"a":"b"}`, `{"b":"c"}`, `{"a":"b","b":"c"}`},
		{`{"a":"b"}`, `{"a":null}`, `{}`},
		{`{"a":"b","b":"c"}`, `{"a":null}`, `{"b":"c"}`},
		{`{"a":["b"]}`, `{"a":"c"}`, `{"a":"c"}`},
		{`{"a":"c"}`, `{"a":["b"]}`, `{"a":["b"]}`},
		{`{"a":{"b":"c"}}`, `{"a":{"b":"d","c":null}}`, `{"a":{"b":"d"}}`},
		{`{"a":[{"b":"c"}]}`, `{"a":[1]}`, `{"a":[1]}`},
		{`{"e":null}`, `{"a":1}`, `{"a":1,"e":null}`},
		{`{}`, `{"a":{"bb":{"ccc":null}}}`, `{"a":{"bb":{}}}`},
		{`{"n":12345678901234567890}`, `{"m":98765432109876543210}`, `{"m":98765432109876543210,"n":12345678901234567890}`},
	}
	for _, c := range cases {
		got, err := MergePatch([]byte(c.target), []byte(c.patch))
		if err != nil {
			t.Fatalf("%s + %s: %v", c.target, c.patch, err)
		}
		webtest.JSONEqual(t, c.target+" + "+c.patch, got, []byte(c.want))
		// Service.Patch's merge of written members gives the same.
		fast, ok := mergeDocument([]byte(c.target), []byte(c.patch))
		if !ok {
			t.Fatalf("%s + %s: mergeDocument declines", c.target, c.patch)
		}
		webtest.JSONEqual(t, "mergeDocument "+c.target+" + "+c.patch, fast, []byte(c.want))
	}
	for _, bad := range []string{`[1]`, `"x"`, `{"a":`, `{} {}`} {
		if _, err := MergePatch([]byte(`{}`), []byte(bad)); !errors.Is(err, ErrMalformed) {
			t.Errorf("patch %s: %v, want ErrMalformed", bad, err)
		}
	}
}

// TestPatchKeepsMembersAsWritten: a PATCH leaves what it does not name as it was written, the
// member order of free-form objects (metadata, schemas) included; members it merges into keep
// their places and new ones follow.
func TestPatchKeepsMembersAsWritten(t *testing.T) {
	c, err := Decode([]byte(`{"agentId": "a", "name": "n", "capabilities": [{"name": "c", "inputSchema": {"type": "object", "required": ["z"], "properties": {"z": {}}}}],
		"metadata": {"zone": "eu", "team": {"name": "web", "lead": "kim"}, "a": 1}}`))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := prepare(&c)
	if err != nil {
		t.Fatal(err)
	}
	merged, ok := mergeDocument(doc, []byte(`{"description": "d", "metadata": {"team": {"lead": null, "size": 4}, "a": null, "b": [null]}}`))
	if !ok {
		t.Fatal("mergeDocument declines")
	}
	got, err := Decode(merged)
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Metadata) != `{"zone":"eu","team":{"name":"web","size":4},"b":[null]}` ||
		string(got.Capabilities[0].InputSchema) != `{"type":"object","required":["z"],"properties":{"z":{}}}` || got.Description != "d" {
		t.Fatalf("merged %s", merged)
	}
}

// TestMergeDocumentDepth: a patch nested deeper than maxMergeDepth goes to MergePatch (each
// level of mergeDocument reads what lies below it again: 9,990 levels of a 1 MB patch took it
// seconds); one at the bound is merged.
func TestMergeDocumentDepth(t *testing.T) {
	nested := func(depth int) []byte { // its deepest value, 0, at depth (the patch's own at 0)
		return []byte(`{"metadata":` + strings.Repeat(`{"a":`, depth-1) + `0` + strings.Repeat(`}`, depth-1) + `}`)
	}
	doc := []byte(`{"agentId":"a","name":"n"}`)
	if _, ok := mergeDocument(doc, nested(maxMergeDepth)); !ok {
		t.Errorf("a patch %d deep is not merged", maxMergeDepth)
	}
	if _, ok := mergeDocument(doc, nested(maxMergeDepth+1)); ok {
		t.Errorf("a patch %d deep is merged", maxMergeDepth+1)
	}
}

func TestDecodeNamesTheField(t *testing.T) {
	cases := []struct {
		doc      string
		sentinel error
		mention  []string
	}{
		{`{"agentId":"a","name":"n","owner":1,"colour":2}`, ErrInvalid, []string{"colour, owner"}},
		{`{"agentId":"a","name":7}`, ErrInvalid, []string{"name", "string"}},
		{`{"agentId":"a","name":"n","capabilities":"x"}`, ErrInvalid, []string{"capabilities", "array"}},
		{`{"agentId":"a","name":"n","capabilities":[{"name":"x","bogus":1}]}`, ErrInvalid, []string{"bogus"}},
		{`{"agentId":"a",`, ErrMalformed, nil},
		{`[]`, ErrMalformed, []string{"object"}},
		{`null`, ErrMalformed, []string{"object"}},
	}
	for _, c := range cases {
		_, err := Decode([]byte(c.doc))
		if !errors.Is(err, c.sentinel) {
			t.Errorf("%s: %v, want %v", c.doc, err, c.sentinel)
			continue
		}
		for _, m := range c.mention {
			if !strings.Contains(err.Error(), m) {
				t.Errorf("%s: %q does not mention %q", c.doc, err, m)
			}
		}
	}
	c, err := Decode([]byte(`{"agentId":"a","name":"n","id":"x","revision":5,"createdAt":"2000-01-01T00:00:00Z","metadata":null}`))
	if err != nil || c.ID != "" || c.Revision != 0 || !c.CreatedAt.IsZero() || c.Metadata != nil {
		t.Fatalf("server fields or null kept: %+v %v", c, err)
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	c := Card{
		AgentID: "-bad", Endpoint: "https://user:pw@example.com/x", Protocols: []string{"HTTP"},
		Capabilities:     []Capability{{Name: "x"}, {Name: "x"}, {Name: "has space"}},
		AuthRequirements: &AuthRequirements{Type: "basic"}, Visibility: "world",
		Resources: []Resource{{URI: "relative/path"}},
	}
	err := c.Validate()
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("%v", err)
	}
	for _, field := range []string{"agentId", "name: is required", "endpoint: must not contain user info", "protocols[0]",
		"capabilities[1].name", "capabilities[2].name", "authRequirements.type", "visibility", "resources[0].uri"} {
		if !strings.Contains(err.Error(), field) {
			t.Errorf("%q does not mention %q", err, field)
		}
	}
	ok := Card{AgentID: "agt_1.x-y", Name: "n", Endpoint: "http://127.0.0.1:8080/task", Protocols: []string{"a2a", "mcp"},
		Capabilities: []Capability{{Name: "ns:review_pr.v1", InputSchema: json.RawMessage(`{"type":"object"}`)}}}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid card refused: %v", err)
	}
}

// TestDocumentIsTheCardWithoutServerFields: the stored document of a card is its JSON with the
// server fields (id, revision, createdAt, updatedAt) left out, and nothing else changed, also
// when client values hold the same names (metadata with an "id").
func TestDocumentIsTheCardWithoutServerFields(t *testing.T) {
	c := Card{AgentID: "agt1", Name: "A", Protocols: []string{"a2a"}, Metadata: json.RawMessage(`{"id": 7, "x": {"revision": 1}}`),
		Capabilities: []Capability{{Name: "c", InputSchema: json.RawMessage(`{"id": "s"}`)}},
		ID:           "5b0f7c1e-0000-4000-8000-000000000001", Revision: 3, CreatedAt: time.Now(), UpdatedAt: time.Now()}
	doc, err := MarshalDocument(c)
	if err != nil {
		t.Fatal(err)
	}
	var got, want map[string]any
	if err := json.Unmarshal(doc, &got); err != nil {
		t.Fatalf("document %s: %v", doc, err)
	}
	full, _ := json.Marshal(c)
	if err := json.Unmarshal(full, &want); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"id", "revision", "createdAt", "updatedAt"} {
		delete(want, k)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("document %s\nwant the card without its server fields: %v", doc, want)
	}
	back, err := UnmarshalDocument(doc)
	if err != nil || back.AgentID != "agt1" || string(back.Metadata) != `{"id":7,"x":{"revision":1}}` {
		t.Fatalf("read back: %+v, %v", back, err)
	}
}

// TestStoredDocumentsReadBack: generated cards of every shape the benchmarks use, decoded as a
// client sends them and stored, read back (UnmarshalDocument) to the same document.
func TestStoredDocumentsReadBack(t *testing.T) {
	for i, doc := range cardgen.Documents(3, 500) {
		c, err := Decode(doc)
		if err != nil {
			t.Fatalf("card %d: %v", i, err)
		}
		stored, err := prepare(&c) // validated and normalized, as a write stores it
		if err != nil {
			t.Fatalf("card %d: %v", i, err)
		}
		back, err := UnmarshalDocument(stored)
		if err != nil {
			t.Fatalf("card %d does not read back: %v", i, err)
		}
		again, err := MarshalDocument(back)
		if err != nil || !bytes.Equal(stored, again) {
			t.Fatalf("card %d reads back otherwise (%v):\n%s\n%s", i, err, stored, again)
		}
	}
}
