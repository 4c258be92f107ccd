package web_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/agentcards/agentcards/cards/a2a"
	"github.com/agentcards/agentcards/cards/aicatalog"
	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/tenants/paging"
	"github.com/agentcards/agentcards/web/api"
	"github.com/agentcards/agentcards/web/webtest"
)

// aiCatalogDir holds the AI Catalog schema written from the draft's CDDL, and the draft's own
// examples it is checked against.
const aiCatalogDir = "testdata/ai-catalog"

// aiCatalogSchema compiles the schema, asserting formats (updatedAt and issuedAt are RFC 3339
// date-times), at the definition def ("AICatalog", "CatalogEntry").
func aiCatalogSchema(t *testing.T, def string) *jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	f, err := os.Open(filepath.Join(aiCatalogDir, "ai-catalog.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AddResource("ai-catalog.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	return c.MustCompile("ai-catalog.schema.json#/$defs/" + def)
}

// validJSON reports whether doc is valid against s.
func validJSON(t *testing.T, s *jsonschema.Schema, doc []byte) error {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		t.Fatalf("%s: %v", doc, err)
	}
	return s.Validate(v)
}

// TestAICatalogSchemaTakesTheDraftExamples: the schema takes every whole catalog of the draft's
// examples as a catalog and every single entry as an entry, and refuses the earlier model's
// catalog, entries with both or neither of url and data, and documents that lack what the CDDL
// requires; members it does not name are taken.
func TestAICatalogSchemaTakesTheDraftExamples(t *testing.T) {
	catalog, entry := aiCatalogSchema(t, "AICatalog"), aiCatalogSchema(t, "CatalogEntry")
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(aiCatalogDir, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, name := range []string{"examples-spec-minimal.json", "examples-spec-hierarchical.json",
		"examples-spec-multi-artifact-nested.json", "examples-spec-multi-version-a2a.json"} {
		if err := validJSON(t, catalog, read(name)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	for _, name := range []string{"examples-spec-dual-protocol-entry.json", "examples-spec-entry-trust-manifests-unsigned.json"} {
		if err := validJSON(t, entry, read(name)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if err := validJSON(t, catalog, read("examples-spec-2026-04-example-file.json")); err == nil {
		t.Error("the earlier model's catalog (mediaType, no type) is valid")
	}

	ok := `{"identifier": "urn:x:a", "type": "application/a2a-agent-card+json", "url": "https://x/a", "x-unknown": {"n": 1}}`
	if err := validJSON(t, entry, []byte(ok)); err != nil {
		t.Errorf("an entry with a member the draft does not name: %v", err)
	}
	for what, doc := range map[string]string{
		"both url and data":                        `{"identifier": "urn:x:a", "type": "t", "url": "https://x/a", "data": {}}`,
		"neither url nor data":                     `{"identifier": "urn:x:a", "type": "t"}`,
		"no identifier":                            `{"type": "t", "url": "https://x/a"}`,
		"no type":                                  `{"identifier": "urn:x:a", "url": "https://x/a"}`,
		"an updatedAt that is no date-time":        `{"identifier": "urn:x:a", "type": "t", "url": "u", "updatedAt": "yesterday"}`,
		"tags that are not strings":                `{"identifier": "urn:x:a", "type": "t", "url": "u", "tags": [1]}`,
		"a publisher without displayName":          `{"identifier": "urn:x:a", "type": "t", "url": "u", "publisher": {"identifier": "did:web:x"}}`,
		"an inline nested catalog without entries": `{"identifier": "urn:x:a", "type": "application/ai-catalog+json", "data": {"specVersion": "1.0"}}`,
	} {
		if err := validJSON(t, entry, []byte(doc)); err == nil {
			t.Errorf("an entry with %s is valid", what)
		}
	}
	for what, doc := range map[string]string{
		"no specVersion":                        `{"entries": []}`,
		"a specVersion that is not Major.Minor": `{"specVersion": "1", "entries": []}`,
		"no entries":                            `{"specVersion": "1.0"}`,
		"a host without displayName":            `{"specVersion": "1.0", "host": {"identifier": "x"}, "entries": []}`,
		"a signature without jws":               `{"specVersion": "1.0", "entries": [], "signature": {"signer": "s", "profile": "p", "issuedAt": "2026-01-01T00:00:00Z"}}`,
	} {
		if err := validJSON(t, catalog, []byte(doc)); err == nil {
			t.Errorf("a catalog with %s is valid", what)
		}
	}
}

// aiCatalogDoc is a served catalog as a consumer reads it.
type aiCatalogDoc struct {
	SpecVersion string `json:"specVersion"`
	Host        struct {
		DisplayName, Identifier string
	} `json:"host"`
	Entries []struct {
		Identifier, Type, URL, Version, Description string
		Tags                                        []string
		UpdatedAt                                   string
	} `json:"entries"`
	Signature *struct {
		Signer, Profile, JWS string
		IssuedAt, ExpiresAt  time.Time
	} `json:"signature"`
}

// aiCatalogPath is where tenant's AI Catalog is served.
func aiCatalogPath(tenant string) string { return "/a2a/" + tenant + "/.well-known/ai-catalog.json" }

// TestAICatalogListsPublicCards: a tenant's catalog, to anyone, lists its public cards that are
// not disabled, in agentId order, each mapped from the card and leading to its A2A card; never
// its private, tenant-visible or disabled cards, nor another tenant's, whoever asks. It is
// valid against the draft's schema, served as application/ai-catalog+json, and its URLs are on
// the server's base URL whatever Host the request names.
func TestAICatalogListsPublicCards(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		e.mkTenant("acme", "alice")
		e.mkTenant("zeta", "zoe")
		alice, zoe := e.token("alice", "acme", false), e.token("zoe", "zeta", false)
		put := func(tenant, token, id, visibility string, change func(map[string]any)) {
			c := sampleCard(id)
			c["visibility"] = visibility
			if change != nil {
				change(c)
			}
			expect(t, e.do("PUT", "/v1/tenants/"+tenant+"/cards/"+id, token, c), http.StatusCreated)
		}
		put("acme", alice, "pub-b", "public", nil)
		put("acme", alice, "pub-a", "public", func(c map[string]any) {
			c["name"], c["version"], c["tags"], c["description"] = "Alpha", "2.1.0", []string{"alpha", "one"}, "First <&> one."
		})
		put("acme", alice, "pub-c", "public", func(c map[string]any) { delete(c, "version"); delete(c, "tags"); delete(c, "description") })
		put("acme", alice, "priv", "private", nil)
		put("acme", alice, "ten", "tenant", nil)
		put("acme", alice, "dis", "public", nil)
		expect(t, e.do("PATCH", "/v1/tenants/acme/cards/dis", alice, map[string]any{"status": "disabled"}), http.StatusOK)
		put("zeta", zoe, "zed", "public", nil)

		schema := aiCatalogSchema(t, "AICatalog")
		for _, token := range []string{"", alice, zoe} {
			r := e.do("GET", aiCatalogPath("acme"), token, nil, "Host", "evil.example")
			expect(t, r, http.StatusOK)
			if ct := r.header.Get("Content-Type"); ct != "application/ai-catalog+json" {
				t.Fatalf("Content-Type %q", ct)
			}
			if err := validJSON(t, schema, r.body); err != nil {
				t.Fatalf("the catalog is not valid against the draft's schema: %v\n%s", err, r.body)
			}
			if !bytes.Contains(r.body, []byte("First <&> one.")) {
				t.Fatalf("text escaped as for HTML: %s", r.body)
			}
			// The entries leave the name to the A2A card, as the draft asks: the host alone has one.
			if n := bytes.Count(r.body, []byte(`"displayName"`)); n != 1 {
				t.Fatalf("%d displayName members: %s", n, r.body)
			}
			var doc aiCatalogDoc
			r.json(t, &doc)
			if doc.SpecVersion != "1.0" || doc.Host.DisplayName != "acme" || doc.Host.Identifier != e.srv.URL+aiCatalogPath("acme") {
				t.Fatalf("document %+v", doc)
			}
			var ids []string
			for _, en := range doc.Entries {
				ids = append(ids, en.Identifier)
				if en.Type != "application/a2a-agent-card+json" || en.URL != e.srv.URL+"/a2a/acme/"+strings.TrimPrefix(en.Identifier, "urn:agentcards:acme:")+"/.well-known/agent-card.json" {
					t.Errorf("entry %+v", en)
				}
				if _, err := time.Parse(time.RFC3339Nano, en.UpdatedAt); err != nil {
					t.Errorf("entry %s: updatedAt %q: %v", en.Identifier, en.UpdatedAt, err)
				}
			}
			if want := []string{"urn:agentcards:acme:pub-a", "urn:agentcards:acme:pub-b", "urn:agentcards:acme:pub-c"}; !slices.Equal(ids, want) {
				t.Fatalf("entries %v, want %v", ids, want)
			}
			a, b, c := doc.Entries[0], doc.Entries[1], doc.Entries[2]
			if a.Version != "2.1.0" || a.Description != "First <&> one." || !slices.Equal(a.Tags, []string{"alpha", "one"}) {
				t.Errorf("pub-a: %+v", a)
			}
			if b.Version != "1.0.0" || !slices.Equal(b.Tags, []string{"code", "github"}) || b.Description == "" {
				t.Errorf("pub-b: %+v", b)
			}
			if c.Version != "" || c.Tags != nil || c.Description != "" {
				t.Errorf("pub-c, without version, tags and description: %+v", c)
			}
		}

		// Each entry leads to the card's A2A card, as served.
		r := e.do("GET", aiCatalogPath("acme"), "", nil)
		var doc aiCatalogDoc
		r.json(t, &doc)
		for _, en := range doc.Entries {
			res, err := http.Get(en.URL)
			if err != nil {
				t.Fatal(err)
			}
			var card struct{ Name, Description, Version string }
			err = json.NewDecoder(res.Body).Decode(&card)
			res.Body.Close()
			want := map[string]string{"urn:agentcards:acme:pub-a": "Alpha", "urn:agentcards:acme:pub-b": "Code Reviewer", "urn:agentcards:acme:pub-c": "Code Reviewer"}[en.Identifier]
			if res.StatusCode != http.StatusOK || err != nil || card.Name != want || (en.Version != "" && card.Version != en.Version) ||
				(en.Description != "" && card.Description != en.Description) {
				t.Errorf("GET %s: %d %+v %v, for entry %+v", en.URL, res.StatusCode, card, err, en)
			}
		}

		// Another tenant's catalog lists its own cards only.
		r = e.do("GET", aiCatalogPath("zeta"), alice, nil)
		expect(t, r, http.StatusOK)
		r.json(t, &doc)
		if len(doc.Entries) != 1 || doc.Entries[0].Identifier != "urn:agentcards:zeta:zed" || doc.Host.DisplayName != "zeta" {
			t.Fatalf("zeta's catalog %+v", doc)
		}
		// A token, when sent, must be valid.
		expect(t, e.do("GET", aiCatalogPath("acme"), "not-a-token", nil), http.StatusUnauthorized, "unauthorized")
	})
}

// TestAICatalogPublicURL: with delegation.publicUrl set, the catalog's URLs are on it; on a
// server with no URL to name (a non-loopback address, no publicUrl) they are paths.
func TestAICatalogPublicURL(t *testing.T) {
	for base, o := range map[string]envOptions{
		"https://registry.example/base": {publicURL: "https://registry.example/base/"},
		"":                              {listenAddr: "10.9.8.7:8080"},
	} {
		e := newEnvWith(t, storagetest.Open(t, "sqlite"), o)
		e.mkTenant("acme", "alice")
		c := sampleCard("pub")
		c["visibility"] = "public"
		expect(t, e.do("PUT", "/v1/tenants/acme/cards/pub", e.token("alice", "acme", false), c), http.StatusCreated)
		r := e.do("GET", aiCatalogPath("acme"), "", nil)
		expect(t, r, http.StatusOK)
		var doc aiCatalogDoc
		r.json(t, &doc)
		if doc.Host.Identifier != base+aiCatalogPath("acme") || len(doc.Entries) != 1 || doc.Entries[0].URL != base+"/a2a/acme/pub/.well-known/agent-card.json" {
			t.Errorf("base %q: %s", base, r.body)
		}
		if base == "" {
			// Without an absolute URL to name the signer by, as the draft asks: the bytes alone
			// are signed, in the header.
			if doc.Signature != nil || r.header.Get("Agentcards-Signature") == "" {
				t.Errorf("no base URL: signature %+v in the document, header %q", doc.Signature, r.header.Get("Agentcards-Signature"))
			}
			continue
		}
		if doc.Signature == nil || doc.Signature.Signer != base+"/.well-known/jwks.json" || !doc.Signature.ExpiresAt.Equal(doc.Signature.IssuedAt.Add(24*time.Hour)) {
			t.Errorf("base %q: signature %+v", base, doc.Signature)
		}
		if err := webtest.VerifyAICatalog(e.jwks(), r.body); err != nil {
			t.Errorf("base %q: the signature does not verify: %v", base, err)
		}
	}
}

// TestAICatalogSignatures: the catalog is signed twice, each verified with go-jose and the keys
// of /.well-known/jwks.json: the Agentcards-Signature header over the body's exact bytes, as a
// change feed page is, and the draft's signature member, over the JCS form of the document
// without signature.jws. A changed byte fails either.
func TestAICatalogSignatures(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		e.mkTenant("acme", "alice")
		c := sampleCard("pub")
		c["visibility"] = "public"
		expect(t, e.do("PUT", "/v1/tenants/acme/cards/pub", e.token("alice", "acme", false), c), http.StatusCreated)
		jwks := e.jwks()
		var keys jose.JSONWebKeySet
		if err := json.Unmarshal(jwks, &keys); err != nil {
			t.Fatal(err)
		}
		verifyBody := func(body []byte, sig string) (jose.Header, error) {
			jws, err := jose.ParseDetached(sig, body, []jose.SignatureAlgorithm{jose.ES256, jose.EdDSA})
			if err != nil {
				return jose.Header{}, err
			}
			h := jws.Signatures[0].Protected
			found := keys.Key(h.KeyID)
			if len(found) != 1 {
				return h, fmt.Errorf("kid %q: %d keys", h.KeyID, len(found))
			}
			_, err = jws.Verify(found[0].Key)
			return h, err
		}

		before := time.Now().Add(-time.Second)
		r := e.do("GET", aiCatalogPath("acme"), "", nil)
		expect(t, r, http.StatusOK)
		sig := r.header.Get(api.SignatureHeader)
		h, err := verifyBody(r.body, sig)
		if err != nil {
			t.Fatalf("the header's signature %q does not verify: %v", sig, err)
		}
		if h.ExtraHeaders["tenant"] != "acme" || h.ExtraHeaders["iat"] == nil {
			t.Fatalf("the header's protected header %+v", h.ExtraHeaders)
		}
		if err := webtest.VerifyAICatalog(jwks, r.body); err != nil {
			t.Fatalf("the document's signature does not verify: %v", err)
		}
		var doc aiCatalogDoc
		r.json(t, &doc)
		if doc.Signature == nil {
			t.Fatalf("no signature in %s", r.body)
		}
		issued := doc.Signature.IssuedAt
		if doc.Signature.Signer != e.srv.URL+"/.well-known/jwks.json" || doc.Signature.Profile != aicatalog.Profile ||
			issued.Before(before.Truncate(time.Second)) || issued.After(time.Now()) || !doc.Signature.ExpiresAt.Equal(issued.Add(aicatalog.Validity)) {
			t.Fatalf("signature %+v", doc.Signature)
		}
		// The document's JWS names the draft's typ, and the key in the JWKS.
		protected, _, _ := strings.Cut(doc.Signature.JWS, "..")
		var ph map[string]string
		if b, err := base64.RawURLEncoding.DecodeString(protected); err != nil || json.Unmarshal(b, &ph) != nil ||
			len(ph) != 3 || ph["typ"] != "ai-catalog+jws" || ph["alg"] == "" || len(keys.Key(ph["kid"])) != 1 {
			t.Fatalf("the document's protected header %q: %v", protected, ph)
		}

		for _, tamper := range [][2]string{{`"1.0.0"`, `"1.0.1"`}, {`a2a.md#ai-catalog-signature-profile-v1"`, `a2a.md#ai-catalog-signature-profile-v2"`}, {`"specVersion":"1.0"`, `"specVersion":"1.1"`}} {
			changed := bytes.Replace(r.body, []byte(tamper[0]), []byte(tamper[1]), 1)
			if bytes.Equal(changed, r.body) {
				t.Fatalf("nothing to change: %s", tamper[0])
			}
			if _, err := verifyBody(changed, sig); err == nil {
				t.Errorf("the header's signature verifies a body with %s", tamper[1])
			}
			if err := webtest.VerifyAICatalog(jwks, changed); err == nil {
				t.Errorf("the document's signature verifies a document with %s", tamper[1])
			}
		}
		// Either signature is of its own document: the JWS of another answer does not verify
		// this one once its issuedAt differs.
		time.Sleep(time.Until(issued.Add(time.Second)))
		again := e.do("GET", aiCatalogPath("acme"), "", nil)
		var doc2 aiCatalogDoc
		again.json(t, &doc2)
		swapped := bytes.Replace(again.body, []byte(doc2.Signature.JWS), []byte(doc.Signature.JWS), 1)
		if err := webtest.VerifyAICatalog(jwks, swapped); err == nil {
			t.Error("a JWS verifies a document issued at another time")
		}
	})
}

// TestAICatalogPages: a page lists at most limit cards, 100 by default; when more remain, its
// last entry is a nested catalog whose URL is the next page, of the same limit; following
// those entries reaches every public card once, in order, on both search modes. The cursors
// are the agent list's; bad limits and cursors are refused.
func TestAICatalogPages(t *testing.T) {
	forEachDialectAndIndex(t, func(t *testing.T, e *env) {
		e.mkTenant("acme", "alice")
		alice := e.token("alice", "acme", false)
		var public []string
		for i := range 11 {
			id := fmt.Sprintf("agt%02d", i)
			c := sampleCard(id)
			if i%3 != 1 {
				c["visibility"] = "public"
				public = append(public, "urn:agentcards:acme:"+id)
			}
			expect(t, e.do("PUT", "/v1/tenants/acme/cards/"+id, alice, c), http.StatusCreated)
		}
		schema := aiCatalogSchema(t, "AICatalog")
		var got []string
		next := e.srv.URL + aiCatalogPath("acme") + "?limit=3"
		for pages := 0; next != ""; pages++ {
			if pages > 10 {
				t.Fatalf("more pages than cards: %v", got)
			}
			r := e.do("GET", strings.TrimPrefix(next, e.srv.URL), "", nil)
			expect(t, r, http.StatusOK)
			if err := validJSON(t, schema, r.body); err != nil {
				t.Fatalf("page %d: %v", pages, err)
			}
			var doc aiCatalogDoc
			r.json(t, &doc)
			next = ""
			for i, en := range doc.Entries {
				if en.Type != "application/ai-catalog+json" {
					got = append(got, en.Identifier)
					continue
				}
				u, err := url.Parse(en.URL)
				if i != len(doc.Entries)-1 || err != nil || u.Path != aiCatalogPath("acme") || u.Query().Get("limit") != "3" ||
					en.Identifier != "urn:agentcards:acme:ai-catalog:"+u.Query().Get("cursor") {
					t.Fatalf("page %d: nested entry %d of %d: %+v", pages, i, len(doc.Entries), en)
				}
				next = en.URL
			}
			if cards := len(doc.Entries) - min(len(next), 1); cards > 3 || (next != "" && cards != 3) {
				t.Fatalf("page %d: %d cards", pages, cards)
			}
		}
		if !slices.Equal(got, public) {
			t.Fatalf("pages listed %v, want %v", got, public)
		}

		// Without a limit, one page holds them all; the agent list's cursor works here.
		r := e.do("GET", aiCatalogPath("acme"), "", nil)
		var doc aiCatalogDoc
		r.json(t, &doc)
		if len(doc.Entries) != len(public) {
			t.Fatalf("one page: %d entries, want %d", len(doc.Entries), len(public))
		}
		var agents api.AgentPage
		e.do("GET", "/a2a/acme/agents?limit=2", "", nil).json(t, &agents)
		r = e.do("GET", aiCatalogPath("acme")+"?cursor="+agents.NextCursor, "", nil)
		r.json(t, &doc)
		if len(doc.Entries) != len(public)-2 || doc.Entries[0].Identifier != public[2] {
			t.Fatalf("from the agent list's cursor: %s", r.body)
		}
		// After the last card: an empty page, not a refusal, since the tenant publishes cards.
		r = e.do("GET", aiCatalogPath("acme")+"?cursor="+paging.EncodeCursor("agents", "agt99"), "", nil)
		expect(t, r, http.StatusOK)
		if r.json(t, &doc); len(doc.Entries) != 0 || doc.Host.DisplayName != "acme" {
			t.Fatalf("after the last card: %s", r.body)
		}

		for _, q := range []string{"limit=0", "limit=1001", "limit=x", "cursor=!!!", "limit=1&limit=2"} {
			expect(t, e.do("GET", aiCatalogPath("acme")+"?"+q, "", nil), http.StatusBadRequest, "invalid")
		}
		expect(t, e.do("GET", aiCatalogPath("acme")+"?limit=1000", "", nil), http.StatusOK)
	})
}

// TestAICatalogPageSize: the default page is a2a.CatalogPageSize cards, then the nested entry of
// the next page.
func TestAICatalogPageSize(t *testing.T) {
	e := newEnv(t, storagetest.Open(t, "sqlite"), 4<<20)
	e.mkTenant("acme", "alice")
	alice := e.token("alice", "acme", false)
	total := a2a.CatalogPageSize + 1
	for start := 0; start < total; start += 1000 {
		var batch []any
		for i := start; i < min(start+1000, total); i++ {
			c := sampleCard(fmt.Sprintf("agt%05d", i))
			c["visibility"] = "public"
			batch = append(batch, c)
		}
		expect(t, e.do("POST", "/v1/tenants/acme/cards:batch", alice, batch), http.StatusCreated)
	}
	r := e.do("GET", aiCatalogPath("acme"), "", nil)
	expect(t, r, http.StatusOK)
	var doc aiCatalogDoc
	r.json(t, &doc)
	n := len(doc.Entries)
	if n != a2a.CatalogPageSize+1 || doc.Entries[n-2].Identifier != fmt.Sprintf("urn:agentcards:acme:agt%05d", a2a.CatalogPageSize-1) ||
		doc.Entries[n-1].Type != "application/ai-catalog+json" || strings.Contains(doc.Entries[n-1].URL, "limit=") {
		t.Fatalf("%d entries, the last two %+v", n, doc.Entries[max(n-2, 0):])
	}
	r = e.do("GET", strings.TrimPrefix(doc.Entries[n-1].URL, e.srv.URL), "", nil)
	r.json(t, &doc)
	if len(doc.Entries) != 1 || doc.Entries[0].Identifier != fmt.Sprintf("urn:agentcards:acme:agt%05d", total-1) {
		t.Fatalf("the second page: %s", r.body)
	}
}

// TestAICatalogCaching: the catalog is cached as the agent list is (public, a2a.cacheMaxAge),
// with an ETag of the document and its key that If-None-Match answers 304 without signing; a
// change of a public card changes it, one of a private card does not. HEAD answers the same.
func TestAICatalogCaching(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		e.mkTenant("acme", "alice")
		alice := e.token("alice", "acme", false)
		for _, v := range []string{"public", "private"} {
			c := sampleCard(v)
			c["visibility"] = v
			expect(t, e.do("PUT", "/v1/tenants/acme/cards/"+v, alice, c), http.StatusCreated)
		}
		r := e.do("GET", aiCatalogPath("acme"), "", nil)
		expect(t, r, http.StatusOK)
		tag := r.header.Get("ETag")
		if tag == "" || r.header.Get("Cache-Control") != "public, max-age=300" ||
			r.header.Get("Cache-Control") != e.do("GET", "/a2a/acme/agents", "", nil).header.Get("Cache-Control") {
			t.Fatalf("ETag %q, Cache-Control %q", tag, r.header.Get("Cache-Control"))
		}
		if again := e.do("GET", aiCatalogPath("acme"), alice, nil); again.header.Get("ETag") != tag {
			t.Fatalf("the same document, another tag: %q, %q", again.header.Get("ETag"), tag)
		}
		for _, m := range []string{"GET", "HEAD"} {
			nm := e.do(m, aiCatalogPath("acme"), "", nil, "If-None-Match", tag)
			expect(t, nm, http.StatusNotModified)
			if len(nm.body) != 0 || nm.header.Get("ETag") != tag || nm.header.Get(api.SignatureHeader) != "" {
				t.Fatalf("%s 304: %v %q", m, nm.header, nm.body)
			}
		}
		head := e.do("HEAD", aiCatalogPath("acme"), "", nil)
		if head.status != http.StatusOK || head.header.Get("ETag") != tag || head.header.Get("Content-Length") != r.header.Get("Content-Length") ||
			head.header.Get(api.SignatureHeader) == "" || len(head.body) != 0 {
			t.Fatalf("HEAD: %d %v", head.status, head.header)
		}
		expect(t, e.do("PATCH", "/v1/tenants/acme/cards/private", alice, map[string]any{"description": "changed"}), http.StatusOK)
		expect(t, e.do("GET", aiCatalogPath("acme"), "", nil, "If-None-Match", tag), http.StatusNotModified)
		expect(t, e.do("PATCH", "/v1/tenants/acme/cards/public", alice, map[string]any{"description": "changed"}), http.StatusOK)
		expect(t, e.do("GET", aiCatalogPath("acme"), "", nil, "If-None-Match", tag), http.StatusOK)
	})
}

