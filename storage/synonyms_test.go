package storage_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/storage"
	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/tenants"
	"github.com/agentcards/agentcards/tenants/audit"
)

// setIDs are the ids of sets, in their order, each with its words: "id=w1,w2".
func setIDs(sets []tenants.SynonymSet) []string {
	out := make([]string, len(sets))
	for i, s := range sets {
		out[i] = s.ID + "=" + strings.Join(s.Words, ",")
	}
	return out
}

// TestSynonymsPutAndRemove: a put creates a set or replaces the set of its id, stamped with the
// time it was written; every read of the tenant row (Get, List) returns the sets in id order;
// a remove takes one away, and a missing set or tenant is not found. Each write leaves its
// audit entry, a refused one none, and the other tenant's sets stay as they were.
func TestSynonymsPutAndRemove(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) {
		t.Parallel()
		db := storagetest.Open(t, dialect)
		s := storage.NewTenantStore(db)
		newTenant(t, db, "a", "alice")
		newTenant(t, db, "b", "alice")
		ctx := asAlice("synonyms.put")
		before := time.Now().Add(-time.Second)
		for _, set := range []tenants.SynonymSet{
			{ID: "l10n", Words: []string{"translation", "localization", "i18n"}},
			{ID: "cr", Words: []string{"code review", "pull request review"}},
			{ID: "l10n", Words: []string{"translation", "localisation"}},
		} {
			got, err := s.PutSynonyms(ctx, "a", set)
			if err != nil {
				t.Fatal(err)
			}
			if got.ID != set.ID || !slices.Equal(got.Words, set.Words) || got.UpdatedAt.Before(before) || got.UpdatedAt.Location() != time.UTC {
				t.Errorf("PutSynonyms(%s) answered %+v", set.ID, got)
			}
		}
		if _, err := s.PutSynonyms(ctx, "b", tenants.SynonymSet{ID: "zz", Words: []string{"x", "y"}}); err != nil {
			t.Fatal(err)
		}
		want := []string{"cr=code review,pull request review", "l10n=translation,localisation"}
		got, err := s.Get(ctx, "a")
		if err != nil || !slices.Equal(setIDs(got.Synonyms), want) {
			t.Errorf("Get: %q, %v; want %q", setIDs(got.Synonyms), err, want)
		}
		list, err := s.List(ctx)
		if err != nil || len(list) != 2 || !slices.Equal(setIDs(list[0].Synonyms), want) || !slices.Equal(setIDs(list[1].Synonyms), []string{"zz=x,y"}) {
			t.Errorf("List: %+v, %v", list, err)
		}

		// Removing.
		if err := s.RemoveSynonyms(asAlice("synonyms.remove"), "a", "cr"); err != nil {
			t.Fatal(err)
		}
		if err := s.RemoveSynonyms(asAlice("synonyms.remove"), "a", "cr"); !errors.Is(err, fault.NotFound) {
			t.Errorf("RemoveSynonyms of a missing set = %v, want not found", err)
		}
		if err := s.RemoveSynonyms(asAlice("synonyms.remove"), "nope", "cr"); !errors.Is(err, fault.NotFound) {
			t.Errorf("RemoveSynonyms in a missing tenant = %v, want not found", err)
		}
		if _, err := s.PutSynonyms(ctx, "nope", tenants.SynonymSet{ID: "x", Words: []string{"x", "y"}}); !errors.Is(err, fault.NotFound) {
			t.Errorf("PutSynonyms in a missing tenant = %v, want not found", err)
		}
		if got, err := s.Get(ctx, "a"); err != nil || !slices.Equal(setIDs(got.Synonyms), want[1:]) {
			t.Errorf("after the remove: %q, %v", setIDs(got.Synonyms), err)
		}
		if got, err := s.Get(ctx, "b"); err != nil || !slices.Equal(setIDs(got.Synonyms), []string{"zz=x,y"}) {
			t.Errorf("the other tenant's: %q, %v", setIDs(got.Synonyms), err)
		}
		if err := s.RemoveSynonyms(asAlice("synonyms.remove"), "a", "l10n"); err != nil {
			t.Fatal(err)
		}
		if got, err := s.Get(ctx, "a"); err != nil || got.Synonyms != nil {
			t.Errorf("after removing every set: %+v, %v", got.Synonyms, err)
		}

		wantTrail := []string{
			"alice synonyms.put synonyms/l10n 0→0 ok",
			"alice synonyms.put synonyms/cr 0→0 ok",
			"alice synonyms.put synonyms/l10n 0→0 ok",
			"alice synonyms.remove synonyms/cr 0→0 ok",
			"alice synonyms.remove synonyms/l10n 0→0 ok",
		}
		if got := trail(t, db, "a"); !slices.Equal(got[len(got)-len(wantTrail):], wantTrail) {
			t.Errorf("trail:\n got %q\nwant it to end with %q", got, wantTrail)
		}
		entries, err := storage.NewAuditStore(db).List(context.Background(), "a", audit.Filter{ObjectPrefix: "synonyms/"})
		if err != nil {
			t.Fatal(err)
		}
		var details []string
		for _, e := range entries {
			details = append(details, e.Detail)
		}
		wantDetails := []string{"removed: translation, localisation", "removed: code review, pull request review",
			"replaced: translation, localisation", "created: code review, pull request review", "created: translation, localization, i18n"}
		if !slices.Equal(details, wantDetails) {
			t.Errorf("details, newest first:\n got %q\nwant %q", details, wantDetails)
		}
	})
}

