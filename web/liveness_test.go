package web_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/agenttest"
	"github.com/agentcards/agentcards/storage"
	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/tenants"
	"github.com/agentcards/agentcards/web/webtest"
)

// clock is a settable clock for the liveness tracker.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// cardLiveness reads a card's liveness from GET.
func (e *env) cardLiveness(tenant, agentID string) cards.Liveness {
	e.t.Helper()
	r := e.getCard(tenant, agentID)
	expect(e.t, r, http.StatusOK)
	var c cards.Card
	r.json(e.t, &c)
	if c.Liveness == nil {
		e.t.Fatalf("card %s has no liveness: %s", agentID, r.body)
	}
	return *c.Liveness
}

func (e *env) beat(tenant, agentID, tok string) response {
	e.t.Helper()
	return e.do("POST", "/v1/tenants/"+tenant+"/cards/"+agentID+"/heartbeat", tok, nil)
}

// TestHeartbeatOnlineOffline: a card nobody heard of is unknown; a heartbeat makes it online on
// GET, in search hits and for the online filter, without a new revision or change-feed entry;
// the TTL passing makes it offline. The index and the scan answer alike, on every database.
func TestHeartbeatOnlineOffline(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, d string) {
		for _, mode := range []string{"memory", "none"} {
			t.Run(mode, func(t *testing.T) {
				clk := &clock{t: time.Now().UTC()}
				db := storagetest.Open(t, d)
				e := newEnvWith(t, db, envOptions{noIndex: mode == "none", livenessNow: clk.now, livenessTTL: time.Minute})
				e.mkTenant("acme", "alice")
				alice := e.token("alice", "acme", false)
				for _, id := range []string{"a1", "a2", "a3"} {
					expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, sampleCard(id)), http.StatusCreated)
				}
				if l := e.cardLiveness("acme", "a1"); l.State != cards.Unknown || l.LastSeenAt != nil {
					t.Fatalf("a new card: %+v", l)
				}
				if got := e.search(alice, "acme", "online=true"); got.Total != 0 {
					t.Fatalf("online=true before any heartbeat: %v", got.ids())
				}
				feed := storage.NewCardStore(db)
				seq0, err := feed.LastSeq(context.Background(), "acme")
				if err != nil {
					t.Fatal(err)
				}
				r := e.beat("acme", "a1", alice)
				expect(t, r, http.StatusOK)
				var l cards.Liveness
				r.json(t, &l)
				if l.State != cards.Online || l.LastSeenAt == nil || !l.LastSeenAt.Equal(clk.now().Truncate(time.Microsecond)) {
					t.Fatalf("heartbeat answered %s", r.body)
				}
				expect(t, e.beat("acme", "a2", alice), http.StatusOK)
				if seq, _ := feed.LastSeq(context.Background(), "acme"); seq != seq0 {
					t.Errorf("heartbeats wrote change-feed entries: %d -> %d", seq0, seq)
				}
				got := e.getCard("acme", "a1")
				if got.header.Get("ETag") != `"1"` {
					t.Errorf("a heartbeat moved the revision: ETag %s", got.header.Get("ETag"))
				}
				if l := e.cardLiveness("acme", "a1"); l.State != cards.Online {
					t.Errorf("GET after a heartbeat: %+v", l)
				}
				if ids := e.search(alice, "acme", "online=true").ids(); len(ids) != 2 || ids[0] != "a1" || ids[1] != "a2" {
					t.Errorf("online=true: %v", ids)
				}
				if ids := e.search(alice, "acme", "online=false").ids(); len(ids) != 1 || ids[0] != "a3" {
					t.Errorf("online=false: %v", ids)
				}
				if a := e.search(alice, "acme", "online=true&q=review&limit=1"); a.Total != 2 || len(a.Items) != 1 || a.NextCursor == "" {
					t.Errorf("online=true&q=review&limit=1: total %d, %v, cursor %q", a.Total, a.ids(), a.NextCursor)
				}
				// Each hit carries its card's liveness.
				for _, h := range e.search(alice, "acme", "").Items {
					want := cards.Unknown
					if h.Card.AgentID != "a3" {
						want = cards.Online
					}
					if h.Card.Liveness == nil || h.Card.Liveness.State != want {
						t.Errorf("hit %s: liveness %+v, want %s", h.Card.AgentID, h.Card.Liveness, want)
					}
				}
				// a2 beats again later; then a1's TTL runs out, a2's not yet.
				clk.add(30 * time.Second)
				expect(t, e.beat("acme", "a2", alice), http.StatusOK)
				clk.add(31 * time.Second)
				if l := e.cardLiveness("acme", "a1"); l.State != cards.Offline || l.LastSeenAt == nil {
					t.Errorf("a1 after its TTL: %+v", l)
				}
				if ids := e.search(alice, "acme", "online=true").ids(); len(ids) != 1 || ids[0] != "a2" {
					t.Errorf("online=true after a1's TTL: %v", ids)
				}
				if a := e.search(alice, "acme", "online=false"); a.Total != 2 {
					t.Errorf("online=false after a1's TTL: %v", a.ids())
				}
				// A card deleted and created again has to earn its liveness afresh.
				expect(t, e.do("DELETE", "/v1/tenants/acme/cards/a2", alice, nil), http.StatusNoContent)
				expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, sampleCard("a2")), http.StatusCreated)
				if l := e.cardLiveness("acme", "a2"); l.State != cards.Unknown {
					t.Errorf("a2 created again: %+v", l)
				}
				// Writes keep liveness: an updated card is still the same card.
				expect(t, e.beat("acme", "a3", alice), http.StatusOK)
				expect(t, e.do("PATCH", "/v1/tenants/acme/cards/a3", alice, map[string]any{"description": "changed"}), http.StatusOK)
				if ids := e.search(alice, "acme", "online=true").ids(); len(ids) != 1 || ids[0] != "a3" {
					t.Errorf("online=true after a3 beat and was patched: %v", ids)
				}
				expect(t, e.do("GET", "/v1/tenants/acme/cards?online=yes", alice, nil), http.StatusBadRequest, "invalid")
			})
		}
	})
}

