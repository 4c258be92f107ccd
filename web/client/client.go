// Package client is the Go client of agentcards: every request of the catalogue (web/catalog) as
// a method named after it (cards.search is Client.Cards.Search), with the typed inputs and
// outputs of package web/api. Errors the service answers are *Error, carrying its code; cursors
// page through lists (the *All methods); WithRetry retries the requests that are safe to repeat.
package client

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/agentcards/agentcards/web/api"
	"github.com/agentcards/agentcards/web/catalog"
)

// Error is a request the service refused, or an answer that was not the service's: Code is the
// error code of the service's error body ("not_found", "stale", ...), or "unexpected_response"
// when the answer carried none. An input the client refused before sending it (a required field
// left empty, a value a field does not take) is an Error with Code "invalid", no Status, and a
// Message naming every problem of the input.
type Error struct {
	// Request is the catalogue name of the request refused.
	Request   string
	Status    int
	Code      string
	Message   string
	RequestID string
	// RetryAfter is what the answer's Retry-After header asked for, if anything.
	RetryAfter time.Duration
}

func (e *Error) Error() string {
	if e.Status == 0 {
		return fmt.Sprintf("%s: %s (%s)", e.Request, e.Message, e.Code)
	}
	return fmt.Sprintf("%s: %s (%d %s)", e.Request, e.Message, e.Status, e.Code)
}

// Client calls one agentcards server. It is safe for concurrent use.
type Client struct {
	base    string
	http    *http.Client
	token   string
	tenant  string
	retries int
	agent   string

	Tenants     Tenants
	Cards       Cards
	Secrets     Secrets
	Roles       Roles
	Policies    Policies
	Access      Access
	Audit       Audit
	Synonyms    Synonyms
	Trust       Trust
	Sources     Sources
	Webhooks    Webhooks
	Delegations Delegations
	A2A         A2A
	Keys        Keys
}

// Option configures a Client.
type Option func(*Client)

// WithToken sends token as the bearer token of every request.
func WithToken(token string) Option { return func(c *Client) { c.token = token } }

// WithTenant is the tenant of requests whose input names none; by default the tenant claim of
// the token.
func WithTenant(tenant string) Option { return func(c *Client) { c.tenant = tenant } }

// WithHTTPClient sends requests with hc instead of http.DefaultClient.
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.http = hc } }

// WithHandler serves every request in process by h, the server's HTTP handler, instead of over
// the network.
func WithHandler(h http.Handler) Option {
	return func(c *Client) { c.http = &http.Client{Transport: handlerTransport{h}} }
}

// WithUserAgent sets the User-Agent header.
func WithUserAgent(ua string) Option { return func(c *Client) { c.agent = ua } }

// WithRetry retries a request that is safe to repeat (a read, a PUT, a DELETE: the catalogue's
// Idempotent) up to attempts more times when it got no answer or a 429, 502, 503 or 504: after
// the answer's Retry-After, else after a growing, jittered pause, until the context ends. Other
// requests are sent once: a lost answer to a POST cannot tell whether it was carried out.
func WithRetry(attempts int) Option { return func(c *Client) { c.retries = attempts } }

// New returns a client of the server at base (such as http://127.0.0.1:8080).
func New(base string, opts ...Option) (*Client, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("client: server %q: want an http or https URL", base)
	}
	c := &Client{base: strings.TrimRight(base, "/"), http: http.DefaultClient, agent: "agentcards-client"}
	for _, o := range opts {
		o(c)
	}
	if c.tenant == "" && c.token != "" {
		c.tenant = tokenTenant(c.token)
	}
	c.Tenants, c.Cards, c.Secrets = Tenants{c}, Cards{c}, Secrets{c}
	c.Roles, c.Policies, c.Access, c.Audit, c.Synonyms = Roles{c}, Policies{c}, Access{c}, Audit{c}, Synonyms{c}
	c.Trust, c.Sources, c.Webhooks = Trust{c}, Sources{c}, Webhooks{c}
	c.Delegations, c.A2A, c.Keys = Delegations{c}, A2A{c}, Keys{c}
	return c, nil
}

