package cards

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/agentcards/agentcards/authz"
	"github.com/agentcards/agentcards/authz/authztest"
	"github.com/agentcards/agentcards/tenants"
)

// documents are card documents and near misses: the plain ones Decode reads in one go, and
// every reason for it to go the general way (server fields, names in another case or escaped,
// unknown fields, data after the object, malformed JSON, brackets and quotes inside strings).
var documents = []string{
	`{"agentId":"a","name":"n"}`,
	` {"agentId" : "a" , "name":"n", "tags":["x","y"], "metadata":{"k":[1,{"z":null}],"s":"}]\"{["}}` + "\n\t",
	`{"agentId":"a","name":"n","capabilities":[{"name":"c","inputSchema":{"type":"object","x":"\u0022"}}]}`,
	`{"agentId":"a","name":"n","metadata":null,"a2a":{"streaming":false,"extensions":[]}}`,
	`{}`,
	`{"agentId":"a","name":"n","id":"x","revision":5,"createdAt":"2000-01-01T00:00:00Z"}`,
	`{"agentId":"a","name":"n","revision":"not a number"}`,
	`{"AgentId":"a","name":"n"}`,
	`{"agent\u0049d":"a","name":"n"}`,
	`{"agentId":"a","name":"n","colour":1}`,
	`{"agentId":"a","name":"n","capabilities":[{"name":"x","bogus":1}]}`,
	`{"agentId":"a","name":7}`,
	`{"agentId":"a","name":"n"} {}`,
	`{"agentId":"a","name":"n"} x`,
	`{"agentId":"a","name":"n"`,
	`{"agentId":"a","name":}`,
	`{"agentId":"a",,"name":"n"}`,
	`{"agentId":"a" "name":"n"}`,
	`{"agentId":"a","name":"n",}`,
	`{"agentId":"a","name":"n\`,
	`{"agentId":"a","name":tru}`,
	`{"agentId":"a","tags":[1}`,
	`{"agentId":"a","name":"n","metadata":{"a":1]}`,
	`[]`, `null`, `"x"`, `12`, ``, ` `, `{`, `}`, `{"`, `{"agentId"`, `{"agentId":`,
}

// TestDecodeOneGoIsTheGeneralWay: whenever Decode takes its short way, it returns what its
// general way does, card or error.
func TestDecodeOneGoIsTheGeneralWay(t *testing.T) {
	plain := 0
	for _, doc := range documents {
		if plainClientObject([]byte(doc)) {
			plain++
		}
		sameDecoding(t, []byte(doc))
	}
	if plain < 4 {
		t.Errorf("only %d of the documents are plain: the short way is not taken", plain)
	}
}

func FuzzDecode(f *testing.F) {
	for _, doc := range documents {
		f.Add([]byte(doc))
	}
	f.Fuzz(func(t *testing.T, doc []byte) { sameDecoding(t, doc) })
}

func sameDecoding(t *testing.T, doc []byte) {
	t.Helper()
	got, err := Decode(doc)
	want, wantErr := decodeAnyCard(doc)
	if !reflect.DeepEqual(got, want) || !sameError(err, wantErr) {
		t.Errorf("Decode(%s) = %+v, %v\nthe general way: %+v, %v", doc, got, err, want, wantErr)
	}
}

func sameError(a, b error) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Error() == b.Error()
}

// splitArrayDecoder is how splitArray found the elements before: with a json.Decoder.
func splitArrayDecoder(body []byte) ([]json.RawMessage, error) {
	malformed := errors.New("malformed")
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		return nil, malformed
	}
	docs := []json.RawMessage{}
	for dec.More() {
		var doc json.RawMessage
		if err := dec.Decode(&doc); err != nil {
			return nil, malformed
		}
		docs = append(docs, doc)
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim(']') {
		return nil, malformed
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, malformed
	}
	return docs, nil
}

var arrays = []string{
	`[]`, ` [ ] `, `[{"agentId":"a"}]`, "[\n{\"a\":[1,2,{\"b\":\"],}\\\"\"}]} ,\t{}\r\n]\n",
	`[1,"x",null,true,-1.5e3,[],{}]`, `[1 2]`, `[1,]`, `[,1]`, `[1,,2]`, `[{"a":1}`, `[{"a":}]`,
	`[] []`, `[]x`, `{}`, `null`, `"[1]"`, ``, `[`, `]`, `[{"a":"\"}]`, `[{]`, `[{"a":1}}]`,
}

// TestSplitArray: splitArray finds in a JSON array the elements the decoder found; a body that
// is not one it refuses, or splits into elements of which one is not JSON (refused when decoded).
func TestSplitArray(t *testing.T) {
	for _, body := range arrays {
		sameSplit(t, []byte(body))
	}
}

func FuzzSplitArray(f *testing.F) {
	for _, body := range arrays {
		f.Add([]byte(body))
	}
	f.Fuzz(func(t *testing.T, body []byte) { sameSplit(t, body) })
}

func sameSplit(t *testing.T, body []byte) {
	t.Helper()
	got, err := splitArray(body)
	want, wantErr := splitArrayDecoder(body)
	if wantErr != nil {
		if err == nil && !slices.ContainsFunc(got, func(doc json.RawMessage) bool { return !json.Valid(doc) }) {
			t.Fatalf("splitArray(%q) = %q: every element is JSON, but the body is not a JSON array", body, got)
		}
		return
	}
	if err != nil || len(got) != len(want) {
		t.Fatalf("splitArray(%q) = %q, %v; the decoder found %q", body, got, err, want)
	}
	for i := range got {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("splitArray(%q): element %d is %q, the decoder found %q", body, i, got[i], want[i])
		}
	}
}

