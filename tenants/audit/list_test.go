package audit_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentcards/agentcards/authz"
	"github.com/agentcards/agentcards/authz/authztest"
	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/tenants/audit"
	"github.com/agentcards/agentcards/tenants/paging"
)

// trail is a store holding entries of seq n down to 1.
func trail(n int) *memStore {
	s := &memStore{}
	for seq := n; seq >= 1; seq-- {
		s.entries = append(s.entries, audit.Entry{Seq: int64(seq), Principal: "alice", Action: "cards.update", Object: "cards/x", Outcome: audit.OK})
	}
	return s
}

func seqs(entries []audit.Entry) []int64 {
	var out []int64
	for _, e := range entries {
		out = append(out, e.Seq)
	}
	return out
}

func limit(n int) *int { return &n }

// TestListPages: pages of the trail, newest first: each asks the store for one entry more than
// it holds, to know whether another page follows; the cursor of the next page resumes before
// the last entry given; a last page that is exactly full has no next cursor. The default page
// holds 50, and at most 500 may be asked for.
func TestListPages(t *testing.T) {
	s := trail(7)
	svc := &audit.Service{Store: s, Gate: &gate{}, Authz: authztest.AllowAll{}}
	ctx := caller("alice")
	var got [][]int64
	var cursors []string
	page := paging.Page{Limit: limit(3)}
	for range 5 {
		list, next, err := svc.List(ctx, "acme", audit.Filter{}, page)
		if err != nil {
			t.Fatal(err)
		}
		got, cursors = append(got, seqs(list)), append(cursors, next)
		if next == "" {
			break
		}
		page.Cursor = next
	}
	// The cursor after seq 5 is "audit:5", base64url without padding.
	if want := [][]int64{{7, 6, 5}, {4, 3, 2}, {1}}; !slices.EqualFunc(got, want, slices.Equal) ||
		!slices.Equal(cursors, []string{"YXVkaXQ6NQ", "YXVkaXQ6Mg", ""}) {
		t.Errorf("pages %v, cursors %q", got, cursors)
	}
	var asked []string
	for _, f := range s.asked {
		asked = append(asked, fmt.Sprintf("before %d limit %d", f.Before, f.Limit))
	}
	if want := []string{"before 0 limit 4", "before 5 limit 4", "before 2 limit 4"}; !slices.Equal(asked, want) {
		t.Errorf("asked the store %q, want %q", asked, want)
	}

	s = trail(6)
	svc.Store = s
	first, next, _ := svc.List(ctx, "acme", audit.Filter{}, paging.Page{Limit: limit(3)})
	last, end, err := svc.List(ctx, "acme", audit.Filter{}, paging.Page{Limit: limit(3), Cursor: next})
	if err != nil || !slices.Equal(seqs(first), []int64{6, 5, 4}) || !slices.Equal(seqs(last), []int64{3, 2, 1}) || end != "" {
		t.Errorf("six entries by three: %v then %v (next %q), %v", seqs(first), seqs(last), end, err)
	}

	// A Before of the caller's own is not where a page starts: only a cursor is.
	s = trail(60)
	svc.Store = s
	list, next, err := svc.List(ctx, "acme", audit.Filter{Before: 3}, paging.Page{})
	if err != nil || len(list) != 50 || list[0].Seq != 60 || next == "" || s.asked[0].Limit != 51 || s.asked[0].Before != 0 {
		t.Errorf("the default page: %d entries from %d, next %q, asked %+v, %v", len(list), list[0].Seq, next, s.asked[0], err)
	}
	if _, _, err := svc.List(ctx, "acme", audit.Filter{}, paging.Page{Limit: limit(500)}); err != nil || s.asked[1].Limit != 501 {
		t.Errorf("a page of 500: asked %+v, %v", s.asked[1], err)
	}
	for _, n := range []int{0, -1, 501} {
		if _, _, err := svc.List(ctx, "acme", audit.Filter{}, paging.Page{Limit: limit(n)}); !errors.Is(err, fault.Invalid) {
			t.Errorf("limit %d: %v, want invalid", n, err)
		}
	}
}

// TestListCursorRefused: a cursor that is not one the trail gave is refused as invalid, before
// the store is asked: garbage, another list's, a position that is no entry's, or not a number.
func TestListCursorRefused(t *testing.T) {
	s := trail(3)
	svc := &audit.Service{Store: s, Gate: &gate{}, Authz: authztest.AllowAll{}}
	for name, cursor := range map[string]string{
		"garbage":        "not a cursor!",
		"padded":         "YXVkaXQ6NQ==",
		"another list's": paging.EncodeCursor("delegations", 5),
		"seq 0":          paging.EncodeCursor("audit", 0),
		"a negative seq": paging.EncodeCursor("audit", -4),
		"a string":       paging.EncodeCursor("audit", "5"),
		"an object":      paging.EncodeCursor("audit", map[string]int{"seq": 5}),
		"two values":     base64.RawURLEncoding.EncodeToString([]byte("audit:5 6")),
	} {
		if _, _, err := svc.List(caller("alice"), "acme", audit.Filter{}, paging.Page{Cursor: cursor}); !errors.Is(err, paging.ErrCursor) {
			t.Errorf("%s: %v, want the cursor refused", name, err)
		}
	}
	if len(s.asked) != 0 {
		t.Errorf("the store was asked %d times", len(s.asked))
	}
}