// Tenant is the tenant of requests whose input names none.
func (c *Client) Tenant() string { return c.tenant }

// tokenTenant reads the tenant claim of a JWT without verifying it (the server does): it only
// chooses the default tenant of requests.
func tokenTenant(tok string) string {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return ""
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return ""
	}
	var claims struct {
		Tenant string `json:"tenant"`
	}
	if json.Unmarshal(raw, &claims) != nil {
		return ""
	}
	return claims.Tenant
}

// Call sends the catalogue's request name with in (a pointer to, or value of, its input type)
// and decodes the answer into out (a pointer to its output type, or nil). The typed methods are
// built on it; doors that walk the catalogue (the CLI, MCP) call it directly.
func (c *Client) Call(ctx context.Context, name string, in, out any) error {
	r, ok := catalog.Lookup(name)
	if !ok || r.Doors&catalog.GoClient == 0 {
		return fmt.Errorf("client: %q is not a request of the Go client", name)
	}
	v := reflect.ValueOf(in)
	for v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	if v.Type() != r.In {
		return fmt.Errorf("client: %s takes %v, not %v", name, r.In, v.Type())
	}
	if err := check(r, v); err != nil {
		return err
	}
	req, err := c.encode(r, v)
	if err != nil {
		return err
	}
	return c.send(ctx, r, req, out)
}

// scopedType is the inputs whose tenant, left empty, is the client's (api.Scope).
var scopedType = reflect.TypeFor[api.Scoped]()

// refuse is an input refused before it was sent: an *Error with no status and the code the
// service would answer, its message naming every problem of the input.
func refuse(name string, problems ...string) *Error {
	return &Error{Request: name, Code: "invalid", Message: strings.Join(problems, "; ")}
}

// Check refuses, as Call does before sending anything, an input of the catalogue's request name
// that the service would refuse for its shape: a field it requires (one without omitempty) left
// empty, a value outside a field's enum or bounds. The error is an *Error naming every problem;
// a scope's tenant may be left empty, as it is the client's. Doors that build inputs (the CLI)
// use it to say every problem of their caller's input at once.
func Check(name string, in any) error {
	r, ok := catalog.Lookup(name)
	if !ok {
		return fmt.Errorf("client: %q is not a request of the catalogue", name)
	}
	v := reflect.ValueOf(in)
	for v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	if v.Type() != r.In {
		return fmt.Errorf("client: %s takes %v, not %v", name, r.In, v.Type())
	}
	return check(r, v)
}

// check is Check of an input known to be the request's.
func check(r catalog.Request, v reflect.Value) error {
	var problems []string
	for _, f := range Fields(r.In) {
		problems = append(problems, f.Problems(v.FieldByIndex(f.Index))...)
	}
	if len(problems) > 0 {
		return refuse(r.Name, problems...)
	}
	return nil
}

// Problems lists what the service would refuse in v, a value of the field: left empty when it
// is required, outside its enum (any value of a list), outside its bounds. A zero number of an
// optional field is one not given, which the service takes for its default.
func (f Field) Problems(v reflect.Value) []string {
	if v.IsZero() {
		if !f.OmitEmpty {
			return []string{f.Name + " is required"}
		}
		return nil
	}
	if v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	values := []reflect.Value{v}
	if v.Kind() == reflect.Slice && v.Type() != reflect.TypeFor[json.RawMessage]() {
		values = values[:0]
		for i := range v.Len() {
			values = append(values, v.Index(i))
		}
	}
	var problems []string
	for _, v := range values {
		switch {
		case len(f.Enum) > 0 && v.Kind() == reflect.String && v.String() != "" && !slices.Contains(f.Enum, v.String()):
			problems = append(problems, fmt.Sprintf("%s: %q is not one of %s", f.Name, v.String(), strings.Join(f.Enum, ", ")))
		case v.CanInt():
			if p := f.OutOfBounds(v.Int()); p != "" {
				problems = append(problems, p)
			}
		}
	}
	return problems
}

