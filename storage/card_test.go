package storage_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/storage"
	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/tenants"
)

func TestCardCreateGet(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) {
		t.Parallel()
		db := storagetest.Open(t, dialect)
		ctx := context.Background()
		s := storage.NewCardStore(db)
		newTenant(t, db, "acme")
		want := newCard("agt_1", 1)
		mustCreate(t, s, "acme", want)

		got, err := s.Get(ctx, "acme", "agt_1")
		if err != nil {
			t.Fatal(err)
		}
		want.CreatedAt, want.UpdatedAt = want.CreatedAt.UTC(), want.UpdatedAt.UTC()
		if !reflect.DeepEqual(got, want) {
			t.Errorf("Get = %+v\nwant %+v", got, want)
		}

		// A second card for the same agent is refused: TranslateError turned the driver's
		// unique violation into gorm.ErrDuplicatedKey, which the store maps.
		if _, err := s.Create(ctx, "acme", newCard("agt_1", 1)); !errors.Is(err, cards.ErrExists) {
			t.Errorf("duplicate Create = %v, want ErrExists", err)
		}
		if _, err := s.Get(ctx, "acme", "agt_missing"); !errors.Is(err, cards.ErrNotFound) {
			t.Errorf("Get missing = %v, want ErrNotFound", err)
		}
		// The foreign key refuses a card of a tenant that does not exist.
		// Not-found is one kind for tenants and cards: the message says the tenant is missing.
		if _, err := s.Create(ctx, "nope", newCard("agt_1", 1)); !errors.Is(err, tenants.ErrNotFound) || fault.MessageOf(err) != `tenant "nope": not found` {
			t.Errorf("Create in a missing tenant = %v, want tenants.ErrNotFound", err)
		}
	})
}

func TestCardReplace(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) {
		t.Parallel()
		db := storagetest.Open(t, dialect)
		ctx := context.Background()
		s := storage.NewCardStore(db)
		newTenant(t, db, "acme")
		mustCreate(t, s, "acme", newCard("agt_1", 1))

		c := newCard("agt_1", 2)
		c.Name = "Renamed"
		if err := s.Replace(ctx, "acme", c, 1); err != nil {
			t.Fatalf("Replace with the right revision: %v", err)
		}
		got, err := s.Get(ctx, "acme", "agt_1")
		if err != nil || got.Revision != 2 || got.Name != "Renamed" {
			t.Fatalf("after Replace: %+v, %v", got, err)
		}
		if err := s.Replace(ctx, "acme", newCard("agt_1", 3), 1); !errors.Is(err, cards.ErrStale) {
			t.Errorf("Replace with a stale revision = %v, want ErrStale", err)
		}
		if err := s.Replace(ctx, "acme", newCard("agt_missing", 2), 1); !errors.Is(err, cards.ErrNotFound) {
			t.Errorf("Replace missing = %v, want ErrNotFound", err)
		}
		// Writing the same values again (MySQL reports 0 changed rows) is still a success.
		if err := s.Replace(ctx, "acme", got, 2); err != nil {
			t.Errorf("Replace with unchanged values: %v", err)
		}
	})
}

// TestCardReplaceRefusesRecreatedCard: a writer that read a card at revision 1 must not
// overwrite another card of the same agent, created after the first was deleted and also at
// revision 1; the write is stale, and the new card and the change feed stay as they were.
func TestCardReplaceRefusesRecreatedCard(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) {
		t.Parallel()
		db := storagetest.Open(t, dialect)
		ctx := context.Background()
		s := storage.NewCardStore(db)
		newTenant(t, db, "acme")
		first := newCard("agt", 1)
		first.ID = "11111111-1111-4111-8111-111111111111"
		mustCreate(t, s, "acme", first)
		read, err := s.Get(ctx, "acme", "agt") // a PATCH reads the first card
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Delete(ctx, "acme", "agt", 0); err != nil {
			t.Fatal(err)
		}
		second := newCard("agt", 1)
		second.ID, second.Name = "22222222-2222-4222-8222-222222222222", "Second"
		mustCreate(t, s, "acme", second)
		before, err := s.LastSeq(ctx, "acme")
		if err != nil {
			t.Fatal(err)
		}

		patched := read
		patched.Revision, patched.Name = read.Revision+1, "Patched first"
		if err := s.Replace(ctx, "acme", patched, read.Revision); !errors.Is(err, cards.ErrStale) {
			t.Fatalf("Replace of the first card over the second = %v, want ErrStale", err)
		}
		got, err := s.Get(ctx, "acme", "agt")
		// The second card goes on from the first's revision (1), so the revision alone tells
		// them apart too; the id check stands all the same.
		if err != nil || got.ID != second.ID || got.Revision != 2 || got.Name != "Second" {
			t.Fatalf("after the refused Replace: %+v, %v", got, err)
		}
		if after, err := s.LastSeq(ctx, "acme"); err != nil || after != before {
			t.Fatalf("the change feed moved from %d to %d (%v)", before, after, err)
		}
	})
}

