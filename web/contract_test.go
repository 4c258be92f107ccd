package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/web"
	"github.com/agentcards/agentcards/web/console"
	"github.com/agentcards/agentcards/web/openapi"
)

// The contract: every answer a web test receives from a test server is checked against the
// OpenAPI document (checked, wraps the server's handler). An answer must be one the document
// gives the request's operation: a status it lists, its headers, a body of its schema. A
// request the document refuses is a failure only when the server took it (a 1xx to 3xx
// answer): tests send malformed requests on purpose, to see them refused, and the document
// refuses them too. An exchange that is no operation of the document (an unknown path, a
// method a path does not take, a route a test added) must be refused with the one error body.

// contractDoc is the document as served, read back, and its router.
type contractDoc struct {
	doc    *openapi3.T
	router routers.Router
	// errorSchema is the one error body.
	errorSchema *openapi3.Schema
}

func init() {
	// The document gives agentkit-mesh's routes bodies of any media type, read as JSON (as fetch
	// sends a string body, text/plain); the checker reads those the tests send so too.
	openapi3filter.RegisterBodyDecoder("text/plain", openapi3filter.JSONBodyDecoder)
	// A live stream of Server-Sent Events is checked as what the document says it is: text.
	openapi3filter.RegisterBodyDecoder("text/event-stream", func(body io.Reader, _ http.Header, _ *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
		b, err := io.ReadAll(body)
		return string(b), err
	})
}

var loadContract = sync.OnceValues(func() (*contractDoc, error) {
	raw, err := openapi.JSON(web.ErrorCodes())
	if err != nil {
		return nil, err
	}
	doc, err := openapi3.NewLoader().LoadFromData(raw)
	if err != nil {
		return nil, err
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, err
	}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, err
	}
	return &contractDoc{doc: doc, router: router, errorSchema: doc.Components.Schemas["Error"].Value}, nil
})

// contract loads the document, failing t if it cannot.
func contract(t testing.TB) *contractDoc {
	t.Helper()
	c, err := loadContract()
	if err != nil {
		t.Fatalf("the OpenAPI document: %v", err)
	}
	return c
}

// captureLimit bounds what is kept of a request or answer body to check it; tests of the body
// limit send more, and a body cut there is not checked.
const captureLimit = 4 << 20

// capped keeps the first captureLimit bytes written to it.
type capped struct {
	bytes.Buffer
	over bool
}

func (c *capped) Write(p []byte) (int, error) {
	if room := captureLimit - c.Len(); len(p) > room {
		c.over = true
		c.Buffer.Write(p[:max(room, 0)])
		return len(p), nil
	}
	return c.Buffer.Write(p)
}

// teeBody is a request body that keeps what the handler reads of it.
type teeBody struct {
	io.ReadCloser
	kept *capped
}

func (b teeBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.kept.Write(p[:n])
	return n, err
}

// recorder passes an answer through and keeps its status, headers and body.
type recorder struct {
	http.ResponseWriter
	status int
	body   capped
}

func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
	r.ResponseWriter.WriteHeader(status)
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	r.body.Write(p)
	return r.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection's writer (writeLarge flushes).
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

func (r *recorder) Flush() { _ = http.NewResponseController(r.ResponseWriter).Flush() }

// checked wraps h so that every exchange is checked against the document, reporting a mismatch
// on t. Benchmarks are served unchecked: they measure the server.
func checked(t testing.TB, h http.Handler) http.Handler {
	if _, ok := t.(*testing.B); ok {
		return h
	}
	c := contract(t)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in := &capped{}
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = teeBody{r.Body, in}
		}
		rec := &recorder{ResponseWriter: w}
		h.ServeHTTP(rec, r)
		if rec.status == 0 {
			rec.status = http.StatusOK
		}
		if err := c.check(r, in, rec); err != nil {
			t.Errorf("OpenAPI contract: %s %s: %d: %v", r.Method, r.URL.RequestURI(), rec.status, err)
		}
	})
}

// authenticated admits a request that carries what a security scheme asks for; whether it is
// valid is the server's to say.
func authenticated(_ context.Context, in *openapi3filter.AuthenticationInput) error {
	req := in.RequestValidationInput.Request
	switch s := in.SecurityScheme; {
	case s.Type == "http" && s.Scheme == "bearer":
		scheme, tok, _ := strings.Cut(req.Header.Get("Authorization"), " ")
		if !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(tok) == "" {
			return errors.New("no bearer token")
		}
	case s.Type == "apiKey" && s.In == "query":
		if !req.URL.Query().Has(s.Name) {
			return fmt.Errorf("no %s query parameter", s.Name)
		}
	default:
		return fmt.Errorf("security scheme %s: not known to the test", in.SecuritySchemeName)
	}
	return nil
}