// OutOfBounds says how n is outside the field's bounds (its `min` and `max` tags), or "".
func (f Field) OutOfBounds(n int64) string {
	switch {
	case f.Min != nil && f.Max != nil && (n < *f.Min || n > *f.Max):
		return fmt.Sprintf("%s: %d is not between %d and %d", f.Name, n, *f.Min, *f.Max)
	case f.Min != nil && n < *f.Min:
		return fmt.Sprintf("%s: %d is less than %d", f.Name, n, *f.Min)
	case f.Max != nil && n > *f.Max:
		return fmt.Sprintf("%s: %d is more than %d", f.Name, n, *f.Max)
	}
	return ""
}

// encoded is a request ready to send, again on each attempt.
type encoded struct {
	method, target string
	header         http.Header
	body           []byte
}

// encode places each field of the input where its `in` tag says (see package api).
func (c *Client) encode(r catalog.Request, v reflect.Value) (encoded, error) {
	route := r.Routes[0]
	fields := Fields(r.In)
	params, query, header := map[string]string{}, url.Values{}, http.Header{}
	var body []byte
	members := map[string]json.RawMessage{}
	hasBody := false
	for _, f := range fields {
		fv := v.FieldByIndex(f.Index)
		switch f.In {
		case "path":
			s := fmt.Sprint(fv.Interface())
			if f.Name == "tenant" && s == "" && reflect.PointerTo(r.In).Implements(scopedType) {
				s = c.tenant
			}
			params[f.Name] = s
		case "query":
			if fv.IsZero() {
				continue
			}
			if fv.Kind() == reflect.Pointer {
				fv = fv.Elem()
			}
			if fv.Kind() == reflect.Slice {
				for i := range fv.Len() {
					query.Add(f.Name, fmt.Sprint(fv.Index(i).Interface()))
				}
			} else {
				query.Set(f.Name, fmt.Sprint(fv.Interface()))
			}
		case "header":
			if !fv.IsZero() && f.Name == "ifRevision" {
				header.Set("If-Match", `"`+strconv.FormatInt(fv.Int(), 10)+`"`)
			}
		case "body":
			raw, err := json.Marshal(fv.Interface())
			if err != nil {
				return encoded{}, fmt.Errorf("client: %s: %s: %w", r.Name, f.Name, err)
			}
			body = raw
		case "view":
		default:
			if f.OmitEmpty && fv.IsZero() {
				continue
			}
			raw, err := json.Marshal(fv.Interface())
			if err != nil {
				return encoded{}, fmt.Errorf("client: %s: %s: %w", r.Name, f.Name, err)
			}
			members[f.Name], hasBody = raw, true
			// A body member named as a route parameter (a card's agentId in PUT) fills it too.
			if fv.Kind() == reflect.String {
				params[f.Name] = fv.String()
			}
		}
	}
	if body == nil && (hasBody || route.Method == http.MethodPost || route.Method == http.MethodPut || route.Method == http.MethodPatch) {
		var err error
		if body, err = json.Marshal(members); err != nil {
			return encoded{}, err
		}
	}
	path, err := fillPath(route.Path, params)
	if err != nil {
		if params["tenant"] == "" {
			return encoded{}, refuse(r.Name, "tenant is required, and the token names none")
		}
		return encoded{}, refuse(r.Name, err.Error())
	}
	if len(query) > 0 {
		path += "?" + query.Encode()
	}
	if body != nil {
		ct := "application/json"
		if route.Method == http.MethodPatch {
			ct = "application/merge-patch+json"
		}
		header.Set("Content-Type", ct)
	}
	return encoded{method: route.Method, target: c.base + path, header: header, body: body}, nil
}

