// Package openapi describes the REST door as an OpenAPI 3 document, derived from the catalogue
// (web/catalog): a path per route, an operation per request's route, with its parameters and
// body read from the request's input type (package web/api says where each field travels), its
// answer from the output type, its authentication from its access, and the API's one error body.
// What the catalogue does not say, which statuses and headers a handler answers with, is in
// responses.go; the web tests check every answer they receive against the document.
package openapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/agentcards/agentcards/web/api"
	"github.com/agentcards/agentcards/web/catalog"
)

// Path is where the document is served.
const Path = "/openapi.json"

// MCPPath is where the MCP door is served; the document names it, and says it is another door.
const MCPPath = "/mcp"

// The security schemes.
const (
	bearer      = "bearer"
	resultToken = "delegationToken"
)

const (
	mediaJSON       = "application/json"
	mediaMergePatch = "application/merge-patch+json"
)

var emptyType = reflect.TypeFor[api.Empty]()

// Errors maps each error code the API answers to its HTTP status.
type Errors map[string]int

// New builds the document of the REST door from catalog.Requests, with errs the error codes
// of the one error body.
func New(errs Errors) (*openapi3.T, error) {
	b := &builder{s: newSchemas(), errs: errs, responses: openapi3.ResponseBodies{}}
	doc := &openapi3.T{
		OpenAPI: "3.0.3",
		Info: &openapi3.Info{
			Title:   "agentcards",
			Version: "v1",
			Description: "The REST door of agentcards, a registry of AI agents' cards: tenants, cards, " +
				"search, roles and policies, delegations and the A2A views. Every error answers the one " +
				"error body (components.schemas.Error) with a code from its enum, but for the mesh.* operations, " +
				"agentkit-mesh's control plane, which answer that registry's (components.schemas.FlatError). The same requests are " +
				"served as MCP tools at " + MCPPath + " and by the CLI and the Go client. Browsers: CORS is off unless " +
				"server.corsOrigins lists origins. A preflight (OPTIONS with Origin and Access-Control-Request-Method, " +
				"on any path here; no operation of this document) from a listed origin is 204 with Access-Control-Allow-Origin, " +
				"-Methods (the path's), -Headers and -Max-Age; any other is 403 forbidden. An answer to a listed origin carries " +
				"Access-Control-Allow-Origin and Access-Control-Expose-Headers (ETag, Location, X-Request-Id, Retry-After, " +
				"A2A-Card-Version, X-Agentcards-Stale, Agentcards-Signature), and with origins listed every answer has Vary: Origin. Every answer " +
				"carries X-Content-Type-Options: nosniff.",
		},
		Paths: openapi3.NewPaths(),
	}
	b.errorBody()
	b.flatErrorBody()
	for _, r := range catalog.Requests {
		if r.Doors&catalog.REST == 0 {
			continue
		}
		for i, route := range r.Routes {
			op, err := b.operation(r, i)
			if err != nil {
				return nil, err
			}
			p := Template(route.Path)
			item := doc.Paths.Value(p)
			if item == nil {
				item = &openapi3.PathItem{}
				doc.Paths.Set(p, item)
			}
			item.SetOperation(route.Method, op)
		}
	}
	doc.Paths.Set(MCPPath, &openapi3.PathItem{Post: b.mcp()})
	doc.Components = &openapi3.Components{
		Schemas:   b.s.comp,
		Responses: b.responses,
		Headers: openapi3.Headers{
			"X-Request-Id": &openapi3.HeaderRef{Value: &openapi3.Header{Parameter: openapi3.Parameter{
				Description: "the request's id: the caller's X-Request-Id when it is 1 to 64 of [A-Za-z0-9._:-], else a new one; errors repeat it as requestId",
				Required:    true, Schema: openapi3.NewStringSchema().NewRef(),
			}}},
		},
		SecuritySchemes: openapi3.SecuritySchemes{
			bearer: &openapi3.SecuritySchemeRef{Value: &openapi3.SecurityScheme{
				Type: "http", Scheme: "bearer", BearerFormat: "JWT",
				Description: "a user's token, or the delegation token an agent was called with",
			}},
			resultToken: &openapi3.SecuritySchemeRef{Value: &openapi3.SecurityScheme{
				Type: "apiKey", In: "query", Name: "token",
				Description: "the delegation's own token, from the callback URL the agent was given",
			}},
		},
	}
	return doc, nil
}