// TestHeartbeatAccess: who may report a card alive. Editors and admins may (cards:heartbeat),
// readers and orchestrators may not, an agent may report its own card with the delegation token
// of a task it was sent but not another card unless a policy gives it that; no token, a card
// that does not exist, another tenant and a suspended tenant are refused as elsewhere.
func TestHeartbeatAccess(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		a := agenttest.New(t, agenttest.Answer(http.StatusOK, `{"result": "ok"}`))
		alice, olga := e.delegationSetup("acme", "agt1", a.Endpoint())
		expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, sampleCard("other")), http.StatusCreated)
		expect(t, e.do("POST", "/v1/tenants/acme/roles", alice, map[string]string{"subject": "ed", "role": "editor"}), http.StatusCreated)
		expect(t, e.do("POST", "/v1/tenants/acme/roles", alice, map[string]string{"subject": "rita", "role": "reader"}), http.StatusCreated)
		expect(t, e.beat("acme", "agt1", alice), http.StatusOK)
		expect(t, e.beat("acme", "agt1", e.token("ed", "acme", false)), http.StatusOK)
		expect(t, e.beat("acme", "agt1", e.token("rita", "acme", false)), http.StatusForbidden, "forbidden")
		expect(t, e.beat("acme", "agt1", olga), http.StatusForbidden, "forbidden")
		expect(t, e.beat("acme", "agt1", ""), http.StatusUnauthorized, "unauthorized")
		expect(t, e.beat("acme", "nope", alice), http.StatusNotFound, "not_found")

		expect(t, e.do("POST", "/v1/tenants/acme/delegations", olga, delegate("agt1", "sync")), http.StatusOK)
		tok := a.Last().Header.Get("X-Delegation-Token")
		if tok == "" {
			t.Fatal("the agent got no delegation token")
		}
		expect(t, e.beat("acme", "agt1", tok), http.StatusOK)
		expect(t, e.beat("acme", "other", tok), http.StatusForbidden, "forbidden")
		expect(t, e.do("POST", "/v1/tenants/acme/policies", alice, map[string]string{
			"subject": "agent:agt1", "object": "cards/other", "action": "cards:heartbeat", "effect": "allow"}), http.StatusCreated)
		expect(t, e.beat("acme", "other", tok), http.StatusOK)
		// The token opens nothing else it did not open before.
		expect(t, e.do("GET", "/v1/tenants/acme/cards/agt1", tok, nil), http.StatusUnauthorized, "unauthorized")

		e.mkTenant("beta", "bob")
		expect(t, e.beat("acme", "agt1", e.token("bob", "beta", false)), http.StatusNotFound, "not_found")
		expect(t, e.do("PATCH", "/v1/tenants/acme", e.admin(), map[string]string{"status": string(tenants.StatusSuspended)}), http.StatusOK)
		expect(t, e.beat("acme", "agt1", alice), http.StatusForbidden, "tenant_suspended")
	})
}