// TestCardRevisionsNeverRepeat: a card registered again under an agent id whose card was
// deleted goes on from the deleted card's last revision, alone or in a batch, and a deleted
// tenant takes its tombstones with it.
func TestCardRevisionsNeverRepeat(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) {
		t.Parallel()
		db := storagetest.Open(t, dialect)
		ctx := context.Background()
		s := storage.NewCardStore(db)
		newTenant(t, db, "acme")
		create := func(id string) int64 {
			t.Helper()
			rev, err := s.Create(ctx, "acme", newCard(id, 1))
			if err != nil {
				t.Fatal(err)
			}
			return rev
		}
		if rev := create("agt"); rev != 1 {
			t.Fatalf("a new agent id's card: revision %d, want 1", rev)
		}
		c, err := s.Get(ctx, "acme", "agt")
		if err != nil {
			t.Fatal(err)
		}
		for r := int64(2); r <= 3; r++ {
			c.Revision = r
			if err := s.Replace(ctx, "acme", c, r-1); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Delete(ctx, "acme", "agt", 0); err != nil {
			t.Fatal(err)
		}
		if rev := create("agt"); rev != 4 {
			t.Fatalf("registered again after revision 3 was deleted: revision %d, want 4", rev)
		}
		if got, err := s.Get(ctx, "acme", "agt"); err != nil || got.Revision != 4 {
			t.Fatalf("stored at %d (%v), want 4", got.Revision, err)
		}
		if err := s.Delete(ctx, "acme", "agt", 4); err != nil {
			t.Fatal(err)
		}
		create("other")
		if err := s.Delete(ctx, "acme", "other", 0); err != nil {
			t.Fatal(err)
		}
		batch := prepared(t, newCard("new", 1), newCard("agt", 1), newCard("other", 1))
		if err := s.CreateMany(ctx, "acme", batch); err != nil {
			t.Fatal(err)
		}
		for i, want := range []int64{1, 5, 2} {
			got, err := s.Get(ctx, "acme", batch[i].Card.AgentID)
			if err != nil || got.Revision != want || batch[i].Card.Revision != want {
				t.Errorf("batch card %s: stored at %d (%v), given %d; want %d", batch[i].Card.AgentID, got.Revision, err, batch[i].Card.Revision, want)
			}
		}
		// A tenant deleted and created again starts afresh.
		if err := storage.NewTenantStore(db).Delete(ctx, "acme"); err != nil {
			t.Fatal(err)
		}
		newTenant(t, db, "acme")
		if rev := create("agt"); rev != 1 {
			t.Fatalf("in a tenant created again: revision %d, want 1", rev)
		}
	})
}