// TestListFilters: the filters go to the store as given; a principal, action or object with a
// space or a control character, of invalid UTF-8 or over 512 bytes is refused, naming it, and a
// since not before until, before the store is asked.
func TestListFilters(t *testing.T) {
	s := trail(2)
	svc := &audit.Service{Store: s, Gate: &gate{}, Authz: authztest.AllowAll{}}
	ctx := caller("alice")
	since, until := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 5, 2, 0, 0, 0, 0, time.UTC)
	f := audit.Filter{Principal: "agent:rev", Action: "cards.update", ObjectPrefix: "cards/é" + strings.Repeat("x", 504) /* 512 bytes */, Since: since, Until: until}
	if _, _, err := svc.List(ctx, "acme", f, paging.Page{}); err != nil {
		t.Fatal(err)
	}
	want := f
	want.Limit = 51
	if s.asked[0] != want {
		t.Errorf("asked the store %+v, want %+v", s.asked[0], want)
	}
	if _, _, err := svc.List(ctx, "acme", audit.Filter{Since: since}, paging.Page{}); err != nil {
		t.Errorf("since alone: %v", err)
	}
	for _, c := range []struct {
		name string
		f    audit.Filter
		want string
	}{
		{"a space", audit.Filter{Principal: "bob smith"}, "principal: "},
		{"a trailing space", audit.Filter{Action: "cards.update "}, "action: "},
		{"a no-break space", audit.Filter{Principal: "bob\u00a0smith"}, "principal: "},
		{"a tab", audit.Filter{ObjectPrefix: "cards/\tx"}, "object: "},
		{"a control character", audit.Filter{Action: "cards\x00update"}, "action: "},
		{"invalid UTF-8", audit.Filter{ObjectPrefix: "cards/\xff"}, "object: "},
		{"513 bytes", audit.Filter{Principal: strings.Repeat("p", 513)}, "principal: "},
		{"since at until", audit.Filter{Since: since, Until: since}, "since must be before until"},
		{"since after until", audit.Filter{Since: until, Until: since}, "since must be before until"},
	} {
		_, _, err := svc.List(ctx, "acme", c.f, paging.Page{})
		var fe *fault.Error
		if !errors.As(err, &fe) || fe.Kind != fault.Invalid || !strings.HasPrefix(fe.Message, c.want) {
			t.Errorf("%s: %v, want invalid naming %q", c.name, err, c.want)
		}
	}
	if len(s.asked) != 2 {
		t.Errorf("the store was asked %d times, want 2 (only for the filters accepted)", len(s.asked))
	}
}

// TestListWhoMayRead: only a caller with a token of its own, admitted into the tenant by the
// gate, and allowed policies:manage on policies or else audit:read on audit, reads the trail;
// the checks and the store see the context the gate returned. Another failure of the first
// check is answered as it is, without the second.
func TestListWhoMayRead(t *testing.T) {
	forbidden := fault.New(fault.Forbidden, "forbidden")
	down := fault.New(fault.Unavailable, "the policy store does not answer")
	const manage, read = "policies policies:manage", "audit audit:read"
	for _, c := range []struct {
		name    string
		ctx     context.Context
		gate    error
		answers map[string]error
		want    error
		asked   []string
	}{
		{"an admin", caller("alice"), nil, nil, nil, []string{"acme policies policies:manage acme"}},
		{"an auditor", caller("carol"), nil, map[string]error{manage: forbidden}, nil,
			[]string{"acme policies policies:manage acme", "acme audit audit:read acme"}},
		{"a reader", caller("bob"), nil, map[string]error{manage: forbidden, read: forbidden}, fault.Forbidden,
			[]string{"acme policies policies:manage acme", "acme audit audit:read acme"}},
		{"the policy store down", caller("alice"), nil, map[string]error{manage: down}, fault.Unavailable,
			[]string{"acme policies policies:manage acme"}},
		{"no caller", context.Background(), nil, nil, fault.Unauthenticated, nil},
		{"a delegation token", authz.WithPrincipal(context.Background(), authz.Principal{Subject: "agent:rev", Tenant: "acme", Delegated: true}),
			nil, nil, fault.Unauthenticated, nil},
		{"another tenant", caller("alice"), fault.New(fault.NotFound, `tenant "acme": not found`), nil, fault.NotFound, nil},
	} {
		s, g, p := trail(2), &gate{err: c.gate}, &checks{answers: c.answers}
		list, _, err := (&audit.Service{Store: s, Gate: g, Authz: p}).List(c.ctx, "acme", audit.Filter{}, paging.Page{})
		switch {
		case c.want == nil && (err != nil || len(list) != 2):
			t.Errorf("%s: %d entries, %v; want the trail", c.name, len(list), err)
		case c.want != nil && (!errors.Is(err, c.want) || len(s.asked) != 0):
			t.Errorf("%s: %v (store asked %d times), want %v before the store", c.name, err, len(s.asked), c.want)
		}
		if !slices.Equal(p.asked, c.asked) {
			t.Errorf("%s: the policy was asked %q, want %q", c.name, p.asked, c.asked)
		}
		if c.want == nil && (len(s.ctxs) == 0 || s.ctxs[0].Value(enteredKey{}) != "acme") {
			t.Errorf("%s: the store was asked outside the gate's context", c.name)
		}
		if wantGate := c.asked != nil || c.gate != nil; wantGate != (len(g.entered) == 1) {
			t.Errorf("%s: the gate was entered %v", c.name, g.entered)
		}
	}
	// The store's failure is answered as it is.
	broken := errors.New("connection reset")
	if _, _, err := (&audit.Service{Store: &memStore{err: broken}, Gate: &gate{}, Authz: authztest.AllowAll{}}).List(caller("alice"), "acme", audit.Filter{}, paging.Page{}); !errors.Is(err, broken) {
		t.Errorf("the store failing: %v", err)
	}
}
