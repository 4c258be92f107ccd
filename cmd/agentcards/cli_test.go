package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/go-jose/go-jose/v4"

	"github.com/agentcards/agentcards/authz/token"
	"github.com/agentcards/agentcards/cards/agenttest"
	"github.com/agentcards/agentcards/web/catalog"
	"github.com/agentcards/agentcards/web/client"
	"github.com/agentcards/agentcards/web/webtest"
)

// cliEnv is a real server (the serve command, on SQLite, with loopback agents allowed and
// endpoint secrets configured) and the CLI's environment for it.
type cliEnv struct {
	base, root string
	config     string // the server's configuration file
	dir        string
	ran        map[string]bool // the catalogue requests a command has carried out
}

func newCLIEnv(t *testing.T, secrets bool, bodyLimit ...string) *cliEnv {
	t.Helper()
	dir := t.TempDir()
	key := ""
	if secrets {
		key = base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))
	}
	limit := ""
	if len(bodyLimit) > 0 {
		limit = "\n  bodyLimit: " + bodyLimit[0]
	}
	config := fmt.Sprintf("dataDir: %q\nserver:\n  addr: 127.0.0.1:0\n  metricsAddr: 127.0.0.1:0%s\nauth:\n  secret: %q\noutbound:\n  allow: [\"127.0.0.0/8\"]\ndelegation:\n  secretKey: %q\n",
		dir, limit, webtest.Secret, key)
	s := startServe(t, config)
	e := &cliEnv{base: s.api.BaseURL, root: webtest.Mint(t, webtest.Tokens(t), "root", "", true), dir: t.TempDir(), ran: map[string]bool{}}
	e.config = e.file(t, "config.yaml", config)
	return e
}

// cliResult is what one command did.
type cliResult struct {
	code           int
	stdout, stderr string
}