func TestCardDelete(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) {
		t.Parallel()
		db := storagetest.Open(t, dialect)
		ctx := context.Background()
		s := storage.NewCardStore(db)
		newTenant(t, db, "acme")
		mustCreate(t, s, "acme", newCard("agt_1", 1))
		mustCreate(t, s, "acme", newCard("agt_2", 1))

		if err := s.Delete(ctx, "acme", "agt_1", 2); !errors.Is(err, cards.ErrStale) {
			t.Errorf("Delete with a stale revision = %v, want ErrStale", err)
		}
		if err := s.Delete(ctx, "acme", "agt_1", 1); err != nil {
			t.Errorf("Delete with the right revision: %v", err)
		}
		if err := s.Delete(ctx, "acme", "agt_2", 0); err != nil {
			t.Errorf("Delete with any revision: %v", err)
		}
		for _, id := range []string{"agt_1", "agt_2"} {
			if _, err := s.Get(ctx, "acme", id); !errors.Is(err, cards.ErrNotFound) {
				t.Errorf("Get %s after Delete = %v, want ErrNotFound", id, err)
			}
			if err := s.Delete(ctx, "acme", id, 0); !errors.Is(err, cards.ErrNotFound) {
				t.Errorf("Delete %s again = %v, want ErrNotFound", id, err)
			}
		}
	})
}

func TestCardTenantIsolation(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) {
		t.Parallel()
		db := storagetest.Open(t, dialect)
		ctx := context.Background()
		s := storage.NewCardStore(db)
		newTenant(t, db, "a")
		newTenant(t, db, "b")
		mustCreate(t, s, "a", newCard("agt_x", 1))

		if _, err := s.Get(ctx, "b", "agt_x"); !errors.Is(err, cards.ErrNotFound) {
			t.Errorf("Get through b = %v, want ErrNotFound", err)
		}
		if err := s.Replace(ctx, "b", newCard("agt_x", 2), 1); !errors.Is(err, cards.ErrNotFound) {
			t.Errorf("Replace through b = %v, want ErrNotFound", err)
		}
		if err := s.Delete(ctx, "b", "agt_x", 0); !errors.Is(err, cards.ErrNotFound) {
			t.Errorf("Delete through b = %v, want ErrNotFound", err)
		}
		if ids, err := s.IDs(ctx, "b"); err != nil || len(ids) != 0 {
			t.Errorf("IDs of b = %v, %v; want none", ids, err)
		}
		if got, err := s.GetMany(ctx, "b", []string{"agt_x"}); err != nil || len(got) != 0 {
			t.Errorf("GetMany through b = %v, %v; want none", got, err)
		}
		// b may have its own agt_x, independent of a's.
		other := newCard("agt_x", 1)
		other.Name = "b's"
		mustCreate(t, s, "b", other)
		if got, err := s.Get(ctx, "a", "agt_x"); err != nil || got.Name != "Agent agt_x" || got.Revision != 1 {
			t.Errorf("a's card after b wrote its own: %+v, %v", got, err)
		}
	})
}

