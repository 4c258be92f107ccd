package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentcards/agentcards/web/webtest"
)

// TestEndToEnd builds the binary, runs `serve` with no config in an empty directory, mints a
// platform-admin token with the `agentcards token` command it prints, and drives a card through
// its life over HTTP.
func TestEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := binary(t)
	work := t.TempDir()
	// Only the listen address is set: everything else is the no-config default.
	env := append(cleanEnv(), "AGENTCARDS_SERVER_ADDR=127.0.0.1:0", "AGENTCARDS_SERVER_METRICS_ADDR=127.0.0.1:0")

	serve := exec.Command(bin, "serve")
	// A misspelt variable is warned about; the test tooling's own are not.
	serve.Dir, serve.Env = work, append(slices.Clip(env), "AGENTCARDS_SERVER_ADRR=127.0.0.1:1", "AGENTCARDS_TEST_WHATEVER=1", "AGENTCARDS_BENCH_WHATEVER=1")
	stdout, err := serve.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	serve.Stderr = &stderr
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	t.Cleanup(func() {
		if serve.ProcessState == nil {
			_ = serve.Process.Kill()
		}
	})

	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		exited <- serve.Wait()
	}()
	var base string
	var printed []string
	listening := regexp.MustCompile(`listening on (http://\S+)`)
	deadline := time.After(60 * time.Second)
	for base == "" {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("serve exited early; stderr:\n%s", stderr.String())
			}
			printed = append(printed, l)
			if m := listening.FindStringSubmatch(l); m != nil {
				base = m[1]
			}
		case <-deadline:
			t.Fatalf("serve did not start; stderr:\n%s", stderr.String())
		}
	}
	// It tells a newcomer how to mint a first token, with `go run` and with a built binary: the
	// test mints with the arguments it prints, using this very binary.
	if hint := <-lines; hint != "mint a first token, from this directory, with one of:" {
		t.Fatalf("no token hint, got %q", hint)
	}
	goRun, built := <-lines, <-lines
	cmdline, ok := strings.CutPrefix(goRun, "  go run ./cmd/agentcards token ")
	if !ok || !strings.HasPrefix(built, "  ./agentcards token "+cmdline) {
		t.Fatalf("the hint's two forms: %q and %q", goRun, built)
	}

	secretPath := filepath.Join(work, "data", "jwt-secret")
	st, err := os.Stat(secretPath)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("secret file: %v %v", st, err)
	}
	secret, _ := os.ReadFile(secretPath)
	if _, err := os.Stat(filepath.Join(work, "data", "agentcards.db")); err != nil {
		t.Fatalf("no SQLite database in ./data: %v", err)
	}

	// The README's Quick start mints the same token, with `go run` and with a built binary.
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"go run ./cmd/agentcards", "./agentcards"} {
		if !strings.Contains(string(readme), cmd+" token "+cmdline) {
			t.Errorf("the README's Quick start does not say %q", cmd+" token "+cmdline)
		}
	}
	mint := exec.Command(bin, append([]string{"token"}, strings.Fields(cmdline)...)...)
	mint.Dir, mint.Env = work, env
	out, err := mint.Output()
	if err != nil {
		t.Fatalf("token: %v", err)
	}

	// Elsewhere, where the server has no data directory, token refuses and creates nothing.
	elsewhere := t.TempDir()
	lost := exec.Command(bin, "token", "--subject", "root", "--platform-admin")
	lost.Dir, lost.Env = elsewhere, env
	var lostErr bytes.Buffer
	lost.Stderr = &lostErr
	if lostOut, err := lost.Output(); err == nil || len(lostOut) != 0 || !strings.Contains(lostErr.String(), filepath.Join(elsewhere, "data", "jwt-secret")) {
		t.Fatalf("token without the server's data directory: %v: %q %s", err, lostOut, lostErr.String())
	}
	if _, err := os.Stat(filepath.Join(elsewhere, "data")); !os.IsNotExist(err) {
		t.Fatalf("token created a data directory: %v", err)
	}
	token := strings.TrimSpace(string(out))
	if strings.Count(token, ".") != 2 || strings.Contains(token, "\n") {
		t.Fatalf("token prints more than a token: %q", out)
	}

	api := webtest.Client{BaseURL: base}
	call := func(method, path string, body any, want int) map[string]any {
		t.Helper()
		r := api.Do(t, method, path, token, body)
		webtest.Expect(t, r, want)
		var m map[string]any
		if len(r.Body) > 0 {
			r.JSON(t, &m)
		}
		return m
	}
	api.CreateTenant(t, token, "acme", "alice")
	// The binary serves the console from its embedded files, with their security policy.
	page := api.Do(t, "GET", "/console/", "", nil)
	webtest.Expect(t, page, 200)
	if !strings.Contains(string(page.Body), `<script type="module" src="app.js">`) || !strings.HasPrefix(page.Header.Get("Content-Security-Policy"), "default-src 'none'; script-src 'self'") {
		t.Fatalf("GET /console/: %v %.200s", page.Header, page.Body)
	}
	webtest.Expect(t, api.Do(t, "GET", "/console/app.js", "", nil), 200)
	card := map[string]any{"agentId": "reviewer", "name": "Code Reviewer", "protocols": []string{"http"},
		"endpoint": "https://agents.example.com/review", "capabilities": []any{map[string]any{"name": "review_pr"}}}
	call("POST", "/v1/tenants/acme/cards", card, 201)
	if got := call("GET", "/v1/tenants/acme/cards/reviewer", nil, 200); got["name"] != "Code Reviewer" {
		t.Fatalf("fetched %v", got)
	}
	if got := call("PATCH", "/v1/tenants/acme/cards/reviewer", map[string]any{"description": "Reviews PRs"}, 200); got["revision"] != float64(2) || got["name"] != "Code Reviewer" {
		t.Fatalf("patched %v", got)
	}
	if got := call("GET", "/v1/tenants/acme/cards", nil, 200); got["total"] != float64(1) {
		t.Fatalf("listed %v", got)
	}
	if got := call("GET", "/v1/tenants/acme/cards?q=review+pr&capability=review_pr", nil, 200); got["total"] != float64(1) {
		t.Fatalf("searched %v", got)
	}
	a2aCard := api.Do(t, "GET", "/a2a/acme/reviewer/.well-known/agent-card.json", token, nil)
	webtest.Expect(t, a2aCard, 200)
	var served map[string]any
	a2aCard.JSON(t, &served)
	if served["name"] != "Code Reviewer" || served["signatures"] == nil {
		t.Fatalf("A2A card %s", a2aCard.Body)
	}
	call("DELETE", "/v1/tenants/acme/cards/reviewer", nil, 204)
	call("GET", "/v1/tenants/acme/cards/reviewer", nil, 404)

	jwks := api.Do(t, "GET", "/.well-known/jwks.json", "", nil)
	webtest.Expect(t, jwks, 200)
	var set struct {
		Keys []struct{ Kty, Kid, Alg string } `json:"keys"`
	}
	jwks.JSON(t, &set)
	if len(set.Keys) != 1 || set.Keys[0].Alg != "ES256" || set.Keys[0].Kid == "" {
		t.Fatalf("jwks: %s", jwks.Body)
	}
	// The card served before the delete verifies with the published key, as a client checks it.
	if err := webtest.VerifyCard(jwks.Body, a2aCard.Body); err != nil {
		t.Fatalf("A2A card signature: %v", err)
	}
	if st, err := os.Stat(filepath.Join(work, "data", "signing-key.pem")); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("signing key file: %v %v", st, err)
	}

	status := exec.Command(bin, "migrate", "status")
	status.Dir, status.Env = work, env
	out, err = status.Output()
	if err != nil || !strings.Contains(string(out), "0001") || !strings.Contains(string(out), "applied") {
		t.Fatalf("migrate status: %v: %s", err, out)
	}

	// SIGTERM drains and exits cleanly.
	if err := serve.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for l := range lines {
		printed = append(printed, l)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("serve exit: %v; stderr:\n%s", err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop on SIGTERM")
	}
	all := strings.Join(printed, "\n") + stderr.String()
	if !strings.Contains(stderr.String(), "variable=AGENTCARDS_SERVER_ADRR did_you_mean=AGENTCARDS_SERVER_ADDR") ||
		strings.Contains(stderr.String(), "_WHATEVER") {
		t.Fatalf("warnings about variables:\n%s", stderr.String())
	}
	if s := strings.TrimSpace(string(secret)); s == "" || strings.Contains(all, s) {
		t.Fatal("the JWT secret appears in the output")
	}
}

// cleanEnv drops AGENTCARDS_* variables of the test's own environment.
func cleanEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AGENTCARDS_") {
			out = append(out, kv)
		}
	}
	return out
}