// JSON is the document, as served.
func JSON(errs Errors) ([]byte, error) {
	doc, err := New(errs)
	if err != nil {
		return nil, err
	}
	return json.Marshal(doc)
}

var echoParam = regexp.MustCompile(`:([A-Za-z_][A-Za-z0-9_]*)`)

// Template is the OpenAPI path of an Echo route: :name becomes {name}, an escaped colon a colon.
func Template(echoPath string) string {
	parts := strings.Split(echoPath, `\:`)
	for i, p := range parts {
		parts[i] = echoParam.ReplaceAllString(p, "{$1}")
	}
	return strings.Join(parts, ":")
}

type builder struct {
	s         *schemas
	errs      Errors
	responses openapi3.ResponseBodies
}

// operation is the operation of r's i-th route.
func (b *builder) operation(r catalog.Request, i int) (*openapi3.Operation, error) {
	route := r.Routes[i]
	resource, _, _ := strings.Cut(r.Name, ".")
	op := &openapi3.Operation{
		OperationID: r.Name,
		Summary:     r.Does,
		Description: "Who may call it: " + r.Caller + ".",
		Tags:        []string{resource},
		Responses:   openapi3.NewResponses(),
	}
	if i > 0 {
		op.OperationID = r.Name + "_" + strings.ToLower(route.Method)
	}
	if r.NotOn != "" {
		op.Description += " Served on REST only: " + r.NotOn + "."
	}
	switch r.Access {
	case catalog.Token:
		op.Security = &openapi3.SecurityRequirements{{bearer: {}}}
	case catalog.OptionalToken:
		op.Security = &openapi3.SecurityRequirements{{}, {bearer: {}}}
		op.Description += " A bearer token, when sent, must be valid; it opens what its holder may read."
	case catalog.ResultToken:
		op.Security = &openapi3.SecurityRequirements{{resultToken: {}}}
	default:
		op.Security = &openapi3.SecurityRequirements{}
	}

	body, hasBody := b.parameters(op, r, i)
	if hasBody {
		media := []string{mediaJSON}
		if route.Method == http.MethodPatch {
			media = []string{mediaMergePatch, mediaJSON}
		}
		if r.FlatErrors {
			// agentkit-mesh read its bodies as JSON whatever their Content-Type said (fetch sends
			// a string body as text/plain), and so does its door here.
			media = append(media, "*/*")
		}
		rb := openapi3.NewRequestBody().WithRequired(true).WithSchemaRef(body, media)
		if doc, ok := optionalBodies[r.Name]; ok {
			rb.Required, rb.Description = false, doc
		}
		if r.FlatErrors {
			rb.Description = "JSON, whatever the Content-Type says."
		}
		op.RequestBody = &openapi3.RequestBodyRef{Value: rb}
	}
	if err := b.answers(op, r, route, hasBody); err != nil {
		return nil, fmt.Errorf("openapi: %s: %w", r.Name, err)
	}
	return op, nil
}

// parameters adds the route's path, query and header parameters to op and returns the schema
// of its body, if it takes one.
func (b *builder) parameters(op *openapi3.Operation, r catalog.Request, i int) (*openapi3.SchemaRef, bool) {
	route := r.Routes[i]
	var params []string
	for _, m := range echoParam.FindAllStringSubmatch(strings.ReplaceAll(route.Path, `\:`, "/"), -1) {
		params = append(params, m[1])
	}
	var members []field
	var whole *field
	for _, f := range fields(r.In) {
		var p *openapi3.Parameter
		switch f.in {
		case "path":
			p = openapi3.NewPathParameter(f.name)
		case "query":
			if slices.Contains(route.Query, f.name) && !(r.Access == catalog.ResultToken && f.name == "token") {
				p = openapi3.NewQueryParameter(f.name)
			}
		case "header":
			// ifRevision travels as the If-Match header, an entity tag.
			p = ifMatch(f.doc)
		case "body":
			whole = &f
		case "":
			members = append(members, f)
			if slices.Contains(params, f.name) {
				// A body member the route's path also names (a card's agentId on PUT).
				p = openapi3.NewPathParameter(f.name)
			}
		}
		if p == nil {
			continue
		}
		if p.In != openapi3.ParameterInHeader {
			p.Description = f.doc
			if p.In == openapi3.ParameterInPath && f.name == "tenant" {
				// On REST the tenant is always in the path; other doors default it to the token's.
				p.Description = "the tenant's id"
			}
			p.Schema = b.s.fieldRef(f)
		}
		op.AddParameter(p)
	}
	op.Parameters = append(op.Parameters, extraHeaders[r.Name]...)
	if override, ok := bodies[r.Name+" "+route.Method]; ok {
		return b.s.named(override, override.Name(), func() *openapi3.Schema { return b.s.object(override, "body") }), true
	}
	if whole != nil {
		ref := b.s.ref(whole.typ)
		if whole.typ == rawType {
			// The whole body of a PATCH: a JSON merge patch, an object.
			ref = openapi3.NewSchemaRef("", openapi3.NewObjectSchema())
		}
		return described(ref, whole.doc), true
	}
	if route.Method == http.MethodGet || route.Method == http.MethodDelete || len(members) == 0 {
		return nil, false
	}
	return b.s.named(r.In, r.In.Name(), func() *openapi3.Schema { return b.s.object(r.In, "body", params...) }), true
}

