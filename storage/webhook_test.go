package storage_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/cards/webhooks"
	"github.com/agentcards/agentcards/storage"
	"github.com/agentcards/agentcards/storage/storagetest"
)

// TestWebhookLease: one owner at a time holds a subscription; a claim of a held one gets
// nothing until its lease lapses; once another owner took it, the first one's advance, failure
// and release change nothing, so it cannot move the cursor the new owner moves. Failures count
// up and keep the first failure's time; a delivery clears them.
func TestWebhookLease(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) {
		t.Parallel()
		db := storagetest.Open(t, dialect)
		s := storage.NewWebhookStore(db)
		newTenant(t, db, "a", "alice")
		ctx := context.Background()
		now := time.Now().UTC().Truncate(time.Second)
		w, err := s.Create(ctx, "a", webhooks.Webhook{ID: "wh_01", URL: "https://hooks.example.com/", State: webhooks.StateActive,
			NextAttemptAt: now, CreatedAt: now, UpdatedAt: now}, "c0", 5)
		if err != nil {
			t.Fatal(err)
		}
		if w.Types == nil || w.AgentIDs == nil || w.State != webhooks.StateActive {
			t.Fatalf("created %+v", w)
		}
		due, err := s.Due(ctx, now, 10)
		if err != nil || len(due) != 1 || due[0].ID != "wh_01" {
			t.Fatalf("due: %v %v", due, err)
		}

		c, got, err := s.Claim(ctx, "a", "wh_01", "one", now, now.Add(time.Minute))
		if err != nil || !got || c.Cursor != "c0" || len(c.Recent) != 0 {
			t.Fatalf("first claim: %+v %v %v", c, got, err)
		}
		if _, got, _ := s.Claim(ctx, "a", "wh_01", "two", now.Add(30*time.Second), now.Add(2*time.Minute)); got {
			t.Fatal("a held lease was claimed")
		}
		if due, _ := s.Due(ctx, now.Add(30*time.Second), 10); len(due) != 0 {
			t.Errorf("a held subscription is due: %v", due)
		}
		if held, err := s.Advance(ctx, "a", "wh_01", "one", "c1", []int64{7, 9}, true, now.Add(time.Minute)); err != nil || !held {
			t.Fatalf("owner's advance: %v %v", held, err)
		}
		// The lease lapses; two takes over, and one can no longer write.
		later := now.Add(2 * time.Minute)
		c, got, err = s.Claim(ctx, "a", "wh_01", "two", later, later.Add(time.Minute))
		if err != nil || !got || c.Cursor != "c1" || !slices.Equal(c.Recent, []int64{7, 9}) {
			t.Fatalf("claim after the lapse: %+v %v %v", c, got, err)
		}
		if held, err := s.Advance(ctx, "a", "wh_01", "one", "stale", nil, true, later.Add(time.Hour)); err != nil || held {
			t.Errorf("a lost lease advanced: %v %v", held, err)
		}
		if err := s.Fail(ctx, "a", "wh_01", "one", webhooks.Failure{At: later, Next: later, Error: "x"}); err != nil {
			t.Fatal(err)
		}
		if err := s.Release(ctx, "a", "wh_01", "one"); err != nil {
			t.Fatal(err)
		}
		if c, got, _ := s.Claim(ctx, "a", "wh_01", "two", later, later.Add(time.Minute)); !got || c.Cursor != "c1" || c.Webhook.Failures != 0 {
			t.Fatalf("after the stale writes: %+v %v", c, got)
		}

		// Failures count up from the first one's time and give the lease up; a delivery clears them.
		for i := range 2 {
			if _, got, _ := s.Claim(ctx, "a", "wh_01", "two", later, later.Add(time.Minute)); !got {
				t.Fatalf("claim before failure %d", i)
			}
			at := later.Add(time.Duration(i) * time.Minute)
			if err := s.Fail(ctx, "a", "wh_01", "two", webhooks.Failure{At: at, Next: at.Add(time.Second), Error: fmt.Sprint("answered 50", i)}); err != nil {
				t.Fatal(err)
			}
		}
		w, err = s.Get(ctx, "a", "wh_01")
		if err != nil || w.State != webhooks.StateFailing || w.Failures != 2 || w.FailingSince == nil || !w.FailingSince.Equal(later) ||
			w.LastError != "answered 501" || !w.NextAttemptAt.Equal(later.Add(time.Minute+time.Second)) {
			t.Fatalf("after two failures: %+v %v", w, err)
		}
		if _, got, _ := s.Claim(ctx, "a", "wh_01", "three", later, later.Add(time.Minute)); !got {
			t.Fatal("a failed subscription keeps its lease")
		}
		if held, err := s.Advance(ctx, "a", "wh_01", "three", "c2", nil, true, later.Add(time.Minute)); err != nil || !held {
			t.Fatal(held, err)
		}
		if w, _ := s.Get(ctx, "a", "wh_01"); w.State != webhooks.StateActive || w.Failures != 0 || w.FailingSince != nil || w.LastError != "" {
			t.Errorf("after a delivery: %+v", w)
		}
	})
}

