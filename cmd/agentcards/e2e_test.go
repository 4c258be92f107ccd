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

	serve := startNoConfigServe(t, bin, work, env)
	cmdline := serve.tokenHint(t)
	secret := checkDataDir(t, work)
	token := mintFirstToken(t, bin, work, env, cmdline)

	api := webtest.Client{BaseURL: serve.base}
	a2aCard := driveCardLife(t, api, token)
	checkServedSignature(t, api, work, a2aCard)

	status := exec.Command(bin, "migrate", "status")
	status.Dir, status.Env = work, env
	out, err := status.Output()
	if err != nil || !strings.Contains(string(out), "0001") || !strings.Contains(string(out), "applied") {
		t.Fatalf("migrate status: %v: %s", err, out)
	}

	serve.stop(t, secret)
}

// e2eServe is the binary's `serve` process, with the lines it prints on stdout as they come.
type e2eServe struct {
	cmd     *exec.Cmd
	lines   chan string // stdout, line by line; closed at its end
	exited  chan error  // the process's exit, after lines is closed
	stderr  syncBuffer  // read while serve may still write to it
	printed []string    // the lines read from lines so far
	base    string      // the API's URL, as printed
}

// startNoConfigServe starts `serve` of bin in work with env and waits for it to print the
// address it listens on. A misspelt variable is set, for stop to find it warned about; the
// test tooling's own are set too, and are not.
func startNoConfigServe(t *testing.T, bin, work string, env []string) *e2eServe {
	s := &e2eServe{cmd: exec.Command(bin, "serve"), lines: make(chan string, 16), exited: make(chan error, 1)}
	serve := s.cmd
	serve.Dir, serve.Env = work, append(slices.Clip(env), "AGENTCARDS_SERVER_ADRR=127.0.0.1:1", "AGENTCARDS_TEST_WHATEVER=1", "AGENTCARDS_BENCH_WHATEVER=1")
	stdout, err := serve.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	serve.Stderr = &s.stderr
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if serve.ProcessState == nil {
			_ = serve.Process.Kill()
		}
	})

	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
		close(s.lines)
		s.exited <- serve.Wait()
	}()
	listening := regexp.MustCompile(`listening on (http://\S+)`)
	deadline := time.After(60 * time.Second)
	for s.base == "" {
		select {
		case l, ok := <-s.lines:
			if !ok {
				t.Fatalf("serve exited early; stderr:\n%s", s.stderr.String())
			}
			s.printed = append(s.printed, l)
			if m := listening.FindStringSubmatch(l); m != nil {
				s.base = m[1]
			}
		case <-deadline:
			t.Fatalf("serve did not start; stderr:\n%s", s.stderr.String())
		}
	}
	return s
}

// tokenHint reads how serve tells a newcomer to mint a first token, with `go run` and with a
// built binary, and answers the arguments of the token command, which both forms give.
func (s *e2eServe) tokenHint(t *testing.T) string {
	if hint := <-s.lines; hint != "mint a first token, from this directory, with one of:" {
		t.Fatalf("no token hint, got %q", hint)
	}
	goRun, built := <-s.lines, <-s.lines
	cmdline, ok := strings.CutPrefix(goRun, "  go run ./cmd/agentcards token ")
	if !ok || !strings.HasPrefix(built, "  ./agentcards token "+cmdline) {
		t.Fatalf("the hint's two forms: %q and %q", goRun, built)
	}
	return cmdline
}

// stop sends SIGTERM, which drains and exits cleanly, and checks what serve printed: the
// misspelt variable warned about, the test tooling's not, and the JWT secret nowhere.
func (s *e2eServe) stop(t *testing.T, secret []byte) {
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for l := range s.lines {
		s.printed = append(s.printed, l)
	}
	select {
	case err := <-s.exited:
		if err != nil {
			t.Fatalf("serve exit: %v; stderr:\n%s", err, s.stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop on SIGTERM")
	}
	all := strings.Join(s.printed, "\n") + s.stderr.String()
	if !strings.Contains(s.stderr.String(), "variable=AGENTCARDS_SERVER_ADRR did_you_mean=AGENTCARDS_SERVER_ADDR") ||
		strings.Contains(s.stderr.String(), "_WHATEVER") {
		t.Fatalf("warnings about variables:\n%s", s.stderr.String())
	}
	if sec := strings.TrimSpace(string(secret)); sec == "" || strings.Contains(all, sec) {
		t.Fatal("the JWT secret appears in the output")
	}
}

// checkDataDir checks that serve made ./data in work with the JWT secret, readable by its
// owner only, and the SQLite database; it answers the secret.
func checkDataDir(t *testing.T, work string) []byte {
	secretPath := filepath.Join(work, "data", "jwt-secret")
	st, err := os.Stat(secretPath)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("secret file: %v %v", st, err)
	}
	secret, _ := os.ReadFile(secretPath)
	if _, err := os.Stat(filepath.Join(work, "data", "agentcards.db")); err != nil {
		t.Fatalf("no SQLite database in ./data: %v", err)
	}
	return secret
}

// mintFirstToken mints a token with the token command's arguments serve printed (cmdline),
// which the README's Quick start gives too, with `go run` and with a built binary. Elsewhere,
// where the server has no data directory, the command refuses and creates nothing.
func mintFirstToken(t *testing.T, bin, work string, env []string, cmdline string) string {
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
	return token
}

// driveCardLife creates a tenant with the platform admin's token, loads the console the binary
// serves from its embedded files (with their security policy), and drives a card through its
// life: created, read, patched, listed, searched, served as an A2A card, deleted. It answers
// the A2A card as served before the delete.
func driveCardLife(t *testing.T, api webtest.Client, token string) webtest.Response {
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
	return a2aCard
}

// checkServedSignature checks that the JWKS publishes one ES256 key, that the A2A card served
// verifies with it, as a client checks it, and that the signing key's file in work is readable
// by its owner only.
func checkServedSignature(t *testing.T, api webtest.Client, work string, a2aCard webtest.Response) {
	jwks := api.Do(t, "GET", "/.well-known/jwks.json", "", nil)
	webtest.Expect(t, jwks, 200)
	var set struct {
		Keys []struct{ Kty, Kid, Alg string } `json:"keys"`
	}
	jwks.JSON(t, &set)
	if len(set.Keys) != 1 || set.Keys[0].Alg != "ES256" || set.Keys[0].Kid == "" {
		t.Fatalf("jwks: %s", jwks.Body)
	}
	if err := webtest.VerifyCard(jwks.Body, a2aCard.Body); err != nil {
		t.Fatalf("A2A card signature: %v", err)
	}
	if st, err := os.Stat(filepath.Join(work, "data", "signing-key.pem")); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("signing key file: %v %v", st, err)
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
