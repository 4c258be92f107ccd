package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/agentcards/agentcards/authz/token"
	"github.com/agentcards/agentcards/storage"
	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/web/api"
)

// changesPath is the change feed's route for tenant, after since (none: the present cursor).
func changesPath(tenant, since string, limit int) string {
	q := url.Values{}
	if since != "" {
		q.Set("since", since)
	}
	if limit > 0 {
		q.Set("limit", fmt.Sprint(limit))
	}
	p := "/v1/tenants/" + tenant + "/cards:changes"
	if len(q) > 0 {
		p += "?" + q.Encode()
	}
	return p
}

// changesPage reads one page of the feed.
func (e *env) changesPage(t testing.TB, tok, tenant, since string, limit int) api.ChangePage {
	t.Helper()
	r := e.do("GET", changesPath(tenant, since, limit), tok, nil)
	expect(t, r, http.StatusOK)
	var p api.ChangePage
	r.json(t, &p)
	if p.NextCursor == "" {
		t.Fatal("a page without nextCursor")
	}
	return p
}

// mirror is what a client following the feed holds: per agent, the highest revision it has seen
// and the card at it (nil once removed).
type mirror struct {
	rev  map[string]int64
	card map[string]string
}

func newMirror() *mirror { return &mirror{rev: map[string]int64{}, card: map[string]string{}} }

// listed takes a card of the list, unless the mirror holds a later revision.
func (m *mirror) listed(agentID, name string, rev int64) {
	if rev > m.rev[agentID] {
		m.rev[agentID], m.card[agentID] = rev, name
	}
}

// apply applies a change as the documentation says a client does: an upsert of a higher
// revision replaces what is held, a removal of at least the held revision removes it.
func (m *mirror) apply(t testing.TB, c api.CardChange) {
	t.Helper()
	switch c.Op {
	case "upsert":
		if c.Card == nil || c.Card.AgentID != c.AgentID || c.Card.Revision != c.Revision {
			t.Fatalf("upsert %s@%d with card %+v", c.AgentID, c.Revision, c.Card)
		}
		if c.Revision > m.rev[c.AgentID] {
			m.rev[c.AgentID], m.card[c.AgentID] = c.Revision, c.Card.Name
		}
	case "remove":
		if c.Card != nil {
			t.Fatalf("removal of %s with a card", c.AgentID)
		}
		if c.Revision >= m.rev[c.AgentID] {
			m.rev[c.AgentID] = c.Revision
			delete(m.card, c.AgentID)
		}
	default:
		t.Fatalf("op %q", c.Op)
	}
}

// follow reads the feed from cursor until a page is not full, applying every change, and
// returns the next cursor.
func (m *mirror) follow(t testing.TB, e *env, tok, tenant, cursor string, limit int) string {
	t.Helper()
	for {
		p := e.changesPage(t, tok, tenant, cursor, limit)
		for _, c := range p.Changes {
			m.apply(t, c)
		}
		if limit > 0 && len(p.Changes) > limit {
			t.Fatalf("%d changes on a page of %d", len(p.Changes), limit)
		}
		cursor = p.NextCursor
		if !p.More {
			return cursor
		}
	}
}

// names are the cards a mirror holds, as agentId=name.
func (m *mirror) names() []string {
	var out []string
	for _, id := range slices.Sorted(maps.Keys(m.card)) {
		out = append(out, id+"="+m.card[id])
	}
	return out
}

// truth lists the tenant's cards as agentId=name, reading each page of the search.
func (e *env) truth(t testing.TB, tok, tenant string) []string {
	t.Helper()
	m := newMirror()
	e.listInto(t, tok, tenant, m)
	return m.names()
}

