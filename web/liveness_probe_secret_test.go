package web_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentcards/agentcards/cards/a2a/a2atest"
	"github.com/agentcards/agentcards/cards/agenttest"
	"github.com/agentcards/agentcards/cards/liveness"
	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/web/webtest"
)

// keyedAgent answers 200 to a request whose header name is value, else 401: an agent that asks
// for its key on every route, its card and health included.
func keyedAgent(name, value string) agenttest.Reply {
	return func(w http.ResponseWriter, r *http.Request, got agenttest.Request) {
		status := http.StatusUnauthorized
		if r.Header.Get(name) == value {
			status = http.StatusOK
		}
		probed(status)(w, r, got)
	}
}

// TestProbeEndpointSecret: a probe of a card's agent carries the card's endpoint secret, set
// through the API, as a delegation does, so an agent that asks for it everywhere stays online: a
// bearer secret in Authorization, a header secret in its header (Authorization left unset). A
// card imported from another origin is probed at its source without it. A card pointed at another
// endpoint after its secret was set is probed there without it, and fails. A secret that will not
// open is logged, the probe made without it, and the card's liveness says nothing of it. On
// every database.
func TestProbeEndpointSecret(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, d string) {
		clk := &clock{t: time.Now().UTC()}
		var logged webtest.LogBuffer
		e := newEnvWith(t, storagetest.Open(t, d), envOptions{allowLoopback: true, livenessNow: clk.now, livenessTTL: 10 * time.Minute,
			log:   slog.New(slog.NewTextHandler(&logged, nil)),
			probe: liveness.ProbeConfig{Interval: time.Minute, Failures: 1, Timeout: 2 * time.Second, Spread: -1}})
		e.allowLoopback()
		e.mkTenant("acme", "alice")
		alice := e.token("alice", "acme", false)
		bearer := agenttest.New(t, keyedAgent("Authorization", "Bearer b3arer"))
		header := agenttest.New(t, keyedAgent("X-Api-Key", "k3y"))
		imported, source := agenttest.New(t, keyedAgent("Authorization", "Bearer 1mp")), agenttest.New(t, nil)
		moved, movedTo := agenttest.New(t, keyedAgent("Authorization", "Bearer m0ved")), agenttest.New(t, keyedAgent("Authorization", "Bearer m0ved"))
		broken := agenttest.New(t, keyedAgent("Authorization", "Bearer br0ken"))
		for id, a := range map[string]*agenttest.Agent{"bearer": bearer, "header": header, "moved": moved, "broken": broken} {
			expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, sampleCardAt(id, a.URL+"/rpc")), http.StatusCreated)
		}
		// The imported card's source is on another origin than the endpoint its card declares.
		card := a2atest.SampleV1(t)
		card["supportedInterfaces"] = []any{map[string]any{"url": imported.URL + "/a2a/v1", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}}
		raw, err := json.Marshal(card)
		if err != nil {
			t.Fatal(err)
		}
		source.ServeJSON(agenttest.CardPath, http.StatusOK, raw)
		expect(t, e.do("POST", "/v1/tenants/acme/cards/import", alice, map[string]any{"agentId": "imported", "url": source.URL + agenttest.CardPath}), http.StatusCreated)
		for id, secret := range map[string]map[string]string{
			"bearer":   {"secret": "b3arer"},
			"header":   {"secret": "k3y", "header": "X-Api-Key"},
			"imported": {"secret": "1mp"},
			"moved":    {"secret": "m0ved"},
			"broken":   {"secret": "br0ken"},
		} {
			expect(t, e.do("PUT", "/v1/tenants/acme/cards/"+id+"/secret", alice, secret), http.StatusNoContent)
		}
		// The stored secret of broken no longer opens (as after a change of key).
		if _, err := e.db.SQL().Exec("UPDATE endpoint_secrets SET sealed = 'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' WHERE agent_id = 'broken'"); err != nil {
			t.Fatal(err)
		}
		round := func(wantFailed int) {
			t.Helper()
			st, err := e.prober.Round(context.Background())
			if err != nil || st != (liveness.RoundStats{Claimed: 5, Probed: 5, Failed: wantFailed}) {
				t.Fatalf("round %+v, %v; want 5 probed, %d failed", st, err, wantFailed)
			}
		}
		probe := func(id string, ok bool, wantErr string) {
			t.Helper()
			if l := e.cardLiveness("acme", id); l.Probe == nil || l.Probe.OK != ok || l.Probe.Error != wantErr {
				t.Errorf("%s: %+v (probe %+v), want ok %v, error %q", id, l, l.Probe, ok, wantErr)
			}
		}

		round(1)
		probe("bearer", true, "")
		probe("header", true, "")
		if h := header.Last().Header; h.Get("X-Api-Key") != "k3y" || h.Get("Authorization") != "" {
			t.Errorf("header secret: X-Api-Key %q, Authorization %q", h.Get("X-Api-Key"), h.Get("Authorization"))
		}
		probe("imported", true, "")
		if n := source.Count(func(r agenttest.Request) bool { return r.Header.Get("Authorization") != "" }); n != 0 || source.Calls() != 2 || imported.Calls() != 0 {
			t.Errorf("the source was sent Authorization %d times in %d calls (want 2: the import and the probe); the endpoint got %d probes",
				n, source.Calls(), imported.Calls())
		}
		probe("moved", true, "")
		probe("broken", false, "answered 401")
		if broken.Calls() != 1 || broken.Last().Header.Get("Authorization") != "" {
			t.Errorf("a secret that does not open: %d probes, Authorization %q", broken.Calls(), broken.Last().Header.Get("Authorization"))
		}
		if log := logged.String(); !strings.Contains(log, "endpoint secret not read for a probe") || !strings.Contains(log, "agentId=broken") ||
			strings.Contains(log, "br0ken") {
			t.Errorf("the secret that does not open was not logged, or logged with its value: %s", log)
		}

		// The card moves to another server after its secret was set: the probe goes there, and
		// without the secret, bound to the old endpoint.
		expect(t, e.do("PUT", "/v1/tenants/acme/cards/moved", alice, sampleCardAt("moved", movedTo.URL+"/rpc")), http.StatusOK)
		clk.add(time.Minute)
		round(2)
		if movedTo.Calls() != 1 || movedTo.Last().Header.Get("Authorization") != "" || moved.Calls() != 1 {
			t.Errorf("after the move: %d probes of the new server, Authorization %q; %d of the old",
				movedTo.Calls(), movedTo.Last().Header.Get("Authorization"), moved.Calls())
		}
		probe("moved", false, "answered 401")
		probe("bearer", true, "")
	})
}
