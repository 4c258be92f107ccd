package storage_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentcards/agentcards/authz"
	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/cards/delegation"
	"github.com/agentcards/agentcards/storage"
	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/tenants/audit"
	"github.com/agentcards/agentcards/tenants/paging"
)

// imported is a record as an import writes it: an agentkit-mesh id (a random UUID, which says
// nothing of when it was made), created at, completed with a string result.
func imported(id string, at time.Time) delegation.Delegation {
	return delegation.Delegation{ID: id, Caller: delegation.ImportCaller + "/api", AgentID: "agt1", Mode: delegation.ModeSync,
		Transport: delegation.TransportHTTP, Status: delegation.StatusCompleted, Result: []byte(`"done"`), LatencyMS: 42,
		CreatedAt: at, UpdatedAt: at.Add(time.Second), Task: "sum the budget", Imported: "agentkit-mesh"}
}

// TestDelegationImport: an import writes the records the tenant does not hold, all at once with
// an audit entry each, and reports the ids it held, leaving those records as they were; imported
// records read back whole, other tenants may hold the same ids, and a tenant that is gone takes
// none.
func TestDelegationImport(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) {
		t.Parallel()
		db := storagetest.Open(t, dialect)
		ctx := authz.WithPrincipal(context.Background(), authz.Principal{Subject: "alice", Tenant: "a"})
		s := storage.NewDelegationStore(db)
		newTenant(t, db, "a", "alice")
		newTenant(t, db, "b", "bob")
		first := []delegation.Delegation{
			imported("f47ac10b-58cc-4372-a567-0e02b2c3d479", fixed.Add(-time.Hour)),
			imported("0a1b2c3d-0000-4000-8000-000000000001", fixed.Add(-2*time.Hour)),
		}
		first[1].Status, first[1].Result, first[1].Error = delegation.StatusTimeout, nil, "unfinished when imported: it was running in agentkit-mesh"
		existing, err := s.Import(ctx, "a", first)
		if err != nil || len(existing) != 0 {
			t.Fatalf("first import: existing %v, %v", existing, err)
		}
		got, err := s.Get(ctx, "a", first[0].ID)
		if err != nil || got.Imported != "agentkit-mesh" || got.Caller != "agentcards:import/api" || got.Capability != "" ||
			string(got.Result) != `"done"` || got.LatencyMS != 42 || !got.CreatedAt.Equal(fixed.Add(-time.Hour)) ||
			!got.UpdatedAt.Equal(fixed.Add(-time.Hour+time.Second)) || got.Task != "sum the budget" || !got.Deadline.IsZero() {
			t.Fatalf("imported record read back as %+v (%s), %v", got, got.Result, err)
		}

		// Again, with a changed copy of one and a new one: the one held stays as it was.
		again := []delegation.Delegation{first[0], imported("c0ffee00-1234-4abc-8def-0123456789ab", fixed.Add(-30*time.Minute))}
		again[0].Status, again[0].Result = delegation.StatusFailed, nil
		existing, err = s.Import(ctx, "a", again)
		if err != nil || !slices.Equal(existing, []string{first[0].ID}) {
			t.Fatalf("second import: existing %v, %v", existing, err)
		}
		if got, _ := s.Get(ctx, "a", first[0].ID); got.Status != delegation.StatusCompleted {
			t.Errorf("a record held was written again: %s", got.Status)
		}
		entries, err := storage.NewAuditStore(db).List(ctx, "a", audit.Filter{Action: "delegations.import"})
		if err != nil {
			t.Fatal(err)
		}
		var objects []string
		for _, e := range entries {
			objects = append(objects, e.Object+" "+e.Outcome)
			if e.Principal != "alice" || !strings.HasPrefix(e.Detail, "agent agt1, imported from agentkit-mesh") {
				t.Errorf("audit entry %+v", e)
			}
		}
		slices.Sort(objects)
		want := []string{"delegations/0a1b2c3d-0000-4000-8000-000000000001 timeout", "delegations/c0ffee00-1234-4abc-8def-0123456789ab completed",
			"delegations/f47ac10b-58cc-4372-a567-0e02b2c3d479 completed"}
		if !slices.Equal(objects, want) {
			t.Errorf("audit entries %v, want one per record written: %v", objects, want)
		}

		// Tenant b may hold the same ids; a tenant that is gone holds nothing.
		if existing, err := s.Import(ctx, "b", first); err != nil || len(existing) != 0 {
			t.Errorf("the same ids in tenant b: existing %v, %v", existing, err)
		}
		if _, err := s.Import(ctx, "gone", first); !errors.Is(err, fault.NotFound) {
			t.Errorf("an import into no tenant: %v, want not found", err)
		}
	})
}

