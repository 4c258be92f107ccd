package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentcards/agentcards/web/catalog"
	"github.com/agentcards/agentcards/web/webtest"
)

// TestCLIBadToken: a token that is not a JWT is refused before anything is sent, naming the token
// (exit 2), whatever the request and wherever the token comes from; never taken for a token
// without a tenant. `mcp --server` refuses it at start the same way.
func TestCLIBadToken(t *testing.T) {
	e := newCLIEnv(t, false)
	for _, args := range [][]string{
		{"cards", "search"},
		{"cards", "search", "--tenant", "acme"},
		{"keys", "list"},
	} {
		r := e.run(t, "garbage", args...)
		if r.code != 2 || !strings.Contains(r.stderr, "unauthorized: AGENTCARDS_TOKEN is not a valid token") || strings.Contains(r.stderr, "--tenant") {
			t.Errorf("%v with a garbage token: exit %d\n%s", args, r.code, r.stderr)
		}
	}
	e.refused(t, "Bearer "+e.root, 2, `AGENTCARDS_TOKEN is not a valid token: it starts with "Bearer "`, "cards", "search")
	e.refused(t, "", 2, "the token of --token-file "+e.file(t, "token", "not.a.jwt\n")+" is not a valid token",
		"cards", "search", "--token-file", e.file(t, "token", "not.a.jwt\n"))

	var stdout, stderr bytes.Buffer
	code := cli(context.Background(), []string{"mcp", "--server", e.base}, &stdout, &stderr, []string{"AGENTCARDS_TOKEN=garbage"})
	if code != 2 || !strings.Contains(stderr.String(), "AGENTCARDS_TOKEN is not a valid token") || stdout.Len() != 0 {
		t.Errorf("mcp --server with a garbage token: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
}

// TestCLIHelp: every flag of every command says what it is, and the token's flag says truly
// where the token comes from.
func TestCLIHelp(t *testing.T) {
	flagLine := regexp.MustCompile(`(?m)^  -(\S+)(?: \S+)?\n    \t(.*)$`)
	for _, r := range catalog.Requests {
		if r.Doors&catalog.CLI == 0 {
			continue
		}
		var stdout, stderr bytes.Buffer
		cli(context.Background(), append(strings.Fields(strings.TrimPrefix(r.Command(), "agentcards ")), "-h"), &stdout, &stderr, nil)
		for _, m := range flagLine.FindAllStringSubmatch(stderr.String(), -1) {
			if strings.TrimSpace(m[2]) == "" || strings.HasPrefix(m[2], "(") {
				t.Errorf("%s -h: the flag -%s says nothing of itself: %q", r.Command(), m[1], m[2])
			}
		}
		if !strings.Contains(stderr.String(), "a file holding the bearer token; without it, the token is $AGENTCARDS_TOKEN") {
			t.Errorf("%s -h: -token-file:\n%s", r.Command(), stderr.String())
		}
	}
}

// TestCLIRefusedBeforeSending: a value outside a field's bounds or enum, from a flag or from -f,
// is refused before sending with exit 2, as a required field left empty is; the bounds are the
// service's (delegations.list takes 200, audit.list 500). Members a field lacks, or that differ
// from its name only in case, are refused at any depth, in -f files and JSON flags alike, all of
// them named in one answer with the name meant.
func TestCLIRefusedBeforeSending(t *testing.T) {
	e := newCLIEnv(t, false)
	e.ok(t, e.root, nil, "tenants", "create", "--id", "acme", "--name", "Acme", "--admins", "alice")
	alice := webtest.Mint(t, webtest.Tokens(t), "alice", "acme", false)

	e.refused(t, alice, 2, "limit: 500 is not between 1 and 100", "cards", "search", "--limit", "500")
	e.refused(t, alice, 2, "limit: 0 is not between 1 and 100", "cards", "search", "--limit", "0")
	e.refused(t, alice, 2, `status: "bogus" is not one of active, deprecated, disabled`, "cards", "search", "--status", "bogus")
	e.refused(t, alice, 2, "limit: 500 is not between 1 and 100; status: \"bogus\" is not one of",
		"cards", "search", "-f", e.file(t, "search.json", `{"limit": 500, "status": ["bogus"]}`))
	e.refused(t, alice, 2, "limit: 501 is not between 1 and 500", "audit", "list", "--limit", "501")
	e.refused(t, alice, 2, "timeoutMs: -1 is less than 0", "delegations", "create", "--agentId", "x", "--capability", "c", "--task", "t", "--timeoutMs", "-1")
	e.ok(t, alice, nil, "delegations", "list", "--limit", "200")
	e.ok(t, alice, nil, "audit", "list", "--limit", "500")

	card := e.file(t, "card.json", `{"AgentID": "x", "name": "X", "capabilities": [{"Name": "review"}], "colour": "red"}`)
	e.refused(t, alice, 2, "cards.register: invalid: -f "+card+": unknown field(s): AgentID (did you mean agentId?), capabilities[0].Name (did you mean name?), colour",
		"cards", "register", "-f", card)
	e.refused(t, alice, 2, "unknown field(s): [0].Name (did you mean name?); --authRequirements: unknown field(s): typ (did you mean type?)",
		"cards", "register", "--agentId", "x", "--name", "X", "--capabilities", `[{"Name": "review"}]`, "--authRequirements", `{"typ": "bearer"}`)
	e.refused(t, alice, 2, "unknown field(s): Subject (did you mean subject?)",
		"roles", "grant", "-f", e.file(t, "grant.json", `{"Subject": "bob", "role": "reader"}`))
	e.refused(t, alice, 2, "--records: unknown field(s): [0].agentID (did you mean agentId?)",
		"delegations", "import", "--source", "agentkit-mesh", "--records", `[{"id": "f47ac10b-58cc-4372-a567-0e02b2c3d479", "agentID": "x", "status": "completed", "createdAt": "2026-03-01T10:00:00Z"}]`)
	e.refused(t, alice, 2, "cards[1]: unknown field(s): Tags (did you mean tags?)",
		"cards", "register-batch", "-f", e.file(t, "batch.json", `[{"agentId": "a", "name": "A"}, {"agentId": "b", "name": "B", "Tags": ["x"]}]`))
	// A member of a free-form value (metadata, a capability's schema) is the caller's own.
	e.ok(t, alice, nil, "cards", "register", "--agentId", "free", "--name", "Free", "--metadata", `{"AnyName": {"Nested": 1}}`)
}

// TestCLISuggests: a mistyped resource, command or flag is answered with the nearest name.
func TestCLISuggests(t *testing.T) {
	e := newCLIEnv(t, false)
	e.refused(t, e.root, 2, `cards has no command "serch" (did you mean search?)`, "cards", "serch")
	e.refused(t, e.root, 2, `unknown command "card" (did you mean cards?)`, "card", "search")
	e.refused(t, e.root, 2, `unknown command "polices" (did you mean policies?)`, "polices", "list")
	e.refused(t, e.root, 2, "-agentid (did you mean --agentId?)", "cards", "get", "--agentid", "x")
	e.refused(t, e.root, 2, `cards has no command "zzz"`+"\n", "cards", "zzz")
}

// TestCLITableFits: with COLUMNS set, a table is no wider than it says: long cells are cut, a
// card's long values wrapped; a liveness is its state; a list says how many of how many.
func TestCLITableFits(t *testing.T) {
	e := newCLIEnv(t, false)
	e.ok(t, e.root, nil, "tenants", "create", "--id", "acme", "--name", "Acme", "--admins", "alice")
	alice := webtest.Mint(t, webtest.Tokens(t), "alice", "acme", false)
	long := "https://agents.example.com/" + strings.Repeat("a-long-path/", 8)
	for _, id := range []string{"one", "two", "three"} {
		e.ok(t, alice, nil, "cards", "register", "--agentId", id, "--name", "Agent "+id, "--endpoint", long+id,
			"--description", strings.Repeat("words that go on ", 6))
	}
	run := func(args ...string) string {
		t.Helper()
		var stdout, stderr bytes.Buffer
		env := []string{"AGENTCARDS_SERVER=" + e.base, "AGENTCARDS_TOKEN=" + alice, "COLUMNS=70"}
		if code := cli(context.Background(), append(args, "-o", "table"), &stdout, &stderr, env); code != 0 {
			t.Fatalf("%v: exit %d\n%s", args, code, stderr.String())
		}
		for _, line := range strings.Split(stdout.String(), "\n") {
			if n := utf8.RuneCountInString(line); n > 70 && !strings.Contains(line, "--cursor") {
				t.Errorf("%v: a line of %d characters in 70 columns:\n%s", args, n, stdout.String())
			}
		}
		return stdout.String()
	}
	out := run("cards", "search", "--limit", "2", "--fields", "agentId,liveness,endpoint,description")
	if !regexp.MustCompile(`(?m)^one\s+unknown\s+https://agents\.example\.\S*…\s+words that go on.*…$`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^2 of 3; the next page: --cursor \S+$`).MatchString(out) {
		t.Errorf("cards search in 70 columns:\n%s", out)
	}
	out = run("cards", "get", "--agentId", "one")
	if !regexp.MustCompile(`(?m)^endpoint\s+https://agents\.example\.com/\S+(\n {13}\S+)+\nvisibility`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^liveness\s+unknown$`).MatchString(out) {
		t.Errorf("cards get in 70 columns:\n%s", out)
	}
	if out := run("delegations", "list"); !strings.HasSuffix(out, "\n0 shown; no more\n") {
		t.Errorf("delegations list, empty:\n%s", out)
	}
}