// TestWebhookRecordsAndBounds: the records keep the newest keep per subscription; a tenant has at
// most max subscriptions; removing one takes its records, deleting the tenant takes all.
func TestWebhookRecordsAndBounds(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) {
		t.Parallel()
		db := storagetest.Open(t, dialect)
		s := storage.NewWebhookStore(db)
		newTenant(t, db, "a", "alice")
		ctx := context.Background()
		now := time.Now().UTC()
		for _, id := range []string{"wh_01", "wh_02"} {
			if _, err := s.Create(ctx, "a", webhooks.Webhook{ID: id, URL: "https://h.example.com/", State: webhooks.StateActive,
				NextAttemptAt: now, CreatedAt: now, UpdatedAt: now}, "c", 2); err != nil {
				t.Fatal(err)
			}
		}
		_, err := s.Create(ctx, "a", webhooks.Webhook{ID: "wh_03", URL: "https://h.example.com/", State: webhooks.StateActive}, "c", 2)
		if fault.KindOf(err) != fault.Conflict {
			t.Errorf("a third of two: %v", err)
		}
		if _, err := s.Create(ctx, "nope", webhooks.Webhook{ID: "wh_04"}, "c", 2); fault.KindOf(err) != fault.NotFound {
			t.Errorf("in a missing tenant: %v", err)
		}
		for i := range 5 {
			if err := s.Record(ctx, "a", "wh_01", webhooks.Delivery{EventID: fmt.Sprint(i), Type: webhooks.TypeUpserted, AgentID: "x", OK: true, At: now}, 3); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Record(ctx, "a", "wh_02", webhooks.Delivery{EventID: "9", Type: webhooks.TypeRemoved, AgentID: "y", Error: "answered 500", At: now}, 3); err != nil {
			t.Fatal(err)
		}
		recs, err := s.Deliveries(ctx, "a", "wh_01", 10)
		var ids []string
		for _, r := range recs {
			ids = append(ids, r.EventID)
		}
		if err != nil || !slices.Equal(ids, []string{"4", "3", "2"}) {
			t.Errorf("records kept: %v %v", ids, err)
		}
		if err := s.Remove(ctx, "a", "wh_01"); err != nil {
			t.Fatal(err)
		}
		if err := s.Remove(ctx, "a", "wh_01"); fault.KindOf(err) != fault.NotFound {
			t.Errorf("removed twice: %v", err)
		}
		if recs, _ := s.Deliveries(ctx, "a", "wh_01", 10); len(recs) != 0 {
			t.Errorf("a removed subscription's records: %+v", recs)
		}
		if err := storage.NewTenantStore(db).Delete(ctx, "a"); err != nil {
			t.Fatal(err)
		}
		newTenant(t, db, "a", "alice")
		if l, _ := s.List(ctx, "a"); len(l) != 0 {
			t.Errorf("a tenant created again has its predecessor's webhooks: %+v", l)
		}
		if recs, _ := s.Deliveries(ctx, "a", "wh_02", 10); len(recs) != 0 {
			t.Errorf("a tenant created again has its predecessor's records: %+v", recs)
		}
	})
}
