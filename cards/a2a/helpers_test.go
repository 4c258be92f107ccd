package a2a_test

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"net"
	"testing"
	"time"

	"github.com/agentcards/agentcards/authz"
	"github.com/agentcards/agentcards/authz/authztest"
	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/a2a"
	"github.com/agentcards/agentcards/cards/a2a/a2atest"
	"github.com/agentcards/agentcards/cards/search"
	"github.com/agentcards/agentcards/storage"
	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/tenants"
	"github.com/agentcards/agentcards/web/outbound"
)

// acme is the fixture's tenant, and alice a caller of it.
const acme tenants.ID = "acme"

var alice = authz.WithPrincipal(context.Background(), authz.Principal{Subject: "alice", Tenant: string(acme)})

// fixture is the A2A service as the server builds it, over a real store holding the tenant acme,
// with authztest.AllowAll: these tests are about what becomes of a card, not who may see it.
type fixture struct {
	t     testing.TB
	a2a   *a2a.Service
	cards *cards.Service
	// trust manages acme's trust policy, which imports weigh cards against.
	trust *a2a.Trust
	db    *storage.DB
}

// newFixture builds the service over a fresh database of dialect. Fetches, when the test allows
// them (allowLoopback), reach loopback addresses only.
func newFixture(t testing.TB, dialect string) *fixture {
	t.Helper()
	db := storagetest.Open(t, dialect)
	storagetest.CreateTenant(t, db, acme, time.Now().UTC(), "alice")
	store := storage.NewCardStore(db)
	tenantStore := storage.NewTenantStore(db)
	gate := &tenants.Service{Store: tenantStore}
	cs := &cards.Service{Store: store, Gate: gate, Authz: authztest.AllowAll{}}
	ss := &search.Service{Store: store, Gate: gate, Authz: authztest.AllowAll{}}
	keys := &a2a.KeySets{}
	return &fixture{t: t, cards: cs, db: db,
		a2a:   &a2a.Service{Store: store, Authz: authztest.AllowAll{}, Cards: cs, Search: ss, Trust: tenantStore, TrustKeys: keys},
		trust: &a2a.Trust{Store: tenantStore, Cards: cs, CardStore: store, Gate: gate, Authz: authztest.AllowAll{}, Keys: keys}}
}

// forEachDialect runs fn with a fixture on each database.
func forEachDialect(t *testing.T, fn func(t *testing.T, f *fixture)) {
	t.Helper()
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) { fn(t, newFixture(t, dialect)) })
}

// allowLoopback lets the fixture's imports fetch from 127.0.0.0/8, as outbound.allow would,
// through the guarded client the server uses.
func (f *fixture) allowLoopback() {
	f.a2a.Fetch = a2atest.LoopbackFetch()
	f.trust.Keys.Fetch, f.trust.Keys.PlainHTTP = f.a2a.Fetch, a2atest.IsLoopback
}

// guardAsDefault gives the fixture's imports the guarded client the server has without
// outbound.allow, behind a2atest.LoopbackOnly: loopback addresses are refused before any dial.
func (f *fixture) guardAsDefault() {
	f.a2a.Fetch = a2atest.LoopbackOnly{Inner: outbound.New(outbound.Config{Timeout: 5 * time.Second})}
	f.trust.Keys.Fetch = f.a2a.Fetch
}

// put writes a registry card as its REST PUT would, and fails the test if it is refused.
func (f *fixture) put(agentID string, card map[string]any) cards.Card {
	f.t.Helper()
	c, _, err := f.cards.Put(alice, acme, agentID, jsonOf(f.t, card), cards.Precondition{})
	if err != nil {
		f.t.Fatalf("put %s: %v", agentID, err)
	}
	return c
}

// importCard imports an A2A card with an import request body (a2a.ImportRequest).
func (f *fixture) importCard(body map[string]any) (cards.Card, error) {
	f.t.Helper()
	return f.a2a.Import(alice, acme, jsonOf(f.t, body))
}

// mustImport is importCard for a card that must be accepted.
func (f *fixture) mustImport(body map[string]any) cards.Card {
	f.t.Helper()
	c, err := f.importCard(body)
	if err != nil {
		f.t.Fatalf("import %v: %v", body["agentId"], err)
	}
	return c
}

// absent fails the test if agentID has a card: a refused import stores nothing.
func (f *fixture) absent(agentID string) {
	f.t.Helper()
	if _, err := f.cards.Get(alice, acme, agentID); !errors.Is(err, cards.ErrNotFound) {
		f.t.Fatalf("get %s: %v, want not found", agentID, err)
	}
}

// wantKind fails the test unless err is of kind as a door reads it (fault.KindOf: the kind of the
// first fault in its chain, which web/errors.go turns into a status and an error code).
func wantKind(t testing.TB, name string, err error, kind fault.Kind) {
	t.Helper()
	if got := fault.KindOf(err); got != kind {
		t.Errorf("%s: %v (kind %q), want %q", name, err, got, kind)
	}
}

// stored is the registry card of agentID as the API answers it.
func (f *fixture) stored(agentID string) []byte {
	f.t.Helper()
	c, err := f.cards.Get(alice, acme, agentID)
	if err != nil {
		f.t.Fatalf("get %s: %v", agentID, err)
	}
	b, err := cards.Marshal(c)
	if err != nil {
		f.t.Fatal(err)
	}
	return b
}

// render is the A2A card of agentID in the form version (a2a.VersionDefault, a2a.Version10,
// a2a.Version03), as an anonymous client is given it, unsigned; the error is Render's.
func (f *fixture) render(agentID, version string) ([]byte, error) {
	f.t.Helper()
	c, err := f.a2a.GetA2A(context.Background(), acme, agentID)
	if err != nil {
		f.t.Fatalf("GetA2A %s: %v", agentID, err)
	}
	form, err := a2a.Render(c, version)
	if err != nil {
		return nil, err
	}
	return jsonOf(f.t, form), nil
}

// mustRender is render for a form the card has.
func (f *fixture) mustRender(agentID, version string) []byte {
	f.t.Helper()
	b, err := f.render(agentID, version)
	if err != nil {
		f.t.Fatalf("render %s in %q: %v", agentID, version, err)
	}
	return b
}

// patched returns base with the members of p set, a nil value removing the member.
func patched(base, p map[string]any) map[string]any {
	out := maps.Clone(base)
	for k, v := range p {
		if v == nil {
			delete(out, k)
		} else {
			out[k] = v
		}
	}
	return out
}

// jsonOf is v as JSON.
func jsonOf(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// closedPortURL is an http URL with path on a loopback port where nothing listens: a fetch there
// is refused.
func closedPortURL(t testing.TB, path string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return "http://" + ln.Addr().String() + path
}
