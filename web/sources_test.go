package web_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/agentcards/agentcards/authz/token"
	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/a2a/a2atest"
	"github.com/agentcards/agentcards/cards/follow"
	"github.com/agentcards/agentcards/cmd/agentcards/app"
	"github.com/agentcards/agentcards/storage"
	"github.com/agentcards/agentcards/storage/storagetest"
)

// cardsOf answers the tenant's cards by agent id, of every status, as the search lists them,
// without what the server records of each (ids, revisions, times, mirror, liveness, the import
// record): their content, to compare a mirror with its source.
func cardsOf(t *testing.T, e *env, tenant, tok string) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	cursor := ""
	for {
		path := "/v1/tenants/" + tenant + "/cards?limit=100&status=active&status=deprecated&status=disabled"
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		r := e.do(http.MethodGet, path, tok, nil)
		expect(t, r, http.StatusOK)
		var page struct {
			Items []struct {
				Card map[string]any `json:"card"`
			} `json:"items"`
			NextCursor string `json:"nextCursor"`
		}
		r.json(t, &page)
		for _, it := range page.Items {
			c := it.Card
			for _, k := range []string{"id", "revision", "createdAt", "updatedAt", "mirror", "liveness"} {
				delete(c, k)
			}
			if a2a, ok := c["a2a"].(map[string]any); ok {
				delete(a2a, "import") // what an import found: the mirror's says it was not checked here
			}
			out[c["agentId"].(string)] = c
		}
		if page.NextCursor == "" {
			return out
		}
		cursor = page.NextCursor
	}
}

// source reads one source of the tenant.
func source(t *testing.T, e *env, tenant, id, tok string) (follow.Source, int) {
	t.Helper()
	r := e.do(http.MethodGet, "/v1/tenants/"+tenant+"/sources/"+id, tok, nil)
	var s follow.Source
	if r.status == http.StatusOK {
		r.json(t, &s)
	}
	return s, r.status
}