// ifMatch is the If-Match header of a conditional write.
func ifMatch(doc string) *openapi3.Parameter {
	p := openapi3.NewHeaderParameter("If-Match")
	p.Description = doc + `: the card's ETag, a revision in quotes ("7"), or * for any revision`
	p.Schema = openapi3.NewStringSchema().NewRef()
	return p
}

// answers adds op's responses: its successes, and its errors with the one error body.
func (b *builder) answers(op *openapi3.Operation, r catalog.Request, route catalog.Route, hasBody bool) error {
	key := r.Name + " " + route.Method
	statuses := successes[key]
	if statuses == nil {
		statuses = []int{http.StatusOK}
		if r.Out == emptyType {
			statuses = []int{http.StatusNoContent}
		}
	}
	for _, status := range statuses {
		res := &openapi3.Response{Headers: requestIDHeader()}
		desc := successText[key+" "+fmt.Sprint(status)]
		if desc == "" {
			desc = http.StatusText(status)
		}
		res.Description = &desc
		if status != http.StatusNoContent && status != http.StatusNotModified {
			res.Content = openapi3.NewContentWithJSONSchemaRef(b.out(r.Out))
			if media, ok := mediaTypes[key+" "+fmt.Sprint(status)]; ok {
				res.Content = openapi3.Content{media: res.Content[mediaJSON]}
			}
		}
		if stream, ok := streams[key+" "+fmt.Sprint(status)]; ok {
			s := openapi3.NewStringSchema()
			s.Description = stream
			res.Content["text/event-stream"] = openapi3.NewMediaType().WithSchema(s)
		}
		for _, h := range responseHeaders[key+" "+fmt.Sprint(status)] {
			res.Headers[h] = knownHeaders[h]
		}
		op.Responses.Set(fmt.Sprint(status), &openapi3.ResponseRef{Value: res})
	}
	codes, err := b.errorCodes(r, route, hasBody)
	if err != nil {
		return err
	}
	for _, status := range codes {
		op.Responses.Set(fmt.Sprint(status), &openapi3.ResponseRef{Ref: "#/components/responses/" + b.errorResponse(status, r.FlatErrors)})
	}
	return nil
}

// out is the schema of an output: a JSON document kept as sent (an A2A card) is an object.
func (b *builder) out(t reflect.Type) *openapi3.SchemaRef {
	if t == rawType {
		return openapi3.NewSchemaRef("", openapi3.NewObjectSchema())
	}
	return b.s.ref(t)
}

// errorCodes are the statuses of the error answers of r's route.
func (b *builder) errorCodes(r catalog.Request, route catalog.Route, hasBody bool) ([]int, error) {
	codes := slices.Clone(everyRoute)
	switch r.Access {
	case catalog.Token:
		codes = append(codes, "unauthorized", "forbidden")
	case catalog.OptionalToken:
		codes = append(codes, "unauthorized")
	}
	if strings.Contains(route.Path, ":") {
		// A route that names something: it may not be there, or be another tenant's.
		codes = append(codes, "not_found")
	}
	if strings.Contains(route.Path, "/:tenant") && r.Access == catalog.Token {
		codes = append(codes, "tenant_suspended")
	}
	if hasBody {
		codes = append(codes, withBody...)
	}
	codes = append(codes, errorsOf[r.Name]...)
	var statuses []int
	for _, c := range codes {
		status, ok := b.errs[c]
		if !ok {
			return nil, fmt.Errorf("error code %q has no status", c)
		}
		if !slices.Contains(statuses, status) {
			statuses = append(statuses, status)
		}
	}
	slices.Sort(statuses)
	return statuses, nil
}
