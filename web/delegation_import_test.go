package web_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentcards/agentcards/cards/agenttest"
	"github.com/agentcards/agentcards/cards/delegation"
	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/tenants/audit"
)

// meshRecord is a record of agentkit-mesh's delegations table as delegations.import takes it.
func meshRecord(id, status string, at time.Time) map[string]any {
	return map[string]any{"id": id, "caller": "api", "agentId": "agt1", "task": "Sum the Q3 budget", "status": status,
		"result": "total 42", "latencyMs": 1200, "createdAt": at.Format("2006-01-02T15:04:05.000Z"),
		"updatedAt": at.Add(2 * time.Second).Format("2006-01-02T15:04:05.000Z")}
}

// importBody is the body of delegations.import with the records.
func importBody(records ...map[string]any) map[string]any {
	return map[string]any{"source": "agentkit-mesh", "records": records}
}

// imported is the answer of delegations.import.
type importAnswer struct {
	Imported []string `json:"imported"`
	Existing []string `json:"existing"`
}

// TestDelegationImport: a tenant admin imports agentkit-mesh records, which keep their ids,
// times, results and latency, are marked imported, carry a caller no subject can be, and reach
// no agent; a record still running there is a timeout here. Admins and those who may read every
// delegation see them, where a member sees none of them. Run again, the import writes nothing
// twice and says which it held already; each record written has its audit entry.
func TestDelegationImport(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) {
		e := newEnvWith(t, storagetest.Open(t, dialect), envOptions{allowLoopback: true, delegation: delegation.Config{RecordTaskBytes: 4096}})
		a := agenttest.New(t, agenttest.Answer(http.StatusOK, `{"result": "ok"}`))
		alice, olga := e.delegationSetup("acme", "agt1", a.Endpoint())
		at := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
		done, running := meshRecord("f47ac10b-58cc-4372-a567-0e02b2c3d479", "completed", at), meshRecord("9b2e4c1a-7d3f-4e8a-b5c6-1a2b3c4d5e6f", "running", at.Add(time.Hour))
		delete(running, "result")
		delete(running, "updatedAt")
		failed := meshRecord("0c9d8e7f-6a5b-4c3d-9e2f-1a0b9c8d7e6f", "failed", at.Add(2*time.Hour))
		failed["caller"], failed["error"] = "HR Agent #2", "Gateway returned 502"
		delete(failed, "result")
		r := e.do("POST", "/v1/tenants/acme/delegations:import", alice, importBody(done, running, failed))
		expect(t, r, http.StatusOK)
		var out importAnswer
		r.json(t, &out)
		if len(out.Imported) != 3 || out.Existing == nil || len(out.Existing) != 0 {
			t.Fatalf("import answered %+v", out)
		}
		if a.Calls() != 0 {
			t.Errorf("an import reached the agent %d times", a.Calls())
		}

		read := func(id string) delegation.Delegation {
			t.Helper()
			r := e.do("GET", "/v1/tenants/acme/delegations/"+id, alice, nil)
			expect(t, r, http.StatusOK)
			if !strings.Contains(string(r.body), `"imported":"agentkit-mesh"`) || strings.Contains(string(r.body), `"deadline"`) {
				t.Errorf("record %s as JSON: %s", id, r.body)
			}
			return decodeDelegation(t, r)
		}
		d := read(done["id"].(string))
		if d.Caller != "agentcards:import/api" || d.AgentID != "agt1" || d.Capability != "" || d.Mode != delegation.ModeSync ||
			d.Transport != delegation.TransportHTTP || d.Status != delegation.StatusCompleted || string(d.Result) != `"total 42"` ||
			d.LatencyMS != 1200 || !d.CreatedAt.Equal(at) || !d.UpdatedAt.Equal(at.Add(2*time.Second)) || d.Task != "Sum the Q3 budget" {
			t.Errorf("the completed record: %+v (%s)", d, d.Result)
		}
		d = read(running["id"].(string))
		if d.Status != delegation.StatusTimeout || d.Error != "unfinished when imported: it was running in agentkit-mesh" ||
			d.Result != nil || !d.UpdatedAt.Equal(at.Add(time.Hour)) {
			t.Errorf("the running record: %+v", d)
		}
		d = read(failed["id"].(string))
		if d.Caller != "agentcards:import/HR Agent #2" || d.Status != delegation.StatusFailed || d.Error != "Gateway returned 502" || d.Result != nil {
			t.Errorf("the failed record: %+v", d)
		}
		// Newest first, by when they were made there.
		if page := e.listDelegations("acme", alice); len(page.Items) != 3 || page.Items[0].ID != failed["id"] || page.Items[2].ID != done["id"] {
			t.Errorf("alice lists %+v", page.Items)
		}

		// A member sees none of them; delegations:read on delegations/* sees them all.
		expect(t, e.do("POST", "/v1/tenants/acme/roles", alice, map[string]string{"subject": "rita", "role": "reader"}), http.StatusCreated)
		rita := e.token("rita", "acme", false)
		expect(t, e.do("GET", "/v1/tenants/acme/delegations/"+done["id"].(string), rita, nil), http.StatusNotFound, "not_found")
		if page := e.listDelegations("acme", rita); len(page.Items) != 0 {
			t.Errorf("a reader lists %+v", page.Items)
		}
		expect(t, e.do("POST", "/v1/tenants/acme/policies", alice, policyRule("rita", "delegations/*", "delegations:read", "allow")), http.StatusCreated)
		if page := e.listDelegations("acme", rita); len(page.Items) != 3 {
			t.Errorf("a reader with delegations:read lists %d records", len(page.Items))
		}

		// Again, with one more: only that one is written, and the others stay as they were.
		done["status"] = "failed"
		more := meshRecord("1e2d3c4b-5a69-4788-9a0b-c1d2e3f4a5b6", "completed", at.Add(-time.Hour))
		r = e.do("POST", "/v1/tenants/acme/delegations:import", alice, importBody(done, running, failed, more))
		expect(t, r, http.StatusOK)
		out = importAnswer{}
		r.json(t, &out)
		if !slices.Equal(out.Imported, []string{more["id"].(string)}) || len(out.Existing) != 3 {
			t.Fatalf("import again answered %+v", out)
		}
		if read(done["id"].(string)).Status != delegation.StatusCompleted {
			t.Error("a record held was written again")
		}

		var trail struct{ Items []audit.Entry }
		r = e.do("GET", "/v1/tenants/acme/audit?action=delegations.import", alice, nil)
		expect(t, r, http.StatusOK)
		r.json(t, &trail)
		var objects []string
		for _, en := range trail.Items {
			objects = append(objects, en.Object+" "+en.Outcome)
			if en.Principal != "alice" || en.RequestID == "" {
				t.Errorf("audit entry %+v", en)
			}
		}
		slices.Sort(objects)
		want := []string{"delegations/" + running["id"].(string) + " timeout", "delegations/" + failed["id"].(string) + " failed",
			"delegations/" + more["id"].(string) + " completed", "delegations/" + done["id"].(string) + " completed"}
		slices.Sort(want)
		if !slices.Equal(objects, want) {
			t.Errorf("audit entries %v, want %v", objects, want)
		}

		// An agent's delegation token imports nothing, whatever its subject may do.
		expect(t, e.do("POST", "/v1/tenants/acme/policies", alice, policyRule("agent:agt1", "policies", "policies:manage", "allow")), http.StatusCreated)
		expect(t, e.do("POST", "/v1/tenants/acme/delegations", olga, delegate("agt1", "sync")), http.StatusOK)
		stolen := strings.TrimPrefix(a.Last().Header.Get("Authorization"), "Bearer ")
		late := meshRecord("2f3e4d5c-6b7a-4899-8a0b-1c2d3e4f5a6b", "completed", at)
		expect(t, e.do("POST", "/v1/tenants/acme/delegations:import", stolen, importBody(late)), http.StatusUnauthorized, "unauthorized")
		expect(t, e.do("GET", "/v1/tenants/acme/delegations/"+late["id"].(string), alice, nil), http.StatusNotFound, "not_found")
	})
}