// TestReplicasAgreeOnLiveness: two servers on one database, each with its own tracker. A
// heartbeat taken by A is seen by B after one round of B's follower (what it does every
// search.pollInterval), in GET and in the online filter, and the TTL then makes it offline on
// both alike; in "poll" B's follower runs by itself.
func TestReplicasAgreeOnLiveness(t *testing.T) {
	for _, d := range storagetest.Dialects() {
		for _, mode := range []string{"round", "poll"} {
			t.Run(d+"/"+mode, func(t *testing.T) {
				clk := &clock{t: time.Now().UTC()}
				db := storagetest.Open(t, d)
				o := envOptions{livenessNow: clk.now, livenessTTL: time.Minute}
				a, b := newEnvWith(t, db, o), newEnvWith(t, db, o)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				if mode == "poll" {
					go b.liveness.Follow(ctx, 100*time.Millisecond, nil)
				}
				a.mkTenant("acme", "alice")
				alice := a.token("alice", "acme", false)
				expect(t, a.do("POST", "/v1/tenants/acme/cards", alice, sampleCard("agt1")), http.StatusCreated)
				// B loads the tenant's liveness (and its index) before the heartbeat.
				if got := b.search(alice, "acme", "online=true"); got.Total != 0 {
					t.Fatalf("before: %v", got.ids())
				}
				expect(t, a.beat("acme", "agt1", alice), http.StatusOK)
				seen := func() bool {
					return b.search(alice, "acme", "online=true").Total == 1 && b.cardLiveness("acme", "agt1").State == cards.Online
				}
				if mode == "round" {
					if err := b.liveness.Round(ctx); err != nil {
						t.Fatal(err)
					}
					if !seen() {
						t.Fatal("replica B did not see the heartbeat after one round")
					}
				} else {
					webtest.Eventually(t, 10*time.Second, "the heartbeat seen on replica B", seen)
				}
				clk.add(time.Minute)
				for name, r := range map[string]*env{"A": a, "B": b} {
					if got := r.search(alice, "acme", "online=false"); got.Total != 1 || r.cardLiveness("acme", "agt1").State != cards.Offline {
						t.Errorf("replica %s after the TTL: %v", name, got.ids())
					}
				}
			})
		}
	}
}

