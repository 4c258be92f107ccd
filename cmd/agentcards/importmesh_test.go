package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/agentcards/agentcards/web/api"
	"github.com/agentcards/agentcards/web/client"
	"github.com/agentcards/agentcards/web/webtest"
)

// meshSchema is the agents table as agentkit-mesh creates it; meshSchemaOld as its first
// versions did, before resources and auth.
const (
	meshSchema = `CREATE TABLE agents (name TEXT PRIMARY KEY, description TEXT NOT NULL, capabilities TEXT NOT NULL,
		resources TEXT NOT NULL DEFAULT '[]', endpoint TEXT NOT NULL, protocol TEXT NOT NULL DEFAULT 'http', auth TEXT,
		registered_at TEXT NOT NULL, last_seen TEXT NOT NULL)`
	meshSchemaOld = `CREATE TABLE agents (name TEXT PRIMARY KEY, description TEXT NOT NULL, capabilities TEXT NOT NULL,
		endpoint TEXT NOT NULL, protocol TEXT NOT NULL DEFAULT 'http', registered_at TEXT NOT NULL, last_seen TEXT NOT NULL)`
)

// meshRow is a row of the agents table; resources and auth go only where the schema has them.
type meshRow struct {
	name, description, capabilities, resources, endpoint, auth string
}

