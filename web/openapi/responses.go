package openapi

import (
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/agentcards/agentcards/web/api"
)

// What the handlers of package web answer beyond what the catalogue says. The web tests hold
// the handlers to it: every answer they receive is checked against the document.

// successes are the success statuses of a request's route ("name METHOD") when they are not
// 200, or 204 for a request that answers nothing (api.Empty).
var successes = map[string][]int{
	"tenants.create POST":       {http.StatusCreated},
	"cards.register POST":       {http.StatusCreated},
	"cards.register_batch POST": {http.StatusCreated},
	"cards.import POST":         {http.StatusCreated},
	"cards.replace PUT":         {http.StatusOK, http.StatusCreated},
	"cards.get GET":             {http.StatusOK, http.StatusNotModified},
	"a2a.card GET":              {http.StatusOK, http.StatusNotModified},
	"a2a.catalog GET":           {http.StatusOK, http.StatusNotModified},
	"roles.grant POST":          {http.StatusOK, http.StatusCreated},
	"policies.add POST":         {http.StatusOK, http.StatusCreated},
	"delegations.create POST":   {http.StatusOK, http.StatusAccepted},
	"mesh.agents_register POST": {http.StatusCreated},
	"webhooks.create POST":      {http.StatusCreated},
	"sources.create POST":       {http.StatusCreated},
	"sources.remove DELETE":     {http.StatusAccepted},
}

// successText says what a success status means where a request has several.
var successText = map[string]string{
	"cards.replace PUT 200":       "The card was replaced.",
	"cards.replace PUT 201":       "The card was created.",
	"cards.get GET 304":           "The card's ETag matches If-None-Match.",
	"a2a.card GET 304":            "The card's ETag matches If-None-Match.",
	"a2a.catalog GET 304":         "The catalog's ETag matches If-None-Match.",
	"roles.grant POST 200":        "The subject had the role already.",
	"roles.grant POST 201":        "The role was given.",
	"policies.add POST 200":       "The policy was there already.",
	"policies.add POST 201":       "The policy was added.",
	"delegations.create POST 200": "A sync delegation: the record holds its outcome.",
	"delegations.create POST 202": "An async delegation: the agent reports its outcome to its callback URL later.",
	"sources.remove DELETE 202":   "The source is removing: its cards are being removed, then it is gone.",
}

// responseHeaders are the headers of a success answer ("name METHOD status"), beside X-Request-Id.
var responseHeaders = map[string][]string{
	"tenants.create POST 201":     {"Location"},
	"webhooks.create POST 201":    {"Location"},
	"sources.create POST 201":     {"Location"},
	"cards.register POST 201":     {"Location", "ETag"},
	"cards.import POST 201":       {"Location", "ETag"},
	"cards.replace PUT 200":       {"ETag"},
	"cards.replace PUT 201":       {"Location", "ETag"},
	"cards.update PATCH 200":      {"ETag"},
	"cards.refresh POST 200":      {"ETag"},
	"cards.get GET 200":           {"ETag"},
	"cards.get GET 304":           {"ETag"},
	"a2a.card GET 200":            {"ETag", "Cache-Control", "Vary", "A2A-Card-Version"},
	"a2a.card GET 304":            {"ETag", "Cache-Control", "Vary", "A2A-Card-Version"},
	"a2a.agents GET 200":          {"Cache-Control"},
	"a2a.catalog GET 200":         {"ETag", "Cache-Control", "Agentcards-Signature"},
	"a2a.catalog GET 304":         {"ETag", "Cache-Control"},
	"keys.list GET 200":           {"Cache-Control"},
	"delegations.create POST 200": {"Location"},
	"delegations.create POST 202": {"Location"},
	"service.openapi GET 200":     {"Cache-Control"},
	"cards.changes GET 200":       {"Agentcards-Signature"},
}

func header(desc string) *openapi3.HeaderRef {
	return &openapi3.HeaderRef{Value: &openapi3.Header{Parameter: openapi3.Parameter{
		Description: desc, Required: true, Schema: openapi3.NewStringSchema().NewRef(),
	}}}
}

