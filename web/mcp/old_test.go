package mcp_test

import (
	"net/http"
	"slices"
	"testing"

	"github.com/agentcards/agentcards/web/webtest"
)

const (
	discoverNotice   = "mesh_discover was renamed to cards_search. This name stops working on 2027-03-01; use cards_search."
	registerNotice   = "mesh_register was renamed to cards_register. This name stops working on 2027-03-01; use cards_register."
	delegateNotice   = "mesh_delegate was renamed to delegations_create. This name stops working on 2027-03-01; use delegations_create."
	listNotice       = "registry_list was renamed to cards_search. This name stops working on 2027-03-01; use cards_search."
	unregisterNotice = "mesh_unregister was renamed to cards_remove. This name stops working on 2027-03-01; use cards_remove."
)

// financeRecord is finance-agent as agentkit-mesh's agent record, and financeText as its
// mesh_register answered it (JSON.stringify(agent, null, 2)).
const (
	financeRecord = `{"name": "finance-agent", "description": "Budget management", "capabilities": ["budget", "expense_approval"],
		"resources": [], "endpoint": "https://fin.example.com/task", "protocol": "http", "auth": null,
		"registered_at": "2026-05-04T10:00:00.000Z", "last_seen": "2026-05-04T10:00:00.000Z"}`
	financeText = `{
  "name": "finance-agent",
  "description": "Budget management",
  "capabilities": [
    "budget",
    "expense_approval"
  ],
  "resources": [],
  "endpoint": "https://fin.example.com/task",
  "protocol": "http",
  "auth": null,
  "registered_at": "2026-05-04T10:00:00.000Z",
  "last_seen": "2026-05-04T10:00:00.000Z"
}`
	discoverText = `[
  {
    "agent": {
      "name": "finance-agent",
      "description": "Budget management",
      "capabilities": [
        "budget",
        "expense_approval"
      ],
      "resources": [],
      "endpoint": "https://fin.example.com/task",
      "protocol": "http",
      "auth": null,
      "registered_at": "2026-05-04T10:00:00.000Z",
      "last_seen": "2026-05-04T10:00:00.000Z"
    },
    "score": 1.5,
    "matchedCapabilities": [
      "budget"
    ],
    "matchedResources": []
  },
  {
    "agent": {
      "name": "ledger",
      "description": "",
      "capabilities": [
        "budget"
      ],
      "resources": [],
      "endpoint": "",
      "protocol": "http",
      "auth": null,
      "registered_at": "0001-01-01T00:00:00.000Z",
      "last_seen": "0001-01-01T00:00:00.000Z"
    },
    "score": 0,
    "matchedCapabilities": [],
    "matchedResources": []
  }
]`
	listText = `{
  "total": 2,
  "agents": [
    {
      "agent_id": "finance-agent",
      "name": "finance-agent",
      "description": "Budget management",
      "offerings": [
        "budget",
        "expense_approval"
      ]
    },
    {
      "agent_id": "payroll",
      "name": "Payroll"
    }
  ]
}`
)

// financeCard is the card the scripted door holds for finance-agent.
const financeCard = `{"agentId": "finance-agent", "name": "finance-agent", "description": "Budget management", "protocols": ["http"],
	"capabilities": [{"name": "budget"}, {"name": "expense_approval", "title": "Approve expenses"}], "resources": [], "tags": [],
	"endpoint": "https://fin.example.com/task", "visibility": "tenant", "id": "c-1", "revision": 1,
	"createdAt": "2026-05-04T10:00:00Z", "updatedAt": "2026-05-04T10:00:00Z"}`