func TestCardIDsByteOrder(t *testing.T) {
	// Versions reads 3 a query here: 9 cards below, over 4 queries (the last one empty).
	t.Cleanup(storage.SetVersionsPage(3))
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) {
		t.Parallel()
		db := storagetest.Open(t, dialect)
		ctx := context.Background()
		s := storage.NewCardStore(db)
		newTenant(t, db, "acme")
		ids := []string{"b", "agent", "B", "a", "Agent", "Z9", "0x", "a.b", "a-b", "a_b"}
		for _, id := range ids {
			mustCreate(t, s, "acme", newCard(id, 1))
		}
		got, err := s.IDs(ctx, "acme")
		if err != nil {
			t.Fatal(err)
		}
		want := slices.Clone(ids)
		slices.Sort(want) // byte order: "B" < "a" < "b"
		if !slices.Equal(got, want) {
			t.Errorf("IDs = %v, want %v", got, want)
		}
		// Versions lists the same cards in the same order, each at its revision and with its id,
		// a page at a time.
		if err := s.Replace(ctx, "acme", newCard("a", 2), 1); err != nil {
			t.Fatal(err)
		}
		if err := s.Delete(ctx, "acme", "Z9", 0); err != nil {
			t.Fatal(err)
		}
		vs, err := s.Versions(ctx, "acme")
		if err != nil {
			t.Fatal(err)
		}
		want = slices.DeleteFunc(want, func(id string) bool { return id == "Z9" })
		if len(vs) != len(want) {
			t.Fatalf("Versions = %+v, want the cards %v", vs, want)
		}
		for i, v := range vs {
			rev := int64(1)
			if v.AgentID == "a" {
				rev = 2
			}
			if v.AgentID != want[i] || v.ID != newCard(want[i], 1).ID || v.Revision != rev {
				t.Errorf("Versions[%d] = %+v, want %s at revision %d", i, v, want[i], rev)
			}
		}
		// Documents pages through the same cards in the same order, each the card Get reads once
		// decoded; another tenant's cards are not listed.
		newTenant(t, db, "other")
		mustCreate(t, s, "other", newCard("a0", 1))
		var docs []cards.Stored
		for after := ""; ; {
			page, err := s.Documents(ctx, "acme", after, 4)
			if err != nil {
				t.Fatal(err)
			}
			docs = append(docs, page...)
			if len(page) < 4 {
				break
			}
			after = page[len(page)-1].AgentID
		}
		if len(docs) != len(want) {
			t.Fatalf("Documents listed %d cards, want %v", len(docs), want)
		}
		for i, d := range docs {
			got, err := d.Card()
			if err != nil {
				t.Fatal(err)
			}
			stored, err := s.Get(ctx, "acme", want[i])
			if err != nil {
				t.Fatal(err)
			}
			if d.AgentID != want[i] || !reflect.DeepEqual(got, stored) {
				t.Errorf("Documents[%d] = %+v, decoded %+v; want %+v", i, d, got, stored)
			}
		}
		// "Agent" and "agent" are two cards (no case-insensitive collation anywhere).
		c, err := s.Get(ctx, "acme", "Agent")
		if err != nil || c.AgentID != "Agent" || c.Name != "Agent Agent" {
			t.Errorf("Get Agent = %+v, %v", c, err)
		}
		c, err = s.Get(ctx, "acme", "agent")
		if err != nil || c.AgentID != "agent" || c.Name != "Agent agent" {
			t.Errorf("Get agent = %+v, %v", c, err)
		}
		if _, err := s.Get(ctx, "acme", "AGENT"); !errors.Is(err, cards.ErrNotFound) {
			t.Errorf("Get AGENT = %v, want ErrNotFound", err)
		}
	})
}

func TestCardGetManyOrder(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) {
		t.Parallel()
		db := storagetest.Open(t, dialect)
		ctx := context.Background()
		s := storage.NewCardStore(db)
		newTenant(t, db, "acme")
		for _, id := range []string{"a", "b", "c"} {
			mustCreate(t, s, "acme", newCard(id, 1))
		}
		got, err := s.GetMany(ctx, "acme", []string{"c", "a", "missing", "b"})
		if err != nil {
			t.Fatal(err)
		}
		var order []string
		for _, c := range got {
			order = append(order, c.AgentID)
		}
		if !slices.Equal(order, []string{"c", "a", "b"}) {
			t.Errorf("GetMany order = %v, want [c a b]", order)
		}
		if got, err := s.GetMany(ctx, "acme", nil); err != nil || len(got) != 0 {
			t.Errorf("GetMany(nil) = %v, %v", got, err)
		}
	})
}

func TestCardChangeFeed(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) {
		t.Parallel()
		db := storagetest.Open(t, dialect)
		ctx := context.Background()
		s := storage.NewCardStore(db)
		newTenant(t, db, "acme")
		mustCreate(t, s, "acme", newCard("agt_1", 1))
		if err := s.Replace(ctx, "acme", newCard("agt_1", 2), 1); err != nil {
			t.Fatal(err)
		}
		// Failed writes record nothing.
		_ = s.Replace(ctx, "acme", newCard("agt_1", 9), 1)
		_, _ = s.Create(ctx, "acme", newCard("agt_1", 1))
		if err := s.Delete(ctx, "acme", "agt_1", 0); err != nil {
			t.Fatal(err)
		}
		got := changes(t, db)
		want := []change{
			{Tenant: "acme", Agent: "agt_1", Op: "create", Revision: 1},
			{Tenant: "acme", Agent: "agt_1", Op: "update", Revision: 2},
			{Tenant: "acme", Agent: "agt_1", Op: "delete", Revision: 2},
		}
		if len(got) != len(want) {
			t.Fatalf("changes = %+v, want %+v", got, want)
		}
		for i := range want {
			if i > 0 && got[i].Seq <= got[i-1].Seq {
				t.Errorf("seq not increasing: %+v", got)
			}
			want[i].Seq = got[i].Seq
			if got[i] != want[i] {
				t.Errorf("change %d = %+v, want %+v", i, got[i], want[i])
			}
		}
	})
}

