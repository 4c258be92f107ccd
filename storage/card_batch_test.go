package storage_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/storage"
	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/tenants"
)

// TestCreateMany: CreateMany stores every card of a batch larger than one statement takes (by
// the number of bind values, and by the bytes of large documents), each read back as it was
// written, with one create in the change feed per card in the batch's order; a batch with a card
// already registered, a card twice, or no tenant stores nothing and says why, naming the first
// registered card by its index.
func TestCreateMany(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) {
		t.Parallel()
		db := storagetest.Open(t, dialect)
		s := storage.NewCardStore(db)
		newTenant(t, db, "acme")
		mustCreate(t, s, "acme", newCard("taken1", 1))
		mustCreate(t, s, "acme", newCard("taken2", 1))
		feed := len(changes(t, db))

		batch, ids := largeBatch()
		if err := s.CreateMany(context.Background(), "acme", prepared(t, batch...)); err != nil {
			t.Fatalf("CreateMany(%d cards): %v", len(batch), err)
		}
		checkBatchReadBack(t, db, feed, batch, ids)
		checkBatchStored(t, db, dialect, batch, ids)
		checkBatchesRefused(t, db)
	})
}

// largeBatch answers 1300 cards agt_0000 to agt_1299, and their ids: more bind values than one
// statement takes, and thirteen documents of 200 kB, of which a statement takes a few at most.
func largeBatch() ([]cards.Card, []string) {
	batch := make([]cards.Card, 1300)
	ids := make([]string, len(batch))
	for i := range batch {
		c := newCard(fmt.Sprintf("agt_%04d", i), 1)
		if i%100 == 7 {
			c.Metadata = json.RawMessage(`{"blob":"` + strings.Repeat("x", 200<<10) + `"}`)
		}
		batch[i], ids[i] = c, c.AgentID
	}
	return batch, ids
}

// checkBatchReadBack checks that the batch reads back as written, and that the change feed,
// feed entries long before it, holds one create per card in the batch's order.
func checkBatchReadBack(t *testing.T, db *storage.DB, feed int, batch []cards.Card, ids []string) {
	got, err := storage.NewCardStore(db).GetMany(context.Background(), "acme", ids)
	if err != nil || len(got) != len(batch) {
		t.Fatalf("GetMany after CreateMany: %d cards, %v; want %d", len(got), err, len(batch))
	}
	for i, want := range batch {
		want.CreatedAt, want.UpdatedAt = want.CreatedAt.UTC(), want.UpdatedAt.UTC()
		if !reflect.DeepEqual(got[i], want) {
			t.Fatalf("card %d read back as %+v\nwant %+v", i, got[i], want)
		}
	}
	feedAfter := changes(t, db)
	if len(feedAfter) != feed+len(batch) {
		t.Fatalf("change feed: %d entries after the batch, want %d", len(feedAfter), feed+len(batch))
	}
	for i, c := range feedAfter[feed:] {
		if c.Tenant != "acme" || c.Agent != ids[i] || c.Op != "create" || c.Revision != 1 {
			t.Fatalf("change feed entry %d of the batch: %+v, want a create of %s at revision 1", i, c, ids[i])
		}
	}
}

