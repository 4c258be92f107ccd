package webtest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// TestScript: a Script records each request (method, target with its query, body, headers, when)
// before its answer, which is told how many came before; as a handler and started on loopback.
func TestScript(t *testing.T) {
	answer := func(w http.ResponseWriter, r *http.Request, n int) {
		Reply(w, http.StatusAccepted, `{"n": `+strconv.Itoa(n)+`}`)
	}
	s := StartScript(t, answer)
	for i, body := range []string{`{"a": 1}`, ""} {
		req, _ := http.NewRequest("POST", s.URL+"/v1/x?q=1", strings.NewReader(body))
		req.Header.Set("X-Test", "yes")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if want := `{"n": ` + strconv.Itoa(i) + `}`; res.StatusCode != http.StatusAccepted || string(b) != want {
			t.Fatalf("answer %d: %d %s, want 202 %s", i, res.StatusCode, b, want)
		}
	}
	got := s.Requests()
	if len(got) != 2 || got[0].Method != "POST" || got[0].Target != "/v1/x?q=1" || got[0].Body != `{"a": 1}` ||
		got[0].Header.Get("X-Test") != "yes" || got[1].Body != "" || got[1].At.Before(got[0].At) {
		t.Fatalf("recorded %+v", got)
	}

	h := NewScript(answer)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/v1/y", nil))
	if h.URL != "" || w.Code != http.StatusAccepted || len(h.Requests()) != 1 || h.Requests()[0].Target != "/v1/y" {
		t.Fatalf("as a handler: URL %q, %d, %+v", h.URL, w.Code, h.Requests())
	}
	res, err := http.Get(h.Start(t).URL + "/v1/z")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if got := h.Requests(); res.StatusCode != http.StatusAccepted || len(got) != 2 || got[1].Target != "/v1/z" {
		t.Fatalf("started after serving as a handler: %d, %+v", res.StatusCode, got)
	}
}