// run runs the CLI with the token (none when empty) against the server.
func (e *cliEnv) run(t *testing.T, token string, args ...string) cliResult {
	t.Helper()
	environ := []string{"AGENTCARDS_SERVER=" + e.base}
	if token != "" {
		environ = append(environ, "AGENTCARDS_TOKEN="+token)
	}
	var stdout, stderr bytes.Buffer
	code := cli(context.Background(), args, &stdout, &stderr, environ)
	return cliResult{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// ok runs a command that must succeed, notes its request as carried out, and decodes its JSON
// output into out (when not nil).
func (e *cliEnv) ok(t *testing.T, token string, out any, args ...string) cliResult {
	t.Helper()
	r := e.run(t, token, args...)
	if r.code != 0 {
		t.Fatalf("agentcards %s: exit %d\n%s%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	if len(args) >= 2 {
		name := args[0] + "." + strings.ReplaceAll(args[1], "-", "_")
		if _, ok := catalog.Lookup(name); ok {
			e.ran[name] = true
		}
	}
	if out != nil {
		if err := json.Unmarshal([]byte(r.stdout), out); err != nil {
			t.Fatalf("agentcards %s: the output is not the JSON expected (%v):\n%s", strings.Join(args, " "), err, r.stdout)
		}
	}
	return r
}

// refused runs a command that must fail with the exit status, its stderr naming want.
func (e *cliEnv) refused(t *testing.T, token string, code int, want string, args ...string) {
	t.Helper()
	r := e.run(t, token, args...)
	if r.code != code || !strings.Contains(r.stderr, want) {
		t.Errorf("agentcards %s: exit %d, stderr %q; want exit %d naming %q", strings.Join(args, " "), r.code, r.stderr, code, want)
	}
	if code == 1 && r.stdout != "" {
		t.Errorf("agentcards %s: a refusal printed %q on stdout", strings.Join(args, " "), r.stdout)
	}
}

// file writes a file of the test and returns its path.
func (e *cliEnv) file(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(e.dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCLIEveryRequest runs a command of every request the catalogue puts on the CLI door against
// a real server, with flags named as the request's fields, -f files, both output formats, and
// the refusals: the service's (exit 1, the error code on stderr) and the usage errors (exit 2).
func TestCLIEveryRequest(t *testing.T) {
	e := newCLIEnv(t, true)
	agent := agenttest.New(t, agenttest.Answer(http.StatusOK, `{"result": "reviewed"}`))
	tokens := webtest.Tokens(t)
	s := &cliScenario{e: e, tokens: tokens, alice: webtest.Mint(t, tokens, "alice", "cli", false), bob: webtest.Mint(t, tokens, "bob", "cli", false)}

	s.tenants(t)
	s.cards(t, agent.URL)
	s.search(t)
	s.edits(t)
	s.access(t)
	s.synonyms(t)
	s.trust(t)
	s.sources(t)
	s.webhooks(t)
	s.delegationsAndPublic(t)
	s.refusals(t)
	s.inputs(t)

	for _, req := range catalog.Requests {
		if req.Doors&catalog.CLI != 0 && !e.ran[req.Name] {
			t.Errorf("%s is on the CLI door, and no command of this test carried it out", req.Name)
		}
	}
}

// cliScenario is the state the steps of TestCLIEveryRequest share: the server and the CLI's
// environment, the tokens of alice (admin of tenant cli) and bob, and the card file of reviewer.
type cliScenario struct {
	e          *cliEnv
	tokens     *token.Tokens
	alice, bob string
	card       string // the file of the card reviewer, written by cards
}

// cliCard is what the card commands print that the steps check.
type cliCard struct {
	AgentID, Name, Description string
	Revision                   int64
}

// tenants: the tenant commands, as the platform admin, in JSON and as tables; it leaves the
// tenant cli, named "CLI two", with alice its admin.
func (s *cliScenario) tenants(t *testing.T) {
	e := s.e
	var tenant struct{ ID, Name, Status string }
	e.ok(t, e.root, &tenant, "tenants", "create", "--id", "cli", "--name", "CLI", "--admins", "alice")
	if tenant.ID != "cli" || tenant.Status != "active" {
		t.Fatalf("tenants create: %+v", tenant)
	}
	e.ok(t, e.root, nil, "tenants", "create", "--id", "gone", "--name", "Gone")
	if r := e.ok(t, e.root, nil, "tenants", "list", "-o", "table"); !regexp.MustCompile(`(?m)^id\s+name\s+status\s+createdAt\n(.*\n)*cli\s+CLI\s+active`).MatchString(r.stdout) {
		t.Errorf("tenants list as a table:\n%s", r.stdout)
	}
	e.ok(t, e.root, &tenant, "tenants", "update", "--tenant", "cli", "--name", "CLI two")
	if tenant.Name != "CLI two" {
		t.Errorf("tenants update: %+v", tenant)
	}
	if r := e.ok(t, e.root, nil, "tenants", "get", "--tenant", "cli", "--output", "table"); !regexp.MustCompile(`(?m)^name\s+CLI two$`).MatchString(r.stdout) {
		t.Errorf("tenants get as a table:\n%s", r.stdout)
	}
	if r := e.ok(t, e.root, nil, "tenants", "delete", "--tenant", "gone"); r.stdout != "" {
		t.Errorf("tenants delete printed %q", r.stdout)
	}
}

// cards: the card commands, as the tenant's admin (the tenant is the token's). It leaves the
// cards reviewer (its endpoint agentURL, online), a1, a2, by-url and geo (public).
func (s *cliScenario) cards(t *testing.T, agentURL string) {
	e, alice := s.e, s.alice
	s.card = e.file(t, "card.json", fmt.Sprintf(`{"agentId": "reviewer", "name": "Code Reviewer", "description": "Reviews pull requests",
		"protocols": ["http"], "capabilities": [{"name": "review"}], "tags": ["code"], "endpoint": %q, "visibility": "public"}`, agentURL))
	var got cliCard
	e.ok(t, alice, &got, "cards", "register", "-f", s.card)
	if got.AgentID != "reviewer" || got.Revision != 1 {
		t.Fatalf("cards register: %+v", got)
	}
	batch := e.file(t, "batch.json", `[{"agentId": "a1", "name": "One", "protocols": ["mcp"]}, {"agentId": "a2", "name": "Two", "protocols": ["mcp"]}]`)
	var list struct {
		Items []struct{ AgentID string }
		Total int
	}
	e.ok(t, alice, &list, "cards", "register-batch", "-f", batch)
	if list.Total != 2 {
		t.Errorf("cards register-batch: %+v", list)
	}
	sample, err := os.ReadFile(filepath.Join("..", "..", "web", "testdata", "a2a-samples", "spec-v1.0-georoute-agent-card.json"))
	if err != nil {
		t.Fatal(err)
	}
	source := agenttest.New(t, nil)
	source.ServeJSON(agenttest.CardPath, http.StatusOK, sample)
	e.ok(t, alice, nil, "cards", "import", "--agentId", "by-url", "--url", source.URL+"/.well-known/agent-card.json")
	var refreshed struct{ Outcome string }
	e.ok(t, alice, &refreshed, "cards", "refresh", "--agentId", "by-url")
	if refreshed.Outcome != "unchanged" {
		t.Errorf("cards refresh: %+v", refreshed)
	}
	e.ok(t, alice, &got, "cards", "import", "--agentId", "geo", "--visibility", "public",
		"--card", "@"+filepath.Join("..", "..", "web", "testdata", "a2a-samples", "spec-v1.0-georoute-agent-card.json"))
	if got.AgentID != "geo" || got.Name != "GeoSpatial Route Planner Agent" {
		t.Errorf("cards import: %+v", got)
	}
	if r := e.ok(t, alice, nil, "cards", "get", "--agentId", "reviewer", "-o", "table"); !regexp.MustCompile(`(?m)^agentId\s+reviewer$`).MatchString(r.stdout) ||
		!regexp.MustCompile(`(?m)^capabilities\s+review$`).MatchString(r.stdout) {
		t.Errorf("cards get as a table:\n%s", r.stdout)
	}

	var beat struct{ State string }
	e.ok(t, alice, &beat, "cards", "heartbeat", "--agentId", "reviewer")
	if beat.State != "online" {
		t.Errorf("cards heartbeat: %+v", beat)
	}
	var online struct {
		Items []struct{ Card struct{ AgentID string } }
		Total int
	}
	if e.ok(t, alice, &online, "cards", "search", "--online", "true", "-o", "json"); online.Total != 1 || online.Items[0].Card.AgentID != "reviewer" {
		t.Errorf("cards search --online true: %+v", online)
	}
}

// search: the default view as a table, fields chosen as JSON, the full answer as JSON, and
// paging with a cursor.
func (s *cliScenario) search(t *testing.T) {
	e, alice := s.e, s.alice
	r := e.ok(t, alice, nil, "cards", "search", "--protocol", "http", "--q", "review", "-o", "table")
	if !regexp.MustCompile(`(?m)^agentId\s+name\s+description\s+score\s+matchedCapabilities\s+endpoint\n(reviewer)\s+Code Reviewer\s+Reviews pull requests\s+[\d.]+\s+review\s+http://127\.0\.0\.1:\d+\n1 of 1$`).MatchString(r.stdout) {
		t.Errorf("cards search as a table:\n%s", r.stdout)
	}
	// --explain adds a column saying what each word added.
	r = e.ok(t, alice, nil, "cards", "search", "--q", "review zebra", "--explain", "--fields", "agentId", "-o", "table")
	if !regexp.MustCompile(`(?m)^agentId\s+explain\nreviewer\s+review \+0\.\d{3}; zebra -\n`).MatchString(r.stdout) {
		t.Errorf("cards search --explain as a table:\n%s", r.stdout)
	}
	// Without q there is no score, and no column of it; nor of what no card has.
	if r := e.ok(t, alice, nil, "cards", "search", "--protocol", "mcp", "-o", "table"); !regexp.MustCompile(`^agentId\s+name\n`).MatchString(r.stdout) {
		t.Errorf("cards search without q as a table:\n%s", r.stdout)
	}
	// The change feed: the present cursor, then the changes after it (none yet).
	var now struct {
		Changes    []any
		NextCursor string
	}
	e.ok(t, alice, &now, "cards", "changes")
	if len(now.Changes) != 0 || now.NextCursor == "" {
		t.Errorf("cards changes: %+v", now)
	}
	e.ok(t, alice, &now, "cards", "changes", "--since", now.NextCursor, "--limit", "5")
	if now.NextCursor == "" {
		t.Errorf("cards changes --since: %+v", now)
	}
	var compact struct {
		Total int
		Items []map[string]any
	}
	e.ok(t, alice, &compact, "cards", "search", "--protocol", "MCP", "--fields", "agentId", "--fields", "revision", "--limit", "2")
	if compact.Total != 2 || len(compact.Items) != 2 || len(compact.Items[0]) != 2 || compact.Items[0]["revision"] == nil {
		t.Errorf("cards search --fields agentId,revision --limit 2: %+v", compact)
	}
	var full struct {
		Items []struct {
			Card struct{ AgentID string }
		}
		NextCursor string
	}
	e.ok(t, alice, &full, "cards", "search", "--protocol", "mcp", "--limit", "1")
	if len(full.Items) != 1 || full.NextCursor == "" {
		t.Fatalf("cards search --limit 1: %+v", full)
	}
	e.ok(t, alice, &full, "cards", "search", "--protocol", "mcp", "--limit", "1", "--cursor", full.NextCursor)
	if len(full.Items) != 1 || full.Items[0].Card.AgentID != "a2" {
		t.Errorf("cards search, the second page: %+v", full)
	}
}

// edits: a card read, edited and sent back whole (its server-owned members as printed go
// along), then patched, each with its revision; and the card's endpoint secret set and removed.
// It leaves reviewer at revision 3.
func (s *cliScenario) edits(t *testing.T) {
	e, alice := s.e, s.alice
	var got cliCard
	fetched := e.ok(t, alice, nil, "cards", "get", "--agentId", "reviewer").stdout
	edited := e.file(t, "edited.json", strings.Replace(fetched, "Reviews pull requests", "Reviews changes", 1))
	e.ok(t, alice, &got, "cards", "replace", "-f", edited, "--ifRevision", "1")
	if got.Description != "Reviews changes" || got.Revision != 2 {
		t.Errorf("cards replace: %+v", got)
	}
	e.ok(t, alice, &got, "cards", "update", "--agentId", "reviewer", "--patch", `{"description": "Reviews code"}`, "--ifRevision", "2")
	if got.Description != "Reviews code" || got.Revision != 3 {
		t.Errorf("cards update: %+v", got)
	}

	e.ok(t, alice, nil, "secrets", "set", "--agentId", "reviewer", "--secret", "s3cret")
	e.ok(t, alice, nil, "secrets", "remove", "--agentId", "reviewer")
}

// access: roles, policies and the access check, which bob's reads follow; the audit trail
// records the revoke.
func (s *cliScenario) access(t *testing.T) {
	e, alice, bob := s.e, s.alice, s.bob
	var assignment struct{ Subject, Role string }
	e.ok(t, alice, &assignment, "roles", "grant", "--subject", "bob", "--role", "reader")
	if assignment != (struct{ Subject, Role string }{"bob", "reader"}) {
		t.Errorf("roles grant: %+v", assignment)
	}
	if r := e.ok(t, alice, nil, "roles", "list", "-o", "table"); !regexp.MustCompile(`(?m)^bob\s+reader$`).MatchString(r.stdout) {
		t.Errorf("roles list as a table:\n%s", r.stdout)
	}
	e.ok(t, alice, nil, "policies", "add", "--subject", "bob", "--object", "cards/reviewer", "--action", "cards:read", "--effect", "deny")
	if r := e.ok(t, alice, nil, "policies", "list", "-o", "table"); !regexp.MustCompile(`(?m)^bob\s+cards/reviewer\s+cards:read\s+deny$`).MatchString(r.stdout) {
		t.Errorf("policies list as a table:\n%s", r.stdout)
	}
	var decision struct{ Allowed bool }
	e.ok(t, alice, &decision, "access", "check", "--subject", "bob", "--action", "cards:read", "--object", "cards/reviewer")
	if decision.Allowed {
		t.Errorf("access check: bob may read cards/reviewer against a deny policy")
	}
	e.refused(t, bob, 1, "forbidden", "cards", "get", "--agentId", "reviewer")
	e.ok(t, alice, nil, "policies", "remove", "--subject", "bob", "--object", "cards/reviewer", "--action", "cards:read", "--effect", "deny")
	e.ok(t, bob, nil, "cards", "get", "--agentId", "reviewer")
	e.ok(t, alice, nil, "roles", "revoke", "--subject", "bob", "--role", "reader")
	if r := e.ok(t, alice, nil, "audit", "list", "--object", "roles/bob", "-o", "table"); !regexp.MustCompile(`(?m)\salice\s+roles\.revoke\s+roles/bob\s+\d+\s+\d+\s+ok$`).MatchString(r.stdout) {
		t.Errorf("audit list as a table:\n%s", r.stdout)
	}
}

// trust: an issuer with a pinned key set given from a file, listed as a table, read, refused to
// bob (no role left) and removed, once.
func (s *cliScenario) trust(t *testing.T) {
	e, alice := s.e, s.alice
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: pub, KeyID: "pinned-1", Algorithm: "EdDSA"}}})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "keys.json")
	if err := os.WriteFile(file, keys, 0o600); err != nil {
		t.Fatal(err)
	}
	var put struct {
		Issuer struct{ Domain string }
		Cards  struct{ Weighed, Trusted int }
	}
	e.ok(t, alice, &put, "trust", "put", "--domain", "*.Example.com", "--keys", "@"+file)
	// The scenario's signed imports live on georoute-agent.example.com: weighed, and trusted by
	// none of this new key.
	if put.Issuer.Domain != "*.example.com" || put.Cards.Weighed == 0 || put.Cards.Trusted != 0 {
		t.Errorf("trust put: %+v", put)
	}
	if r := e.ok(t, alice, nil, "trust", "list", "-o", "table"); !regexp.MustCompile(`(?m)^\*\.example\.com\s+\d{4}-`).MatchString(r.stdout) {
		t.Errorf("trust list as a table:\n%s", r.stdout)
	}
	if r := e.ok(t, alice, nil, "trust", "get", "--domain", "*.example.com"); !strings.Contains(r.stdout, "pinned-1") {
		t.Errorf("trust get:\n%s", r.stdout)
	}
	e.refused(t, s.bob, 1, "forbidden", "trust", "put", "--domain", "example.org", "--keys", "@"+file)
	e.ok(t, alice, nil, "trust", "remove", "--domain", "*.example.com")
	e.refused(t, alice, 1, "not_found", "trust", "remove", "--domain", "*.example.com")
}