func TestCardLargeDocument(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) {
		t.Parallel()
		db := storagetest.Open(t, dialect)
		ctx := context.Background()
		s := storage.NewCardStore(db)
		newTenant(t, db, "acme")
		c := newCard("agt_big", 1)
		big, _ := json.Marshal(map[string]string{"blob": strings.Repeat("é0123456789", 200<<10/12)})
		c.Metadata = big
		if doc, _ := cards.MarshalDocument(c); len(doc) < 200<<10 {
			t.Fatalf("document is only %d bytes", len(doc))
		}
		mustCreate(t, s, "acme", c)
		got, err := s.Get(ctx, "acme", "agt_big")
		if err != nil {
			t.Fatal(err)
		}
		if string(got.Metadata) != string(big) {
			t.Errorf("metadata of %d bytes came back as %d bytes", len(big), len(got.Metadata))
		}
	})
}

func TestCardTimestamps(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) {
		t.Parallel()
		db := storagetest.Open(t, dialect)
		ctx := context.Background()
		s := storage.NewCardStore(db)
		newTenant(t, db, "acme")
		c := newCard("agt_t", 1)
		c.CreatedAt = time.Date(2024, 2, 29, 23, 59, 59, 999999000, time.FixedZone("UTC-7", -7*3600))
		c.UpdatedAt = time.Date(2038, 1, 19, 3, 14, 8, 1000, time.UTC) // past the 32-bit limit
		mustCreate(t, s, "acme", c)
		got, err := s.Get(ctx, "acme", "agt_t")
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []struct{ got, want time.Time }{{got.CreatedAt, c.CreatedAt}, {got.UpdatedAt, c.UpdatedAt}} {
			if !p.got.Equal(p.want) || p.got.Location() != time.UTC {
				t.Errorf("time %v came back as %v", p.want, p.got)
			}
		}
	})
}

func TestCardConcurrentReplace(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) {
		t.Parallel()
		db := storagetest.Open(t, dialect)
		ctx := context.Background()
		s := storage.NewCardStore(db)
		newTenant(t, db, "acme")
		mustCreate(t, s, "acme", newCard("agt_1", 1))

		const writers = 20
		errs := make([]error, writers)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range writers {
			wg.Go(func() {
				c := newCard("agt_1", 2)
				c.Description = strings.Repeat("x", i)
				<-start
				errs[i] = s.Replace(ctx, "acme", c, 1)
			})
		}
		close(start)
		wg.Wait()
		ok, stale := 0, 0
		for _, err := range errs {
			switch {
			case err == nil:
				ok++
			case errors.Is(err, cards.ErrStale):
				stale++
			default:
				t.Errorf("Replace: %v", err)
			}
		}
		if ok != 1 || stale != writers-1 {
			t.Errorf("%d succeeded and %d were stale; want 1 and %d", ok, stale, writers-1)
		}
		updates := 0
		for _, c := range changes(t, db) {
			if c.Op == "update" {
				updates++
			}
		}
		if updates != 1 {
			t.Errorf("%d update changes recorded, want 1", updates)
		}
	})
}

// TestCardConcurrentDelete races writers that read before they write: on SQLite this only works
// with immediate transactions, since a deferred one cannot upgrade its read lock in WAL mode.
func TestCardConcurrentDelete(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) {
		t.Parallel()
		db := storagetest.Open(t, dialect)
		ctx := context.Background()
		s := storage.NewCardStore(db)
		newTenant(t, db, "acme")
		const rounds, writers = 10, 10
		for round := range rounds {
			id := fmt.Sprintf("agt_%d", round)
			mustCreate(t, s, "acme", newCard(id, 1))
			errs := make([]error, writers)
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i := range writers {
				wg.Go(func() {
					<-start
					errs[i] = s.Delete(ctx, "acme", id, 1)
				})
			}
			close(start)
			wg.Wait()
			ok := 0
			for _, err := range errs {
				switch {
				case err == nil:
					ok++
				case !errors.Is(err, cards.ErrNotFound):
					t.Errorf("Delete: %v", err)
				}
			}
			if ok != 1 {
				t.Errorf("%d deletes of %s succeeded, want 1", ok, id)
			}
		}
	})
}