// optionalHeader is header for a header some answers of the status lack.
func optionalHeader(desc string) *openapi3.HeaderRef {
	h := header(desc)
	h.Value.Required = false
	return h
}

// knownHeaders describes the headers of responseHeaders.
var knownHeaders = map[string]*openapi3.HeaderRef{
	"Location":             header("where the resource created (or the delegation's record) is read"),
	"ETag":                 header("the entity tag: a card's revision in quotes; for an A2A card or an AI Catalog, a hash of the document served and the key that signs it"),
	"Cache-Control":        header("how long caches may keep the answer"),
	"Vary":                 header("the request headers the answer depends on"),
	"Agentcards-Signature": optionalHeader("the service's signature of a page of the change feed (not of a stream) or of an AI Catalog: a JWS with a detached payload (protected..signature, RFC 7515 appendix F) over the body's exact bytes, with a key of /.well-known/jwks.json its kid names; its protected header also names the tenant and when it was signed (iat). Absent when the server has no signing keys"),
	"A2A-Card-Version":     header("the A2A versions the card served is read as: 1.0, 0.3, or \"1.0, 0.3\" for the default card of an agent with a 0.3 interface"),
}

// extraHeaders are request headers a handler reads that its input has no field for.
var extraHeaders = map[string]openapi3.Parameters{
	"cards.get": {ifNoneMatch("answer 304 without the card when its ETag is among these (weak comparison), or *")},
	"a2a.card": {
		ifNoneMatch("answer 304 without the card when its ETag is among these (weak comparison), or *"),
		&openapi3.ParameterRef{Value: &openapi3.Parameter{In: openapi3.ParameterInHeader, Name: "A2A-Version",
			Description: "the A2A version the client prefers, major.minor: that form when the agent declares an interface of it, else the default card (never refused); ?version= wins over it; empty, or no major.minor, is none",
			Schema:      openapi3.NewStringSchema().NewRef()}},
	},
	"a2a.catalog":   {ifNoneMatch("answer 304 without the document when its ETag is among these (weak comparison), or *")},
	"cards.replace": {ifNoneMatch("*: create the card only if it does not exist")},
	"cards.changes": {
		&openapi3.ParameterRef{Value: &openapi3.Parameter{In: openapi3.ParameterInHeader, Name: "Last-Event-ID",
			Description: "with Accept: text/event-stream, the id of the last event received (a cursor): the stream resumes after it, and it wins over since",
			Schema:      openapi3.NewStringSchema().NewRef()}},
	},
}

// mediaTypes are the media types of the answers ("name METHOD status") that are not
// application/json.
var mediaTypes = map[string]string{
	"a2a.catalog GET 200": "application/ai-catalog+json",
}

// streams are the answers ("name METHOD status") that are also a live stream of Server-Sent
// Events, when the client's Accept asks for text/event-stream, and what the stream carries.
var streams = map[string]string{
	"cards.changes GET 200": "With Accept: text/event-stream, the feed as a live stream of Server-Sent Events: " +
		"first `ready` (data {cursor}), then a `change` event per change as it commits (data: a member of changes, " +
		"id: the cursor after it, which since or Last-Event-ID resumes from), a comment every 15 s, and, when the " +
		"server ends it, a final `resume` (data {reason: slow, draining or token_expired; cursor}) or `error` " +
		"(data: the error body). Refused with 429 rate_limited and Retry-After past the replica's stream limits.",
}

func ifNoneMatch(doc string) *openapi3.ParameterRef {
	p := openapi3.NewHeaderParameter("If-None-Match")
	p.Description = doc
	p.Schema = openapi3.NewStringSchema().NewRef()
	return &openapi3.ParameterRef{Value: p}
}