// mirrors reports whether the follower's cards are the source's but for those named (the
// follower's own), which it holds as it had them.
func mirrors(t *testing.T, up *env, upTok string, down *env, downTok string, own map[string]map[string]any) (bool, string) {
	want := cardsOf(t, up, "upstream", upTok)
	maps.Copy(want, own)
	got := cardsOf(t, down, "mirror", downTok)
	if !reflect.DeepEqual(got, want) {
		return false, fmt.Sprintf("mirror %v\nsource %v", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
	}
	return true, ""
}

// TestFollowAgentcards: one server's tenant follows another's (kind agentcards) and mirrors its
// cards, read-only, each marked with the source: after the first sync and after each write,
// removal and status change at the source; through a rotation of the source's signing key, an
// outage of the source (failing, its cards kept, then active again), and a restart of the
// follower (it resumes from its stored cursor); a card of the follower's own is never
// overwritten (a conflict). Removing the source removes its cards and nothing else.
func TestFollowAgentcards(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, d string) {
		upDB, downDB := storagetest.Open(t, d), storagetest.Open(t, d)
		oldKey := newServiceKey(t)
		upKeys, err := token.NewServiceKeys(oldKey)
		if err != nil {
			t.Fatal(err)
		}
		up := newEnvWith(t, upDB, envOptions{allowLoopback: true, follow: true, keys: upKeys})
		up.mkTenant("upstream", "alice")
		upTok := up.token("alice", "upstream", false)
		for _, id := range []string{"alpha", "beta", "gamma", "clash"} {
			expect(t, up.do(http.MethodPost, "/v1/tenants/upstream/cards", upTok, sampleCard(id)), http.StatusCreated)
		}
		expect(t, up.do(http.MethodPatch, "/v1/tenants/upstream/cards/gamma", upTok, map[string]any{"status": "disabled", "visibility": "private"}), http.StatusOK)
		// A card imported with a signature the source verified: its mirror does not say verified,
		// as the signature was not checked here.
		pub, priv, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		expect(t, up.do(http.MethodPost, "/v1/tenants/upstream/cards/import", upTok, map[string]any{"agentId": "signed",
			"card": a2atest.SignEd25519(t, priv, "k1", "", a2atest.SampleV1(t)),
			"keys": jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: pub, KeyID: "k1", Algorithm: "EdDSA"}}}}), http.StatusCreated)

		startDown := func() *env {
			return newEnvWith(t, downDB, envOptions{allowLoopback: true, follow: true})
		}
		down := startDown()
		down.mkTenant("mirror", "bob")
		downTok := down.token("bob", "mirror", false)
		ownClash := sampleCard("clash")
		ownClash["description"] = "the follower's own"
		expect(t, down.do(http.MethodPost, "/v1/tenants/mirror/cards", downTok, ownClash), http.StatusCreated)
		own := cardsOf(t, down, "mirror", downTok)
		// The follower's trust policy vouches for the signed card's host with its publisher's key.
		expect(t, down.do(http.MethodPut, "/v1/tenants/mirror/trust/georoute-agent.example.com", downTok, map[string]any{
			"keys": jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: pub, KeyID: "k1", Algorithm: "EdDSA"}}}}), http.StatusOK)

		r := down.do(http.MethodPost, "/v1/tenants/mirror/sources", downTok, map[string]any{
			"kind": "agentcards", "url": up.srv.URL + "/v1/tenants/upstream", "token": upTok})
		expect(t, r, http.StatusCreated)
		var src follow.Source
		r.json(t, &src)
		if src.State != follow.StateSyncing || !src.Token || r.header.Get("Location") != "/v1/tenants/mirror/sources/"+src.ID {
			t.Fatalf("created %+v, Location %q", src, r.header.Get("Location"))
		}
		if strings.Contains(string(r.body), upTok) {
			t.Fatal("the answer holds the token")
		}
		converged := func(what string) {
			t.Helper()
			var diff string
			deadline := time.Now().Add(20 * time.Second)
			for {
				ok, d := mirrors(t, up, upTok, down, downTok, own)
				if ok {
					return
				}
				diff = d
				if time.Now().After(deadline) {
					t.Fatalf("not within 20s: %s\n%s", what, diff)
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
		converged("the first sync")
		// The cards are written before the progress that counts them.
		waitSource(t, down, "mirror", src.ID, downTok, "the first sync recorded", func(s follow.Source) bool {
			return s.State == follow.StateActive && s.Cards == 4 && slices.Equal(s.Conflicts, []string{"clash"}) && s.LastSyncAt != nil
		})
		var signed struct {
			A2A struct {
				Import struct {
					Signature struct{ Status, Reason string }
					Trust     struct{ Status, Issuer string }
					Signed    json.RawMessage
				}
			}
		}
		down.getCard("mirror", "signed").json(t, &signed)
		if s := signed.A2A.Import.Signature; s.Status != "unverified" || !strings.Contains(s.Reason, "the source found its signature verified") ||
			len(signed.A2A.Import.Signed) == 0 || signed.A2A.Import.Trust.Status != "trusted" || signed.A2A.Import.Trust.Issuer != "georoute-agent.example.com" {
			t.Fatalf("the mirror of a signed card: %+v", signed.A2A.Import)
		}
		var alpha map[string]any
		down.getCard("mirror", "alpha").json(t, &alpha)
		m, _ := alpha["mirror"].(map[string]any)
		if m["source"] != src.ID || m["kind"] != "agentcards" || m["url"] != up.srv.URL+"/v1/tenants/upstream" || m["revision"] != float64(1) {
			t.Fatalf("alpha's mirror: %v", alpha["mirror"])
		}

		// Mirrored cards are read-only; the follower's own is its own.
		for _, w := range []struct {
			method string
			body   any
		}{{http.MethodPut, sampleCard("alpha")}, {http.MethodPatch, map[string]any{"status": "deprecated"}}, {http.MethodDelete, nil}} {
			r := down.do(w.method, "/v1/tenants/mirror/cards/alpha", downTok, w.body)
			expect(t, r, http.StatusConflict, "conflict")
		}
		expect(t, down.do(http.MethodPatch, "/v1/tenants/mirror/cards/clash", downTok, map[string]any{"tags": []string{"mine"}}), http.StatusOK)
		own = map[string]map[string]any{"clash": cardsOf(t, down, "mirror", downTok)["clash"]}

		// Writes at the source reach the mirror.
		expect(t, up.do(http.MethodPatch, "/v1/tenants/upstream/cards/alpha", upTok, map[string]any{"description": "changed at the source"}), http.StatusOK)
		expect(t, up.do(http.MethodDelete, "/v1/tenants/upstream/cards/beta", upTok, nil), http.StatusNoContent)
		expect(t, up.do(http.MethodPost, "/v1/tenants/upstream/cards", upTok, sampleCard("delta")), http.StatusCreated)
		converged("writes at the source")

		// The source's key rotates: it restarts with a new current key, its old one still published.
		addr := up.srv.Listener.Addr().String()
		up.stop()
		rotated, err := token.NewServiceKeys(oldKey, newServiceKey(t))
		if err != nil {
			t.Fatal(err)
		}
		up = newEnvWith(t, upDB, envOptions{allowLoopback: true, follow: true, keys: rotated, bind: addr})
		expect(t, up.do(http.MethodPatch, "/v1/tenants/upstream/cards/delta", upTok, map[string]any{"description": "signed with the new key"}), http.StatusOK)
		converged("a write signed with a rotated key")

		// The source goes down: the source fails, its cards stay.
		up.stop()
		waitSource(t, down, "mirror", src.ID, downTok, "the source failing", func(s follow.Source) bool {
			return s.State == follow.StateFailing && s.LastError != "" && s.Failures > 0
		})
		if n := len(cardsOf(t, down, "mirror", downTok)); n != 5 {
			t.Fatalf("%d cards while the source is down, want its 4 and the follower's own", n)
		}
		// It comes back: the source is active again without a write there, then follows writes.
		up = newEnvWith(t, upDB, envOptions{allowLoopback: true, follow: true, keys: rotated, bind: addr})
		waitSource(t, down, "mirror", src.ID, downTok, "the source active again", func(s follow.Source) bool {
			return s.State == follow.StateActive && s.LastError == ""
		})
		expect(t, up.do(http.MethodPost, "/v1/tenants/upstream/cards", upTok, sampleCard("epsilon")), http.StatusCreated)
		converged("writes after the source came back")

		// The follower restarts; what the source does meanwhile reaches it after.
		down.stop()
		expect(t, up.do(http.MethodDelete, "/v1/tenants/upstream/cards/epsilon", upTok, nil), http.StatusNoContent)
		expect(t, up.do(http.MethodPost, "/v1/tenants/upstream/cards", upTok, sampleCard("zeta")), http.StatusCreated)
		down = startDown()
		converged("after the follower restarted")

		// Removing the source removes its cards, and the follower's own stays.
		r = down.do(http.MethodDelete, "/v1/tenants/mirror/sources/"+src.ID, downTok, nil)
		expect(t, r, http.StatusAccepted)
		waitFor(t, 20*time.Second, "the source and its cards gone", func() bool {
			_, status := source(t, down, "mirror", src.ID, downTok)
			return status == http.StatusNotFound && len(cardsOf(t, down, "mirror", downTok)) == 1
		})
		if got := cardsOf(t, down, "mirror", downTok); !reflect.DeepEqual(got, own) {
			t.Fatalf("after the removal: %v, want the follower's own %v", got, own)
		}
		var trail struct {
			Items []struct {
				Action, Object, Principal string
			} `json:"items"`
		}
		r = down.do(http.MethodGet, "/v1/tenants/mirror/audit?object=sources/"+src.ID, downTok, nil)
		expect(t, r, http.StatusOK)
		r.json(t, &trail)
		var actions []string
		for _, it := range trail.Items {
			actions = append(actions, it.Action+" by "+it.Principal)
		}
		if !slices.Contains(actions, "sources.create by bob") || !slices.Contains(actions, "sources.remove by bob") {
			t.Fatalf("the trail of the source: %v", actions)
		}
	})
}

