package openapi_test

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/agentcards/agentcards/cards/search"
	"github.com/agentcards/agentcards/web/openapi"
)

// errs is a small table of error codes, enough for the document to be built.
var errs = openapi.Errors{
	"invalid": 400, "malformed_json": 400, "blocked_url": 400, "invalid_signature": 400, "version_not_supported": 400,
	"unauthorized": 401, "forbidden": 403, "tenant_suspended": 403, "depth_exceeded": 403, "endpoint_blocked": 403,
	"not_found": 404, "method_not_allowed": 405, "conflict": 409, "card_disabled": 409, "agent_offline": 409, "lockout": 409, "expired": 410, "cursor_expired": 410, "precondition_failed": 412,
	"too_large": 413, "unsupported_media_type": 415, "rate_limited": 429, "internal": 500, "fetch_failed": 502,
	"unavailable": 503, "agent_unavailable": 503, "timeout": 503,
}

// TestDocumentValidates: the document, as served and read back, is valid OpenAPI 3.
func TestDocumentValidates(t *testing.T) {
	raw, err := openapi.JSON(errs)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := openapi3.NewLoader().LoadFromData(raw)
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := openapi.New(openapi.Errors{"invalid": 400}); err == nil {
		t.Error("a table without the codes the operations answer builds a document")
	}
}

// TestSchemas: the schemas are the JSON that encoding/json writes: optional members are those
// it may leave out, a time is a date-time string, a pointer may be null.
func TestSchemas(t *testing.T) {
	doc, err := openapi.New(errs)
	if err != nil {
		t.Fatal(err)
	}
	card := doc.Components.Schemas["Card"].Value
	if !slices.Contains(card.Required, "agentId") || slices.Contains(card.Required, "description") {
		t.Errorf("Card requires %v", card.Required)
	}
	if f := card.Properties["createdAt"].Value; f.Format != "date-time" || !f.Type.Is("string") {
		t.Errorf("createdAt: %+v", f)
	}
	if p := card.Properties["authRequirements"].Value; !p.Nullable || len(p.AllOf) != 1 || p.AllOf[0].Ref == "" {
		t.Errorf("authRequirements is not a nullable reference: %+v", p)
	}
	if ap := card.AdditionalProperties.Has; ap == nil || *ap {
		t.Error("Card admits members it does not name")
	}
	// A field's enum tag narrows its values, in a body and in the query.
	body := doc.Paths.Value("/v1/tenants/{tenant}/delegations").Post.RequestBody.Value.Content["application/json"].Schema.Value
	if mode := body.Properties["mode"].Value; !slices.Equal(mode.Enum, []any{"sync", "async"}) {
		t.Errorf("delegations.create's mode takes %v", mode.Enum)
	}
	if p := doc.Paths.Value("/v1/tenants/{tenant}/delegations").Get.Parameters.GetByInAndName("query", "status"); p == nil || len(p.Schema.Value.Enum) != 7 {
		t.Errorf("delegations.list's status: %+v", p)
	}
	// Its min and max tags bound a number, in the query and in a body.
	if p := doc.Paths.Value("/v1/tenants/{tenant}/delegations").Get.Parameters.GetByInAndName("query", "limit"); p == nil ||
		p.Schema.Value.Min == nil || *p.Schema.Value.Min != 1 || p.Schema.Value.Max == nil || *p.Schema.Value.Max != 200 {
		t.Errorf("delegations.list's limit: %+v", p)
	}
	if ms := body.Properties["timeoutMs"].Value; ms.Min == nil || *ms.Min != 0 || ms.Max != nil {
		t.Errorf("delegations.create's timeoutMs: minimum %v, maximum %v", ms.Min, ms.Max)
	}
	tenant := doc.Paths.Value("/v1/tenants/{tenant}").Patch.RequestBody.Value.Content["application/json"].Schema.Value
	if st := tenant.Properties["status"].Value; !st.Nullable || !slices.Equal(st.Enum, []any{"active", "suspended", nil}) {
		t.Errorf("tenants.update's status: nullable %v, enum %v", st.Nullable, st.Enum)
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var v any
	b, _ := json.Marshal(map[string]any{"id": "acme", "name": "Acme", "status": "active", "createdAt": now, "updatedAt": now})
	_ = json.Unmarshal(b, &v)
	if err := doc.Components.Schemas["Tenant"].Value.VisitJSON(v); err != nil {
		t.Errorf("a tenant: %v", err)
	}
}

// TestSearchBody: the search's POST body has the members of search.Query, which it is decoded
// into.
func TestSearchBody(t *testing.T) {
	names := func(t reflect.Type) []string {
		b, _ := json.Marshal(reflect.New(t).Interface())
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		var out []string
		for k := range m {
			out = append(out, k)
		}
		slices.Sort(out)
		return out
	}
	want := names(reflect.TypeFor[search.Query]())
	var got []string
	for k := range reflect.TypeFor[openapi.SearchBody]().Fields() {
		name, _, _ := strings.Cut(k.Tag.Get("json"), ",")
		got = append(got, name)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("SearchBody has %v, search.Query %v", got, want)
	}
}

func TestTemplate(t *testing.T) {
	for in, want := range map[string]string{
		"/v1/tenants/:tenant/cards/:agentId": "/v1/tenants/{tenant}/cards/{agentId}",
		`/v1/tenants/:tenant/cards\:batch`:   "/v1/tenants/{tenant}/cards:batch",
		"/health":                            "/health",
	} {
		if got := openapi.Template(in); got != want {
			t.Errorf("Template(%q) = %q, want %q", in, got, want)
		}
	}
}