// TestSynonymsBound: a tenant holding MaxSynonymSets sets is refused another (conflict, nothing
// written), while a set it has may still be replaced.
func TestSynonymsBound(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) {
		t.Parallel()
		db := storagetest.Open(t, dialect)
		s := storage.NewTenantStore(db)
		newTenant(t, db, "a", "alice")
		full := make([]tenants.SynonymSet, tenants.MaxSynonymSets)
		for i := range full {
			full[i] = tenants.SynonymSet{ID: fmt.Sprintf("s%03d", i), Words: []string{"w" + fmt.Sprint(i), "v"}, UpdatedAt: fixed.UTC()}
		}
		b, err := json.Marshal(full)
		if err != nil {
			t.Fatal(err)
		}
		// The JSON of plain ids and words has no quote to escape in SQL.
		if _, err := db.SQL().Exec(`UPDATE tenants SET synonyms = '` + string(b) + `' WHERE tenant_id = 'a'`); err != nil {
			t.Fatal(err)
		}
		ctx := asAlice("synonyms.put")
		_, err = s.PutSynonyms(ctx, "a", tenants.SynonymSet{ID: "one-more", Words: []string{"x", "y"}})
		if !errors.Is(err, fault.Conflict) || !strings.Contains(fault.MessageOf(err), "500") {
			t.Errorf("a set past the bound = %v (%q), want conflict naming the bound", err, fault.MessageOf(err))
		}
		if _, err := s.PutSynonyms(ctx, "a", tenants.SynonymSet{ID: "s007", Words: []string{"x", "y"}}); err != nil {
			t.Errorf("replacing a set at the bound: %v", err)
		}
		got, err := s.Get(ctx, "a")
		if err != nil || len(got.Synonyms) != tenants.MaxSynonymSets || got.Synonyms[7].Words[0] != "x" || got.Synonyms[8].Words[0] != "w8" {
			t.Errorf("after: %d sets, %v", len(got.Synonyms), err)
		}
		if n := len(trail(t, db, "a")); n != 2 { // the tenant's creation and the replace
			t.Errorf("%d entries in the trail, want 2", n)
		}
	})
}

