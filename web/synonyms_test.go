package web_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentcards/agentcards/tenants"
)

// synonymList is the answer of GET .../synonyms.
type synonymList struct {
	Items []tenants.SynonymSet `json:"items"`
	Total int                  `json:"total"`
}

// listSynonyms reads the tenant's sets as tok sees them, failing on anything but 200.
func (e *env) listSynonyms(t *testing.T, tenant, tok string) synonymList {
	t.Helper()
	r := e.do("GET", "/v1/tenants/"+tenant+"/synonyms", tok, nil)
	expect(t, r, http.StatusOK)
	var l synonymList
	r.json(t, &l)
	return l
}

// words are the sets of l as "id=w1,w2", in their order.
func (l synonymList) words() []string {
	out := make([]string, len(l.Items))
	for i, s := range l.Items {
		out[i] = s.ID + "=" + strings.Join(s.Words, ",")
	}
	return out
}

// TestSynonymsRequests: an admin puts, replaces, lists and removes sets; the writer's next read
// sees each write at once (the gate's cached row is dropped); a reader lists them, a member
// without cards:read may not.
func TestSynonymsRequests(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		e.mkTenant("acme", "alice")
		alice, bob, carol := e.token("alice", "acme", false), e.token("bob", "acme", false), e.token("carol", "acme", false)
		expect(t, e.do("POST", "/v1/tenants/acme/roles", alice, map[string]string{"subject": "bob", "role": "reader"}), http.StatusCreated)

		// An empty list is an empty array; reading it also puts the row in the gate's cache.
		if r := e.do("GET", "/v1/tenants/acme/synonyms", alice, nil); r.status != http.StatusOK || string(r.body) != `{"items":[],"total":0}`+"\n" {
			t.Fatalf("empty list: %d %s", r.status, r.body)
		}
		start := time.Now().Add(-time.Second)
		r := e.do("PUT", "/v1/tenants/acme/synonyms/l10n", alice, map[string]any{"words": []string{" translation ", "localization", "i18n"}})
		expect(t, r, http.StatusOK)
		var set tenants.SynonymSet
		r.json(t, &set)
		if set.ID != "l10n" || !slices.Equal(set.Words, []string{"translation", "localization", "i18n"}) || set.UpdatedAt.Before(start) {
			t.Errorf("put answered %+v", set)
		}
		if got := e.listSynonyms(t, "acme", alice); got.Total != 1 || !slices.Equal(got.words(), []string{"l10n=translation,localization,i18n"}) {
			t.Errorf("after the put: %+v", got)
		}
		expect(t, e.do("PUT", "/v1/tenants/acme/synonyms/cr", alice, map[string]any{"words": []string{"code review", "pull request review"}}), http.StatusOK)
		expect(t, e.do("PUT", "/v1/tenants/acme/synonyms/l10n", alice, map[string]any{"words": []string{"translation", "Localisation"}}), http.StatusOK)
		want := []string{"cr=code review,pull request review", "l10n=translation,Localisation"}
		if got := e.listSynonyms(t, "acme", alice); got.Total != 2 || !slices.Equal(got.words(), want) {
			t.Errorf("after the replace: %q, want %q", got.words(), want)
		}

		// Readers read them; a member who may read no card may not.
		if got := e.listSynonyms(t, "acme", bob); !slices.Equal(got.words(), want) {
			t.Errorf("as a reader: %q", got.words())
		}
		expect(t, e.do("GET", "/v1/tenants/acme/synonyms", carol, nil), http.StatusForbidden, "forbidden")
		// The platform admin may do all of it.
		if got := e.listSynonyms(t, "acme", e.admin()); !slices.Equal(got.words(), want) {
			t.Errorf("as the platform admin: %q", got.words())
		}

		expect(t, e.do("DELETE", "/v1/tenants/acme/synonyms/cr", alice, nil), http.StatusNoContent)
		expect(t, e.do("DELETE", "/v1/tenants/acme/synonyms/cr", alice, nil), http.StatusNotFound, "not_found")
		if got := e.listSynonyms(t, "acme", alice); !slices.Equal(got.words(), want[1:]) {
			t.Errorf("after the remove: %q", got.words())
		}

		// The trail has each write.
		var trail struct {
			Items []struct{ Principal, Action, Object, Detail, Outcome string }
		}
		e.do("GET", "/v1/tenants/acme/audit?object=synonyms/", alice, nil).json(t, &trail)
		var got []string
		for _, it := range trail.Items {
			got = append(got, it.Principal+" "+it.Action+" "+it.Object+" "+it.Outcome)
		}
		wantTrail := []string{"alice synonyms.remove synonyms/cr ok", "alice synonyms.put synonyms/l10n ok",
			"alice synonyms.put synonyms/cr ok", "alice synonyms.put synonyms/l10n ok"}
		if !slices.Equal(got, wantTrail) {
			t.Errorf("trail: %q, want %q", got, wantTrail)
		}
	})
}