// sources: an a2a-urls source followed with its URLs as a list flag, listed as a table, read,
// refused to bob (no role left) and removed, once.
func (s *cliScenario) sources(t *testing.T) {
	e, alice := s.e, s.alice
	var src struct {
		ID, Kind, State string
		URLs            []string
		Interval        int `json:"intervalSeconds"`
	}
	e.ok(t, alice, &src, "sources", "create", "--kind", "a2a-urls", "--urls", "http://127.0.0.1:9/a.json", "--urls", "http://127.0.0.1:9/b.json",
		"--intervalSeconds", "60")
	if !strings.HasPrefix(src.ID, "src_") || src.Kind != "a2a-urls" || len(src.URLs) != 2 || src.Interval != 60 {
		t.Errorf("sources create: %+v", src)
	}
	if r := e.ok(t, alice, nil, "sources", "list", "-o", "table"); !regexp.MustCompile(`(?m)^` + src.ID + `\s+a2a-urls\s+`).MatchString(r.stdout) {
		t.Errorf("sources list as a table:\n%s", r.stdout)
	}
	if r := e.ok(t, alice, nil, "sources", "get", "--id", src.ID); !strings.Contains(r.stdout, "http://127.0.0.1:9/b.json") {
		t.Errorf("sources get:\n%s", r.stdout)
	}
	e.refused(t, s.bob, 1, "forbidden", "sources", "create", "--kind", "ai-catalog", "--url", "http://127.0.0.1:9/catalog.json")
	e.refused(t, alice, 2, "invalid", "sources", "create", "--kind", "ftp", "--url", "http://127.0.0.1:9/catalog.json")
	e.ok(t, alice, &src, "sources", "update", "--id", src.ID, "--intervalSeconds", "120")
	if src.Interval != 120 {
		t.Errorf("sources update: %+v", src)
	}
	e.refused(t, alice, 1, "invalid", "sources", "update", "--id", src.ID, "--token", "a-token")
	e.ok(t, alice, &src, "sources", "remove", "--id", src.ID)
	if src.State != "removing" {
		t.Errorf("sources remove: %+v", src)
	}
}