// check checks one exchange: r as the handler got it (its body as far as it was read), and the
// answer.
func (c *contractDoc) check(r *http.Request, in *capped, rec *recorder) error {
	if r.Method == http.MethodOptions && r.Header.Get("Origin") != "" && r.Header.Get("Access-Control-Request-Method") != "" {
		return c.preflight(r, rec)
	}
	// HEAD is GET without the body (RFC 9110 §9.3.2): the document lists the GET.
	req := r.Clone(context.Background())
	head := r.Method == http.MethodHead
	if head {
		req.Method = http.MethodGet
	}
	req.Body = io.NopCloser(bytes.NewReader(in.Bytes()))
	req.ContentLength = int64(in.Len())
	route, params, err := c.router.FindRoute(req)
	if err != nil {
		if isConsole(r.URL.Path) && rec.status < 400 {
			return nil // a file of the console, not an operation of the API
		}
		return c.outside(rec, head)
	}
	opts := &openapi3filter.Options{AuthenticationFunc: authenticated, RejectWhenRequestBodyNotSpecified: true,
		IncludeResponseStatus: true, MultiError: true}
	if in.over {
		opts.ExcludeRequestBody = true
	}
	reqIn := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route, Options: opts}
	reqErr := openapi3filter.ValidateRequest(context.Background(), reqIn)
	if reqErr != nil && rec.status < 400 {
		return fmt.Errorf("the server took a request the document refuses: %w", reqErr)
	}
	// The checked request has been read; the answer is checked against its operation.
	reqIn.Request = req.Clone(context.Background())
	reqIn.Request.Body = http.NoBody
	if route.Operation.Responses.Status(rec.status) == nil {
		return fmt.Errorf("status %d is not among the operation's answers", rec.status)
	}
	if rec.status == http.StatusNotModified || head || rec.body.over {
		// openapi3filter checks no 304; a HEAD answer has no body, and one cut short is not
		// checked: their headers are.
		opts := *opts
		opts.ExcludeResponseBody = true
		return c.headers(reqIn, route, rec, &opts)
	}
	return openapi3filter.ValidateResponse(context.Background(), &openapi3filter.ResponseValidationInput{
		RequestValidationInput: reqIn, Status: rec.status, Header: rec.Header(),
		Body: io.NopCloser(bytes.NewReader(rec.body.Bytes())), Options: opts,
	})
}

// headers checks the answer's headers, as ValidateResponse would, for the answers it skips.
func (c *contractDoc) headers(reqIn *openapi3filter.RequestValidationInput, route *routers.Route, rec *recorder,
	opts *openapi3filter.Options) error {
	res := route.Operation.Responses.Status(rec.status).Value
	for name, h := range res.Headers {
		if h.Value.Required && rec.Header().Get(name) == "" {
			return fmt.Errorf("header %s is missing", name)
		}
	}
	if reqIn.Request.Method == http.MethodGet && rec.status == http.StatusNotModified {
		return nil
	}
	return openapi3filter.ValidateResponse(context.Background(), &openapi3filter.ResponseValidationInput{
		RequestValidationInput: reqIn, Status: rec.status, Header: rec.Header(), Body: http.NoBody, Options: opts,
	})
}

// outside checks the answer to an exchange that is no operation: a refusal with the error body.
func (c *contractDoc) outside(rec *recorder, head bool) error {
	if rec.status < 400 {
		return fmt.Errorf("no operation of the document, answered %d", rec.status)
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		return fmt.Errorf("no operation of the document, answered with Content-Type %q, not the error body", ct)
	}
	if head {
		return nil
	}
	var v any
	if err := json.Unmarshal(rec.body.Bytes(), &v); err != nil {
		return fmt.Errorf("no operation of the document, answered %q, not the error body", rec.body.Bytes())
	}
	if err := c.errorSchema.VisitJSON(v); err != nil {
		return fmt.Errorf("no operation of the document, answered a body that is not the error body: %w", err)
	}
	return nil
}

// preflight checks a CORS preflight, which is the browser's and no operation of the document
// (its description says how they are answered): granted, a 204 for a path and method of the
// document with Access-Control-Allow-Origin the request's Origin; else the one error body.
func (c *contractDoc) preflight(r *http.Request, rec *recorder) error {
	if rec.status != http.StatusNoContent {
		return c.outside(rec, false)
	}
	req := r.Clone(context.Background())
	req.Method = r.Header.Get("Access-Control-Request-Method")
	if _, _, err := c.router.FindRoute(req); err != nil {
		return fmt.Errorf("a preflight granted for %s, no operation of the document: %w", req.Method, err)
	}
	h := rec.Header()
	if h.Get("Access-Control-Allow-Origin") != r.Header.Get("Origin") || h.Get("Access-Control-Allow-Methods") == "" ||
		h.Get("Access-Control-Allow-Headers") == "" {
		return fmt.Errorf("a preflight granted without its headers: %v", h)
	}
	return nil
}

// isConsole reports whether a path is the console's: its files, which the API's document does
// not describe.
func isConsole(path string) bool {
	return path == strings.TrimSuffix(console.Path, "/") || strings.HasPrefix(path, console.Path)
}