// SearchBody is the body of the search's POST form. Its lists are named in the plural (the
// names of search.Query), where the GET form's query parameters, and so the catalogue's input,
// are singular.
type SearchBody struct {
	Protocols    []string `json:"protocols,omitempty" doc:"protocols the card must speak, any case (all of them)"`
	Capabilities []string `json:"capabilities,omitempty" doc:"capabilities the card must have, by exact name (all of them)"`
	Tags         []string `json:"tags,omitempty" doc:"tags the card must have, any case (all of them)"`
	Resources    []string `json:"resources,omitempty" doc:"URIs the card's resources must cover"`
	Status       []string `json:"status,omitempty" doc:"the statuses to find (any of them): active and deprecated by default" enum:"active,deprecated,disabled"`
	Verified     *bool    `json:"verified,omitempty" doc:"true: only cards whose imported signature verified; false: only the others"`
	Trusted      *bool    `json:"trusted,omitempty" doc:"true: only cards an issuer of the tenant's trust policy vouches for; false: only the others"`
	Online       *bool    `json:"online,omitempty" doc:"true: only cards whose agent is online; false: only those offline or never heard of"`
	Name         string   `json:"name,omitempty" doc:"a substring of the card's name, any case"`
	Q            string   `json:"q,omitempty" doc:"free text, ranked"`
	Limit        *int     `json:"limit,omitempty" doc:"the page size: 1 to 100, 20 by default"`
	Cursor       string   `json:"cursor,omitempty" doc:"the nextCursor of the previous page"`
	Explain      bool     `json:"explain,omitempty" doc:"true: with q, each result says why it scored as it did"`
}

// bodies are the bodies of routes whose input type does not describe them: the search's POST
// form, and the DELETEs that take what their query parameters say as a body instead.
var bodies = map[string]reflect.Type{
	"cards.search POST":      reflect.TypeFor[SearchBody](),
	"roles.revoke DELETE":    reflect.TypeFor[api.RoleChange](),
	"policies.remove DELETE": reflect.TypeFor[api.PolicyAdd](),
}

// optionalBodies are the requests whose body may be left out, and why.
var optionalBodies = map[string]string{
	"roles.revoke":    "The assignment, when the query names neither subject nor role: the query's parameters as a JSON object.",
	"policies.remove": "The policy, when the query names none of its fields: the query's parameters as a JSON object.",
	"cards.refresh":   "The keys that verify the card's signatures, when they are not the jku's.",
}

// ignoredMembers are members a type's body admits and ignores, of any value: a card read back
// (with the members the server owns) can be written again as it is.
var ignoredMembers = map[reflect.Type]map[string]string{
	reflect.TypeFor[api.CardInput](): {
		"id": "the server's; ignored", "revision": "the server's; ignored (If-Match makes a write conditional)",
		"createdAt": "the server's; ignored", "updatedAt": "the server's; ignored",
		"source":   "the server's (where the card was imported from); ignored",
		"liveness": "the server's (served on reads, never stored); ignored",
	},
}

// everyRoute are the error codes every route may answer: a query parameter it does not take or
// that does not parse (invalid), a bug (internal), the database down (unavailable) or the
// request's time run out (timeout).
var everyRoute = []string{"invalid", "internal", "unavailable", "timeout"}

// withBody are the error codes of a route that reads a body.
var withBody = []string{"malformed_json", "too_large", "unsupported_media_type"}

// errorsOf are the error codes a request may answer beyond those its route's shape implies.
var errorsOf = map[string][]string{
	"tenants.create":          {"conflict"},
	"cards.register":          {"conflict"},
	"cards.register_batch":    {"conflict"},
	"cards.import":            {"conflict", "blocked_url", "invalid_signature", "fetch_failed"},
	"cards.refresh":           {"conflict", "blocked_url", "fetch_failed", "precondition_failed"},
	"cards.replace":           {"precondition_failed", "conflict"},
	"cards.update":            {"precondition_failed", "conflict"},
	"cards.remove":            {"precondition_failed", "conflict"},
	"cards.changes":           {"cursor_expired", "rate_limited"},
	"a2a.card":                {"version_not_supported"},
	"keys.list":               {"not_found"},
	"delegations.create":      {"depth_exceeded", "endpoint_blocked", "rate_limited", "agent_unavailable", "card_disabled", "agent_offline"},
	"delegations.import":      {"conflict"},
	"roles.grant":             {"lockout"},
	"roles.revoke":            {"lockout"},
	"policies.add":            {"lockout"},
	"policies.remove":         {"lockout"},
	"delegations.complete":    {"conflict", "expired"},
	"mesh.agents_register":    {"conflict", "precondition_failed"},
	"mesh.delegate":           {"depth_exceeded", "endpoint_blocked", "rate_limited", "agent_unavailable", "card_disabled", "agent_offline"},
	"mesh.delegations_result": {"conflict", "expired"},
	"webhooks.create":         {"conflict", "blocked_url"},
	"sources.create":          {"conflict", "blocked_url"},
	"sources.update":          {"conflict"},
	"webhooks.update":         {"blocked_url"},
}