// synonyms: a synonym set put with its words as a list flag, listed as a table, refused to bob
// (no role left) and removed, once.
func (s *cliScenario) synonyms(t *testing.T) {
	e, alice := s.e, s.alice
	var set struct {
		ID    string
		Words []string
	}
	e.ok(t, alice, &set, "synonyms", "put", "--id", "l10n", "--words", "translation,localization", "--words", "i18n")
	if set.ID != "l10n" || !slices.Equal(set.Words, []string{"translation", "localization", "i18n"}) {
		t.Errorf("synonyms put: %+v", set)
	}
	if r := e.ok(t, alice, nil, "synonyms", "list", "-o", "table"); !regexp.MustCompile(`(?m)^l10n\s+translation,\s?localization,\s?i18n\s+\d{4}-`).MatchString(r.stdout) {
		t.Errorf("synonyms list as a table:\n%s", r.stdout)
	}
	e.refused(t, s.bob, 1, "forbidden", "synonyms", "put", "--id", "l10n", "--words", "a,b")
	e.ok(t, alice, nil, "synonyms", "remove", "--id", "l10n")
	e.refused(t, alice, 1, "not_found", "synonyms", "remove", "--id", "l10n")
}

// webhooks: a webhook to a receiver on loopback, created with its filter as list flags, listed as
// a table, read, paused, its deliveries read, refused to bob, and removed, once.
func (s *cliScenario) webhooks(t *testing.T) {
	e, alice := s.e, s.alice
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	t.Cleanup(receiver.Close)
	var hook struct {
		ID, URL, State string
		Types          []string
	}
	e.ok(t, alice, &hook, "webhooks", "create", "--url", receiver.URL, "--types", "agentcards.card.removed", "--agentIds", "rev*")
	if !strings.HasPrefix(hook.ID, "wh_") || hook.URL != receiver.URL || hook.State != "active" || !slices.Equal(hook.Types, []string{"agentcards.card.removed"}) {
		t.Errorf("webhooks create: %+v", hook)
	}
	if r := e.ok(t, alice, nil, "webhooks", "list", "-o", "table"); !regexp.MustCompile(`(?m)^` + hook.ID + `\s+http://127\.0\.0\.1:\d+\s+active\s+0\s`).MatchString(r.stdout) {
		t.Errorf("webhooks list as a table:\n%s", r.stdout)
	}
	e.ok(t, alice, nil, "webhooks", "get", "--id", hook.ID)
	e.ok(t, alice, &hook, "webhooks", "update", "--id", hook.ID, "--state", "disabled")
	if hook.State != "disabled" {
		t.Errorf("webhooks update: %+v", hook)
	}
	e.ok(t, alice, nil, "webhooks", "deliveries", "--id", hook.ID, "--limit", "5")
	e.refused(t, s.bob, 1, "forbidden", "webhooks", "list")
	e.refused(t, alice, 1, "blocked_url", "webhooks", "create", "--url", "http://169.254.169.254/latest")
	e.ok(t, alice, nil, "webhooks", "remove", "--id", hook.ID)
	e.refused(t, alice, 1, "not_found", "webhooks", "remove", "--id", hook.ID)
}