// TestDelegationImportMany: a thousand records with large results go in as one write, in as many
// statements as their sizes take, and read back whole.
func TestDelegationImportMany(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) {
		t.Parallel()
		db := storagetest.Open(t, dialect)
		ctx := context.Background()
		s := storage.NewDelegationStore(db)
		newTenant(t, db, "a", "alice")
		ds := make([]delegation.Delegation, 1000)
		big := `"` + strings.Repeat("r", 20<<10) + `"`
		for i := range ds {
			ds[i] = imported(fmt.Sprintf("%08x-0000-4000-8000-%012x", i*2654435761%(1<<32), i), fixed.Add(time.Duration(i)*time.Second))
			if i%10 == 0 {
				ds[i].Result = []byte(big)
			}
		}
		if existing, err := s.Import(ctx, "a", ds); err != nil || len(existing) != 0 {
			t.Fatalf("import: existing %d, %v", len(existing), err)
		}
		list, err := s.List(ctx, "a", delegation.Filter{})
		if err != nil || len(list) != 1000 {
			t.Fatalf("list: %d records, %v", len(list), err)
		}
		for i, d := range list {
			want := ds[len(ds)-1-i]
			if d.ID != want.ID || string(d.Result) != string(want.Result) {
				t.Fatalf("list[%d] is %s, want %s with its result", i, d.ID, want.ID)
			}
		}
	})
}

// TestDelegationListOrder: lists go newest first by creation time, then by id, whatever the ids
// (an imported record keeps its registry's); a page starts after its cursor's record, across
// records of the same time, and a cursor naming no record of the tenant is refused.
func TestDelegationListOrder(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) {
		t.Parallel()
		db := storagetest.Open(t, dialect)
		ctx := context.Background()
		s := storage.NewDelegationStore(db)
		newTenant(t, db, "a", "alice")
		// Ours: 0190-0001 to 0190-0003, a second apart; imported: one before them all (an id
		// greater than theirs), one between (smaller), and two at the time of 0190-0002.
		for i := 1; i <= 3; i++ {
			d := record(i)
			d.CreatedAt = fixed.Add(time.Duration(i) * time.Second)
			if err := s.Create(ctx, "a", d, ""); err != nil {
				t.Fatal(err)
			}
		}
		at := func(sec float64) time.Time { return fixed.Add(time.Duration(sec * float64(time.Second))) }
		if _, err := s.Import(ctx, "a", []delegation.Delegation{
			imported("ffffffff-0000-4000-8000-000000000000", at(0)),
			imported("00000000-0000-4000-8000-000000000000", at(2.5)),
			imported("0190-0002a", at(2)),
		}); err != nil {
			t.Fatal(err)
		}
		list := func(f delegation.Filter) string {
			t.Helper()
			got, err := s.List(ctx, "a", f)
			if err != nil {
				t.Fatalf("list %+v: %v", f, err)
			}
			var ids []string
			for _, d := range got {
				ids = append(ids, d.ID[:min(len(d.ID), 10)])
			}
			return strings.Join(ids, " ")
		}
		for _, c := range []struct {
			f    delegation.Filter
			want string
		}{
			{delegation.Filter{}, "0190-0003 00000000-0 0190-0002a 0190-0002 0190-0001 ffffffff-0"},
			{delegation.Filter{Limit: 2}, "0190-0003 00000000-0"},
			{delegation.Filter{Limit: 2, Before: "00000000-0000-4000-8000-000000000000"}, "0190-0002a 0190-0002"},
			{delegation.Filter{Limit: 2, Before: "0190-0002a"}, "0190-0002 0190-0001"},
			{delegation.Filter{Limit: 2, Before: "0190-0002"}, "0190-0001 ffffffff-0"},
			{delegation.Filter{Before: "ffffffff-0000-4000-8000-000000000000"}, ""},
			{delegation.Filter{Caller: "olga"}, "0190-0003 0190-0002 0190-0001"},
			{delegation.Filter{Caller: "olga", Before: "0190-0002"}, "0190-0001"},
			{delegation.Filter{Caller: "olga", Before: "00000000-0000-4000-8000-000000000000"}, "0190-0002 0190-0001"},
		} {
			if got := list(c.f); got != c.want {
				t.Errorf("list %+v = %q, want %q", c.f, got, c.want)
			}
		}
		if _, err := s.List(ctx, "a", delegation.Filter{Before: "0190-9999"}); !errors.Is(err, paging.ErrCursor) {
			t.Errorf("a cursor naming no record: %v, want paging.ErrCursor", err)
		}
	})
}

// TestDelegationImportConcurrent: imports of the same records at once (Postgres and MySQL take
// them together, and one fails on the key) each end well, and every record is written once.
func TestDelegationImportConcurrent(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) {
		t.Parallel()
		db := storagetest.Open(t, dialect)
		ctx := context.Background()
		s := storage.NewDelegationStore(db)
		newTenant(t, db, "a", "alice")
		ds := make([]delegation.Delegation, 50)
		for i := range ds {
			ds[i] = imported(fmt.Sprintf("aaaaaaaa-0000-4000-8000-%012d", i), fixed.Add(time.Duration(i)*time.Second))
		}
		const n = 4
		held := make([][]string, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { held[i], errs[i] = s.Import(ctx, "a", ds) })
		}
		wg.Wait()
		written := 0
		for i := range n {
			if errs[i] != nil {
				t.Fatalf("import %d: %v", i, errs[i])
			}
			written += len(ds) - len(held[i])
		}
		entries, err := storage.NewAuditStore(db).List(ctx, "a", audit.Filter{Action: "delegations.import", Limit: 500})
		if err != nil {
			t.Fatal(err)
		}
		if written != len(ds) || len(entries) != len(ds) {
			t.Errorf("%d records written by %d imports, %d audit entries; want each of %d once", written, n, len(entries), len(ds))
		}
	})
}