// TestSynonymsRefusals: every bad request answers the one error body with its status, a refused
// write is in the trail as refusals are, and nothing stored changes.
func TestSynonymsRefusals(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		e.mkTenant("acme", "alice")
		e.mkTenant("other", "olga")
		alice, bob := e.token("alice", "acme", false), e.token("bob", "acme", false)
		expect(t, e.do("POST", "/v1/tenants/acme/roles", alice, map[string]string{"subject": "bob", "role": "editor"}), http.StatusCreated)
		expect(t, e.do("PUT", "/v1/tenants/acme/synonyms/l10n", alice, map[string]any{"words": []string{"translation", "localization"}}), http.StatusOK)
		before := e.listSynonyms(t, "acme", alice)

		tooMany := make([]string, tenants.MaxSynonymWords+1)
		for i := range tooMany {
			tooMany[i] = "w" + strings.Repeat("x", i)
		}
		const path = "/v1/tenants/acme/synonyms/"
		for _, c := range []struct {
			name, method, path, tok string
			body                    any
			status                  int
			code                    string
		}{
			{"malformed JSON", "PUT", path + "l10n", alice, `{"words": ["a",`, http.StatusBadRequest, "malformed_json"},
			{"not an object", "PUT", path + "l10n", alice, `["a", "b"]`, http.StatusBadRequest, ""},
			{"an unknown member", "PUT", path + "l10n", alice, `{"words": ["a", "b"], "id": "l10n"}`, http.StatusBadRequest, ""},
			{"words a string", "PUT", path + "l10n", alice, `{"words": "a b"}`, http.StatusBadRequest, ""},
			{"words numbers", "PUT", path + "l10n", alice, `{"words": [1, 2]}`, http.StatusBadRequest, ""},
			{"no words", "PUT", path + "l10n", alice, `{}`, http.StatusBadRequest, "invalid"},
			{"one word", "PUT", path + "l10n", alice, map[string]any{"words": []string{"a"}}, http.StatusBadRequest, "invalid"},
			{"too many words", "PUT", path + "l10n", alice, map[string]any{"words": tooMany}, http.StatusBadRequest, "invalid"},
			{"an empty word", "PUT", path + "l10n", alice, map[string]any{"words": []string{"a", "  "}}, http.StatusBadRequest, "invalid"},
			{"a word too long", "PUT", path + "l10n", alice, map[string]any{"words": []string{"a", strings.Repeat("b", tenants.MaxSynonymWordBytes+1)}}, http.StatusBadRequest, "invalid"},
			{"a word twice", "PUT", path + "l10n", alice, map[string]any{"words": []string{"Go", "go"}}, http.StatusBadRequest, "invalid"},
			{"a bad id", "PUT", path + "L10N", alice, map[string]any{"words": []string{"a", "b"}}, http.StatusBadRequest, "invalid"},
			{"an id no set can have, to remove", "DELETE", path + "-x", alice, nil, http.StatusNotFound, "not_found"},
			{"no token", "PUT", path + "l10n", "", map[string]any{"words": []string{"a", "b"}}, http.StatusUnauthorized, "unauthorized"},
			{"an unknown tenant", "PUT", "/v1/tenants/nope/synonyms/l10n", e.admin(), map[string]any{"words": []string{"a", "b"}}, http.StatusNotFound, "not_found"},
			{"another's tenant", "PUT", "/v1/tenants/other/synonyms/l10n", alice, map[string]any{"words": []string{"a", "b"}}, http.StatusNotFound, "not_found"},
			{"another's tenant's list", "GET", "/v1/tenants/other/synonyms", alice, nil, http.StatusNotFound, "not_found"},
			{"an unknown set", "DELETE", path + "nope", alice, nil, http.StatusNotFound, "not_found"},
			{"forbidden", "PUT", path + "l10n", bob, map[string]any{"words": []string{"a", "b"}}, http.StatusForbidden, "forbidden"},
			{"forbidden remove", "DELETE", path + "l10n", bob, nil, http.StatusForbidden, "forbidden"},
		} {
			r := e.do(c.method, c.path, c.tok, c.body)
			if c.code == "" {
				if r.status != c.status {
					t.Errorf("%s: %d %s, want %d", c.name, r.status, r.body, c.status)
				}
				r.errCode(t) // the one error body
				continue
			}
			if r.status != c.status || r.errCode(t) != c.code {
				t.Errorf("%s: %d %s, want %d %s", c.name, r.status, r.body, c.status, c.code)
			}
		}
		if after := e.listSynonyms(t, "acme", alice); !slices.Equal(after.words(), before.words()) || !after.Items[0].UpdatedAt.Equal(before.Items[0].UpdatedAt) {
			t.Errorf("the refusals changed the sets: %+v, were %+v", after, before)
		}
		if got := e.listSynonyms(t, "other", e.admin()); got.Total != 0 {
			t.Errorf("the other tenant has sets: %+v", got)
		}

		// Bob's refusals are in the trail, as refused writes are; the rest wrote nothing.
		var trail struct {
			Items []struct{ Principal, Action, Object, Detail, Outcome string }
		}
		e.do("GET", "/v1/tenants/acme/audit?object=search", alice, nil).json(t, &trail)
		var got []string
		for _, it := range trail.Items {
			got = append(got, it.Principal+" "+it.Action+" "+it.Object+" "+it.Detail+" "+it.Outcome)
		}
		want := []string{"bob synonyms.remove search search:manage denied", "bob synonyms.put search search:manage denied"}
		if !slices.Equal(got, want) {
			t.Errorf("refusals in the trail: %q, want %q", got, want)
		}
		e.do("GET", "/v1/tenants/acme/audit?object=synonyms/", alice, nil).json(t, &trail)
		if len(trail.Items) != 1 {
			t.Errorf("%d writes of sets in the trail, want the one put: %+v", len(trail.Items), trail.Items)
		}
	})
}