// delegationsAndPublic: a delegation to reviewer, read and listed; then A2A and keys, without a
// token for what is public; and the card a1 removed.
func (s *cliScenario) delegationsAndPublic(t *testing.T) {
	e, alice := s.e, s.alice
	var d struct{ ID, Status string }
	e.ok(t, alice, &d, "delegations", "create", "--agentId", "reviewer", "--capability", "review", "--task", "review PR 7", "--context", `{"pr": 7}`)
	if d.Status != "completed" {
		t.Fatalf("delegations create: %+v", d)
	}
	e.ok(t, alice, &d, "delegations", "get", "--id", d.ID)
	if r := e.ok(t, alice, nil, "delegations", "list", "--status", "completed", "-o", "table"); !strings.Contains(r.stdout, d.ID) {
		t.Errorf("delegations list as a table:\n%s", r.stdout)
	}
	records := e.file(t, "records.json", `[{"id": "f47ac10b-58cc-4372-a567-0e02b2c3d479", "caller": "api", "agentId": "reviewer",
		"status": "completed", "result": "reviewed", "createdAt": "2026-03-01T10:00:00.000Z"}]`)
	var imported struct{ Imported, Existing []string }
	e.ok(t, alice, &imported, "delegations", "import", "--source", "agentkit-mesh", "--records", "@"+records)
	if len(imported.Imported) != 1 || len(imported.Existing) != 0 {
		t.Errorf("delegations import: %+v", imported)
	}
	if r := e.ok(t, alice, nil, "delegations", "import", "--source", "agentkit-mesh", "--records", "@"+records, "-o", "table"); !regexp.MustCompile(`(?m)^existing\s+f47ac10b-`).MatchString(r.stdout) {
		t.Errorf("delegations import again, as a table:\n%s", r.stdout)
	}

	if r := e.ok(t, "", nil, "a2a", "agents", "--tenant", "cli", "-o", "table"); !regexp.MustCompile(`(?m)^geo\s+GeoSpatial Route Planner Agent\s+/a2a/cli/geo/`).MatchString(r.stdout) {
		t.Errorf("a2a agents as a table:\n%s", r.stdout)
	}
	if r := e.ok(t, "", nil, "a2a", "catalog", "--tenant", "cli", "--limit", "1", "-o", "table"); !regexp.MustCompile(`(?m)^urn:agentcards:cli:geo\s+application/a2a-agent-card\+json\s+\S+\s+http`).MatchString(r.stdout) {
		t.Errorf("a2a catalog as a table:\n%s", r.stdout)
	}
	var a2aCard struct{ Name string }
	e.ok(t, "", &a2aCard, "a2a", "card", "--tenant", "cli", "--agentId", "geo", "--version", "1.0", "-o", "table")
	if a2aCard.Name != "GeoSpatial Route Planner Agent" {
		t.Errorf("a2a card: %+v", a2aCard)
	}
	if r := e.ok(t, "", nil, "keys", "list", "-o", "table"); !regexp.MustCompile(`(?m)^kid\s+kty`).MatchString(r.stdout) {
		t.Errorf("keys list as a table:\n%s", r.stdout)
	}

	e.ok(t, alice, nil, "cards", "remove", "--agentId", "a1")
}

