package web_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/agentcards/agentcards/storage/storagetest"
)

// TestCursorsBelongToTheirList: every list (the search, the A2A agent directory, delegations)
// refuses another list's nextCursor with the same 400, rather than reading it as a position of
// its own; and all three read limit alike: once, a whole number, within the list's bounds.
func TestCursorsBelongToTheirList(t *testing.T) {
	e := newEnv(t, storagetest.Open(t, "sqlite"), 1<<20)
	e.mkTenant("acme", "alice")
	alice, rita := e.token("alice", "acme", false), e.token("rita", "acme", false)
	for _, id := range []string{"a", "b", "c"} {
		c := sampleCard(id)
		c["visibility"] = "public"
		expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, c), http.StatusCreated)
	}
	// rita holds no grant: her delegations are refused, and recorded (one record per card: the
	// same refusal again would only count into its record).
	for _, id := range []string{"a", "b", "c"} {
		expect(t, e.do("POST", "/v1/tenants/acme/delegations", rita, delegate(id, "sync")), http.StatusForbidden, "forbidden")
	}
	lists := map[string]struct{ path, token string }{
		"search":      {"/v1/tenants/acme/cards?", alice},
		"agents":      {"/a2a/acme/agents?", ""},
		"delegations": {"/v1/tenants/acme/delegations?", rita},
	}
	cursors := map[string]string{}
	for name, l := range lists {
		var page struct{ NextCursor string }
		r := e.do("GET", l.path+"limit=1", l.token, nil)
		expect(t, r, http.StatusOK)
		r.json(t, &page)
		if page.NextCursor == "" {
			t.Fatalf("%s: no nextCursor after one of three", name)
		}
		cursors[name] = page.NextCursor
		expect(t, e.do("GET", l.path+"limit=1&cursor="+page.NextCursor, l.token, nil), http.StatusOK)
	}
	for name, l := range lists {
		for other, cursor := range cursors {
			if other == name {
				continue
			}
			r := e.do("GET", l.path+"cursor="+cursor, l.token, nil)
			expect(t, r, http.StatusBadRequest, "invalid")
			if msg := errMessage(t, r); msg != "cursor: not a cursor of this list (pass nextCursor as it came)" {
				t.Errorf("%s with a cursor of %s: %q", name, other, msg)
			}
		}
		for _, q := range []string{"limit=1&limit=2", "limit=x", "limit=1.5", "limit=0", "limit=99999999999999999999", "cursor=", "cursor=a&cursor=b"} {
			r := e.do("GET", l.path+q, l.token, nil)
			expect(t, r, http.StatusBadRequest, "invalid")
			if param, _, _ := strings.Cut(q, "="); !strings.HasPrefix(errMessage(t, r), param) {
				t.Errorf("%s%s: the message does not name %s: %q", l.path, q, param, errMessage(t, r))
			}
		}
	}
	// The directory of a tenant that does not exist checks the page as one that does.
	expect(t, e.do("GET", "/a2a/no-such-tenant/agents?cursor="+cursors["search"], "", nil), http.StatusBadRequest, "invalid")
}