// TestBatchNotAnArray: a batch whose body is not a JSON array is refused as such, whatever its
// cards before or after the fault, and only then; the cards are checked only once the body is
// known to be one (the syntax is checked once something fails).
func TestBatchNotAnArray(t *testing.T) {
	card := func(id string) string { return `{"agentId":"` + id + `","name":"n"}` }
	bad := `{"agentId":"x","endpoint":"not a url","name":"n"}`
	many := strings.Repeat(card("m")+",", MaxBatch)
	for body, want := range map[string]string{
		"[" + card("a") + `,{"agentId":"b","name":tru}]`:     notAnArray().Error(),
		"[" + bad + `,{"agentId":"b","name":"n"]`:            notAnArray().Error(),
		"[" + card("a") + "," + card("a") + `,{"agentId":}]`: notAnArray().Error(),
		"[" + many + `{"agentId":"b","name":"n"]`:            notAnArray().Error(),
		"[" + card("a") + "," + card("b") + "] x":            notAnArray().Error(),
		"[" + card("a") + " " + card("b") + "]":              notAnArray().Error(),
		"[" + bad + "]":                                      "cards[0]: endpoint",
		"[" + card("a") + "," + card("a") + "]":              `cards[1]: agentId "a" is also cards[0]`,
		"[" + many + card("b") + "]":                         "a batch holds 1 to 1000 cards, not 1001",
		"[" + card("a") + ";" + card("b") + "]":              notAnArray().Error(),
	} {
		_, err := batchService().RegisterBatch(batchCaller, "acme", []byte(body))
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%.80s: %v, want %q", body, err, want)
		}
	}
	if cs, err := batchService().RegisterBatch(batchCaller, "acme", []byte(" [\n"+card("a")+" ,\t"+card("b")+"\r\n] ")); err != nil || len(cs) != 2 {
		t.Errorf("a batch of two: %d cards, %v", len(cs), err)
	}
}

// FuzzBatchNotAnArray: RegisterBatch refuses a body as not a JSON array exactly when the decoder
// did.
func FuzzBatchNotAnArray(f *testing.F) {
	for _, body := range arrays {
		f.Add([]byte(body))
	}
	f.Add([]byte(`[{"agentId":"a","name":"n"},{"agentId":"b","name":"n"}]`))
	f.Fuzz(func(t *testing.T, body []byte) {
		_, err := batchService().RegisterBatch(batchCaller, "acme", body)
		_, wantErr := splitArrayDecoder(body)
		if refused := err != nil && err.Error() == notAnArray().Error(); refused != (wantErr != nil) {
			t.Fatalf("RegisterBatch(%q) = %v; the decoder found a JSON array: %v", body, err, wantErr == nil)
		}
	})
}

// batchCaller is a tenant member, whom batchService lets in and allows everything.
var batchCaller = authz.WithPrincipal(context.Background(), authz.Principal{Subject: "alice", Tenant: "acme"})

func batchService() *Service {
	return &Service{Store: acceptAll{}, Gate: acceptAll{}, Authz: authztest.AllowAll{}}
}

// acceptAll lets every caller in and stores batches nowhere.
type acceptAll struct{ Store }

func (acceptAll) Enter(ctx context.Context, _ string) (context.Context, error) { return ctx, nil }
func (acceptAll) CreateMany(context.Context, tenants.ID, []Prepared) error     { return nil }