// setChangedAt dates the change-feed entries of tenant's agent at.
func setChangedAt(t *testing.T, db *storage.DB, tenant tenants.ID, agent string, at time.Time) {
	t.Helper()
	query := "UPDATE card_changes SET changed_at = ? WHERE tenant_id = ? AND agent_id = ?"
	if db.Dialect() == "postgres" {
		query = "UPDATE card_changes SET changed_at = $1 WHERE tenant_id = $2 AND agent_id = $3"
	}
	if _, err := db.SQL().Exec(query, at.UTC(), string(tenant), agent); err != nil {
		t.Fatal(err)
	}
}

// TestPruneChanges: PruneChanges deletes the tenant's entries written strictly before the time
// given, to the microsecond and whatever its zone, keeps the others and every other tenant's,
// and reports how many it deleted.
func TestPruneChanges(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) {
		t.Parallel()
		db := storagetest.Open(t, dialect)
		ctx := context.Background()
		store := storage.NewCardStore(db)
		newTenant(t, db, "a", "alice")
		newTenant(t, db, "b", "bob")
		newTenant(t, db, "c", "carol")
		cut := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
		// In time order, so that the last entry written is also the latest.
		entries := []struct {
			agent string
			at    time.Time
		}{
			{"day-before", cut.Add(-24 * time.Hour)},
			{"just-before", cut.Add(-time.Microsecond)},
			{"at", cut},
			{"just-after", cut.Add(time.Microsecond)},
			{"half-after", cut.Add(500 * time.Millisecond)},
		}
		for _, tenant := range []tenants.ID{"a", "b"} {
			for _, e := range entries {
				mustCreate(t, store, tenant, newCard(e.agent, 1))
				setChangedAt(t, db, tenant, e.agent, e.at)
			}
		}
		left := func(tenant string) string {
			var agents []string
			for _, c := range changes(t, db) {
				if c.Tenant == tenant {
					agents = append(agents, c.Agent)
				}
			}
			slices.Sort(agents)
			return strings.Join(agents, " ")
		}
		const all, kept = "at day-before half-after just-after just-before", "at half-after just-after"
		lastA, err := store.LastSeq(ctx, "a")
		if err != nil {
			t.Fatal(err)
		}
		if n, err := store.PruneChanges(ctx, "a", cut); err != nil || n != 2 {
			t.Fatalf("pruned %d of a, %v; want 2", n, err)
		}
		if got := left("a"); got != kept {
			t.Errorf("a keeps %q, want %q", got, kept)
		}
		if got := left("b"); got != all {
			t.Errorf("pruning a changed b: %q", got)
		}
		if n, err := store.PruneChanges(ctx, "a", cut); err != nil || n != 0 {
			t.Errorf("pruning a again: %d, %v; want 0", n, err)
		}
		// The same instant in another zone.
		if n, err := store.PruneChanges(ctx, "b", cut.In(fixed.Location())); err != nil || n != 2 {
			t.Fatalf("pruned %d of b, %v; want 2", n, err)
		}
		if got := left("b"); got != kept {
			t.Errorf("b keeps %q, want %q", got, kept)
		}
		if n, err := store.PruneChanges(ctx, "c", cut.Add(time.Hour)); err != nil || n != 0 {
			t.Errorf("pruning c, which has no entries: %d, %v", n, err)
		}
		// Pruning keeps the newest entry, and so the tenant's last sequence number.
		if last, err := store.LastSeq(ctx, "a"); err != nil || last != lastA {
			t.Errorf("LastSeq of a after pruning: %d, %v; want %d", last, err, lastA)
		}
	})
}