// fillPath puts the parameters into an Echo route path (:name, and \: for a colon).
func fillPath(pattern string, params map[string]string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(pattern); {
		switch {
		case strings.HasPrefix(pattern[i:], `\:`):
			b.WriteByte(':')
			i += 2
		case pattern[i] == ':':
			j := i + 1
			for j < len(pattern) && pattern[j] != '/' {
				j++
			}
			val := params[pattern[i+1:j]]
			if val == "" {
				return "", fmt.Errorf("%s is required", pattern[i+1:j])
			}
			b.WriteString(url.PathEscape(val))
			i = j
		default:
			b.WriteByte(pattern[i])
			i++
		}
	}
	return b.String(), nil
}

func (c *Client) send(ctx context.Context, r catalog.Request, e encoded, out any) error {
	attempts := 1
	if r.Idempotent() {
		attempts += c.retries
	}
	var err error
	for attempt := range attempts {
		var retryAfter time.Duration
		var retry bool
		retry, retryAfter, err = c.once(ctx, r, e, out)
		if !retry || attempt == attempts-1 {
			return err
		}
		wait := retryAfter
		if wait <= 0 {
			wait = time.Duration(float64(100*time.Millisecond<<attempt) * (0.5 + rand.Float64()))
		}
		t := time.NewTimer(min(wait, 30*time.Second))
		select {
		case <-ctx.Done():
			t.Stop()
			return errors.Join(err, ctx.Err())
		case <-t.C:
		}
	}
	return err
}