// TestSynonymsBytesBound: the sets together take at most MaxSynonymBytes as stored: a put past
// it is a conflict, nothing written; a put that shrinks them is taken.
func TestSynonymsBytesBound(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) {
		t.Parallel()
		db := storagetest.Open(t, dialect)
		s := storage.NewTenantStore(db)
		newTenant(t, db, "a", "alice")
		ctx := asAlice("synonyms.put")
		big := func(id string) tenants.SynonymSet {
			set := tenants.SynonymSet{ID: id}
			for j := range tenants.MaxSynonymWords {
				set.Words = append(set.Words, fmt.Sprintf("%s<&>%02d-", id, j)+strings.Repeat("x", tenants.MaxSynonymWordBytes-12))
			}
			return set
		}
		var err error
		n := 0
		for ; err == nil && n < 200; n++ {
			_, err = s.PutSynonyms(ctx, "a", big(fmt.Sprintf("s%03d", n)))
		}
		if !errors.Is(err, fault.Conflict) || !strings.Contains(fault.MessageOf(err), fmt.Sprint(tenants.MaxSynonymBytes)) {
			t.Fatalf("after %d sets of %d long words: %v (%q), want conflict naming the bound", n, tenants.MaxSynonymWords, err, fault.MessageOf(err))
		}
		// About 3.3 kB a set, with <, & and > written as they are.
		if want := tenants.MaxSynonymBytes / (tenants.MaxSynonymWords * (tenants.MaxSynonymWordBytes + 3)); n-1 < want-1 || n-1 > want+1 {
			t.Errorf("%d sets taken, want about %d", n-1, want)
		}
		got, err := s.Get(ctx, "a")
		if err != nil || len(got.Synonyms) != n-1 {
			t.Fatalf("after the refusal: %d sets, %v", len(got.Synonyms), err)
		}
		if _, err := s.PutSynonyms(ctx, "a", tenants.SynonymSet{ID: "s000", Words: []string{"x", "y"}}); err != nil {
			t.Errorf("shrinking a set past the bound: %v", err)
		}
	})
}

// TestSynonymsConcurrentPuts: puts of different sets at once are all kept; none overwrites
// another's with the list it read before.
func TestSynonymsConcurrentPuts(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) {
		t.Parallel()
		db := storagetest.Open(t, dialect)
		s := storage.NewTenantStore(db)
		newTenant(t, db, "a", "alice")
		const n = 8
		var wg sync.WaitGroup
		errs := make(chan error, n)
		start := make(chan struct{})
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				_, err := s.PutSynonyms(asAlice("synonyms.put"), "a", tenants.SynonymSet{ID: fmt.Sprintf("set%d", i), Words: []string{"a", "b"}})
				errs <- err
			}()
		}
		close(start)
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Error(err)
			}
		}
		got, err := s.Get(context.Background(), "a")
		if err != nil || len(got.Synonyms) != n {
			t.Fatalf("%d sets kept of %d (%v): %q", len(got.Synonyms), n, err, setIDs(got.Synonyms))
		}
		for i, set := range got.Synonyms {
			if set.ID != fmt.Sprintf("set%d", i) {
				t.Errorf("set %d is %s: not in id order", i, set.ID)
			}
		}
	})
}

// TestSynonymsSharedBetweenReads: reads of a tenant row whose sets did not change answer the same
// sets (so the search compiles them once); a change answers new ones.
func TestSynonymsSharedBetweenReads(t *testing.T) {
	db := storagetest.Open(t, "sqlite")
	s := storage.NewTenantStore(db)
	newTenant(t, db, "shared", "alice")
	ctx := asAlice("synonyms.put")
	if _, err := s.PutSynonyms(ctx, "shared", tenants.SynonymSet{ID: "k8s", Words: []string{"kubernetes", "k8s"}}); err != nil {
		t.Fatal(err)
	}
	read := func() []tenants.SynonymSet {
		got, err := s.Get(ctx, "shared")
		if err != nil || len(got.Synonyms) == 0 {
			t.Fatal(got, err)
		}
		return got.Synonyms
	}
	first, second := read(), read()
	if &first[0] != &second[0] {
		t.Error("two reads of the same sets decoded them twice")
	}
	if _, err := s.PutSynonyms(ctx, "shared", tenants.SynonymSet{ID: "k8s", Words: []string{"kubernetes", "k8s", "kube"}}); err != nil {
		t.Fatal(err)
	}
	if third := read(); &third[0] == &first[0] || len(third[0].Words) != 3 || len(first[0].Words) != 2 {
		t.Errorf("after a change: %+v, before %+v", third, first)
	}
}