// TestAICatalogNotFound: a tenant that does not exist, a suspended one and one without public
// cards publish no catalog: each is a 404 with the one error body, the same but for the
// tenant's id, so the open route shows no tenant the agent list does not. A request's own
// shape is still checked first.
func TestAICatalogNotFound(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		e.mkTenant("acme", "alice")
		e.mkTenant("empty", "erin")
		alice := e.token("alice", "acme", false)
		c := sampleCard("pub")
		c["visibility"] = "public"
		expect(t, e.do("PUT", "/v1/tenants/acme/cards/pub", alice, c), http.StatusCreated)
		priv := sampleCard("priv")
		expect(t, e.do("PUT", "/v1/tenants/empty/cards/priv", e.token("erin", "empty", false), priv), http.StatusCreated)

		messages := map[string]string{}
		for _, tenant := range []string{"nosuch", "empty", "acme"} {
			if tenant == "acme" {
				expect(t, e.do("PATCH", "/v1/tenants/acme", e.admin(), map[string]any{"status": "suspended"}), http.StatusOK)
			}
			for _, token := range []string{"", e.admin()} {
				r := e.do("GET", aiCatalogPath(tenant), token, nil)
				expect(t, r, http.StatusNotFound, "not_found")
				messages[tenant] = strings.ReplaceAll(errMessage(t, r), `"`+tenant+`"`, "T")
				if r.header.Get("ETag") != "" || r.header.Get(api.SignatureHeader) != "" {
					t.Errorf("%s: a refusal with %v", tenant, r.header)
				}
			}
		}
		if messages["nosuch"] != messages["empty"] || messages["nosuch"] != messages["acme"] {
			t.Errorf("the refusals differ: %q", messages)
		}
		// A cursor does not make a tenant without public cards answer, nor does one whose last
		// public card turned private.
		expect(t, e.do("GET", aiCatalogPath("empty")+"?cursor="+paging.EncodeCursor("agents", "a"), "", nil), http.StatusNotFound, "not_found")
		expect(t, e.do("PATCH", "/v1/tenants/acme", e.admin(), map[string]any{"status": "active"}), http.StatusOK)
		expect(t, e.do("GET", aiCatalogPath("acme"), "", nil), http.StatusOK)
		expect(t, e.do("PATCH", "/v1/tenants/acme/cards/pub", alice, map[string]any{"visibility": "private"}), http.StatusOK)
		expect(t, e.do("GET", aiCatalogPath("acme"), "", nil), http.StatusNotFound, "not_found")
		for _, q := range []string{"?limit=0", "?x=1", "?cursor=!!"} {
			expect(t, e.do("GET", aiCatalogPath("nosuch")+q, "", nil), http.StatusBadRequest, "invalid")
		}
	})
}

