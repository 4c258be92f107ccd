package migrations_test

import (
	"context"
	"database/sql"
	"slices"
	"testing"
	"time"

	"github.com/agentcards/agentcards/authz"
	"github.com/agentcards/agentcards/migrations"
	"github.com/agentcards/agentcards/storage/storagetest"
)

// TestHeartbeatGrantedToExistingTenants: a tenant created before cards:heartbeat existed has
// built-in rules without it; the migration gives it to its editor and admin roles, once, and
// moves its policy revision. Down takes it back.
func TestHeartbeatGrantedToExistingTenants(t *testing.T) {
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
		if err := migrations.UpTo(ctx, db, dialect, 6); err != nil {
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
		// The rules a tenant was seeded with before: everything but heartbeats.
		for _, r := range authz.SeedRules("old", []string{"alice"}) {
			if slices.Contains(r.Values, authz.ActCardsHeartbeat) {
				continue
			}
			v := append(slices.Clone(r.Values), make([]string, authz.MaxRuleValues-len(r.Values))...)
			if _, err := db.ExecContext(ctx, "INSERT INTO casbin_rules (tenant_id, ptype, v0, v1, v2, v3, v4, v5, rule_key) VALUES ("+
				ph(1)+", "+ph(2)+", "+ph(3)+", "+ph(4)+", "+ph(5)+", "+ph(6)+", "+ph(7)+", "+ph(8)+", "+ph(9)+")",
				"old", r.PType, v[0], v[1], v[2], v[3], v[4], v[5], authz.RuleKey(r.PType, r.Values)); err != nil {
				t.Fatal(err)
			}
		}
		heartbeats := func() (roles []string, rev int64) {
			rows, err := db.QueryContext(ctx, "SELECT v0 FROM casbin_rules WHERE tenant_id = 'old' AND v3 = 'cards:heartbeat' ORDER BY v0")
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
		if roles, _ := heartbeats(); len(roles) != 0 {
			t.Fatalf("before: %v", roles)
		}
		if err := migrations.Up(ctx, db, dialect); err != nil {
			t.Fatal(err)
		}
		roles, rev := heartbeats()
		if !slices.Equal(roles, []string{"role:admin", "role:editor"}) || rev != 1 {
			t.Errorf("after: %v, policy revision %d", roles, rev)
		}
		// The rules are exactly what a tenant created now is seeded with.
		var seeded []string
		for _, r := range authz.SeedRules("old", nil) {
			if slices.Contains(r.Values, authz.ActCardsHeartbeat) {
				seeded = append(seeded, authz.RuleKey(r.PType, r.Values))
			}
		}
		var n int
		if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM casbin_rules WHERE tenant_id = 'old' AND rule_key IN ("+ph(1)+", "+ph(2)+")",
			seeded[0], seeded[1]).Scan(&n); err != nil || n != 2 {
			t.Errorf("rule keys as seeded: %d of 2 (%v)", n, err)
		}
	})
}
