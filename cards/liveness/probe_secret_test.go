package liveness_test

import (
	"context"
	"errors"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/agenttest"
	"github.com/agentcards/agentcards/cards/liveness"
	"github.com/agentcards/agentcards/migrations"
	"github.com/agentcards/agentcards/storage"
	"github.com/agentcards/agentcards/tenants"
	"github.com/agentcards/agentcards/web/outbound"
)

// heldSecret is a secret a card holds for one endpoint URL, in the header it goes in.
type heldSecret struct {
	endpoint, header, value string
}

// secretsByCard gives each card's secret for the endpoint it was set for, as the sealed store
// does, and nothing for another URL; a card given an error fails with it. It keeps what it was
// asked for.
type secretsByCard struct {
	mu    sync.Mutex
	held  map[string]heldSecret // by agentId
	fail  map[string]error      // by agentId
	asked []string              // "agentId endpoint"
}

func (s *secretsByCard) Credential(_ context.Context, tenant tenants.ID, agentID, endpoint string) (string, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.asked = append(s.asked, agentID+" "+endpoint)
	if err := s.fail[agentID]; err != nil {
		return "", "", err
	}
	if h, ok := s.held[agentID]; ok && tenant == "acme" && h.endpoint == endpoint {
		return h.header, h.value, nil
	}
	return "", "", nil
}

func (s *secretsByCard) askedFor(agentID string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, a := range s.asked {
		if id, endpoint, _ := strings.Cut(a, " "); id == agentID {
			out = append(out, endpoint)
		}
	}
	return out
}

// keyed answers 200 to a request whose header name is value, else 401: an agent that asks for its
// key on every route.
func keyed(name, value string) agenttest.Reply {
	return func(w http.ResponseWriter, r *http.Request, got agenttest.Request) {
		status := http.StatusUnauthorized
		if r.Header.Get(name) == value {
			status = http.StatusOK
		}
		agenttest.Answer(status, `{}`)(w, r, got)
	}
}

// loopbackGuard is the outbound guard as the server builds it, allowing loopback.
func loopbackGuard() *http.Client {
	return outbound.New(outbound.Config{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, Timeout: 5 * time.Second})
}