// checkBatchStored checks the batch as stored: each document text, byte for byte as validation
// encoded it (SQLite binds it as bytes and casts it, see insertRows), and one audit entry per
// card, in order.
func checkBatchStored(t *testing.T, db *storage.DB, dialect string, batch []cards.Card, ids []string) {
	docs := prepared(t, batch...)
	rows, err := db.SQL().Query("SELECT agent_id, doc FROM cards WHERE tenant_id = 'acme' AND agent_id LIKE 'agt!_%' ESCAPE '!' ORDER BY agent_id")
	if err != nil {
		t.Fatal(err)
	}
	var n int
	for ; rows.Next(); n++ {
		var id, doc string
		if err := rows.Scan(&id, &doc); err != nil {
			t.Fatal(err)
		}
		if n >= len(docs) || id != ids[n] || doc != string(docs[n].Document) {
			t.Fatalf("stored row %d: card %q, its document %.80q...; want %q, %.80q...", n, id, doc, ids[min(n, len(ids)-1)], docs[min(n, len(ids)-1)].Document)
		}
	}
	if err := rows.Err(); err != nil || n != len(docs) {
		t.Fatalf("stored documents: %d, %v; want %d", n, err, len(docs))
	}
	rows.Close()
	if dialect == "sqlite" {
		var notText int
		if err := db.SQL().QueryRow("SELECT COUNT(*) FROM cards WHERE typeof(doc) <> 'text'").Scan(&notText); err != nil || notText != 0 {
			t.Fatalf("documents not stored as text: %d, %v", notText, err)
		}
	}
	rows, err = db.SQL().Query("SELECT object, revision_before, revision_after, outcome FROM audit_entries WHERE tenant_id = 'acme' AND action = 'cards.register_batch' ORDER BY seq")
	if err != nil {
		t.Fatal(err)
	}
	for n = 0; rows.Next(); n++ {
		var object, outcome string
		var before, after int64
		if err := rows.Scan(&object, &before, &after, &outcome); err != nil {
			t.Fatal(err)
		}
		if n >= len(ids) || object != "cards/"+ids[n] || before != 0 || after != 1 || outcome != "ok" {
			t.Fatalf("audit entry %d of the batch: %s %d -> %d %s", n, object, before, after, outcome)
		}
	}
	if err := rows.Err(); err != nil || n != len(ids) {
		t.Fatalf("audit entries of the batch: %d, %v; want %d", n, err, len(ids))
	}
	rows.Close()
}

// checkBatchesRefused sends batches that CreateMany refuses, with taken1, taken2 and the large
// batch registered in acme: each says why, and none stores a card or a change.
func checkBatchesRefused(t *testing.T, db *storage.DB) {
	s := storage.NewCardStore(db)
	stored, feed := count(t, db, "cards", "acme"), len(changes(t, db))
	fresh := func(ids ...string) []cards.Card {
		var out []cards.Card
		for _, id := range ids {
			out = append(out, newCard(id, 1))
		}
		return out
	}
	for _, c := range []struct {
		name  string
		in    tenants.ID
		batch []cards.Card
		is    error
		msg   string
	}{
		{"registered", "acme", fresh("new1", "new2", "taken2", "new3", "taken1"), cards.ErrExists, `cards[2]: card "taken2" already exists`},
		{"registered in the batch", "acme", fresh("new1", "agt_0999"), cards.ErrExists, `cards[1]: card "agt_0999" already exists`},
		{"twice in the batch", "acme", fresh("new1", "new2", "new1"), cards.ErrExists, "a card of the batch was created meanwhile: already exists"},
		{"no tenant", "nope", fresh("new1"), tenants.ErrNotFound, `tenant "nope": not found`},
	} {
		err := s.CreateMany(context.Background(), c.in, prepared(t, c.batch...))
		if !errors.Is(err, c.is) || fault.MessageOf(err) != c.msg {
			t.Errorf("%s: CreateMany = %v, want %v with the message %q", c.name, err, c.is, c.msg)
		}
	}
	if n, m := count(t, db, "cards", "acme"), len(changes(t, db)); n != stored || m != feed {
		t.Errorf("after the refused batches: %d cards and %d change-feed entries, want %d and %d", n, m, stored, feed)
	}
}

// prepared pairs each card with its stored document, as validation does.
func prepared(t *testing.T, cs ...cards.Card) []cards.Prepared {
	t.Helper()
	out := make([]cards.Prepared, len(cs))
	for i, c := range cs {
		doc, err := cards.MarshalDocument(c)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = cards.Prepared{Card: c, Document: doc}
	}
	return out
}