// requestIDHeader are the headers every answer has.
func requestIDHeader() openapi3.Headers {
	return openapi3.Headers{"X-Request-Id": &openapi3.HeaderRef{Ref: "#/components/headers/X-Request-Id"}}
}

// errorBody adds the one error body to the components: Error, whose code is one of the codes
// the API answers.
func (b *builder) errorBody() {
	codes := slices.Sorted(maps.Keys(b.errs))
	enum := make([]any, len(codes))
	for i, c := range codes {
		enum[i] = c
	}
	detail := openapi3.NewObjectSchema().WithoutAdditionalProperties().
		WithProperty("code", openapi3.NewStringSchema().WithEnum(enum...)).
		WithProperty("message", openapi3.NewStringSchema()).
		WithProperty("requestId", openapi3.NewStringSchema())
	detail.Required = []string{"code", "message", "requestId"}
	detail.Properties["code"].Value.Description = "what went wrong, for programs: the status tells the class, the code the case"
	detail.Properties["message"].Value.Description = "what went wrong, for people; never internal details"
	detail.Properties["requestId"].Value.Description = "the request's id, as its X-Request-Id header"
	body := openapi3.NewObjectSchema().WithoutAdditionalProperties().WithProperty("error", detail)
	body.Required = []string{"error"}
	body.Description = "The one error body of the API."
	b.s.comp["Error"] = body.NewRef()
}

// flatErrorBody adds the flat error body of a registry's compatible door to the components:
// FlatError, that registry's {"error": message} with the code and request id beside it.
func (b *builder) flatErrorBody() {
	body := openapi3.NewObjectSchema().WithoutAdditionalProperties().
		WithProperty("error", openapi3.NewStringSchema()).
		WithProperty("code", openapi3.NewStringSchema().WithEnum(b.s.comp["Error"].Value.Properties["error"].Value.Properties["code"].Value.Enum...)).
		WithProperty("requestId", openapi3.NewStringSchema())
	body.Required = []string{"error", "code", "requestId"}
	body.Properties["error"].Value.Description = "what went wrong, for people; never internal details"
	body.Properties["code"].Value.Description = "what went wrong, for programs, as in the one error body"
	body.Properties["requestId"].Value.Description = "the request's id, as its X-Request-Id header"
	body.Description = "The error body of agentkit-mesh's control plane (the mesh.* operations): its {\"error\": message}, with the code and request id beside."
	b.s.comp["FlatError"] = body.NewRef()
}

