package web_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"

	"github.com/agentcards/agentcards/cards/a2a/a2atest"
	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/web/webtest"
)

// a2aCorpus covers every optional field of the card and the edge cases of the A2A mapping.
func a2aCorpus() map[string]map[string]any {
	full := sampleCard("full")
	full["capabilities"] = []any{
		map[string]any{"name": "review_pr", "title": "Review PR", "description": "Review a pull request",
			"inputSchema": map[string]any{"type": "object"}, "outputSchema": map[string]any{}, "tags": []string{"code"},
			"examples": []string{"Review PR 12"}, "inputModes": []string{"text/plain"}, "outputModes": []string{"application/json"}},
		map[string]any{"name": "lint"},
	}
	full["a2a"] = map[string]any{
		"provider": map[string]any{"organization": "Acme", "url": "https://acme.example"},
		"iconUrl":  "https://acme.example/icon.png", "documentationUrl": "https://acme.example/docs",
		"defaultInputModes": []string{"text/plain", "application/json"}, "defaultOutputModes": []string{"application/json"},
		"streaming": true, "pushNotifications": false, "extendedAgentCard": true,
		"extensions": []any{map[string]any{"uri": "https://acme.example/ext/1", "description": "x", "required": true, "params": map[string]any{"k": 1}}},
		"interfaces": []any{
			map[string]any{"url": "https://agents.example.com/code-reviewer", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
			map[string]any{"url": "https://agents.example.com/grpc", "protocolBinding": "GRPC", "protocolVersion": "1.0", "tenant": "t1"},
			map[string]any{"url": "https://agents.example.com/v03", "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
		},
		"skillSecurityRequirements": map[string]any{"review_pr": []any{map[string]any{"schemes": map[string]any{"bearer": map[string]any{"list": []string{"review"}}}}}},
	}
	bare := map[string]any{"agentId": "bare", "name": "Bare"}
	unicode := sampleCard("unicode")
	unicode["name"] = "Сервис 🤖 ünïcödé"
	unicode["description"] = "説明: \u2028 line separator, \"quotes\", \\ and \u00e9"
	unicode["capabilities"] = []any{map[string]any{"name": "переводить", "title": "翻訳"}}
	delete(unicode, "capabilities")
	unicode["capabilities"] = []any{map[string]any{"name": "translate", "title": "翻訳 🈳"}}
	schemes := sampleCard("schemes")
	schemes["a2a"] = map[string]any{
		"securitySchemes": map[string]any{
			"google": map[string]any{"openIdConnectSecurityScheme": map[string]any{"openIdConnectUrl": "https://accounts.google.com/.well-known/openid-configuration"}},
			"mtls":   map[string]any{"mtlsSecurityScheme": map[string]any{"description": "client certs"}},
		},
		"securityRequirements": []any{map[string]any{"schemes": map[string]any{"google": map[string]any{"list": []string{"openid"}}, "mtls": map[string]any{}}}},
	}
	out := map[string]map[string]any{"full": full, "bare": bare, "unicode": unicode, "schemes": schemes}
	// These cards declare a 1.0 and a 0.3 interface: their default card is the hybrid.
	both := []any{
		map[string]any{"url": "https://agents.example.com/code-reviewer", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
		map[string]any{"url": "https://agents.example.com/v03", "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
	}
	schemes["a2a"].(map[string]any)["interfaces"] = both
	for _, auth := range []map[string]any{
		{"type": "bearer", "scopes": []string{"a", "b"}},
		{"type": "api-key"},
		{"type": "oauth2", "scopes": []string{"read"}, "flows": map[string]any{"clientCredentials": map[string]any{"tokenUrl": "https://auth.example/token", "scopes": map[string]any{"read": "read cards"}}}},
		{"type": "none"},
	} {
		id := "auth-" + auth["type"].(string)
		c := sampleCard(id)
		c["authRequirements"] = auth
		c["a2a"] = map[string]any{"interfaces": both}
		out[id] = c
	}
	for _, c := range out {
		c["visibility"] = "public"
	}
	return out
}

// TestA2AServedCardsValidateAndVerify serves every card of the corpus in each form: each form
// validates against its version's schema (the hybrid default once the other version's members are
// removed, since the 1.0 schema forbids unknown members), verifies with the service's key, and
// a2a-go reads it; a form the card has no interface for is the version error.
func TestA2AServedCardsValidateAndVerify(t *testing.T) {
	v1, v03 := cardSchemas(t)
	forEachDialect(t, func(t *testing.T, e *env) {
		e.mkTenant("acme", "alice")
		alice := e.token("alice", "acme", false)
		jwks := e.jwks()
		for id, doc := range a2aCorpus() {
			expect(t, e.do("PUT", "/v1/tenants/acme/cards/"+id, alice, doc), http.StatusCreated)
			path := "/a2a/acme/" + id + "/.well-known/agent-card.json"
			declared := declaredInterfaces(doc)
			has := map[string]bool{}
			for _, i := range declared {
				has[string(i.ProtocolVersion)] = true
			}
			want, ok := a2aGoWants()[id]
			if !ok {
				t.Fatalf("%s: a2aGoWants has no entry for this card", id)
			}

			r := e.do("GET", path, "", nil)
			expect(t, r, http.StatusOK)
			if err := webtest.VerifyCard(jwks, r.body); err != nil {
				t.Fatalf("%s: default card's signature: %v", id, err)
			}
			if has["0.3"] {
				half10 := jsonOf(t, a2atest.Only10(t, r.body))
				a2atest.ValidateJSON(t, v1, half10)
				requireV1(t, half10)
				a2atest.ValidateJSON(t, v03, jsonOf(t, a2atest.Only03(t, r.body)))
				hybridReads(t, id, r.body, want, declared)
			} else {
				a2atest.ValidateJSON(t, v1, r.body)
				requireV1(t, r.body)
				a2aGoReads(t, id, r.body, want)
			}

			r10 := e.do("GET", path+"?version=1.0", "", nil)
			if !has["1.0"] {
				expect(t, r10, http.StatusBadRequest, "version_not_supported")
			} else {
				expect(t, r10, http.StatusOK)
				a2atest.ValidateJSON(t, v1, r10.body)
				requireV1(t, r10.body)
				if err := webtest.VerifyCard(jwks, r10.body); err != nil {
					t.Fatalf("%s: 1.0 signature: %v", id, err)
				}
				a2aGoReads(t, id, r10.body, want)
			}

			r03 := e.do("GET", path+"?version=0.3", "", nil)
			if !has["0.3"] {
				expect(t, r03, http.StatusBadRequest, "version_not_supported")
				continue
			}
			expect(t, r03, http.StatusOK)
			a2atest.ValidateJSON(t, v03, r03.body)
			if err := webtest.VerifyCard(jwks, r03.body); err != nil {
				t.Fatalf("%s: 0.3 signature: %v", id, err)
			}
			var interfaces03 []a2a.AgentInterface
			for _, i := range declared {
				if i.ProtocolVersion == "0.3" {
					interfaces03 = append(interfaces03, a2a.AgentInterface{URL: i.URL, ProtocolBinding: i.ProtocolBinding, ProtocolVersion: "0.3.0"})
				}
			}
			a2av0Reads(t, id, r03.body, want, interfaces03)
		}
	})
}

// declaredInterfaces are the interfaces a corpus card declares: its a2a.interfaces, else one
// 1.0 JSON-RPC interface at its endpoint (docs/a2a.md).
func declaredInterfaces(doc map[string]any) []a2a.AgentInterface {
	var out []a2a.AgentInterface
	block, _ := doc["a2a"].(map[string]any)
	list, _ := block["interfaces"].([]any)
	for _, x := range list {
		i := x.(map[string]any)
		tenant, _ := i["tenant"].(string)
		out = append(out, a2a.AgentInterface{URL: i["url"].(string), ProtocolBinding: a2a.TransportProtocol(i["protocolBinding"].(string)),
			ProtocolVersion: a2a.ProtocolVersion(i["protocolVersion"].(string)), Tenant: tenant})
	}
	if ep, ok := doc["endpoint"].(string); ok && len(out) == 0 {
		out = append(out, a2a.AgentInterface{URL: ep, ProtocolBinding: "JSONRPC", ProtocolVersion: "1.0"})
	}
	return out
}

func TestA2ASignatureFailsOnOneByte(t *testing.T) {
	e := newEnv(t, storagetest.Open(t, "sqlite"), 1<<20)
	e.mkTenant("acme", "alice")
	c := sampleCard("agt")
	c["visibility"] = "public"
	expect(t, e.do("PUT", "/v1/tenants/acme/cards/agt", e.token("alice", "acme", false), c), http.StatusCreated)
	r := e.do("GET", "/a2a/acme/agt/.well-known/agent-card.json", "", nil)
	expect(t, r, http.StatusOK)
	jwks := e.jwks()
	if err := webtest.VerifyCard(jwks, r.body); err != nil {
		t.Fatal(err)
	}
	tampered := strings.Replace(string(r.body), "Code Reviewer", "Code Reviewes", 1)
	if tampered == string(r.body) {
		t.Fatal("nothing changed")
	}
	if err := webtest.VerifyCard(jwks, []byte(tampered)); err == nil {
		t.Fatal("a one-byte change still verifies")
	}
}

func TestA2AResolverReadsOurCard(t *testing.T) {
	e := newEnv(t, storagetest.Open(t, "sqlite"), 1<<20)
	e.mkTenant("acme", "alice")
	c := sampleCard("agt")
	c["visibility"] = "public"
	c["authRequirements"] = map[string]any{"type": "none"}
	expect(t, e.do("PUT", "/v1/tenants/acme/cards/agt", e.token("alice", "acme", false), c), http.StatusCreated)
	card, err := agentcard.NewResolver(e.srv.Client()).Resolve(context.Background(), e.srv.URL+"/a2a/acme/agt")
	if err != nil {
		t.Fatal(err)
	}
	if card.Name != "Code Reviewer" || len(card.Skills) != 1 || card.Skills[0].ID != "review_pr" ||
		len(card.SupportedInterfaces) != 1 || card.SupportedInterfaces[0].URL != "https://agents.example.com/code-reviewer" ||
		len(card.Signatures) != 1 {
		t.Fatalf("resolved %+v", card)
	}
}

func TestA2AVisibilityVersionsAndCaching(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		e.mkTenant("acme", "alice")
		e.mkTenant("other", "olga")
		alice := e.token("alice", "acme", false)
		for id, vis := range map[string]string{"pub": "public", "ten": "tenant", "priv": "private"} {
			c := sampleCard(id)
			c["visibility"] = vis
			if id == "pub" { // a 1.0 and a 0.3 interface: three forms, the default one the hybrid
				c["a2a"] = map[string]any{"interfaces": []any{
					map[string]any{"url": "https://agents.example.com/code-reviewer", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
					map[string]any{"url": "https://agents.example.com/v03", "protocolBinding": "JSONRPC", "protocolVersion": "0.3"}}}
			}
			expect(t, e.do("PUT", "/v1/tenants/acme/cards/"+id, alice, c), http.StatusCreated)
		}
		card := func(id string) string { return "/a2a/acme/" + id + "/.well-known/agent-card.json" }

		expect(t, e.do("GET", card("pub"), "", nil), http.StatusOK)
		expect(t, e.do("GET", card("ten"), "", nil), http.StatusNotFound, "not_found")
		expect(t, e.do("GET", card("priv"), "", nil), http.StatusNotFound, "not_found")
		expect(t, e.do("GET", card("missing"), "", nil), http.StatusNotFound, "not_found")
		expect(t, e.do("GET", card("ten"), alice, nil), http.StatusOK)
		expect(t, e.do("GET", card("priv"), alice, nil), http.StatusOK)
		expect(t, e.do("GET", card("ten"), e.token("olga", "other", false), nil), http.StatusNotFound, "not_found")
		expect(t, e.do("GET", card("ten"), e.token("bob", "acme", false), nil), http.StatusNotFound, "not_found")
		expect(t, e.do("GET", card("ten"), "not-a-jwt", nil), http.StatusUnauthorized, "unauthorized")
		expect(t, e.do("GET", "/a2a/nope/pub/.well-known/agent-card.json", "", nil), http.StatusNotFound, "not_found")

		r := e.do("GET", card("pub"), "", nil)
		tag := r.header.Get("ETag")
		if tag == "" || r.header.Get("Cache-Control") != "public, max-age=300" {
			t.Fatalf("ETag %q Cache-Control %q", tag, r.header.Get("Cache-Control"))
		}
		if cc := e.do("GET", card("ten"), alice, nil).header.Get("Cache-Control"); cc != "private, max-age=300" {
			t.Fatalf("Cache-Control of a tenant card %q", cc)
		}
		expect(t, e.do("GET", card("pub"), "", nil, "If-None-Match", tag), http.StatusNotModified)
		r03 := e.do("GET", card("pub"), "", nil, "A2A-Version", "0.3")
		expect(t, r03, http.StatusOK)
		if r03.header.Get("ETag") == tag || !strings.Contains(string(r03.body), `"protocolVersion":"0.3.0"`) {
			t.Fatalf("0.3 form: ETag %q body %s", r03.header.Get("ETag"), r03.body)
		}
		expect(t, e.do("GET", card("pub")+"?version=0.3", "", nil, "If-None-Match", r03.header.Get("ETag")), http.StatusNotModified)
		// The default card and the explicit forms are different representations: none answers
		// 304 to another's tag, and each is signed over what it serves.
		r10 := e.do("GET", card("pub"), "", nil, "A2A-Version", "1.0")
		expect(t, r10, http.StatusOK)
		if t10 := r10.header.Get("ETag"); t10 == tag || t10 == r03.header.Get("ETag") || r10.header.Get("Vary") != "A2A-Version, Authorization" {
			t.Fatalf("1.0 form: ETag %q (default %q, 0.3 %q), Vary %q", t10, tag, r03.header.Get("ETag"), r10.header.Get("Vary"))
		}
		expect(t, e.do("GET", card("pub"), "", nil, "A2A-Version", "1.0", "If-None-Match", tag), http.StatusOK)
		expect(t, e.do("GET", card("pub"), "", nil, "If-None-Match", r10.header.Get("ETag")), http.StatusOK)
		expect(t, e.do("GET", card("pub"), "", nil, "A2A-Version", "1.0", "If-None-Match", r10.header.Get("ETag")), http.StatusNotModified)
		bad := e.do("GET", card("pub")+"?version=2.0", "", nil)
		expect(t, bad, http.StatusBadRequest, "invalid")
		if !strings.Contains(string(bad.body), "1.0 and 0.3") {
			t.Fatalf("400 does not name the versions served: %s", bad.body)
		}
		// The header is never refused (TestA2AVersionHeaderNeverRefuses): a version not served
		// gets the default card, and ?version= wins over it.
		if r := e.do("GET", card("pub"), "", nil, "A2A-Version", "0.2"); r.status != http.StatusOK || r.header.Get("ETag") != tag {
			t.Fatalf("A2A-Version 0.2: %d, ETag %q (default %q)", r.status, r.header.Get("ETag"), tag)
		}
		if r := e.do("GET", card("pub")+"?version=1.0", "", nil, "A2A-Version", "0.3"); r.status != http.StatusOK || r.header.Get("ETag") != r10.header.Get("ETag") {
			t.Fatalf("?version=1.0 with A2A-Version 0.3: %d, ETag %q (1.0 %q)", r.status, r.header.Get("ETag"), r10.header.Get("ETag"))
		}

		// A write changes the tag.
		expect(t, e.do("PATCH", "/v1/tenants/acme/cards/pub", alice, map[string]any{"name": "Renamed"}), http.StatusOK)
		expect(t, e.do("GET", card("pub"), "", nil, "If-None-Match", tag), http.StatusOK)

		// A suspended tenant publishes nothing.
		expect(t, e.do("PATCH", "/v1/tenants/acme", e.admin(), map[string]any{"status": "suspended"}), http.StatusOK)
		expect(t, e.do("GET", card("pub"), "", nil), http.StatusNotFound, "not_found")
		// ... and its list is empty, exactly as a missing tenant's: these open routes do not
		// tell which tenants exist.
		suspended, missing := e.do("GET", "/a2a/acme/agents", "", nil), e.do("GET", "/a2a/no-such-tenant/agents", "", nil)
		expect(t, suspended, http.StatusOK)
		if string(suspended.body) != string(missing.body) || !strings.Contains(string(missing.body), `"items":[]`) ||
			suspended.header.Get("Cache-Control") != missing.header.Get("Cache-Control") || missing.header.Get("Cache-Control") == "" {
			t.Fatalf("suspended %s %v, missing %s %v", suspended.body, suspended.header, missing.body, missing.header)
		}
		for _, q := range []string{"?limit=0", "?x=1", "?cursor=!!"} {
			expect(t, e.do("GET", "/a2a/no-such-tenant/agents"+q, "", nil), http.StatusBadRequest, "invalid")
		}
		expect(t, e.do("GET", "/a2a/no-such-tenant/pub/.well-known/agent-card.json?version=9", "", nil), http.StatusBadRequest, "invalid")
		if a, b := e.do("GET", card("pub"), "", nil), e.do("GET", "/a2a/no-such-tenant/pub/.well-known/agent-card.json", "", nil); errMessage(t, a) != errMessage(t, b) {
			t.Fatalf("a suspended tenant's card and a missing tenant's differ: %s / %s", a.body, b.body)
		}
	})
}

func TestA2AAgentsListsPublicCards(t *testing.T) {
	forEachDialectAndIndex(t, func(t *testing.T, e *env) {
		e.mkTenant("acme", "alice")
		alice := e.token("alice", "acme", false)
		for i, id := range []string{"a", "b", "c", "d", "e", "f", "g"} {
			c := sampleCard(id)
			if i%2 == 0 {
				c["visibility"] = "public"
			}
			expect(t, e.do("PUT", "/v1/tenants/acme/cards/"+id, alice, c), http.StatusCreated)
		}
		var got []string
		cursor := ""
		for pages := 0; pages < 10; pages++ {
			path := "/a2a/acme/agents?limit=2"
			if cursor != "" {
				path += "&cursor=" + cursor
			}
			r := e.do("GET", path, "", nil)
			expect(t, r, http.StatusOK)
			var page struct {
				Items []struct {
					AgentID, Name, CardURL string
				}
				NextCursor string
			}
			r.json(t, &page)
			for _, it := range page.Items {
				got = append(got, it.AgentID)
				if it.CardURL != "/a2a/acme/"+it.AgentID+"/.well-known/agent-card.json" || it.Name == "" {
					t.Fatalf("item %+v", it)
				}
			}
			if cursor = page.NextCursor; cursor == "" {
				break
			}
		}
		if strings.Join(got, ",") != "a,c,e,g" {
			t.Fatalf("public agents %v", got)
		}
		expect(t, e.do("GET", "/a2a/acme/agents?limit=0", "", nil), http.StatusBadRequest, "invalid")
		expect(t, e.do("GET", "/a2a/acme/agents?cursor=!!!", "", nil), http.StatusBadRequest, "invalid")
		expect(t, e.do("GET", "/a2a/acme/agents?q=x", "", nil), http.StatusBadRequest, "invalid")
	})
}
