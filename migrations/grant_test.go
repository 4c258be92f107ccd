package migrations_test

import (
	"context"
	"database/sql"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentcards/agentcards/authz"
	"github.com/agentcards/agentcards/migrations"
	"github.com/agentcards/agentcards/storage/storagetest"
)

// TestHeartbeatGrantedToExistingTenants: a tenant created before cards:heartbeat existed has
// built-in rules without it; migration 7 gives it to its editor and admin roles, once, and moves
// its policy revision.
func TestHeartbeatGrantedToExistingTenants(t *testing.T) {
	testGrantedToExistingTenants(t, 7, authz.ActCardsHeartbeat, []string{"role:admin", "role:editor"}, authz.ActSearchManage, authz.ActWebhooksManage,
		authz.ActTrustManage, authz.ActSourcesManage)
}

// TestSearchManageGrantedToExistingTenants: migration 18 gives search:manage to the admin role
// of every tenant created before it existed, as migration 7 gave cards:heartbeat.
func TestSearchManageGrantedToExistingTenants(t *testing.T) {
	testGrantedToExistingTenants(t, 18, authz.ActSearchManage, []string{"role:admin"}, authz.ActWebhooksManage, authz.ActTrustManage, authz.ActSourcesManage)
}

// TestWebhooksManageGrantedToExistingTenants: migration 21 gives webhooks:manage to the admin
// role of every tenant created before it existed.
func TestWebhooksManageGrantedToExistingTenants(t *testing.T) {
	testGrantedToExistingTenants(t, 21, authz.ActWebhooksManage, []string{"role:admin"}, authz.ActTrustManage, authz.ActSourcesManage)
}

// TestTrustManageGrantedToExistingTenants: migration 23 gives trust:manage to the admin role of
// every tenant created before it existed.
func TestTrustManageGrantedToExistingTenants(t *testing.T) {
	testGrantedToExistingTenants(t, 23, authz.ActTrustManage, []string{"role:admin"}, authz.ActSourcesManage)
}

// TestSourcesManageGrantedToExistingTenants: migration 25 gives sources:manage to the admin role
// of every tenant created before it existed.
func TestSourcesManageGrantedToExistingTenants(t *testing.T) {
	testGrantedToExistingTenants(t, 25, authz.ActSourcesManage, []string{"role:admin"})
}

// testGrantedToExistingTenants: a tenant created just before migration version, seeded with the
// rules of its time (without act, nor the actions of later migrations), has act given to the
// built-in roles named roles (as the rules store names them) by the migration, exactly as a
// tenant created now is seeded with it, and its policy revision moved once.
func testGrantedToExistingTenants(t *testing.T, version int64, act string, roles []string, later ...string) {
	later = append(later, act)
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) {
		t.Parallel()
		driver, dsn := storagetest.EmptyDatabase(t, dialect)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		db, err := sql.Open(driver, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if err := migrations.UpTo(ctx, db, dialect, version-1); err != nil {
			t.Fatal(err)
		}
		ph := func(n int) string {
			if dialect == migrations.Postgres {
				return "$" + string(rune('0'+n))
			}
			return "?"
		}
		now := time.Now().UTC()
		if _, err := db.ExecContext(ctx, "INSERT INTO tenants (tenant_id, name, status, created_at, updated_at) VALUES ("+
			ph(1)+", 'Old', 'active', "+ph(2)+", "+ph(3)+")", "old", now, now); err != nil {
			t.Fatal(err)
		}
		// The rules a tenant was seeded with before: everything but the actions added since.
		for _, r := range authz.SeedRules("old", []string{"alice"}) {
			if slices.ContainsFunc(later, func(a string) bool { return slices.Contains(r.Values, a) }) {
				continue
			}
			v := append(slices.Clone(r.Values), make([]string, authz.MaxRuleValues-len(r.Values))...)
			if _, err := db.ExecContext(ctx, "INSERT INTO casbin_rules (tenant_id, ptype, v0, v1, v2, v3, v4, v5, rule_key) VALUES ("+
				ph(1)+", "+ph(2)+", "+ph(3)+", "+ph(4)+", "+ph(5)+", "+ph(6)+", "+ph(7)+", "+ph(8)+", "+ph(9)+")",
				"old", r.PType, v[0], v[1], v[2], v[3], v[4], v[5], authz.RuleKey(r.PType, r.Values)); err != nil {
				t.Fatal(err)
			}
		}
		granted := func() (roles []string, rev int64) {
			rows, err := db.QueryContext(ctx, "SELECT v0 FROM casbin_rules WHERE tenant_id = 'old' AND v3 = "+ph(1)+" ORDER BY v0", act)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			for rows.Next() {
				var s string
				if err := rows.Scan(&s); err != nil {
					t.Fatal(err)
				}
				roles = append(roles, s)
			}
			if err := db.QueryRowContext(ctx, "SELECT policy_revision FROM tenants WHERE tenant_id = 'old'").Scan(&rev); err != nil {
				t.Fatal(err)
			}
			return roles, rev
		}
		if got, _ := granted(); len(got) != 0 {
			t.Fatalf("before: %v", got)
		}
		if err := migrations.UpTo(ctx, db, dialect, version); err != nil {
			t.Fatal(err)
		}
		got, rev := granted()
		if !slices.Equal(got, roles) || rev != 1 {
			t.Errorf("after: %v, policy revision %d; want %v, 1", got, rev, roles)
		}
		// The rules are exactly what a tenant created now is seeded with.
		var seeded []any
		for _, r := range authz.SeedRules("old", nil) {
			if slices.Contains(r.Values, act) {
				seeded = append(seeded, authz.RuleKey(r.PType, r.Values))
			}
		}
		in := make([]string, len(seeded))
		for i := range in {
			in[i] = ph(i + 1)
		}
		var n int
		if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM casbin_rules WHERE tenant_id = 'old' AND rule_key IN ("+strings.Join(in, ", ")+")",
			seeded...).Scan(&n); err != nil || n != len(roles) || len(seeded) != len(roles) {
			t.Errorf("rule keys as seeded: %d of %d (%v)", n, len(seeded), err)
		}
	})
}