// errorResponse names the component of the error answer with status, adding it the first time:
// the error body (flat: the FlatError body), its code one of those of status.
func (b *builder) errorResponse(status int, flat bool) string {
	name := strings.ReplaceAll(http.StatusText(status), " ", "")
	if flat {
		name = "Flat" + name
	}
	if _, ok := b.responses[name]; ok {
		return name
	}
	var codes []string
	for c, s := range b.errs {
		if s == status {
			codes = append(codes, c)
		}
	}
	slices.Sort(codes)
	enum := make([]any, len(codes))
	for i, c := range codes {
		enum[i] = c
	}
	narrow := openapi3.NewObjectSchema().WithProperty("error",
		openapi3.NewObjectSchema().WithProperty("code", openapi3.NewStringSchema().WithEnum(enum...)))
	schema := &openapi3.Schema{AllOf: openapi3.SchemaRefs{
		openapi3.NewSchemaRef("#/components/schemas/Error", b.s.comp["Error"].Value), narrow.NewRef(),
	}}
	desc := fmt.Sprintf("%s: the error body, code %s.", http.StatusText(status), strings.Join(codes, ", "))
	if flat {
		narrow = openapi3.NewObjectSchema().WithProperty("code", openapi3.NewStringSchema().WithEnum(enum...))
		schema = &openapi3.Schema{AllOf: openapi3.SchemaRefs{
			openapi3.NewSchemaRef("#/components/schemas/FlatError", b.s.comp["FlatError"].Value), narrow.NewRef(),
		}}
		desc = fmt.Sprintf("%s: agentkit-mesh's error body, code %s.", http.StatusText(status), strings.Join(codes, ", "))
	}
	res := &openapi3.Response{Description: &desc, Headers: requestIDHeader(),
		Content: openapi3.NewContentWithJSONSchema(schema)}
	switch status {
	case http.StatusUnauthorized:
		res.Headers["WWW-Authenticate"] = header(`the Bearer challenge (RFC 6750), with error="invalid_token" when a token was sent and refused`)
	case http.StatusServiceUnavailable:
		h := header("seconds to wait before trying again, when the database is unavailable")
		h.Value.Required = false
		h.Value.Schema = openapi3.NewIntegerSchema().NewRef()
		res.Headers["Retry-After"] = h
	case http.StatusTooManyRequests:
		h := header("seconds to wait before trying again, when a limit of the server's (such as its live streams') was reached")
		h.Value.Required = false
		h.Value.Schema = openapi3.NewIntegerSchema().NewRef()
		res.Headers["Retry-After"] = h
	}
	b.responses[name] = &openapi3.ResponseRef{Value: res}
	return name
}

// mcp is the operation of the MCP door: one POST endpoint of the streamable HTTP transport.
func (b *builder) mcp() *openapi3.Operation {
	message := openapi3.NewObjectSchema().
		WithProperty("jsonrpc", openapi3.NewStringSchema().WithEnum("2.0")).
		WithProperty("method", openapi3.NewStringSchema()).
		WithPropertyRef("id", openapi3.NewSchemaRef("", &openapi3.Schema{Nullable: true, OneOf: openapi3.SchemaRefs{
			openapi3.NewStringSchema().NewRef(), openapi3.NewIntegerSchema().NewRef(),
		}})).
		WithProperty("params", openapi3.NewObjectSchema()).
		WithProperty("result", openapi3.NewObjectSchema()).
		WithProperty("error", openapi3.NewObjectSchema())
	message.Required = []string{"jsonrpc"}
	message.Description = "a JSON-RPC 2.0 message"
	answered := "The JSON-RPC response."
	noted := "A notification or a response, taken: nothing to answer."
	res := openapi3.NewResponses()
	res.Set("200", &openapi3.ResponseRef{Value: &openapi3.Response{Description: &answered, Headers: requestIDHeader(),
		Content: openapi3.NewContentWithJSONSchema(message)}})
	res.Set("202", &openapi3.ResponseRef{Value: &openapi3.Response{Description: &noted, Headers: requestIDHeader()}})
	for _, status := range []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden, http.StatusRequestEntityTooLarge,
		http.StatusInternalServerError, http.StatusServiceUnavailable} {
		res.Set(fmt.Sprint(status), &openapi3.ResponseRef{Ref: "#/components/responses/" + b.errorResponse(status, false)})
	}
	return &openapi3.Operation{
		OperationID: "mcp",
		Summary:     "The MCP door: every request of the catalogue's MCP door as a tool",
		Description: "The Model Context Protocol's streamable HTTP transport, stateless, with JSON answers: " +
			"initialize, then tools/list and tools/call. Each tool is a request of this API under its name " +
			"with _ for the dots (cards.search is cards_search), takes the request's fields, and answers " +
			"as the REST operation does; a refusal is a tool error whose text is this API's error body. " +
			"The same bearer token as on REST admits the caller. A request with an Origin header (a browser's) is 403 " +
			"forbidden unless that origin is listed in server.corsOrigins or is the server's own (delegation.publicUrl), " +
			"against DNS rebinding; a request without Origin passes.",
		Tags:        []string{"mcp"},
		Security:    &openapi3.SecurityRequirements{{bearer: {}}},
		RequestBody: &openapi3.RequestBodyRef{Value: openapi3.NewRequestBody().WithRequired(true).WithJSONSchema(message)},
		Responses:   res,
	}
}