// listInto lists the tenant's cards through the search into m.
func (e *env) listInto(t testing.TB, tok, tenant string, m *mirror) {
	t.Helper()
	cursor := ""
	for {
		path := "/v1/tenants/" + tenant + "/cards?limit=100"
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		r := e.do("GET", path, tok, nil)
		expect(t, r, http.StatusOK)
		var res struct {
			Items []struct {
				Card struct {
					AgentID  string `json:"agentId"`
					Name     string `json:"name"`
					Revision int64  `json:"revision"`
				} `json:"card"`
			} `json:"items"`
			NextCursor string `json:"nextCursor"`
		}
		r.json(t, &res)
		for _, it := range res.Items {
			m.listed(it.Card.AgentID, it.Card.Name, it.Card.Revision)
		}
		if res.NextCursor == "" {
			return
		}
		cursor = res.NextCursor
	}
}

func named(agentID, name string) map[string]any {
	c := sampleCard(agentID)
	c["name"] = name
	return c
}

// TestChangesFollow: without since the feed answers its present cursor and no change; from it
// a client sees the changes after it, upserts with the card as it is and removals with the
// removed card's revision, in commit order, and a mirror built from a list and the feed equals
// the tenant's cards. On SQLite, whose entries commit in order, nothing comes twice.
func TestChangesFollow(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		e.mkTenant("acme", "alice")
		alice := e.token("alice", "acme", false)
		base := "/v1/tenants/acme/cards"
		expect(t, e.do("POST", base, alice, named("a", "A1")), http.StatusCreated)
		expect(t, e.do("POST", base, alice, named("b", "B1")), http.StatusCreated)

		now := e.changesPage(t, alice, "acme", "", 0)
		if len(now.Changes) != 0 || now.More {
			t.Fatalf("without since: %+v", now)
		}
		m := newMirror()
		e.listInto(t, alice, "acme", m)

		expect(t, e.do("PATCH", base+"/a", alice, map[string]any{"name": "A2"}), http.StatusOK)
		expect(t, e.do("DELETE", base+"/b", alice, nil), http.StatusNoContent)
		expect(t, e.do("POST", base, alice, named("c", "C1")), http.StatusCreated)

		p := e.changesPage(t, alice, "acme", now.NextCursor, 0)
		if e.db.Dialect() == "sqlite" {
			var got []string
			for _, c := range p.Changes {
				got = append(got, fmt.Sprintf("%s %s@%d", c.Op, c.AgentID, c.Revision))
			}
			if want := "[upsert a@2 remove b@1 upsert c@1]"; fmt.Sprint(got) != want {
				t.Fatalf("changes %v, want %s", got, want)
			}
		}
		for _, c := range p.Changes {
			m.apply(t, c)
		}
		if got, want := m.names(), []string{"a=A2", "c=C1"}; !slices.Equal(got, want) {
			t.Fatalf("mirror %v, want %v", got, want)
		}
		// An upsert's card is the card as cards.get answers it, liveness aside.
		got := e.changesPage(t, alice, "acme", now.NextCursor, 0)
		for _, c := range got.Changes {
			if c.AgentID == "c" {
				var card map[string]any
				e.getCard("acme", "c").json(t, &card)
				delete(card, "liveness")
				if c.Card.Name != card["name"] || c.Card.ID != card["id"] {
					t.Fatalf("upsert's card %+v, GET %v", c.Card, card)
				}
			}
		}
		// Caught up: the next page holds nothing new.
		m.follow(t, e, alice, "acme", p.NextCursor, 0)
		if got, want := m.names(), e.truth(t, alice, "acme"); !slices.Equal(got, want) {
			t.Fatalf("mirror %v, want %v", got, want)
		}
	})
}