// refusals: the service's (exit 1, the code on stderr, nothing on stdout), the usage errors
// (exit 2, nothing sent) and the inputs the client refuses before sending (exit 2, and nothing
// happened).
func (s *cliScenario) refusals(t *testing.T) {
	e, alice, bob := s.e, s.alice, s.bob
	e.refused(t, alice, 1, "not_found", "cards", "get", "--agentId", "nope")
	e.refused(t, bob, 1, "forbidden", "cards", "register", "-f", s.card)
	e.refused(t, alice, 1, "invalid", "cards", "register", "--agentId", "bad", "--name", "Bad", "--endpoint", "not a url")
	e.refused(t, alice, 1, "precondition_failed", "cards", "update", "--agentId", "reviewer", "--patch", `{"tags": []}`, "--ifRevision", "1")
	e.refused(t, alice, 1, "conflict", "cards", "register", "-f", s.card)
	e.refused(t, alice[:len(alice)-6]+"AAAAAA", 1, "unauthorized", "cards", "search")
	e.refused(t, e.root, 2, "give --tenant", "cards", "search")
	e.refused(t, alice, 1, "forbidden", "tenants", "list")

	e.refused(t, alice, 2, "flag provided but not defined", "cards", "search", "--nope", "x")
	e.refused(t, alice, 2, "want an integer", "cards", "search", "--limit", "ten")
	e.refused(t, alice, 2, `cards has no command "find"`, "cards", "find")
	e.refused(t, alice, 2, "no such file", "cards", "register", "-f", filepath.Join(e.dir, "missing.json"))
	e.refused(t, alice, 2, "unknown field", "cards", "register", "-f", e.file(t, "odd.json", `{"agentId": "x", "name": "X", "colour": "red"}`))
	e.refused(t, alice, 2, "--output", "cards", "search", "-o", "xml")
	e.refused(t, alice, 2, `fields: "colour"`, "cards", "search", "--fields", "colour")
	e.refused(t, alice, 2, "takes flags only", "cards", "search", "review")
	e.refused(t, "", 2, "AGENTCARDS_TOKEN", "cards", "search")

	rootOfCLI := webtest.Mint(t, s.tokens, "root", "cli", true)
	e.refused(t, rootOfCLI, 2, "tenant is required", "tenants", "delete")
	e.ok(t, e.root, nil, "tenants", "get", "--tenant", "cli")
	e.refused(t, alice, 2, "agentId is required", "cards", "get")
	e.refused(t, alice, 2, "patch is required", "cards", "update", "--agentId", "reviewer")
	e.refused(t, alice, 2, `mode: "later" is not one of sync, async`, "delegations", "create", "--agentId", "reviewer", "--capability", "review", "--task", "t", "--mode", "later")
}

