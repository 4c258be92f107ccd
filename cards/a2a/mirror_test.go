package a2a_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/a2a"
	"github.com/agentcards/agentcards/cards/a2a/a2atest"
)

// TestReadCatalog: the A2A cards a catalog lists, by relative or absolute URL or inline, with
// those of the catalogs it nests (fetched or inline); other entry types skipped, a catalog met
// twice read once; a nested document that is not a catalog, or cannot be read, fails the read;
// so does a chain of catalogs longer than the documents allowed.
func TestReadCatalog(t *testing.T) {
	pages := map[string]string{
		"/top.json": `{"specVersion": "1.0", "entries": [
			{"identifier": "urn:x:a", "type": "application/a2a-agent-card+json", "url": "/cards/a.json"},
			{"identifier": "urn:x:mcp", "type": "application/mcp-server+json", "url": "/mcp.json"},
			{"identifier": "urn:x:b", "type": "application/a2a-agent-card+json", "data": {"name": "B"}},
			{"identifier": "urn:x:next", "type": "application/ai-catalog+json", "url": "next.json"},
			{"identifier": "urn:x:inline", "type": "application/ai-catalog+json", "data": {"specVersion": "1.0", "entries": [
				{"identifier": "urn:x:c", "type": "application/a2a-agent-card+json", "url": "https://agents.example.com/c.json"}]}}]}`,
		"/next.json": `{"specVersion": "1.0", "entries": [
			{"identifier": "urn:x:d", "type": "application/a2a-agent-card+json", "url": "cards/d.json"},
			{"identifier": "urn:x:back", "type": "application/ai-catalog+json", "url": "/top.json"}]}`,
		"/broken.json":        `{"specVersion": "1.0", "entries": [{"identifier": "urn:x:n", "type": "application/ai-catalog+json", "url": "/not-a-catalog.json"}]}`,
		"/not-a-catalog.json": `{"name": "an agent card"}`,
		"/missing.json":       `{"specVersion": "1.0", "entries": [{"identifier": "urn:x:n", "type": "application/ai-catalog+json", "url": "/gone.json"}]}`,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/chain/") {
			var n int
			fmt.Sscanf(strings.TrimPrefix(r.URL.Path, "/chain/"), "%d", &n)
			fmt.Fprintf(w, `{"specVersion": "1.0", "entries": [{"identifier": "urn:x:%d", "type": "application/ai-catalog+json", "url": "/chain/%d"}]}`, n, n+1)
			return
		}
		body, ok := pages[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	s := &a2a.Service{Fetch: a2atest.LoopbackFetch()}
	listed, err := s.ReadCatalog(t.Context(), srv.URL+"/top.json")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range listed {
		got = append(got, l.Identifier+" "+strings.TrimPrefix(l.URL, srv.URL)+" "+string(l.Data))
	}
	want := []string{"urn:x:a /cards/a.json ", `urn:x:b  {"name": "B"}`, "urn:x:d /cards/d.json ", "urn:x:c https://agents.example.com/c.json "}
	if !slices.Equal(got, want) {
		t.Fatalf("listed:\n%q\nwant\n%q", got, want)
	}
	for _, path := range []string{"/broken.json", "/missing.json", "/chain/0"} {
		if _, err := s.ReadCatalog(t.Context(), srv.URL+path); fault.KindOf(err) != fault.Invalid {
			t.Errorf("%s: %v, want invalid", path, err)
		}
	}
}

// TestWeighMirrorChecksContent: a mirror whose signed copy says something else than the card is
// untrusted, whatever the signature; one that says the same (but for status, visibility and
// metadata) goes on to be weighed (here, with no trust policy, to nothing).
func TestWeighMirrorChecksContent(t *testing.T) {
	raw, err := json.Marshal(a2atest.SampleV1(t))
	if err != nil {
		t.Fatal(err)
	}
	parsed, _, err := a2a.ParseCard(raw)
	if err != nil {
		t.Fatal(err)
	}
	s := &a2a.Service{}
	record := func() *cards.ImportRecord {
		return &cards.ImportRecord{Format: "1.0", Signed: &cards.SignedCard{Card: raw, Signatures: json.RawMessage(`[]`)}}
	}
	same := a2a.ToCard("georoute", parsed)
	same.Status, same.Visibility, same.Metadata = cards.StatusDeprecated, cards.VisibilityPublic, json.RawMessage(`{"team":"geo"}`)
	rec := record()
	if err := s.WeighMirror(t.Context(), "acme", same, rec); err != nil || rec.Trust != nil {
		t.Fatalf("the same content: trust %+v, %v", rec.Trust, err)
	}
	other := a2a.ToCard("georoute", parsed)
	other.Description = "not what was signed"
	rec = record()
	if err := s.WeighMirror(t.Context(), "acme", other, rec); err != nil || rec.Trust == nil || rec.Trust.Status != cards.TrustUntrusted ||
		!strings.Contains(rec.Trust.Reason, "not what its publisher signed") {
		t.Fatalf("other content: trust %+v, %v", rec.Trust, err)
	}
}