// meshDB writes an agentkit-mesh registry with the schema and rows.
func meshDB(t *testing.T, schema string, rows []meshRow) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "registry.db")
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(schema); err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		const at = "2026-01-02T03:04:05.000Z"
		var err error
		if schema == meshSchemaOld {
			_, err = db.Exec(`INSERT INTO agents (name, description, capabilities, endpoint, registered_at, last_seen) VALUES (?, ?, ?, ?, ?, ?)`,
				r.name, r.description, r.capabilities, r.endpoint, at, at)
		} else {
			if r.resources == "" {
				r.resources = "[]"
			}
			var auth any
			if r.auth != "" {
				auth = r.auth
			}
			_, err = db.Exec(`INSERT INTO agents (name, description, capabilities, resources, endpoint, protocol, auth, registered_at, last_seen)
				VALUES (?, ?, ?, ?, ?, 'http', ?, ?, ?)`, r.name, r.description, r.capabilities, r.resources, r.endpoint, auth, at, at)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// meshSummary is import-mesh's JSON summary.
type meshSummary struct {
	Tenant   string
	Total    int
	Imported []string
	Skipped  []struct{ Name, AgentID, Reason string }
}

// accounted fails unless every row is imported or skipped, once.
func (s meshSummary) accounted(t *testing.T) {
	t.Helper()
	seen := map[string]bool{}
	for _, id := range s.Imported {
		seen["+"+id] = true
	}
	for _, k := range s.Skipped {
		if seen[k.Name] {
			t.Errorf("%s is skipped twice", k.Name)
		}
		seen[k.Name] = true
	}
	if len(s.Imported)+len(s.Skipped) != s.Total || len(seen) != s.Total {
		t.Errorf("%d rows: %d imported, %d skipped", s.Total, len(s.Imported), len(s.Skipped))
	}
}

func (s meshSummary) reason(name string) string {
	for _, k := range s.Skipped {
		if k.Name == name {
			return k.Reason
		}
	}
	return ""
}

// TestImportMesh moves an agentkit-mesh registry into a tenant through a real server: good
// rows in batches, bad ones skipped with the reason (found here or refused by the service,
// named by index in a batch), bearer and header credentials carried as the endpoint's secret, and
// nothing of a skipped row left behind; run again, every row is already there.
func TestImportMesh(t *testing.T) {
	e := newCLIEnv(t, true)
	e.ok(t, e.root, nil, "tenants", "create", "--id", "mesh", "--name", "Mesh", "--admins", "alice")
	alice := webtest.Mint(t, webtest.Tokens(t), "alice", "mesh", false)
	cl, err := client.New(e.base, client.WithToken(alice))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := cl.Cards.Register(ctx, api.CardsRegister{CardInput: api.CardInput{AgentID: "taken", Name: "Taken"}}); err != nil {
		t.Fatal(err)
	}
	rows := meshRows()
	path := meshDB(t, meshSchema, rows)

	sum := importMeshFirst(t, e, alice, path)
	checkMeshTenant(t, cl, sum)

	// Again, as a table: every row is skipped, as there already or bad.
	r := e.run(t, alice, "cards", "import-mesh", "--from", path, "-o", "table")
	if r.code != 1 || !regexp.MustCompile(`^imported 0 of 240 agents into tenant mesh; skipped 240\n`).MatchString(r.stdout) ||
		!regexp.MustCompile(`(?m)^finance-agent\s+finance-agent\s+conflict: `).MatchString(r.stdout) {
		t.Errorf("import-mesh again: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	// An older registry, without resources and auth columns, reads all the same.
	old := meshDB(t, meshSchemaOld, []meshRow{{name: "old-agent", description: "From before", capabilities: `["legacy"]`, endpoint: "http://127.0.0.1:4010/task"}})
	r = e.run(t, alice, "cards", "import-mesh", "--from", old, "--tenant", "mesh")
	if r.code != 0 || !strings.Contains(r.stdout, `"imported": [`) {
		t.Errorf("import-mesh of the old schema: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	importMeshWithoutSecrets(t, alice, rows[4:5])
	importMeshRefused(t, e, alice, rows)
}

// meshRows are the rows of TestImportMesh's registry: 240 agents, of which bad-caps,
// bad-endpoint, fs-agent, host-header (a secret in a header the service sets) and taken
// (already in the tenant) are to be skipped.
func meshRows() []meshRow {
	rows := []meshRow{
		{name: "finance-agent", description: "Budget management and expense approval", capabilities: `["budget","cost_center","expense_approval"]`,
			resources: `[{"type":"api","uri":"https://api.example.com/finance","description":"ledger","access":"read"}]`, endpoint: "http://127.0.0.1:4002/task"},
		{name: "HR Agent #2", description: "Fills HR forms", capabilities: `["forms"]`, endpoint: "http://127.0.0.1:4003/task"},
		{name: "bad-caps", description: "x", capabilities: `budget, cost`, endpoint: "http://127.0.0.1:4004/task"},
		{name: "header-auth", description: "x", capabilities: `[]`, endpoint: "http://127.0.0.1:4005/task", auth: `{"type":"header","token":"k","headerName":"X-Api-Key"}`},
		{name: "bearer-agent", description: "Needs a token", capabilities: `["sign"]`, endpoint: "http://127.0.0.1:4006/task", auth: `{"type":"bearer","token":"tok-123"}`},
		{name: "none-auth", description: "Open", capabilities: `["open"]`, endpoint: "http://127.0.0.1:4007/task", auth: `{"type":"none"}`},
		{name: "bad-endpoint", description: "x", capabilities: `["a"]`, endpoint: "not a url"},
		{name: "fs-agent", description: "x", capabilities: `["files"]`, resources: `[{"type":"filesystem","uri":"/home/data/**"}]`, endpoint: "http://127.0.0.1:4008/task"},
		{name: "taken", description: "x", capabilities: `["a"]`, endpoint: "http://127.0.0.1:4009/task"},
		{name: "host-header", description: "x", capabilities: `["a"]`, endpoint: "http://127.0.0.1:4011/task", auth: `{"type":"header","token":"k","headerName":"Host"}`},
	}
	for i := range 230 {
		rows = append(rows, meshRow{name: fmt.Sprintf("agent-%03d", i), description: "generated", capabilities: `["work"]`, endpoint: fmt.Sprintf("http://127.0.0.1:5000/%d", i)})
	}
	return rows
}

// importMeshFirst imports the registry at path of meshRows in batches of 100 and checks the
// summary: 235 imported, the 5 bad rows skipped, each with its reason. It answers the summary.
func importMeshFirst(t *testing.T, e *cliEnv, alice, path string) meshSummary {
	r := e.run(t, alice, "cards", "import-mesh", "--from", path, "--batch", "100", "-o", "json")
	if r.code != 1 || !strings.Contains(r.stderr, "5 of 240 agents were skipped") {
		t.Fatalf("import-mesh: exit %d, stderr %q", r.code, r.stderr)
	}
	var sum meshSummary
	if err := json.Unmarshal([]byte(r.stdout), &sum); err != nil {
		t.Fatalf("import-mesh: %v\n%s", err, r.stdout)
	}
	if sum.Tenant != "mesh" || sum.Total != 240 || len(sum.Imported) != 235 || len(sum.Skipped) != 5 {
		t.Fatalf("import-mesh: tenant %s, total %d, imported %d, skipped %+v", sum.Tenant, sum.Total, len(sum.Imported), sum.Skipped)
	}
	sum.accounted(t)
	for name, want := range map[string]string{
		"bad-caps":     "not a JSON list of strings",
		"host-header":  "header: Host is set by the service",
		"bad-endpoint": "invalid: endpoint",
		"fs-agent":     "resources[0].uri",
		"taken":        "conflict",
	} {
		if got := sum.reason(name); !strings.Contains(got, want) {
			t.Errorf("%s: skipped for %q, want a reason naming %q", name, got, want)
		}
	}
	return sum
}

// checkMeshTenant checks what the tenant holds after the first import: the imported cards and
// the one there before, nothing else; finance-agent and HR Agent #2 as the rows say; and the
// bearer credential as bearer-agent's endpoint secret, the others without one.
func checkMeshTenant(t *testing.T, cl *client.Client, sum meshSummary) {
	ctx := context.Background()
	var ids []string
	for hit, err := range cl.Cards.SearchAll(ctx, api.CardsSearch{Limit: 100}) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, hit.Card.AgentID)
	}
	slices.Sort(ids)
	want := append(slices.Clone(sum.Imported), "taken")
	slices.Sort(want)
	if !slices.Equal(ids, want) {
		t.Errorf("the tenant holds %d cards, want the %d imported and taken", len(ids), len(want))
	}
	for _, id := range []string{"finance-agent", "HR-Agent-2", "bearer-agent", "header-auth", "none-auth", "agent-229"} {
		if !slices.Contains(ids, id) {
			t.Errorf("%s was not imported", id)
		}
	}
	fin, err := cl.Cards.Get(ctx, api.CardRef{AgentID: "finance-agent"})
	if err != nil {
		t.Fatal(err)
	}
	var meta struct{ AgentkitMesh map[string]string }
	_ = json.Unmarshal(fin.Metadata, &meta)
	if fin.Name != "finance-agent" || fin.Description != "Budget management and expense approval" || len(fin.Capabilities) != 3 ||
		fin.Capabilities[1].Name != "cost_center" || len(fin.Resources) != 1 || fin.Resources[0].URI != "https://api.example.com/finance" ||
		fin.Resources[0].Access != "read" || !slices.Equal(fin.Protocols, []string{"http"}) || fin.Endpoint != "http://127.0.0.1:4002/task" ||
		meta.AgentkitMesh["registeredAt"] != "2026-01-02T03:04:05.000Z" {
		t.Errorf("finance-agent imported as %+v", fin)
	}
	if hr, err := cl.Cards.Get(ctx, api.CardRef{AgentID: "HR-Agent-2"}); err != nil || hr.Name != "HR Agent #2" {
		t.Errorf("HR Agent #2: %+v, %v", hr, err)
	}
	// Removing bearer-agent's and header-auth's secrets finds one each; none-auth has none to
	// remove.
	for _, id := range []string{"bearer-agent", "header-auth"} {
		if _, err := cl.Secrets.Remove(ctx, api.CardRef{AgentID: id}); err != nil {
			t.Errorf("%s's secret: %v", id, err)
		}
	}
	var ce *client.Error
	if _, err := cl.Secrets.Remove(ctx, api.CardRef{AgentID: "none-auth"}); !errors.As(err, &ce) || ce.Status != http.StatusNotFound {
		t.Errorf("none-auth has a secret: %v", err)
	}
}

// importMeshWithoutSecrets imports bearer (the bearer agent's row) into a server that keeps no
// secrets: the row is skipped, and the agent is not left without its credential.
func importMeshWithoutSecrets(t *testing.T, alice string, bearer []meshRow) {
	bare := newCLIEnv(t, false)
	bare.ok(t, bare.root, nil, "tenants", "create", "--id", "mesh", "--name", "Mesh", "--admins", "alice")
	one := meshDB(t, meshSchema, bearer)
	r := bare.run(t, alice, "cards", "import-mesh", "--from", one, "-o", "json")
	var sum meshSummary
	_ = json.Unmarshal([]byte(r.stdout), &sum)
	if r.code != 1 || !strings.HasPrefix(sum.reason("bearer-agent"), "its endpoint secret: not_found") {
		t.Errorf("import-mesh of a bearer agent without secrets: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	bareClient, _ := client.New(bare.base, client.WithToken(alice))
	var ce *client.Error
	if _, err := bareClient.Cards.Get(context.Background(), api.CardRef{AgentID: "bearer-agent"}); !errors.As(err, &ce) || ce.Code != "not_found" {
		t.Errorf("bearer-agent was left without its secret: %v", err)
	}
}

// importMeshRefused: a caller who may not write cards has every row refused as forbidden, none
// half-written; a suspended tenant ends the import at its first request, every row accounted
// as not tried; and what is not a registry, or not there, is refused.
func importMeshRefused(t *testing.T, e *cliEnv, alice string, rows []meshRow) {
	bob := webtest.Mint(t, webtest.Tokens(t), "bob", "mesh", false)
	e.ok(t, alice, nil, "roles", "grant", "--subject", "bob", "--role", "reader")
	r := e.run(t, bob, "cards", "import-mesh", "--from", meshDB(t, meshSchema, rows[9:20]), "-o", "json")
	sum := meshSummary{}
	_ = json.Unmarshal([]byte(r.stdout), &sum)
	sum.accounted(t)
	if r.code != 1 || len(sum.Imported) != 0 || len(sum.Skipped) != 11 || !strings.HasPrefix(sum.Skipped[0].Reason, "forbidden: ") {
		t.Errorf("import-mesh by a reader: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	e.ok(t, e.root, nil, "tenants", "create", "--id", "frozen", "--name", "Frozen", "--admins", "alice")
	e.ok(t, e.root, nil, "tenants", "update", "--tenant", "frozen", "--status", "suspended")
	r = e.run(t, webtest.Mint(t, webtest.Tokens(t), "alice", "frozen", false), "cards", "import-mesh", "--from", meshDB(t, meshSchema, rows[9:12]), "-o", "json")
	sum = meshSummary{}
	_ = json.Unmarshal([]byte(r.stdout), &sum)
	sum.accounted(t)
	if r.code != 1 || !strings.Contains(r.stderr, "tenant_suspended") || sum.reason("agent-000") != "not tried: the import stopped" {
		t.Errorf("import-mesh into a suspended tenant: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	notMesh := filepath.Join(t.TempDir(), "other.db")
	if db, err := sql.Open("sqlite3", notMesh); err == nil {
		_, _ = db.Exec(`CREATE TABLE things (id TEXT)`)
		db.Close()
	}
	e.refused(t, alice, 1, "not an agentkit-mesh registry", "cards", "import-mesh", "--from", notMesh)
	e.refused(t, alice, 2, "no such file", "cards", "import-mesh", "--from", filepath.Join(t.TempDir(), "none.db"))
	e.refused(t, alice, 2, "needs --from", "cards", "import-mesh")
}

// TestImportMeshBodyLimit: batches over the server's body limit go in halves, and a row too
// large to send alone is skipped with the reason while the others go in.
func TestImportMeshBodyLimit(t *testing.T) {
	e := newCLIEnv(t, false, "4096")
	e.ok(t, e.root, nil, "tenants", "create", "--id", "mesh", "--name", "Mesh", "--admins", "alice")
	alice := webtest.Mint(t, webtest.Tokens(t), "alice", "mesh", false)
	var rows []meshRow
	for i := range 40 {
		rows = append(rows, meshRow{name: fmt.Sprintf("agent-%02d", i), description: "a small agent", capabilities: `["work"]`, endpoint: "http://127.0.0.1:5000/task"})
	}
	rows = append(rows, meshRow{name: "agent-big", description: strings.Repeat("long ", 1200), capabilities: `["work"]`, endpoint: "http://127.0.0.1:5000/task"})
	r := e.run(t, alice, "cards", "import-mesh", "--from", meshDB(t, meshSchema, rows), "-o", "json")
	var sum meshSummary
	if err := json.Unmarshal([]byte(r.stdout), &sum); err != nil {
		t.Fatalf("import-mesh: %v\n%s%s", err, r.stdout, r.stderr)
	}
	sum.accounted(t)
	if r.code != 1 || len(sum.Imported) != 40 || !strings.HasPrefix(sum.reason("agent-big"), "too_large: ") {
		t.Errorf("import-mesh over a 4 KiB body limit: exit %d, imported %d, skipped %+v\n%s", r.code, len(sum.Imported), sum.Skipped, r.stderr)
	}
}
