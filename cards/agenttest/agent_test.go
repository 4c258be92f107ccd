package agenttest_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentcards/agentcards/cards/agenttest"
)

// TestAgentRecordsAndAnswers: each request is recorded (method, host, path, headers, the task
// or JSON-RPC method of its body) before the reply in force answers it; a handler for a path
// answers there instead.
func TestAgentRecordsAndAnswers(t *testing.T) {
	a := agenttest.New(t, agenttest.Answer(http.StatusOK, `{"result": "ok"}`))
	if a.Calls() != 0 || a.Last().Method != "" {
		t.Fatalf("a new agent: %d calls, last %+v", a.Calls(), a.Last())
	}
	post := func(url, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequest("POST", url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer t0k")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if status, body := post(a.Endpoint(), `{"delegationId": "d1", "task": "review", "context": {"pr": 7}, "callbackUrl": "http://cb"}`); status != 200 || body != `{"result": "ok"}` {
		t.Fatalf("answered %d %s", status, body)
	}
	got := a.Last()
	if got.Method != "POST" || got.Path != "/task" || got.Host != strings.TrimPrefix(a.URL, "http://") ||
		got.Header.Get("Authorization") != "Bearer t0k" || got.Task.DelegationID != "d1" || got.Task.Task != "review" ||
		string(got.Task.Context) != `{"pr": 7}` || got.Task.CallbackURL != "http://cb" || got.RPC != "" {
		t.Fatalf("recorded %+v", got)
	}

	a.SetReply(agenttest.Answer(http.StatusTeapot, `short`))
	a.Handle("/rpc", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		_, _ = w.Write(append([]byte("handled "), b...))
	}))
	if status, body := post(a.URL+"/elsewhere", `not json`); status != http.StatusTeapot || body != "short" {
		t.Fatalf("after SetReply: %d %s", status, body)
	}
	rpc := `{"jsonrpc": "2.0", "id": 1, "method": "SendMessage"}`
	if status, body := post(a.URL+"/rpc", rpc); status != 200 || body != "handled "+rpc {
		t.Fatalf("the handler at /rpc: %d %s", status, body)
	}
	if n := a.Count(func(r agenttest.Request) bool { return r.RPC == "SendMessage" }); n != 1 || a.Calls() != 3 {
		t.Fatalf("%d SendMessage of %d calls", n, a.Calls())
	}
	reqs := a.Requests()
	if len(reqs) != 3 || reqs[0].Path != "/task" || string(reqs[1].Body) != "not json" || reqs[2].Path != "/rpc" {
		t.Fatalf("requests %+v", reqs)
	}
}

// TestAgentHangs: Hang holds a request until its caller gives up, and a request still held
// when the test ends is let go, so that closing the agent does not wait for it.
func TestAgentHangs(t *testing.T) {
	a := agenttest.New(t, agenttest.Hang)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", a.Endpoint(), strings.NewReader(`{}`))
	if res, err := http.DefaultClient.Do(req); err == nil {
		res.Body.Close()
		t.Fatalf("answered %d", res.StatusCode)
	}

	done := make(chan error, 1)
	t.Run("held at the end", func(t *testing.T) {
		held := agenttest.New(t, agenttest.Hang)
		go func() {
			res, err := http.Post(held.Endpoint(), "application/json", strings.NewReader(`{}`))
			if err == nil {
				res.Body.Close()
			}
			done <- err
		}()
		for held.Calls() == 0 {
			time.Sleep(time.Millisecond)
		}
	})
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a request held when the test ended is still held")
	}
}

// TestAgentServesJSON: ServeJSON answers its path alone with the document as written, and
// replaces what it served there before; OnNext runs once, before the answer, which it may change.
func TestAgentServesJSON(t *testing.T) {
	a := agenttest.New(t, agenttest.Answer(http.StatusTeapot, `reply`))
	get := func(path string) (int, string, string) {
		t.Helper()
		res, err := http.Get(a.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, res.Header.Get("Content-Type"), string(b)
	}
	a.ServeJSON(agenttest.CardPath, http.StatusOK, []byte(`{"name": "A"}`))
	if status, ctype, body := get(agenttest.CardPath); status != 200 || ctype != "application/json" || body != `{"name": "A"}` {
		t.Fatalf("the card: %d %s %s", status, ctype, body)
	}
	if status, _, body := get(agenttest.CardPath + "/more"); status != http.StatusTeapot || body != "reply" {
		t.Fatalf("below the card's path: %d %s", status, body)
	}

	ran := 0
	a.OnNext(func() {
		ran++
		a.ServeJSON(agenttest.CardPath, http.StatusInternalServerError, []byte(`{}`))
	})
	if status, _, body := get(agenttest.CardPath); status != 500 || body != `{}` || ran != 1 {
		t.Fatalf("the card changed while it was fetched: %d %s, OnNext ran %d times", status, body, ran)
	}
	if status, _, _ := get(agenttest.CardPath); status != 500 || ran != 1 {
		t.Fatalf("the next fetch: %d, OnNext ran %d times", status, ran)
	}
	if a.Count(func(r agenttest.Request) bool { return r.Path == agenttest.CardPath }) != 3 || a.Calls() != 4 {
		t.Fatalf("requests %+v", a.Requests())
	}
}