// TestChangesPaging: limit bounds the feed entries a page reads; a full page says more, and the
// pages together hold every change once on SQLite.
func TestChangesPaging(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		e.mkTenant("acme", "alice")
		alice := e.token("alice", "acme", false)
		start := e.changesPage(t, alice, "acme", "", 0).NextCursor
		for i := range 7 {
			expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, named(fmt.Sprintf("p%d", i), "P")), http.StatusCreated)
		}
		cursor, pages, seen := start, 0, map[string]int{}
		for {
			p := e.changesPage(t, alice, "acme", cursor, 3)
			pages++
			if len(p.Changes) > 3 {
				t.Fatalf("page of %d", len(p.Changes))
			}
			for _, c := range p.Changes {
				seen[c.AgentID]++
			}
			cursor = p.NextCursor
			if !p.More {
				break
			}
			if pages > 20 {
				t.Fatal("the pages do not end")
			}
		}
		if len(seen) != 7 {
			t.Fatalf("seen %v", seen)
		}
		if e.db.Dialect() == "sqlite" {
			if pages != 3 {
				t.Fatalf("%d pages, want 3", pages)
			}
			for id, n := range seen {
				if n != 1 {
					t.Fatalf("%s seen %d times", id, n)
				}
			}
		}
		for _, bad := range []string{"limit=0", "limit=1001", "limit=x"} {
			expect(t, e.do("GET", "/v1/tenants/acme/cards:changes?since="+url.QueryEscape(cursor)+"&"+bad, alice, nil), http.StatusBadRequest, "invalid")
		}
	})
}

// TestChangesCursors: a cursor is opaque and bound to its tenant: a made-up one, an empty one and
// another tenant's are refused; another tenant's feed is a 404 as a missing tenant is.
func TestChangesCursors(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		e.mkTenant("acme", "alice")
		e.mkTenant("beta", "bob")
		alice, bob := e.token("alice", "acme", false), e.token("bob", "beta", false)
		theirs := e.changesPage(t, bob, "beta", "", 0).NextCursor
		for _, since := range []string{"x", theirs} {
			expect(t, e.do("GET", changesPath("acme", since, 0), alice, nil), http.StatusBadRequest, "invalid")
		}
		expect(t, e.do("GET", "/v1/tenants/acme/cards:changes?since=", alice, nil), http.StatusBadRequest, "invalid")
		expect(t, e.do("GET", "/v1/tenants/acme/cards:changes?cursor=x", alice, nil), http.StatusBadRequest, "invalid")
		expect(t, e.do("GET", changesPath("beta", "", 0), alice, nil), http.StatusNotFound, "not_found")
		expect(t, e.do("GET", changesPath("acme", "", 0), "", nil), http.StatusUnauthorized, "unauthorized")
		// An agent may be called "changes": its card is its own route.
		expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, named("changes", "C")), http.StatusCreated)
		expect(t, e.do("GET", "/v1/tenants/acme/cards/changes", alice, nil), http.StatusOK)
	})
}

// TestChangesReadRules: a reader allowed some cards sees the changes of those only, removals
// included; of the others it learns nothing, not even that they changed.
func TestChangesReadRules(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		e.mkTenant("acme", "alice")
		alice := e.token("alice", "acme", false)
		e.grantRule(t, "acme", "carol", "cards/r1", "cards:read", "allow")
		e.grantRule(t, "acme", "carol", "cards/r2", "cards:read", "allow")
		carol := e.token("carol", "acme", false)
		start := e.changesPage(t, carol, "acme", "", 0).NextCursor
		base := "/v1/tenants/acme/cards"
		for _, id := range []string{"r1", "r2", "h1", "h2"} {
			expect(t, e.do("POST", base, alice, named(id, "N")), http.StatusCreated)
		}
		expect(t, e.do("PATCH", base+"/h1", alice, map[string]any{"name": "M"}), http.StatusOK)
		expect(t, e.do("DELETE", base+"/h2", alice, nil), http.StatusNoContent)
		expect(t, e.do("DELETE", base+"/r2", alice, nil), http.StatusNoContent)
		seen := map[string]bool{}
		removed := false
		cursor := start
		for {
			p := e.changesPage(t, carol, "acme", cursor, 2)
			for _, c := range p.Changes {
				seen[c.AgentID] = true
				removed = removed || (c.AgentID == "r2" && c.Op == "remove")
			}
			cursor = p.NextCursor
			if !p.More {
				break
			}
		}
		if got := slices.Sorted(maps.Keys(seen)); fmt.Sprint(got) != "[r1 r2]" || !removed {
			t.Fatalf("carol saw %v (r2's removal: %v)", got, removed)
		}
	})
}