// TestDelegationImportRefused: a record the service cannot keep refuses the whole import with
// the one error body, naming the record by index, and nothing of the import is written; the
// body's shape and size are refused as any body's; a member who does not manage the tenant's
// policies is forbidden, and the refusal is in the audit trail.
func TestDelegationImportRefused(t *testing.T) {
	e := newEnv(t, storagetest.Open(t, "sqlite"), 64<<10)
	alice, _ := e.delegationSetup("acme", "agt1", "http://127.0.0.1:9/task")
	at := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	good := func(i int) map[string]any {
		return meshRecord(fmt.Sprintf("%08x-58cc-4372-a567-0e02b2c3d479", i), "completed", at.Add(time.Duration(i)*time.Minute))
	}
	with := func(key string, value any) map[string]any {
		r := good(9)
		if value == nil {
			delete(r, key)
		} else {
			r[key] = value
		}
		return r
	}
	deep := any("x")
	for range 80 {
		deep = []any{deep}
	}
	for name, c := range map[string]struct {
		body   any
		status int
		code   string
		says   string
	}{
		"an id not in our form":        {importBody(good(1), with("id", "F47AC10B-58CC-4372-A567-0E02B2C3D479")), 400, "invalid", "records[1]: id"},
		"an id that is no UUID":        {importBody(with("id", "42")), 400, "invalid", "records[0]: id"},
		"an id twice":                  {importBody(good(1), good(2), good(1)), 400, "invalid", "records[2]: id"},
		"a status agentkit-mesh lacks": {importBody(good(1), with("status", "done")), 400, "invalid", "records[1]: status"},
		"an agentId no card may have":  {importBody(with("agentId", "HR Agent #2")), 400, "invalid", "records[0]: agentId"},
		"a mode not taken":             {importBody(with("mode", "later")), 400, "invalid", "records[0]: mode"},
		"no createdAt":                 {importBody(good(1), with("createdAt", nil)), 400, "invalid", "records[1]: createdAt is required"},
		"a time to come":               {importBody(with("createdAt", "2999-01-01T00:00:00.000Z")), 400, "invalid", "records[0]: createdAt"},
		"updated before created":       {importBody(with("updatedAt", "2020-01-01T00:00:00.000Z")), 400, "invalid", "records[0]: updatedAt is before createdAt"},
		"a negative latency":           {importBody(with("latencyMs", -1)), 400, "invalid", "records[0]: latencyMs"},
		"a caller with a control":      {importBody(with("caller", "api\u0000")), 400, "invalid", "records[0]: caller"},
		"a result nested too deep":     {importBody(with("result", deep)), 400, "invalid", "records[0]: result"},
		"another registry":             {map[string]any{"source": "agentmesh", "records": []any{good(1)}}, 400, "invalid", "source"},
		"no records":                   {importBody(), 400, "invalid", "1 to 1000 records"},
		"an unknown member":            {importBody(with("colour", "red")), 400, "invalid", "colour: unknown member"},
		"not JSON":                     {`{"source": "agentkit-mesh", "records": [`, 400, "malformed_json", ""},
		"over the body limit":          {importBody(with("task", strings.Repeat("t", 70<<10))), 413, "too_large", ""},
	} {
		t.Run(name, func(t *testing.T) {
			r := e.do("POST", "/v1/tenants/acme/delegations:import", alice, c.body)
			expect(t, r, c.status, c.code)
			if !strings.Contains(string(r.body), c.says) {
				t.Errorf("%s: %s, want a message naming %q", name, r.body, c.says)
			}
		})
	}
	many := make([]map[string]any, delegation.MaxImport+1)
	for i := range many {
		many[i] = good(i)
		delete(many[i], "task")
		delete(many[i], "result")
	}
	big := newEnv(t, storagetest.Open(t, "sqlite"), 1<<20)
	bigAlice, _ := big.delegationSetup("acme", "agt1", "http://127.0.0.1:9/task")
	expect(t, big.do("POST", "/v1/tenants/acme/delegations:import", bigAlice, importBody(many...)), http.StatusBadRequest, "invalid")
	if page := big.listDelegations("acme", bigAlice); len(page.Items) != 0 {
		t.Errorf("a refused import of %d records wrote %d", len(many), len(page.Items))
	}
	if page := e.listDelegations("acme", alice); len(page.Items) != 0 {
		t.Errorf("refused imports wrote %d records", len(page.Items))
	}

	// Not an admin: forbidden, nothing written, the refusal recorded.
	expect(t, e.do("POST", "/v1/tenants/acme/roles", alice, map[string]string{"subject": "rita", "role": "editor"}), http.StatusCreated)
	rita := e.token("rita", "acme", false)
	expect(t, e.do("POST", "/v1/tenants/acme/delegations:import", rita, importBody(good(1))), http.StatusForbidden, "forbidden")
	expect(t, e.do("GET", "/v1/tenants/acme/delegations/"+good(1)["id"].(string), alice, nil), http.StatusNotFound, "not_found")
	var trail struct{ Items []audit.Entry }
	r := e.do("GET", "/v1/tenants/acme/audit?action=delegations.import", alice, nil)
	expect(t, r, http.StatusOK)
	r.json(t, &trail)
	if len(trail.Items) != 1 || trail.Items[0].Principal != "rita" || trail.Items[0].Outcome != audit.Denied {
		t.Errorf("the trail of imports: %+v, want rita's refusal alone", trail.Items)
	}
	// Another tenant's admin: as if the tenant were not there.
	e.mkTenant("other", "olaf")
	expect(t, e.do("POST", "/v1/tenants/acme/delegations:import", e.token("olaf", "other", false), importBody(good(1))), http.StatusNotFound, "not_found")
}
