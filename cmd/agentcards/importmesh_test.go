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
	"time"

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

// meshDelegationsSchema is the delegations table as agentkit-mesh creates it.
const meshDelegationsSchema = `CREATE TABLE delegations (id TEXT PRIMARY KEY, source_agent TEXT NOT NULL, target_agent TEXT NOT NULL,
	task TEXT NOT NULL, status TEXT NOT NULL DEFAULT 'pending', result TEXT, error TEXT, latency_ms INTEGER,
	created_at TEXT NOT NULL, updated_at TEXT NOT NULL)`

// meshDelegationRow is a row of the delegations table; result, errorText and latency are NULL
// when nil.
type meshDelegationRow struct {
	id, source, target, task, status string
	result, errorText                any
	latency                          any
	createdAt, updatedAt             string
}

// withDelegations adds agentkit-mesh's delegations table, with rows, to the registry at path.
func withDelegations(t *testing.T, path string, rows []meshDelegationRow) string {
	t.Helper()
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(meshDelegationsSchema); err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		_, err := db.Exec(`INSERT INTO delegations (id, source_agent, target_agent, task, status, result, error, latency_ms, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, r.id, r.source, r.target, r.task, r.status, r.result, r.errorText, r.latency, r.createdAt, r.updatedAt)
		if err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// meshHistoryRows are the delegations of TestImportMeshDelegations: four of the kinds
// agentkit-mesh records, 240 more completed ones, and three it cannot be moved (an id that is no
// UUID and a status agentkit-mesh never wrote, refused by the service in batches of good rows;
// a time that does not read, refused before anything is sent).
func meshHistoryRows() []meshDelegationRow {
	rows := []meshDelegationRow{
		{id: "f47ac10b-58cc-4372-a567-0e02b2c3d479", source: "api", target: "finance-agent", task: "Sum the Q3 budget", status: "completed",
			result: "total 42", latency: 1200, createdAt: "2026-03-01T10:00:00.000Z", updatedAt: "2026-03-01T10:00:01.500Z"},
		{id: "0c9d8e7f-6a5b-4c3d-9e2f-1a0b9c8d7e6f", source: "HR Agent #2", target: "finance-agent", task: "Approve expense 7", status: "failed",
			errorText: "Gateway returned 502: bad gateway", latency: 80, createdAt: "2026-03-01T11:00:00.000Z", updatedAt: "2026-03-01T11:00:00.080Z"},
		{id: "9b2e4c1a-7d3f-4e8a-b5c6-1a2b3c4d5e6f", source: "api", target: "HR Agent #2", task: "Fill form 12", status: "running",
			createdAt: "2026-03-01T12:00:00.000Z", updatedAt: ""},
		{id: "1e2d3c4b-5a69-4788-9a0b-c1d2e3f4a5b6", source: "finance-agent", target: "HR Agent #2", task: "Fill form 13", status: "accepted",
			createdAt: "2026-03-01T13:00:00.000Z", updatedAt: "2026-03-01T13:00:00.020Z"},
		{id: "not-a-uuid", source: "api", target: "finance-agent", task: "x", status: "completed", createdAt: "2026-03-02T00:00:00.000Z", updatedAt: ""},
		{id: "2f3e4d5c-6b7a-4899-8a0b-1c2d3e4f5a6b", source: "api", target: "finance-agent", task: "x", status: "done",
			createdAt: "2026-03-02T00:00:01.000Z", updatedAt: ""},
		{id: "3a4b5c6d-7e8f-4a0b-9c1d-2e3f4a5b6c7d", source: "api", target: "finance-agent", task: "x", status: "completed",
			createdAt: "yesterday", updatedAt: ""},
	}
	for i := range 240 {
		at := time.Date(2026, 3, 5, 0, 0, i, 0, time.UTC).Format("2006-01-02T15:04:05.000Z")
		rows = append(rows, meshDelegationRow{id: fmt.Sprintf("%08x-0000-4000-8000-%012x", uint32(i)*2654435761, i), source: "api",
			target: fmt.Sprintf("agent-%03d", i%7), task: "work", status: "completed", result: "ok", latency: 5, createdAt: at, updatedAt: at})
	}
	return rows
}

// meshHistorySum is the delegations part of import-mesh's JSON summary.
type meshHistorySum struct {
	Found              bool
	Total              int
	Imported, Existing []string
	Skipped            []struct{ ID, Reason string }
}

func (s meshHistorySum) reason(id string) string {
	for _, k := range s.Skipped {
		if k.ID == id {
			return k.Reason
		}
	}
	return ""
}

// TestImportMeshDelegations moves a registry's agents and its delegation history into a tenant
// through a real server: records in batches, keeping their ids, times, results and errors, a
// delegation still running there a timeout here, each bad row skipped with its reason while the
// rows of its batch go in; run again, every record is already there. A caller who does not
// manage the tenant's policies moves none, with one refusal; a registry without the table has
// nothing to move.
func TestImportMeshDelegations(t *testing.T) {
	e := newCLIEnv(t, false)
	e.ok(t, e.root, nil, "tenants", "create", "--id", "mesh", "--name", "Mesh", "--admins", "alice")
	alice := webtest.Mint(t, webtest.Tokens(t), "alice", "mesh", false)
	cl, err := client.New(e.base, client.WithToken(alice))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	agents := []meshRow{
		{name: "finance-agent", description: "Budgets", capabilities: `["budget"]`, endpoint: "http://127.0.0.1:4002/task"},
		{name: "HR Agent #2", description: "Forms", capabilities: `["forms"]`, endpoint: "http://127.0.0.1:4003/task"},
	}
	history := meshHistoryRows()
	path := withDelegations(t, meshDB(t, meshSchema, agents), history)

	r := e.run(t, alice, "cards", "import-mesh", "--from", path, "--delegations", "--batch", "100", "-o", "json")
	var sum struct {
		meshSummary
		Delegations *meshHistorySum
	}
	if err := json.Unmarshal([]byte(r.stdout), &sum); err != nil || sum.Delegations == nil {
		t.Fatalf("import-mesh --delegations: %v\n%s%s", err, r.stdout, r.stderr)
	}
	d := sum.Delegations
	if r.code != 1 || !strings.Contains(r.stderr, "3 of 247 delegation records were skipped") || len(sum.Imported) != 2 ||
		!d.Found || d.Total != 247 || len(d.Imported) != 244 || len(d.Existing) != 0 || len(d.Skipped) != 3 {
		t.Fatalf("import-mesh --delegations: exit %d, %d agents, delegations %+v\n%s", r.code, len(sum.Imported), d, r.stderr)
	}
	for id, want := range map[string]string{
		"not-a-uuid":                           "invalid: id",
		"2f3e4d5c-6b7a-4899-8a0b-1c2d3e4f5a6b": `invalid: status "done"`,
		"3a4b5c6d-7e8f-4a0b-9c1d-2e3f4a5b6c7d": `created_at "yesterday"`,
	} {
		if got := d.reason(id); !strings.HasPrefix(got, want) && !strings.Contains(got, want) {
			t.Errorf("%s: skipped for %q, want a reason naming %q", id, got, want)
		}
	}
	checkMeshHistory(t, ctx, cl)

	// Again, as a table: every record is there already, and the bad rows are skipped again.
	r = e.run(t, alice, "cards", "import-mesh", "--from", path, "--delegations", "-o", "table")
	if r.code != 1 || !regexp.MustCompile(`(?m)^imported 0 of 247 delegation records; 244 already there; skipped 3$`).MatchString(r.stdout) ||
		!regexp.MustCompile(`(?m)^not-a-uuid\s+invalid: id "not-a-uuid"`).MatchString(r.stdout) {
		t.Errorf("import-mesh --delegations again: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	var imports int
	for entry, err := range cl.Audit.ListAll(ctx, api.AuditList{Action: "delegations.import", Limit: 500}) {
		if err != nil {
			t.Fatal(err)
		}
		if entry.Outcome != "denied" {
			imports++
		}
	}
	if imports != 244 {
		t.Errorf("%d audit entries of imported records, want 244", imports)
	}

	// bob, a reader, moves nothing: one refusal, and every record skipped with it.
	e.ok(t, alice, nil, "roles", "grant", "--subject", "bob", "--role", "reader")
	bob := webtest.Mint(t, webtest.Tokens(t), "bob", "mesh", false)
	fresh := history[:4]
	for i := range fresh {
		fresh[i].id = strings.Replace(fresh[i].id, "-4", "-5", 1)
	}
	r = e.run(t, bob, "cards", "import-mesh", "--from", withDelegations(t, meshDB(t, meshSchema, nil), fresh), "--delegations", "-o", "json")
	sum.Delegations = nil
	_ = json.Unmarshal([]byte(r.stdout), &sum)
	if r.code != 1 || sum.Delegations == nil || len(sum.Delegations.Skipped) != 4 || !strings.HasPrefix(sum.Delegations.Skipped[3].Reason, "forbidden: ") {
		t.Errorf("import-mesh --delegations by a reader: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	denied := 0
	for entry, err := range cl.Audit.ListAll(ctx, api.AuditList{Action: "delegations.import", Principal: "bob"}) {
		if err != nil {
			t.Fatal(err)
		}
		denied += max(entry.Attempts, 1)
	}
	if denied != 1 {
		t.Errorf("bob's import was refused %d times, want once", denied)
	}

	// A registry from before agentkit-mesh kept delegations: nothing to move, and it says so.
	r = e.run(t, alice, "cards", "import-mesh", "--from", meshDB(t, meshSchema, []meshRow{{name: "new-agent", description: "x",
		capabilities: `["a"]`, endpoint: "http://127.0.0.1:4010/task"}}), "--delegations", "-o", "table")
	if r.code != 0 || !strings.Contains(r.stdout, "the registry has no delegations table: no delegation records to move") {
		t.Errorf("import-mesh --delegations of a registry without them: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// checkMeshHistory checks the records of meshHistoryRows as the first import wrote them.
func checkMeshHistory(t *testing.T, ctx context.Context, cl *client.Client) {
	t.Helper()
	get := func(id string) api.Delegation {
		t.Helper()
		d, err := cl.Delegations.Get(ctx, api.DelegationRef{ID: id})
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		return d
	}
	at := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	if d := get("f47ac10b-58cc-4372-a567-0e02b2c3d479"); d.Imported != "agentkit-mesh" || d.Caller != "agentcards:import/api" ||
		d.AgentID != "finance-agent" || d.Capability != "" || d.Status != "completed" || string(d.Result) != `"total 42"` ||
		d.LatencyMS != 1200 || !d.CreatedAt.Equal(at) || !d.UpdatedAt.Equal(at.Add(1500*time.Millisecond)) || d.Mode != "sync" {
		t.Errorf("the completed record: %+v (%s)", d, d.Result)
	}
	if d := get("0c9d8e7f-6a5b-4c3d-9e2f-1a0b9c8d7e6f"); d.Caller != "agentcards:import/HR Agent #2" || d.Status != "failed" ||
		d.Error != "Gateway returned 502: bad gateway" || d.Result != nil {
		t.Errorf("the failed record: %+v", d)
	}
	if d := get("9b2e4c1a-7d3f-4e8a-b5c6-1a2b3c4d5e6f"); d.AgentID != "HR-Agent-2" || d.Status != "timeout" ||
		d.Error != "unfinished when imported: it was running in agentkit-mesh" || !d.UpdatedAt.Equal(d.CreatedAt) {
		t.Errorf("the running record: %+v", d)
	}
	if d := get("1e2d3c4b-5a69-4788-9a0b-c1d2e3f4a5b6"); d.Mode != "async" || d.Status != "timeout" ||
		d.Error != "unfinished when imported: it was accepted in agentkit-mesh" {
		t.Errorf("the accepted record: %+v", d)
	}
	page, err := cl.Delegations.List(ctx, api.DelegationsList{Limit: 1})
	if err != nil || len(page.Items) != 1 || page.Items[0].CreatedAt.Format(time.RFC3339) != "2026-03-05T00:03:59Z" {
		t.Errorf("the newest record: %+v, %v", page.Items, err)
	}
}