// TestOpenAPIIsTheRoutes: the document's operations are the server's routes (HEAD aside, which
// every GET has), each route an operation, and the document served is the one checked against.
func TestOpenAPIIsTheRoutes(t *testing.T) {
	e := newEnv(t, storagetest.Open(t, "sqlite"), 1<<20)
	c := contract(t)
	documented := map[string]bool{}
	for path, item := range c.doc.Paths.Map() {
		for method := range item.Operations() {
			documented[method+" "+path] = true
		}
	}
	served := map[string]bool{}
	for _, r := range e.echo.Routes() {
		if r.Method != http.MethodHead && !isConsole(r.Path) {
			served[r.Method+" "+openapi.Template(r.Path)] = true
		}
	}
	for _, op := range slices.Sorted(maps.Keys(served)) {
		if !documented[op] {
			t.Errorf("%s is served but not in the OpenAPI document", op)
		}
	}
	for _, op := range slices.Sorted(maps.Keys(documented)) {
		if !served[op] {
			t.Errorf("%s is in the OpenAPI document but not served", op)
		}
	}

	r := e.do(http.MethodGet, openapi.Path, "", nil)
	expect(t, r, http.StatusOK)
	want, err := openapi.JSON(web.ErrorCodes())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(r.body, want) {
		t.Errorf("GET %s does not serve the document", openapi.Path)
	}
	if _, err := openapi3.NewLoader().LoadFromData(r.body); err != nil {
		t.Errorf("GET %s: %v", openapi.Path, err)
	}
}

// TestContractCatchesMismatches: the check fails an answer the document does not give, so that
// the web tests' passing says something.
func TestContractCatchesMismatches(t *testing.T) {
	c := contract(t)
	answer := func(status int, ctype, body string, headers ...string) *recorder {
		rec := &recorder{ResponseWriter: httptest.NewRecorder(), status: status}
		rec.Header().Set("X-Request-Id", "r1")
		if ctype != "" {
			rec.Header().Set("Content-Type", ctype)
		}
		for i := 0; i+1 < len(headers); i += 2 {
			rec.Header().Set(headers[i], headers[i+1])
		}
		rec.body.WriteString(body)
		return rec
	}
	request := func(method, target, body string, headers ...string) (*http.Request, *capped) {
		r := httptest.NewRequest(method, target, nil)
		for i := 0; i+1 < len(headers); i += 2 {
			r.Header.Set(headers[i], headers[i+1])
		}
		in := &capped{}
		in.WriteString(body)
		return r, in
	}
	errBody := `{"error": {"code": "not_found", "message": "Not Found", "requestId": "r1"}}`
	card := `{"agentId": "a", "name": "A"}`
	for _, tc := range []struct {
		what    string
		req     func() (*http.Request, *capped)
		rec     *recorder
		failing bool
	}{
		{"the health probe", func() (*http.Request, *capped) { return request("GET", "/health", "") },
			answer(200, "application/json", `{"status": "ok"}`), false},
		{"a status the operation does not list", func() (*http.Request, *capped) { return request("GET", "/health", "") },
			answer(201, "application/json", `{"status": "ok"}`), true},
		{"a body not of the schema", func() (*http.Request, *capped) { return request("GET", "/health", "") },
			answer(200, "application/json", `{"status": 1}`), true},
		{"a member the schema does not name", func() (*http.Request, *capped) { return request("GET", "/health", "") },
			answer(200, "application/json", `{"status": "ok", "extra": true}`), true},
		{"no X-Request-Id", func() (*http.Request, *capped) { return request("GET", "/health", "") },
			func() *recorder {
				r := answer(200, "application/json", `{"status": "ok"}`)
				r.Header().Del("X-Request-Id")
				return r
			}(), true},
		{"an error code of another status", func() (*http.Request, *capped) {
			return request("GET", "/v1/tenants/acme", "", "Authorization", "Bearer x")
		},
			answer(403, "application/json", errBody), true},
		{"a refusal of a request the document refuses", func() (*http.Request, *capped) {
			return request("POST", "/v1/tenants/acme/cards", `{"name": 1}`, "Authorization", "Bearer x", "Content-Type", "application/json")
		}, answer(400, "application/json", strings.Replace(errBody, "not_found", "invalid", 1)), false},
		{"a request the document refuses, taken", func() (*http.Request, *capped) {
			return request("POST", "/v1/tenants/acme/cards", `{"name": 1}`, "Authorization", "Bearer x", "Content-Type", "application/json")
		}, answer(201, "application/json", card, "Location", "/x", "ETag", `"1"`), true},
		{"an unknown path, refused", func() (*http.Request, *capped) { return request("GET", "/nope", "") },
			answer(404, "application/json", errBody), false},
		{"an unknown path, answered", func() (*http.Request, *capped) { return request("GET", "/nope", "") },
			answer(200, "application/json", `{}`), true},
		{"an unknown path, refused with another body", func() (*http.Request, *capped) { return request("GET", "/nope", "") },
			answer(404, "application/json", `{"message": "no"}`), true},
	} {
		r, in := tc.req()
		err := c.check(r, in, tc.rec)
		if (err != nil) != tc.failing {
			t.Errorf("%s: %v", tc.what, err)
		}
	}
}