// inputs: a flag replaces what -f gave its field, a list included; -f - reads stdin; -h prints
// the command's flags and exits 0.
func (s *cliScenario) inputs(t *testing.T) {
	e, alice := s.e, s.alice
	var replaced struct{ Protocols, Tags []string }
	e.ok(t, alice, &replaced, "cards", "replace", "-f", s.card, "--protocols", "mcp", "--tags", "")
	if !slices.Equal(replaced.Protocols, []string{"mcp"}) || len(replaced.Tags) != 0 {
		t.Errorf("cards replace -f with --protocols mcp --tags '': %+v", replaced)
	}
	stdin = strings.NewReader(`{"agentId": "from-stdin", "name": "From stdin"}`)
	t.Cleanup(func() { stdin = os.Stdin })
	var got cliCard
	e.ok(t, alice, &got, "cards", "register", "-f", "-")
	if got.AgentID != "from-stdin" {
		t.Errorf("cards register -f -: %+v", got)
	}
	if r := e.run(t, alice, "cards", "search", "-h"); r.code != 0 || !strings.Contains(r.stderr, "-protocol") {
		t.Errorf("cards search -h: exit %d\n%s", r.code, r.stderr)
	}
}

// TestCLIFlagsAreTheFields: each command's flags are its request's fields under their JSON
// names, plus the CLI's own, and nothing else.
func TestCLIFlagsAreTheFields(t *testing.T) {
	own := []string{"f", "o", "output", "server", "token-file"}
	flagLine := regexp.MustCompile(`(?m)^  -([A-Za-z0-9-]+)`)
	for _, r := range catalog.Requests {
		if r.Doors&catalog.CLI == 0 {
			continue
		}
		args := strings.Fields(strings.TrimPrefix(r.Command(), "agentcards "))
		var stdout, stderr bytes.Buffer
		if code := cli(context.Background(), append(args, "-h"), &stdout, &stderr, nil); code != 0 {
			t.Fatalf("%s -h: exit %d\n%s", r.Command(), code, stderr.String())
		}
		var got []string
		for _, m := range flagLine.FindAllStringSubmatch(stderr.String(), -1) {
			got = append(got, m[1])
		}
		want := slices.Clone(own)
		for _, f := range client.Fields(r.In) {
			want = append(want, f.Name)
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s: flags %v, want %v", r.Command(), got, want)
		}
	}
}

// TestExplainCell: the CLI's explain column says what each word added and how, then the encoder's
// cosine and rank of a re-ranked card.
func TestExplainCell(t *testing.T) {
	for raw, want := range map[string]string{
		`{"words":[{"word":"pull","adds":0.5132,"by":"word","matched":"pull"},{"word":"slack","adds":0}]}`:                                        "pull +0.513; slack -",
		`{"words":[{"word":"l10n","adds":0.2,"by":"synonym","matched":"translation"}],"similarity":{"cosine":0.43041,"weight":2,"rank":1.34134}}`: "l10n +0.200 (synonym translation); meaning 0.430 (rank 1.341)",
	} {
		if got := explainCell(json.RawMessage(raw)); got != want {
			t.Errorf("%s: %q, want %q", raw, got, want)
		}
	}
}