// oldDoor answers the requests the old names make.
func oldDoor() *webtest.Script {
	return webtest.NewScript(func(w http.ResponseWriter, r *http.Request, _ int) {
		switch r.Method + " " + r.URL.Path {
		case "POST /v1/tenants/acme/cards", "GET /v1/tenants/acme/cards/finance-agent":
			webtest.Reply(w, http.StatusOK, financeCard)
		case "GET /v1/tenants/acme/cards/quiet":
			webtest.Reply(w, http.StatusOK, `{"agentId": "quiet", "name": "Quiet", "capabilities": []}`)
		case "DELETE /v1/tenants/acme/cards/finance-agent":
			w.WriteHeader(http.StatusNoContent)
		case "POST /v1/tenants/acme/delegations":
			webtest.Reply(w, http.StatusOK, `{"id": "d-1", "caller": "alice", "agentId": "finance-agent", "capability": "expense_approval",
				"mode": "sync", "transport": "http", "depth": 0, "status": "completed", "result": "approved", "latencyMs": 12,
				"createdAt": "2026-05-04T10:00:00Z", "updatedAt": "2026-05-04T10:00:01Z"}`)
		case "GET /v1/tenants/acme/cards":
			switch r.URL.Query().Get("cursor") {
			case "":
				webtest.Reply(w, http.StatusOK, `{"total": 3, "nextCursor": "p2", "items": [
					{"card": `+financeCard+`, "score": 1.5, "matchedCapabilities": ["budget"]},
					{"card": {"agentId": "ledger", "name": "Ledger", "capabilities": [{"name": "budget"}], "liveness": {"state": "offline"}}}]}`)
			default:
				webtest.Reply(w, http.StatusOK, `{"total": 3, "items": [{"card": {"agentId": "payroll", "name": "Payroll", "capabilities": [], "liveness": {"state": "online"}}}]}`)
			}
		default:
			webtest.Reply(w, http.StatusNotFound, `{"error": {"code": "not_found", "message": "no such route"}}`)
		}
	})
}

// TestOldNames: each old name makes our request and answers in the shape its registry
// documented, with the notice of its new name and day first in text and in the answer.
func TestOldNames(t *testing.T) {
	door := oldDoor()
	s, _ := session(t, door, beforeTheDay)
	// answer checks the first text against the seed's (exactly: a client parses it), the notice
	// after it, and the structured answer: the seed's with the notice beside it.
	answer := func(name, args, notice, seedText, want string) {
		t.Helper()
		res := call(t, s, name, args)
		if tx := texts(res); len(tx) != 2 || tx[0] != seedText || tx[1] != notice {
			t.Errorf("%s: texts %q, want %q and the notice", name, tx, seedText)
		}
		webtest.JSONEqual(t, name, structured(t, res), []byte(want))
	}
	lastSent := func() webtest.Exchange {
		got := door.Requests()
		return got[len(got)-1]
	}

	answer("mesh_register", `{"name": "finance-agent", "description": "Budget management", "capabilities": ["budget", "expense_approval"],
		"endpoint": "https://fin.example.com/task"}`, registerNotice, financeText, `{"notice": "`+registerNotice+`", `+financeRecord[1:])
	if r := lastSent(); r.Method != "POST" || r.Target != "/v1/tenants/acme/cards" {
		t.Errorf("mesh_register sent %s %s", r.Method, r.Target)
	} else {
		webtest.JSONEqual(t, "mesh_register's card", []byte(r.Body), []byte(`{"agentId": "finance-agent", "name": "finance-agent",
			"description": "Budget management", "protocols": ["http"], "capabilities": [{"name": "budget"}, {"name": "expense_approval"}],
			"endpoint": "https://fin.example.com/task"}`))
	}

	ledgerRecord := `{"name": "ledger", "description": "", "capabilities": ["budget"], "resources": [], "endpoint": "", "protocol": "http",
		"auth": null, "registered_at": "0001-01-01T00:00:00.000Z", "last_seen": "0001-01-01T00:00:00.000Z"}`
	answer("mesh_discover", `{"query": "budget", "limit": 5}`, discoverNotice, discoverText, `{"notice": "`+discoverNotice+`", "results": [
		{"agent": `+financeRecord+`, "score": 1.5, "matchedCapabilities": ["budget"], "matchedResources": []},
		{"agent": `+ledgerRecord+`, "score": 0, "matchedCapabilities": [], "matchedResources": []}]}`)
	if r := lastSent(); r.Target != "/v1/tenants/acme/cards?limit=5&q=budget" {
		t.Errorf("mesh_discover sent %s %s: one page, no more", r.Method, r.Target)
	}

	// registry_list: the agents not known to be offline (ledger is), every page; a capability
	// asked twice is asked once.
	before := len(door.Requests())
	answer("registry_list", `{"capability": "budget", "offering": "budget", "tags": ["finance"]}`, listNotice, listText, `{"notice": "`+listNotice+`",
		"total": 2, "agents": [
		{"agent_id": "finance-agent", "name": "finance-agent", "description": "Budget management", "offerings": ["budget", "expense_approval"]},
		{"agent_id": "payroll", "name": "Payroll"}]}`)
	var targets []string
	for _, r := range door.Requests()[before:] {
		targets = append(targets, r.Target)
	}
	if want := []string{"/v1/tenants/acme/cards?capability=budget&limit=100&tag=finance",
		"/v1/tenants/acme/cards?capability=budget&cursor=p2&limit=100&tag=finance"}; !slices.Equal(targets, want) {
		t.Errorf("registry_list asked %q, want %q", targets, want)
	}
	call(t, s, "registry_list", `{"capability": "budget", "offering": "payroll"}`)
	if r := lastSent(); r.Target != "/v1/tenants/acme/cards?capability=budget&capability=payroll&cursor=p2&limit=100" {
		t.Errorf("registry_list with an offering of its own asked %s", r.Target)
	}

	answer("mesh_unregister", `{"name": "finance-agent"}`, unregisterNotice, "Unregistered finance-agent",
		`{"removed": true, "name": "finance-agent", "notice": "`+unregisterNotice+`"}`)
	if r := lastSent(); r.Method != "DELETE" || r.Target != "/v1/tenants/acme/cards/finance-agent" {
		t.Errorf("mesh_unregister sent %s %s", r.Method, r.Target)
	}
	// An agent it does not have is a sentence, as agentkit-mesh says it, not an error.
	answer("mesh_unregister", `{"name": "nobody"}`, unregisterNotice, "Agent nobody not found",
		`{"removed": false, "name": "nobody", "notice": "`+unregisterNotice+`"}`)
}