// TestChangesExpiredCursor: once the feed has pruned entries a cursor may need, the cursor is a
// 410 cursor_expired, and the client lists again and follows from a new cursor.
func TestChangesExpiredCursor(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		e.mkTenant("acme", "alice")
		alice := e.token("alice", "acme", false)
		old := e.changesPage(t, alice, "acme", "", 0).NextCursor
		expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, named("a", "A")), http.StatusCreated)
		// The feed keeps a day; a day and a half later, pruning has removed the cursor's entries.
		later := time.Now().Add(36 * time.Hour)
		e.changes.Retention = 24 * time.Hour
		e.changes.Now = func() time.Time { return later }
		t.Cleanup(func() { e.changes.Retention, e.changes.Now = 0, nil })
		if _, err := storage.NewCardStore(e.db).PruneChanges(context.Background(), "acme", later.Add(-24*time.Hour)); err != nil {
			t.Fatal(err)
		}
		expect(t, e.do("GET", changesPath("acme", old, 0), alice, nil), http.StatusGone, "cursor_expired")
		fresh := e.changesPage(t, alice, "acme", "", 0).NextCursor
		if p := e.changesPage(t, alice, "acme", fresh, 0); len(p.Changes) != 0 {
			t.Fatalf("a fresh cursor after pruning: %+v", p.Changes)
		}
	})
}

// TestChangesListThenFollow: writers create, change and remove cards while a client takes the
// present cursor, lists the cards and follows the feed; once the writers stop and the client has
// caught up, its mirror equals the tenant's cards: no change was missed, and what came twice was
// told by its revision.
func TestChangesListThenFollow(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		e.mkTenant("acme", "alice")
		alice := e.token("alice", "acme", false)
		base := "/v1/tenants/acme/cards"
		for i := range 10 {
			expect(t, e.do("POST", base, alice, named(fmt.Sprintf("w%d", i%5)+fmt.Sprint(i), "0")), http.StatusCreated)
		}
		mirrorUnderLoad(t, alice, e, e, e, e)
	})
}

// mirrorUnderLoad writes creates, patches, deletes and re-creates of the same few agents of
// tenant acme, one goroutine through each of writers, while a mirror lists the cards of follower
// and follows its change feed; once the writes stop, the mirror must equal the tenant's cards.
func mirrorUnderLoad(t *testing.T, tok string, follower *env, writers ...*env) {
	t.Helper()
	base := "/v1/tenants/acme/cards"
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w, e := range writers {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				// Writers share agents, so each one's writes race another's.
				id := fmt.Sprintf("x%d-%d", w%2, i%5)
				switch i % 4 {
				case 0, 3:
					e.do("PUT", base+"/"+id, tok, named(id, fmt.Sprint(w, i)))
				case 1:
					e.do("PATCH", base+"/"+id, tok, map[string]any{"name": fmt.Sprint(w, i)})
				case 2:
					e.do("DELETE", base+"/"+id, tok, nil)
				}
			}
		})
	}
	time.Sleep(20 * time.Millisecond)
	m := newMirror()
	cursor := follower.changesPage(t, tok, "acme", "", 0).NextCursor
	follower.listInto(t, tok, "acme", m)
	for range 5 {
		cursor = m.follow(t, follower, tok, "acme", cursor, 7)
	}
	close(stop)
	wg.Wait()
	// Twice: the second pass begins after every write committed.
	cursor = m.follow(t, follower, tok, "acme", cursor, 7)
	m.follow(t, follower, tok, "acme", cursor, 7)
	if got, want := m.names(), writers[0].truth(t, tok, "acme"); !slices.Equal(got, want) || len(want) == 0 {
		t.Fatalf("mirror %v\nwant   %v", got, want)
	}
}