// TestProbeSecrets: a probe of the origin of a card's endpoint carries the secret the card holds
// for that endpoint, as a delegation does: a bearer token in Authorization, a named header's
// whole value (Authorization untouched, or the value as it is when the header is
// Authorization). A probe of a source elsewhere carries none, and the secret is not even read
// for it; with a configured path, the same card's probe goes to its endpoint's origin, with the
// secret. A card whose endpoint moved is asked for at its new endpoint, for which it holds none:
// it is probed without one. A secret that cannot be read is told to SecretFailed, and the probe
// goes on without it, its error saying nothing of the secret.
func TestProbeSecrets(t *testing.T) {
	db, store := openStore(t, migrations.SQLite)
	cs := storage.NewCardStore(db)
	bearer := agenttest.New(t, keyed("Authorization", "Bearer b3arer"))
	header := agenttest.New(t, keyed("X-Api-Key", "k3y"))
	raw := agenttest.New(t, keyed("Authorization", "r4w"))
	imported, source := agenttest.New(t, keyed("Authorization", "Bearer 1mp")), agenttest.New(t, agenttest.Answer(http.StatusOK, `{}`))
	moved, movedTo := agenttest.New(t, keyed("Authorization", "Bearer m0ved")), agenttest.New(t, keyed("Authorization", "Bearer m0ved"))
	broken := agenttest.New(t, agenttest.Answer(http.StatusOK, `{}`))
	ids := map[string]string{} // card ids by agentId
	put := func(agentID string, edit func(*cards.Card)) cards.Card {
		c := putCard(t, cs, "acme", agentID, edit)
		ids[agentID] = c.ID
		return c
	}
	at := func(a *agenttest.Agent) func(*cards.Card) { return func(c *cards.Card) { c.Endpoint = a.URL + "/rpc" } }
	put("bearer", at(bearer))
	put("header", at(header))
	put("raw", at(raw))
	put("imported", func(c *cards.Card) {
		c.Endpoint, c.Source = imported.URL+"/rpc", &cards.Source{URL: source.URL + "/cards/imported.json"}
	})
	movedCard := put("moved", at(moved))
	put("broken", at(broken))
	secrets := &secretsByCard{
		held: map[string]heldSecret{
			"bearer":   {bearer.URL + "/rpc", "Authorization", "Bearer b3arer"},
			"header":   {header.URL + "/rpc", "X-Api-Key", "k3y"},
			"raw":      {raw.URL + "/rpc", "Authorization", "r4w"},
			"imported": {imported.URL + "/rpc", "Authorization", "Bearer 1mp"},
			"moved":    {moved.URL + "/rpc", "Authorization", "Bearer m0ved"},
		},
		fail: map[string]error{"broken": errors.New("endpoint secret: sealed-box-broken")},
	}
	var mu sync.Mutex
	var failed []string
	clk := newClock(t0)
	tr := liveness.New(store, time.Hour, clk.now)
	prober := func(path string) *liveness.Prober {
		p := liveness.NewProber(liveness.ProbeConfig{Interval: time.Minute, Spread: -1, Path: path}, store, cs, loopbackGuard(), tr)
		p.Secrets = secrets
		p.SecretFailed = func(tenant tenants.ID, agentID string, err error) {
			mu.Lock()
			defer mu.Unlock()
			failed = append(failed, string(tenant)+"/"+agentID+": "+err.Error())
		}
		return p
	}
	probe := func(what string, p *liveness.Prober, wantFailed int) {
		t.Helper()
		if st := round(t, p); st != (liveness.RoundStats{Claimed: 6, Probed: 6, Failed: wantFailed}) {
			t.Errorf("%s: round %+v, want 6 probed, %d failed", what, st, wantFailed)
		}
	}
	ok := func(agentID string, want bool, wantErr string) {
		t.Helper()
		l, err := tr.Of(context.Background(), "acme", agentID, ids[agentID])
		if err != nil || l.Probe == nil || l.Probe.OK != want || l.Probe.Error != wantErr {
			t.Errorf("%s: %+v (probe %+v), %v; want ok %v, error %q", agentID, l, l.Probe, err, want, wantErr)
		}
	}
	last := func(a *agenttest.Agent) http.Header {
		t.Helper()
		r := a.Last()
		if r.Method == "" {
			t.Fatalf("%s was not probed", a.URL)
		}
		return r.Header
	}

	probe("by default", prober(""), 0)
	for _, id := range []string{"bearer", "header", "raw", "imported", "moved", "broken"} {
		ok(id, true, "")
	}
	if h := last(header); h.Get("X-Api-Key") != "k3y" || h.Get("Authorization") != "" {
		t.Errorf("header secret: X-Api-Key %q, Authorization %q", h.Get("X-Api-Key"), h.Get("Authorization"))
	}
	if h := last(source); h.Get("Authorization") != "" || imported.Calls() != 0 {
		t.Errorf("the source elsewhere got Authorization %q; the endpoint was probed %d times", h.Get("Authorization"), imported.Calls())
	}
	if asked := secrets.askedFor("imported"); len(asked) != 0 {
		t.Errorf("the secret was read for a probe of another origin: %q", asked)
	}
	if h := last(broken); h.Get("Authorization") != "" {
		t.Errorf("a secret not read: Authorization %q", h.Get("Authorization"))
	}
	mu.Lock()
	if len(failed) != 1 || failed[0] != "acme/broken: endpoint secret: sealed-box-broken" {
		t.Errorf("told of failures: %q", failed)
	}
	mu.Unlock()

	// With a path, the imported card is probed at its endpoint's origin, with its secret.
	clk.add(time.Minute)
	probe("with a path", prober("/health"), 0)
	if r := imported.Last(); r.Path != "/health" || r.Header.Get("Authorization") != "Bearer 1mp" {
		t.Errorf("the imported card's endpoint got %s with Authorization %q", r.Path, r.Header.Get("Authorization"))
	}

	// The card moves to another server after its secret was set: its new endpoint is asked for,
	// and the probe goes there without a secret.
	movedCard.Endpoint, movedCard.Revision = movedTo.URL+"/rpc", movedCard.Revision+1
	if err := cs.Replace(context.Background(), "acme", movedCard, movedCard.Revision-1); err != nil {
		t.Fatal(err)
	}
	clk.add(time.Minute)
	probe("after the move", prober(""), 1)
	if h := last(movedTo); h.Get("Authorization") != "" {
		t.Errorf("the moved card's new server got Authorization %q", h.Get("Authorization"))
	}
	ok("moved", false, "answered 401")
	if asked := secrets.askedFor("moved"); !slices.Contains(asked, movedTo.URL+"/rpc") || moved.Calls() != 2 {
		t.Errorf("the moved card: secret asked for %q, old server probed %d times, want twice", asked, moved.Calls())
	}
	ok("broken", true, "")
}