// newServiceKey is a fresh ES256 service key.
func newServiceKey(t *testing.T) token.ServiceKey {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	k, err := token.NewServiceKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// shiftedClock is a clock the test moves forward, to make a polled source due at once.
type shiftedClock struct{ by atomic.Int64 }

func (c *shiftedClock) now() time.Time             { return time.Now().Add(time.Duration(c.by.Load())) }
func (c *shiftedClock) advance(d time.Duration)    { c.by.Add(int64(d)) }
func (c *shiftedClock) options() app.FollowOptions { return app.FollowOptions{Now: c.now} }

// waitSource waits until the source is as cond wants, failing with its last state.
func waitSource(t *testing.T, e *env, tenant, id, tok, what string, cond func(follow.Source) bool) follow.Source {
	t.Helper()
	var last follow.Source
	deadline := time.Now().Add(20 * time.Second)
	for {
		s, status := source(t, e, tenant, id, tok)
		if status == http.StatusOK && cond(s) {
			return s
		}
		last = s
		if time.Now().After(deadline) {
			t.Fatalf("not within 20s: %s; the source is %+v", what, last)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestFollowAICatalog: a server follows the AI Catalog another serves of its tenant's public
// cards, read a page of two at a time (nested catalogs): each public card is mirrored (as the
// agent id its identifier names, from its A2A card), the others are not; a card of the
// follower's own is a conflict; the next read mirrors a change and a removal; while the catalog
// cannot be read the source fails and keeps its cards; removing it removes them.
func TestFollowAICatalog(t *testing.T) {
	up := newEnvWith(t, storagetest.Open(t, "sqlite"), envOptions{allowLoopback: true})
	up.mkTenant("upstream", "alice")
	upTok := up.token("alice", "upstream", false)
	for _, id := range []string{"c1", "c2", "c3", "c4", "c5"} {
		card := sampleCard(id)
		card["visibility"] = "public"
		card["name"] = "Agent " + id
		if id == "c5" {
			card["visibility"] = "tenant"
		}
		expect(t, up.do(http.MethodPost, "/v1/tenants/upstream/cards", upTok, card), http.StatusCreated)
	}
	clock := &shiftedClock{}
	down := newEnvWith(t, storagetest.Open(t, "sqlite"), envOptions{allowLoopback: true, fetchLoopback: true, follow: true, sources: clock.options()})
	down.mkTenant("mirror", "bob")
	downTok := down.token("bob", "mirror", false)
	expect(t, down.do(http.MethodPost, "/v1/tenants/mirror/cards", downTok, sampleCard("c4")), http.StatusCreated)

	catalogURL := up.srv.URL + "/a2a/upstream/.well-known/ai-catalog.json?limit=2"
	r := down.do(http.MethodPost, "/v1/tenants/mirror/sources", downTok, map[string]any{"kind": "ai-catalog", "url": catalogURL, "intervalSeconds": 60})
	expect(t, r, http.StatusCreated)
	var src follow.Source
	r.json(t, &src)
	got := waitSource(t, down, "mirror", src.ID, downTok, "the first read", func(s follow.Source) bool { return s.State == follow.StateActive })
	if got.Cards != 3 || !slices.Equal(got.Conflicts, []string{"c4"}) || got.NextSyncAt.Sub(*got.LastSyncAt) != time.Minute {
		t.Fatalf("after the first read: %+v", got)
	}
	mirrored := cardsOf(t, down, "mirror", downTok)
	if ids := slices.Sorted(maps.Keys(mirrored)); !slices.Equal(ids, []string{"c1", "c2", "c3", "c4"}) {
		t.Fatalf("cards %v, want c1-c3 mirrored and the follower's own c4", ids)
	}
	var c2 map[string]any
	down.getCard("mirror", "c2").json(t, &c2)
	m, _ := c2["mirror"].(map[string]any)
	if c2["name"] != "Agent c2" || m["kind"] != "ai-catalog" || m["url"] != catalogURL ||
		m["cardUrl"] != up.srv.URL+"/a2a/upstream/c2/.well-known/agent-card.json" {
		t.Fatalf("c2 as mirrored: name %v, mirror %v", c2["name"], c2["mirror"])
	}
	imp, _ := c2["a2a"].(map[string]any)["import"].(map[string]any)
	if sig, _ := imp["signature"].(map[string]any); imp["url"] != m["cardUrl"] || sig["status"] == nil {
		t.Fatalf("c2's import record: %v", imp)
	}
	expect(t, down.do(http.MethodPatch, "/v1/tenants/mirror/cards/c2", downTok, map[string]any{"name": "mine now"}), http.StatusConflict, "conflict")

	// The next read, a minute on: a change and a removal at the source reach the mirror.
	expect(t, up.do(http.MethodPatch, "/v1/tenants/upstream/cards/c1", upTok, map[string]any{"description": "changed at the source"}), http.StatusOK)
	expect(t, up.do(http.MethodDelete, "/v1/tenants/upstream/cards/c3", upTok, nil), http.StatusNoContent)
	clock.advance(time.Minute)
	down.app.Follower.Wake()
	waitFor(t, 20*time.Second, "the change and the removal mirrored", func() bool {
		got := cardsOf(t, down, "mirror", downTok)
		_, has3 := got["c3"]
		return !has3 && got["c1"]["description"] == "changed at the source"
	})
	revs := map[string]any{}
	for _, id := range []string{"c1", "c2"} {
		var c map[string]any
		down.getCard("mirror", id).json(t, &c)
		revs[id] = c["revision"]
	}

	// The catalog cannot be read: the source fails, and its cards stay.
	up.stop()
	clock.advance(time.Minute)
	down.app.Follower.Wake()
	got = waitSource(t, down, "mirror", src.ID, downTok, "failing", func(s follow.Source) bool { return s.State == follow.StateFailing })
	if got.Failures != 1 || got.LastError == "" || got.Cards != 2 {
		t.Fatalf("while the catalog is down: %+v", got)
	}
	for _, id := range []string{"c1", "c2"} {
		var c map[string]any
		down.getCard("mirror", id).json(t, &c)
		if c["revision"] != revs[id] {
			t.Fatalf("%s changed while its source was down: revision %v, was %v", id, c["revision"], revs[id])
		}
	}

	expect(t, down.do(http.MethodDelete, "/v1/tenants/mirror/sources/"+src.ID, downTok, nil), http.StatusAccepted)
	waitFor(t, 20*time.Second, "the source's cards removed", func() bool {
		got := cardsOf(t, down, "mirror", downTok)
		_, status := source(t, down, "mirror", src.ID, downTok)
		return len(got) == 1 && got["c4"] != nil && status == http.StatusNotFound
	})
}

// TestFollowA2AURLs: a source of A2A card URLs mirrors each card under an agent id made of its
// URL; a URL that cannot be read fails the source (naming it) and leaves the others mirrored;
// once it reads, the source is active again. An unchanged card is not written again.
func TestFollowA2AURLs(t *testing.T) {
	var broken atomic.Bool
	broken.Store(true)
	cards := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/"), "/.well-known/agent-card.json")
		if name == "flaky" && broken.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"name": "Agent %s", "description": "The %s agent.", "version": "1.0.0",
			"supportedInterfaces": [{"url": "https://%s.example.com/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
			"capabilities": {}, "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
			"skills": [{"id": "work", "name": "Work", "description": "Does the work.", "tags": ["work"]}]}`, name, name, name)
	}))
	t.Cleanup(cards.Close)
	clock := &shiftedClock{}
	down := newEnvWith(t, storagetest.Open(t, "sqlite"), envOptions{allowLoopback: true, fetchLoopback: true, follow: true, sources: clock.options()})
	down.mkTenant("mirror", "bob")
	downTok := down.token("bob", "mirror", false)
	urls := []string{cards.URL + "/steady/.well-known/agent-card.json", cards.URL + "/flaky/.well-known/agent-card.json"}
	r := down.do(http.MethodPost, "/v1/tenants/mirror/sources", downTok, map[string]any{"kind": "a2a-urls", "urls": urls})
	expect(t, r, http.StatusCreated)
	var src follow.Source
	r.json(t, &src)
	got := waitSource(t, down, "mirror", src.ID, downTok, "failing on the flaky URL", func(s follow.Source) bool { return s.State == follow.StateFailing })
	steady := follow.AgentIDFor("", urls[0])
	if got.Cards != 1 || !strings.Contains(got.LastError, "flaky") || steady != "127.0.0.1-steady" {
		t.Fatalf("with one URL down: %+v (steady as %q)", got, steady)
	}
	var c map[string]any
	down.getCard("mirror", steady).json(t, &c)
	rev := c["revision"]
	if c["name"] != "Agent steady" || c["mirror"].(map[string]any)["url"] != urls[0] {
		t.Fatalf("the steady card: %v", c)
	}
	broken.Store(false)
	clock.advance(time.Hour)
	down.app.Follower.Wake()
	got = waitSource(t, down, "mirror", src.ID, downTok, "active once every URL reads", func(s follow.Source) bool { return s.State == follow.StateActive })
	if got.Cards != 2 || got.Failures != 0 || got.LastError != "" {
		t.Fatalf("once every URL reads: %+v", got)
	}
	down.getCard("mirror", steady).json(t, &c)
	if c["revision"] != rev {
		t.Fatalf("the unchanged card was written again: revision %v, was %v", c["revision"], rev)
	}
	if len(cardsOf(t, down, "mirror", downTok)) != 2 {
		t.Fatal("not both cards mirrored")
	}
}

// TestFollowMixedLoad: while writers create, change and remove cards at the source at once, and
// the follower restarts midway, the mirror ends equal to the source: no card lost, none left
// over, none duplicated (a card per agent id, at the source's last content).
func TestFollowMixedLoad(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, d string) {
		up := newEnvWith(t, storagetest.Open(t, d), envOptions{allowLoopback: true, follow: true})
		up.mkTenant("upstream", "alice")
		upTok := up.token("alice", "upstream", false)
		downDB := storagetest.Open(t, d)
		down := newEnvWith(t, downDB, envOptions{allowLoopback: true, follow: true})
		down.mkTenant("mirror", "bob")
		downTok := down.token("bob", "mirror", false)
		expect(t, down.do(http.MethodPost, "/v1/tenants/mirror/sources", downTok, map[string]any{
			"kind": "agentcards", "url": up.srv.URL + "/v1/tenants/upstream", "token": upTok}), http.StatusCreated)

		const writers, ops, ids = 4, 40, 12
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				for i := range ops {
					id := fmt.Sprintf("k%d", (w*7+i*5)%ids)
					var r response
					switch i % 3 {
					case 0:
						r = up.do(http.MethodPost, "/v1/tenants/upstream/cards", upTok, sampleCard(id))
					case 1:
						r = up.do(http.MethodPatch, "/v1/tenants/upstream/cards/"+id, upTok, map[string]any{"description": fmt.Sprintf("writer %d op %d", w, i)})
					default:
						r = up.do(http.MethodDelete, "/v1/tenants/upstream/cards/"+id, upTok, nil)
					}
					if r.status >= 500 {
						t.Errorf("%s: %d %s", id, r.status, r.body)
					}
				}
			})
			if w == writers/2 {
				down.stop()
				down = newEnvWith(t, downDB, envOptions{allowLoopback: true, follow: true})
			}
		}
		wg.Wait()
		deadline := time.Now().Add(30 * time.Second)
		for {
			ok, diff := mirrors(t, up, upTok, down, downTok, nil)
			if ok {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the mirror is not the source after the load: %s", diff)
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}

// TestMirrorOfNoSource: a mirrored card whose source the tenant no longer follows (one written
// while its source was being removed) is the tenant's own: it may be changed and removed, and
// the change drops its mirror.
func TestMirrorOfNoSource(t *testing.T) {
	e := newEnv(t, storagetest.Open(t, "sqlite"), 1<<20)
	e.mkTenant("acme", "alice")
	tok := e.token("alice", "acme", false)
	c, err := cards.Decode(mustJSON(t, sampleCard("left")))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	c.ID, c.CreatedAt, c.UpdatedAt = "left-1", now, now
	c.Mirror = &cards.Mirror{Source: "src_00000000000000aa", Kind: "a2a-urls", URL: "https://agents.example.com/card.json", SyncedAt: now}
	if _, err := storage.NewCardStore(e.db).Create(context.Background(), "acme", c); err != nil {
		t.Fatal(err)
	}
	e.index.Drop("acme")
	r := e.do(http.MethodPatch, "/v1/tenants/acme/cards/left", tok, map[string]any{"description": "mine now"})
	expect(t, r, http.StatusOK)
	var got map[string]any
	r.json(t, &got)
	if got["mirror"] != nil || got["description"] != "mine now" {
		t.Fatalf("patched: %v", got)
	}
	expect(t, e.do(http.MethodDelete, "/v1/tenants/acme/cards/left", tok, nil), http.StatusNoContent)
}

// TestFollowSkipsCardsRefusedHere: a card of an agentcards source that this server refuses (its
// metadata nests deeper than it takes) is skipped and named with the conflicts; the source stays
// active, and the changes after it are applied.
func TestFollowSkipsCardsRefusedHere(t *testing.T) {
	up := newEnvWith(t, storagetest.Open(t, "sqlite"), envOptions{allowLoopback: true, follow: true})
	up.mkTenant("upstream", "alice")
	upTok := up.token("alice", "upstream", false)
	deep := sampleCard("deep")
	deep["metadata"] = map[string]any{"a": map[string]any{"b": map[string]any{"c": map[string]any{"d": 1}}}}
	expect(t, up.do(http.MethodPost, "/v1/tenants/upstream/cards", upTok, deep), http.StatusCreated)
	expect(t, up.do(http.MethodPost, "/v1/tenants/upstream/cards", upTok, sampleCard("plain")), http.StatusCreated)
	down := newEnvWith(t, storagetest.Open(t, "sqlite"), envOptions{allowLoopback: true, follow: true, maxJSONDepth: 3})
	down.mkTenant("mirror", "bob")
	downTok := down.token("bob", "mirror", false)
	r := down.do(http.MethodPost, "/v1/tenants/mirror/sources", downTok, map[string]any{
		"kind": "agentcards", "url": up.srv.URL + "/v1/tenants/upstream", "token": upTok})
	expect(t, r, http.StatusCreated)
	var src follow.Source
	r.json(t, &src)
	got := waitSource(t, down, "mirror", src.ID, downTok, "the first sync", func(s follow.Source) bool { return s.State == follow.StateActive })
	if got.Cards != 1 || !slices.Equal(got.Conflicts, []string{"deep"}) {
		t.Fatalf("after the first sync: %+v", got)
	}
	expect(t, up.do(http.MethodPatch, "/v1/tenants/upstream/cards/deep", upTok, map[string]any{"description": "still deep"}), http.StatusOK)
	expect(t, up.do(http.MethodPost, "/v1/tenants/upstream/cards", upTok, sampleCard("later")), http.StatusCreated)
	waitFor(t, 20*time.Second, "the change after the refused card applied", func() bool {
		_, has := cardsOf(t, down, "mirror", downTok)["later"]
		return has
	})
	waitSource(t, down, "mirror", src.ID, downTok, "the changes recorded", func(s follow.Source) bool {
		return s.State == follow.StateActive && s.Cards == 2 && slices.Equal(s.Conflicts, []string{"deep"})
	})
}

// TestSourceNewToken: an agentcards source whose token the source refuses (one of another
// tenant) fails, saying so, and
// mirrors nothing; given a good token (sources.update), it is tried again at once and mirrors
// the source's cards. A token is refused for a polled source, and an update of a source being
// removed is a conflict.
func TestSourceNewToken(t *testing.T) {
	up := newEnvWith(t, storagetest.Open(t, "sqlite"), envOptions{allowLoopback: true, follow: true})
	up.mkTenant("upstream", "alice")
	upTok := up.token("alice", "upstream", false)
	expect(t, up.do(http.MethodPost, "/v1/tenants/upstream/cards", upTok, sampleCard("alpha")), http.StatusCreated)
	down := newEnvWith(t, storagetest.Open(t, "sqlite"), envOptions{allowLoopback: true, follow: true})
	down.mkTenant("mirror", "bob")
	downTok := down.token("bob", "mirror", false)
	r := down.do(http.MethodPost, "/v1/tenants/mirror/sources", downTok, map[string]any{
		"kind": "agentcards", "url": up.srv.URL + "/v1/tenants/upstream", "token": up.token("alice", "elsewhere", false)})
	expect(t, r, http.StatusCreated)
	var src follow.Source
	r.json(t, &src)
	got := waitSource(t, down, "mirror", src.ID, downTok, "failing on a refused token", func(s follow.Source) bool { return s.State == follow.StateFailing })
	if !strings.Contains(got.LastError, "cards.changes") || !strings.Contains(got.LastError, "40") {
		t.Errorf("the refused token's error: %q", got.LastError)
	}
	if n := len(cardsOf(t, down, "mirror", downTok)); n != 0 {
		t.Fatalf("%d cards mirrored with a refused token", n)
	}
	r = down.do(http.MethodPatch, "/v1/tenants/mirror/sources/"+src.ID, downTok, map[string]any{"token": upTok})
	expect(t, r, http.StatusOK)
	if strings.Contains(string(r.body), upTok) {
		t.Fatal("the answer holds the token")
	}
	waitSource(t, down, "mirror", src.ID, downTok, "active with the new token", func(s follow.Source) bool { return s.State == follow.StateActive && s.Cards == 1 })
	expect(t, down.do(http.MethodPatch, "/v1/tenants/mirror/sources/"+src.ID, downTok, map[string]any{"intervalSeconds": 60}), http.StatusBadRequest, "invalid")
	expect(t, down.do(http.MethodPatch, "/v1/tenants/mirror/sources/"+src.ID, downTok, map[string]any{"tokn": "x"}), http.StatusBadRequest, "invalid")
	expect(t, down.do(http.MethodPatch, "/v1/tenants/mirror/sources/src_00", downTok, map[string]any{"token": "x"}), http.StatusNotFound, "not_found")
	expect(t, down.do(http.MethodDelete, "/v1/tenants/mirror/sources/"+src.ID, downTok, nil), http.StatusAccepted)
	r = down.do(http.MethodPatch, "/v1/tenants/mirror/sources/"+src.ID, downTok, map[string]any{"token": upTok})
	if r.status != http.StatusConflict && r.status != http.StatusNotFound {
		t.Fatalf("an update of a source being removed: %d %s", r.status, r.body)
	}
}

// TestSourceTokenNeedsSecretKey: a server without delegation.secretKey refuses a source with a
// token (it could not keep it sealed), and takes one without.
func TestSourceTokenNeedsSecretKey(t *testing.T) {
	e := newEnvWith(t, storagetest.Open(t, "sqlite"), envOptions{allowLoopback: true, noSecrets: true})
	e.mkTenant("mirror", "bob")
	tok := e.token("bob", "mirror", false)
	r := e.do(http.MethodPost, "/v1/tenants/mirror/sources", tok, map[string]any{
		"kind": "agentcards", "url": "http://127.0.0.1:9/v1/tenants/upstream", "token": "a-token"})
	expect(t, r, http.StatusBadRequest, "invalid")
	if !strings.Contains(string(r.body), "delegation.secretKey") {
		t.Errorf("the refusal does not name the key: %s", r.body)
	}
	expect(t, e.do(http.MethodPost, "/v1/tenants/mirror/sources", tok, map[string]any{
		"kind": "agentcards", "url": "http://127.0.0.1:9/v1/tenants/upstream"}), http.StatusCreated)
}