// TestMeshDelegate: mesh_delegate reads the agent's card, picks the capability whose words the
// task shares most, and delegates synchronously, with the context as JSON when it is JSON and as
// a string otherwise; an agent with no capability is refused without a delegation.
func TestMeshDelegate(t *testing.T) {
	door := oldDoor()
	s, _ := session(t, door, beforeTheDay)
	for _, c := range []struct{ context, want string }{
		{`"{\"amount\": 12}"`, `{"amount": 12}`},
		{`"urgent, please"`, `"urgent, please"`},
	} {
		res := call(t, s, "mesh_delegate", `{"targetName": "finance-agent", "task": "Approve the expense report", "context": `+c.context+`}`)
		// As agentkit-mesh answers: {id, ...result}.
		seed := "{\n  \"id\": \"d-1\",\n  \"success\": true,\n  \"status\": \"completed\",\n  \"result\": \"approved\",\n  \"latencyMs\": 12\n}"
		if tx := texts(res); len(tx) != 2 || tx[0] != seed || tx[1] != delegateNotice {
			t.Errorf("mesh_delegate: texts %q", tx)
		}
		webtest.JSONEqual(t, "mesh_delegate", structured(t, res), []byte(`{"notice": "`+delegateNotice+`",
			"id": "d-1", "success": true, "status": "completed", "result": "approved", "latencyMs": 12}`))
		got := door.Requests()
		read, sent := got[len(got)-2], got[len(got)-1]
		if read.Method != "GET" || read.Target != "/v1/tenants/acme/cards/finance-agent" || sent.Method != "POST" || sent.Target != "/v1/tenants/acme/delegations" {
			t.Fatalf("mesh_delegate sent %s %s, then %s %s", read.Method, read.Target, sent.Method, sent.Target)
		}
		webtest.JSONEqual(t, "the delegation asked", []byte(sent.Body), []byte(`{"agentId": "finance-agent", "capability": "expense_approval",
			"task": "Approve the expense report", "context": `+c.want+`, "mode": "sync"}`))
	}
	before := len(door.Requests())
	res := call(t, s, "mesh_delegate", `{"targetName": "quiet", "task": "anything"}`)
	tx := texts(res)
	if !res.IsError || len(tx) != 2 || tx[1] != delegateNotice {
		t.Fatalf("refused: texts %q, want the error and then the notice", tx)
	}
	webtest.JSONEqual(t, "refused", []byte(tx[0]), []byte(`{"error": {"code": "invalid", "message": "agent quiet declares no capability to delegate to: invalid request"}}`))
	if n := len(door.Requests()) - before; n != 1 {
		t.Errorf("%d requests for an agent with no capability, want the card's read alone", n)
	}
}

// TestOldNamesAfterTheDay: from their day on, the old names stay listed and are refused, naming
// the new name, without a request.
func TestOldNamesAfterTheDay(t *testing.T) {
	door := oldDoor()
	s, _ := session(t, door, theDay)
	for name, newName := range map[string]string{"mesh_register": "cards_register", "mesh_discover": "cards_search",
		"mesh_unregister": "cards_remove", "mesh_delegate": "delegations_create", "registry_list": "cards_search"} {
		toolError(t, call(t, s, name, `{}`), `{"error": {"code": "renamed",
			"message": "`+name+` was renamed to `+newName+` and stopped working on 2027-03-01; use `+newName+`."}}`)
	}
	if n := len(door.Requests()); n != 0 {
		t.Errorf("%d requests sent after the day", n)
	}
}