// once sends the request once; retry says whether another attempt could succeed.
func (c *Client) once(ctx context.Context, r catalog.Request, e encoded, out any) (retry bool, after time.Duration, err error) {
	var body io.Reader
	if e.body != nil {
		body = bytes.NewReader(e.body)
	}
	req, err := http.NewRequestWithContext(ctx, e.method, e.target, body)
	if err != nil {
		return false, 0, err
	}
	for k, v := range e.header {
		req.Header[k] = v
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.agent)
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	kept, signed := ctx.Value(signedKey{}).(*SignedAnswer)
	if signed {
		req.Header.Set(api.WantSignatureHeader, "1")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return ctx.Err() == nil, 0, fmt.Errorf("%s: %w", r.Name, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return ctx.Err() == nil, 0, fmt.Errorf("%s: read the answer: %w", r.Name, err)
	}
	if resp.StatusCode >= 300 {
		e := answerError(r.Name, resp, data)
		switch resp.StatusCode {
		case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
			return true, e.RetryAfter, e
		}
		return false, 0, e
	}
	noteStale(ctx, resp)
	if signed {
		kept.Signature, kept.Body = resp.Header.Get(api.SignatureHeader), data
	}
	if out == nil || resp.StatusCode == http.StatusNoContent {
		return false, 0, nil
	}
	if raw, ok := out.(*json.RawMessage); ok {
		*raw = append((*raw)[:0], data...)
		return false, 0, nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return false, 0, &Error{Request: r.Name, Status: resp.StatusCode, Code: "unexpected_response",
			Message: "the answer is not the JSON expected: " + err.Error()}
	}
	return false, 0, nil
}

// SignedAnswer is an answer's body and the service's signature of it (api.SignatureHeader), as
// kept by a call made with the context KeepSignature returns.
type SignedAnswer struct {
	Signature string
	Body      []byte
}

type signedKey struct{}

// KeepSignature returns a context whose calls ask the service to sign their answers
// (api.WantSignatureHeader), and keep the last answer's body and signature in the SignedAnswer it
// returns. A context is for one call at a time.
func KeepSignature(ctx context.Context) (context.Context, *SignedAnswer) {
	a := &SignedAnswer{}
	return context.WithValue(ctx, signedKey{}, a), a
}

// headerStale is the service's mark of an answer made of what it held in memory while its
// database did not answer (web.HeaderStale).
const headerStale = "X-Agentcards-Stale"

type staleKey struct{}

// WatchStale returns a context whose calls note when the service answered from memory while its
// database did not (it may miss writes made meanwhile), and the function that returns the
// service's note of the last such answer, or "" if none was.
func WatchStale(ctx context.Context) (context.Context, func() string) {
	var note atomic.Pointer[string]
	return context.WithValue(ctx, staleKey{}, &note), func() string {
		if p := note.Load(); p != nil {
			return *p
		}
		return ""
	}
}

// noteStale records a stale answer's note for WatchStale.
func noteStale(ctx context.Context, resp *http.Response) {
	if v := resp.Header.Get(headerStale); v != "" {
		if note, ok := ctx.Value(staleKey{}).(*atomic.Pointer[string]); ok {
			note.Store(&v)
		}
	}
}

func answerError(name string, resp *http.Response, data []byte) *Error {
	var body struct {
		Error struct {
			Code, Message, RequestID string
		} `json:"error"`
	}
	e := &Error{Request: name, Status: resp.StatusCode}
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s >= 0 {
		e.RetryAfter = time.Duration(s) * time.Second
	}
	if json.Unmarshal(data, &body) == nil && body.Error.Code != "" {
		e.Code, e.Message, e.RequestID = body.Error.Code, body.Error.Message, body.Error.RequestID
		return e
	}
	e.Code, e.Message = "unexpected_response", strings.TrimSpace(resp.Status+" "+string(data[:min(len(data), 200)]))
	return e
}

// Field is one field of a request's input, as the doors see it.
type Field struct {
	// Name is its JSON name, the same on every door.
	Name string
	// In is where REST carries it: path, query, header, body, view, or "" for a body member.
	In        string
	OmitEmpty bool
	Doc       string
	// Enum are the values it takes, when its `enum` tag lists them.
	Enum []string
	// Min and Max bound a number, when its `min` and `max` tags say so.
	Min, Max *int64
	Type     reflect.Type
	Index    []int
}

// Fields lists the fields of an input type, embedded structs' fields in place.
func Fields(t reflect.Type) []Field {
	var out []Field
	for i := range t.NumField() {
		sf := t.Field(i)
		if sf.Anonymous && sf.Type.Kind() == reflect.Struct {
			for _, f := range Fields(sf.Type) {
				f.Index = append([]int{i}, f.Index...)
				out = append(out, f)
			}
			continue
		}
		name, opts, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if name == "-" || !sf.IsExported() {
			continue
		}
		var enum []string
		if e := sf.Tag.Get("enum"); e != "" {
			enum = strings.Split(e, ",")
		}
		out = append(out, Field{Name: name, In: sf.Tag.Get("in"), OmitEmpty: strings.Contains(opts, "omit"),
			Doc: sf.Tag.Get("doc"), Enum: enum, Min: bound(sf.Tag.Get("min")), Max: bound(sf.Tag.Get("max")),
			Type: sf.Type, Index: []int{i}})
	}
	return out
}

// bound reads a `min` or `max` tag; nil when there is none.
func bound(tag string) *int64 {
	n, err := strconv.ParseInt(tag, 10, 64)
	if err != nil {
		return nil
	}
	return &n
}

// handlerTransport serves requests in process with the server's handler.
type handlerTransport struct{ h http.Handler }

func (t handlerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	w := &recorder{header: http.Header{}}
	if req.RemoteAddr == "" {
		req.RemoteAddr = "127.0.0.1:0"
	}
	t.h.ServeHTTP(w, req)
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return &http.Response{
		Status: fmt.Sprintf("%d %s", w.status, http.StatusText(w.status)), StatusCode: w.status,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: w.header,
		Body: io.NopCloser(&w.body), ContentLength: int64(w.body.Len()), Request: req,
	}, nil
}

type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}
func (r *recorder) Write(b []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return r.body.Write(b)
}
func (r *recorder) Flush() {}