// TestAICatalogPageBytes: a page ends early, with the nested entry of the next page, once its
// cards' text passes a2a.CatalogPageBytes; following the pages reaches every card, and no page is
// much over the bound.
func TestAICatalogPageBytes(t *testing.T) {
	e := newEnv(t, storagetest.Open(t, "sqlite"), 1<<20)
	e.mkTenant("acme", "alice")
	alice := e.token("alice", "acme", false)
	long := strings.Repeat("語", 8000) // 24 KB a card: 60 cards are 1.4 MiB
	for i := range 60 {
		c := sampleCard(fmt.Sprintf("agt%02d", i))
		c["visibility"], c["description"] = "public", long
		expect(t, e.do("PUT", fmt.Sprintf("/v1/tenants/acme/cards/agt%02d", i), alice, c), http.StatusCreated)
	}
	var seen []string
	url := aiCatalogPath("acme")
	for pages := 0; url != ""; pages++ {
		if pages > 5 {
			t.Fatalf("more than 5 pages for 60 cards: %q", seen)
		}
		r := e.do("GET", strings.TrimPrefix(url, e.srv.URL), "", nil)
		expect(t, r, http.StatusOK)
		if len(r.body) > a2a.CatalogPageBytes+a2a.CatalogPageBytes/4 {
			t.Errorf("page %d is %d bytes", pages, len(r.body))
		}
		var doc aiCatalogDoc
		r.json(t, &doc)
		url = ""
		for _, entry := range doc.Entries {
			if entry.Type == "application/ai-catalog+json" {
				url = entry.URL
			} else {
				seen = append(seen, entry.Identifier)
			}
		}
		if pages == 0 && (url == "" || len(seen) >= 60) {
			t.Fatalf("the first page holds %d cards and no next page", len(seen))
		}
	}
	if len(seen) != 60 || !slices.IsSorted(seen) || len(slices.Compact(slices.Clone(seen))) != 60 {
		t.Errorf("the pages listed %d cards: %q", len(seen), seen)
	}
}
