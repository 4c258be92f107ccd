package webtest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// Client sends the tests' requests to a running API at BaseURL, through HTTP (http.DefaultClient
// when nil), so that every test speaks to the server the way a real client does.
type Client struct {
	BaseURL string
	HTTP    *http.Client
}

// Response is a finished exchange, read in full so that tests can look at it at leisure.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// Do sends one request and fails the test if it gets no answer. body may be nil, a string or
// []byte (sent as is) or any other value (sent as JSON); token, if not empty, goes as a bearer
// token; headers are name, value pairs, where the name "Host" sets the request's host.
func (c Client) Do(t testing.TB, method, path, token string, body any, headers ...string) Response {
	t.Helper()
	if len(headers)%2 != 0 {
		t.Fatalf("webtest: headers %q are not name, value pairs", headers)
	}
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			t.Fatalf("webtest: encode the body of %s %s: %v", method, path, err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, c.BaseURL+path, rd)
	if err != nil {
		t.Fatalf("webtest: %v", err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i < len(headers); i += 2 {
		if strings.EqualFold(headers[i], "Host") {
			req.Host = headers[i+1]
			continue
		}
		req.Header.Set(headers[i], headers[i+1])
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	res, err := hc.Do(req)
	if err != nil {
		t.Fatalf("webtest: %s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("webtest: %s %s: read the answer: %v", method, path, err)
	}
	return Response{Status: res.StatusCode, Header: res.Header, Body: b}
}

// JSON decodes the body into v, failing the test if it does not fit.
func (r Response) JSON(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("decode %s: %v", r.Body, err)
	}
}

// ErrCode returns the code of the API's one error body, failing the test if the body has any
// other shape or its requestId differs from the X-Request-Id header.
func (r Response) ErrCode(t testing.TB) string {
	t.Helper()
	var b struct {
		Error struct {
			Code      string `json:"code"`
			Message   string `json:"message"`
			RequestID string `json:"requestId"`
		} `json:"error"`
	}
	dec := json.NewDecoder(bytes.NewReader(r.Body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil || b.Error.Code == "" || b.Error.Message == "" || b.Error.RequestID == "" {
		t.Fatalf("not the error body: %s (%v)", r.Body, err)
	}
	if r.Header.Get("X-Request-Id") != b.Error.RequestID {
		t.Fatalf("requestId %q differs from X-Request-Id %q", b.Error.RequestID, r.Header.Get("X-Request-Id"))
	}
	return b.Error.Code
}

// Expect fails the test unless r has status and, when code is given, is the error body with
// that code.
func Expect(t testing.TB, r Response, status int, code ...string) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d: %s", r.Status, status, r.Body)
	}
	if len(code) > 0 {
		if got := r.ErrCode(t); got != code[0] {
			t.Fatalf("code %q, want %q: %s", got, code[0], r.Body)
		}
	}
}

// CreateTenant creates tenant id, named "Tenant <id>", with the given admins through the API,
// as a platform admin (adminToken) would, and fails the test unless it is created.
func (c Client) CreateTenant(t testing.TB, adminToken, id string, admins ...string) {
	t.Helper()
	if admins == nil {
		admins = []string{} // sent as [], not null
	}
	r := c.Do(t, http.MethodPost, "/v1/tenants", adminToken, map[string]any{"id": id, "name": "Tenant " + id, "admins": admins})
	Expect(t, r, http.StatusCreated)
}

// Reply answers status with body (JSON unless the header pairs given say otherwise), for the
// scripted servers of tests.
func Reply(w http.ResponseWriter, status int, body string, header ...string) {
	w.Header().Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		w.Header().Set(header[i], header[i+1])
	}
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}
