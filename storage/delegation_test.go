package storage_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentcards/agentcards/cards/delegation"
	"github.com/agentcards/agentcards/storage"
)

// TestDelegationStore: records round-trip, updates are conditional on the current status (so a
// second result is a conflict), lists filter and page newest first, and every call is scoped to
// its tenant.
func TestDelegationStore(t *testing.T) {
	forEachDialect(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		s := storage.NewDelegationStore(db)
		newTenant(t, db, "a", "alice")
		newTenant(t, db, "b", "bob")
		mk := func(i int, caller, agent string, st delegation.Status) delegation.Delegation {
			return delegation.Delegation{ID: fmt.Sprintf("0190-%04d", i), Caller: caller, AgentID: agent, Capability: "review_pr",
				Mode: delegation.ModeAsync, Transport: delegation.TransportHTTP, Depth: 1, Status: st,
				CreatedAt: fixed.Add(time.Duration(i) * time.Second), UpdatedAt: fixed}
		}
		for i := 1; i <= 5; i++ {
			caller := "olga"
			if i%2 == 0 {
				caller = "rita"
			}
			if err := s.Create(ctx, "a", mk(i, caller, "agt1", delegation.StatusPending), fmt.Sprintf("%064d", i)); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Create(ctx, "b", mk(9, "olga", "agt1", delegation.StatusRunning), ""); err != nil {
			t.Fatal(err)
		}
		got, err := s.Get(ctx, "a", "0190-0001")
		if err != nil || got.Caller != "olga" || !got.CreatedAt.Equal(fixed.Add(time.Second)) || got.Result != nil {
			t.Fatalf("get %+v %v", got, err)
		}
		if _, err := s.Get(ctx, "b", "0190-0001"); !errors.Is(err, delegation.ErrNotFound) {
			t.Fatalf("another tenant's record: %v", err)
		}
		if h, err := s.CallbackHash(ctx, "a", "0190-0002"); err != nil || h != fmt.Sprintf("%064d", 2) {
			t.Fatalf("hash %q %v", h, err)
		}

		open := []delegation.Status{delegation.StatusPending, delegation.StatusRunning, delegation.StatusAccepted}
		done := delegation.Outcome{Status: delegation.StatusCompleted, Result: []byte(`{"ok":true}`), LatencyMS: 12, At: fixed.Add(time.Minute)}
		if err := s.Update(ctx, "a", "0190-0001", open, done); err != nil {
			t.Fatal(err)
		}
		if err := s.Update(ctx, "a", "0190-0001", open, delegation.Outcome{Status: delegation.StatusFailed, At: fixed}); !errors.Is(err, delegation.ErrConflict) {
			t.Fatalf("second result: %v", err)
		}
		if err := s.Update(ctx, "b", "0190-0002", open, done); !errors.Is(err, delegation.ErrNotFound) {
			t.Fatalf("update across tenants: %v", err)
		}
		got, _ = s.Get(ctx, "a", "0190-0001")
		if got.Status != delegation.StatusCompleted || string(got.Result) != `{"ok":true}` || got.LatencyMS != 12 || !got.UpdatedAt.Equal(fixed.Add(time.Minute)) {
			t.Fatalf("after update %+v (%s)", got, got.Result)
		}

		ids := func(list []delegation.Delegation, err error) string {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
			out := ""
			for _, d := range list {
				out += d.ID[5:] + " "
			}
			return out
		}
		for _, c := range []struct {
			f    delegation.Filter
			want string
		}{
			{delegation.Filter{}, "0005 0004 0003 0002 0001 "},
			{delegation.Filter{Caller: "rita"}, "0004 0002 "},
			{delegation.Filter{Status: delegation.StatusCompleted}, "0001 "},
			{delegation.Filter{AgentID: "agt2"}, ""},
			{delegation.Filter{Limit: 2, Before: "0190-0004"}, "0003 0002 "},
		} {
			if got := ids(s.List(ctx, "a", c.f)); got != c.want {
				t.Errorf("list %+v = %q, want %q", c.f, got, c.want)
			}
		}
		if got := ids(s.List(ctx, "b", delegation.Filter{})); got != "0009 " {
			t.Errorf("tenant b lists %q", got)
		}
		// Deleting a tenant removes its records.
		if err := storage.NewTenantStore(db).Delete(ctx, "a"); err != nil {
			t.Fatal(err)
		}
		if got := ids(s.List(ctx, "a", delegation.Filter{})); got != "" {
			t.Errorf("records outlived their tenant: %q", got)
		}
	})
}

// TestDelegationWritesGrouped: concurrent record writes share transactions (group commit); all
// commit, and one that fails (a duplicate id) does not take the others of its batch down.
func TestDelegationWritesGrouped(t *testing.T) {
	forEachDialect(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		s := storage.NewDelegationStore(db)
		newTenant(t, db, "a", "alice")
		mk := func(i int) delegation.Delegation {
			return delegation.Delegation{ID: fmt.Sprintf("0190-%04d", i), Caller: "olga", AgentID: "agt1", Capability: "review_pr",
				Mode: delegation.ModeSync, Transport: delegation.TransportHTTP, Depth: 1, Status: delegation.StatusRunning,
				CreatedAt: fixed, UpdatedAt: fixed}
		}
		if err := s.Create(ctx, "a", mk(0), ""); err != nil {
			t.Fatal(err)
		}
		const n = 40
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				d := mk(i + 1)
				if i == 7 {
					d = mk(0) // already stored
				}
				if errs[i] = s.Create(ctx, "a", d, ""); errs[i] == nil {
					errs[i] = s.Update(ctx, "a", d.ID, []delegation.Status{delegation.StatusRunning},
						delegation.Outcome{Status: delegation.StatusCompleted, At: fixed})
				}
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if (i == 7) != (err != nil) {
				t.Errorf("write %d: %v", i, err)
			}
		}
		for i := range n {
			if i == 7 {
				continue
			}
			got, err := s.Get(ctx, "a", mk(i+1).ID)
			if err != nil || got.Status != delegation.StatusCompleted {
				t.Fatalf("record %d: %+v %v", i+1, got, err)
			}
		}
	})
}