// TestChangesPagesSigned: each page of the feed carries the service's signature of its exact
// bytes, which a receiver checks with go-jose against the JWKS the service serves, as a mirror
// would; the protected header names the tenant; a byte changed, or another tenant's page under
// this page's signature, fails.
func TestChangesPagesSigned(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		e.mkTenant("acme", "alice")
		e.mkTenant("zeta", "zoe")
		alice, zoe := e.token("alice", "acme", false), e.token("zoe", "zeta", false)
		start := e.changesPage(t, alice, "acme", "", 0)
		expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, named("a", "A1")), http.StatusCreated)
		var keys jose.JSONWebKeySet
		if err := json.Unmarshal(e.jwks(), &keys); err != nil {
			t.Fatal(err)
		}
		verify := func(body []byte, sig string) (jose.Header, error) {
			jws, err := jose.ParseDetached(sig, body, []jose.SignatureAlgorithm{jose.ES256, jose.EdDSA})
			if err != nil {
				return jose.Header{}, err
			}
			h := jws.Signatures[0].Protected
			found := keys.Key(h.KeyID)
			if len(found) != 1 {
				return h, fmt.Errorf("kid %q: %d keys", h.KeyID, len(found))
			}
			_, err = jws.Verify(found[0].Key)
			return h, err
		}
		r := e.do("GET", changesPath("acme", start.NextCursor, 0), alice, nil)
		expect(t, r, http.StatusOK)
		sig := r.header.Get(api.SignatureHeader)
		h, err := verify(r.body, sig)
		if err != nil {
			t.Fatalf("the page's signature %q does not verify: %v", sig, err)
		}
		if h.ExtraHeaders["tenant"] != "acme" || h.ExtraHeaders["iat"] == nil {
			t.Fatalf("protected header %+v", h.ExtraHeaders)
		}
		if _, err := token.VerifyDetached(keys, sig, r.body); err != nil {
			t.Fatalf("token.VerifyDetached: %v", err)
		}
		var page api.ChangePage
		r.json(t, &page)
		if len(page.Changes) != 1 || page.Changes[0].AgentID != "a" {
			t.Fatalf("page %+v", page)
		}
		tampered := bytes.Replace(r.body, []byte(`"A1"`), []byte(`"A2"`), 1)
		if bytes.Equal(tampered, r.body) {
			t.Fatal("nothing to tamper with")
		}
		if _, err := verify(tampered, sig); err == nil {
			t.Fatal("a changed page verifies")
		}
		if _, err := token.VerifyDetached(keys, sig, tampered); err == nil {
			t.Fatal("token.VerifyDetached: a changed page verifies")
		}
		other := e.do("GET", changesPath("zeta", "", 0), zoe, nil)
		expect(t, other, http.StatusOK)
		if h, err := verify(other.body, other.header.Get(api.SignatureHeader)); err != nil || h.ExtraHeaders["tenant"] != "zeta" {
			t.Fatalf("zeta's page: %v, header %+v", err, h.ExtraHeaders)
		}
		if _, err := verify(other.body, sig); err == nil {
			t.Fatal("another tenant's page verifies under acme's signature")
		}
	})
}

// TestChangesMirrorTwoReplicas: a mirror built only from cards.changes (the list, then the feed)
// of one replica equals the tenant's cards after a mixed load of creates, patches, deletes and
// re-creates written through two replicas (two servers, each with its own connection pool, on
// one database) while it follows.
func TestChangesMirrorTwoReplicas(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, d string) {
		dbs := storagetest.OpenShared(t, d, 2)
		a := newEnvWith(t, dbs[0], envOptions{allowLoopback: true})
		b := newEnvWith(t, dbs[1], envOptions{allowLoopback: true})
		a.mkTenant("acme", "alice")
		mirrorUnderLoad(t, a.token("alice", "acme", false), b, a, b, a, b)
	})
}