// TestDelegationRecordsLiveness: a delegation to an agent never heard from, online, or gone
// offline is sent all the same, and its record (as answered and as stored) says which it was.
func TestDelegationRecordsLiveness(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, d string) {
		clk := &clock{t: time.Now().UTC()}
		e := newEnvWith(t, storagetest.Open(t, d), envOptions{allowLoopback: true, livenessNow: clk.now, livenessTTL: time.Minute})
		a := agenttest.New(t, agenttest.Answer(http.StatusOK, `{"result": "ok"}`))
		alice, olga := e.delegationSetup("acme", "agt1", a.Endpoint())
		// A caller who may not delegate learns nothing of the card, its record included.
		nobody := e.token("nobody", "acme", false)
		expect(t, e.do("POST", "/v1/tenants/acme/delegations", nobody, delegate("agt1", "sync")), http.StatusForbidden, "forbidden")
		if page := e.listDelegations("acme", nobody); len(page.Items) != 1 || page.Items[0].AgentLiveness != "" {
			t.Errorf("the refused caller's record: %+v", page.Items)
		}
		for _, want := range []cards.LivenessState{cards.Unknown, cards.Online, cards.Offline} {
			switch want {
			case cards.Online:
				expect(t, e.beat("acme", "agt1", alice), http.StatusOK)
			case cards.Offline:
				clk.add(time.Minute)
			}
			r := e.do("POST", "/v1/tenants/acme/delegations", olga, delegate("agt1", "sync"))
			expect(t, r, http.StatusOK)
			got := decodeDelegation(t, r)
			if got.Status != "completed" || got.AgentLiveness != want {
				t.Errorf("delegation while %s: status %s, agentLiveness %q", want, got.Status, got.AgentLiveness)
			}
			if stored := e.storedDelegation("acme", got.ID); stored.AgentLiveness != want {
				t.Errorf("stored record while %s: agentLiveness %q", want, stored.AgentLiveness)
			}
		}
	})
}

// TestTenantRefusesOfflineDelegation: with the tenant setting, a delegation to an offline agent
// is refused with 409 agent_offline and recorded as rejected; one never heard from, or online,
// is sent. Without the setting (and after it is turned off) the offline agent is delegated to.
func TestTenantRefusesOfflineDelegation(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, d string) {
		clk := &clock{t: time.Now().UTC()}
		e := newEnvWith(t, storagetest.Open(t, d), envOptions{allowLoopback: true, livenessNow: clk.now, livenessTTL: time.Minute,
			tenantCacheTTL: -1})
		a := agenttest.New(t, agenttest.Answer(http.StatusOK, `{"result": "ok"}`))
		alice, olga := e.delegationSetup("acme", "agt1", a.Endpoint())
		setting := func(on bool) {
			if ten := e.patchTenant("acme", "refuseOfflineDelegation", on); ten.RefuseOfflineDelegation != on {
				t.Fatalf("tenant after PATCH: %+v", ten)
			}
		}
		setting(true)
		expect(t, e.do("POST", "/v1/tenants/acme/delegations", olga, delegate("agt1", "sync")), http.StatusOK) // unknown: sent
		expect(t, e.beat("acme", "agt1", alice), http.StatusOK)
		expect(t, e.do("POST", "/v1/tenants/acme/delegations", olga, delegate("agt1", "sync")), http.StatusOK) // online
		clk.add(time.Minute)
		calls := a.Calls()
		r := e.do("POST", "/v1/tenants/acme/delegations", olga, delegate("agt1", "sync"))
		expect(t, r, http.StatusConflict, "agent_offline")
		if a.Calls() != calls {
			t.Error("the refused delegation reached the agent")
		}
		if got := e.newestRejected("acme", olga); got == "" {
			t.Error("the refusal was not recorded as rejected")
		}
		if r := e.do("GET", "/v1/tenants/acme", e.admin(), nil); !strings.Contains(string(r.body), `"refuseOfflineDelegation":true`) {
			t.Errorf("GET tenant: %s", r.body)
		}
		setting(false)
		expect(t, e.do("POST", "/v1/tenants/acme/delegations", olga, delegate("agt1", "sync")), http.StatusOK)
		expect(t, e.do("PATCH", "/v1/tenants/acme", e.admin(), map[string]any{"refuseOfflineDelegation": "yes"}), http.StatusBadRequest, "invalid")
	})
}
