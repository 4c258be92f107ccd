package migrations

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/pressly/goose/v3"

	"github.com/agentcards/agentcards/authz"
)

// goMigrations are the migrations written in Go, for what SQL cannot say alike in all three
// dialects; their versions continue the SQL files' numbering.
func goMigrations(dialect string) []*goose.Migration {
	return []*goose.Migration{
		goose.NewGoMigration(7,
			&goose.GoFunc{RunTx: func(ctx context.Context, tx *sql.Tx) error { return grantHeartbeat(ctx, tx, dialect, true) }},
			&goose.GoFunc{RunTx: func(ctx context.Context, tx *sql.Tx) error { return grantHeartbeat(ctx, tx, dialect, false) }}),
	}
}

// heartbeatRoles are the built-in roles that gained cards:heartbeat when it was added.
var heartbeatRoles = []string{authz.RoleAdmin, authz.RoleEditor}

// grantHeartbeat gives the built-in editor and admin roles of every existing tenant the
// cards:heartbeat action (new tenants are seeded with it), or takes it back (down). The rule key
// is a hash computed in Go, which SQLite has no SQL function for; hence a Go migration. Each
// tenant's policy revision moves, so a cached enforcer is rebuilt.
func grantHeartbeat(ctx context.Context, tx *sql.Tx, dialect string, up bool) error {
	rows, err := tx.QueryContext(ctx, `SELECT tenant_id FROM tenants ORDER BY tenant_id`)
	if err != nil {
		return err
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return err
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	insert := `INSERT INTO casbin_rules (tenant_id, ptype, v0, v1, v2, v3, v4, v5, rule_key) VALUES ($1, $2, $3, $4, $5, $6, $7, '', $8) ON CONFLICT DO NOTHING`
	remove := `DELETE FROM casbin_rules WHERE tenant_id = $1 AND rule_key = $2`
	bump := `UPDATE tenants SET policy_revision = policy_revision + 1 WHERE tenant_id = $1`
	switch dialect {
	case MySQL:
		insert = `INSERT IGNORE INTO casbin_rules (tenant_id, ptype, v0, v1, v2, v3, v4, v5, rule_key) VALUES (?, ?, ?, ?, ?, ?, ?, '', ?)`
		remove, bump = `DELETE FROM casbin_rules WHERE tenant_id = ? AND rule_key = ?`, `UPDATE tenants SET policy_revision = policy_revision + 1 WHERE tenant_id = ?`
	case SQLite:
		insert = `INSERT OR IGNORE INTO casbin_rules (tenant_id, ptype, v0, v1, v2, v3, v4, v5, rule_key) VALUES (?, ?, ?, ?, ?, ?, ?, '', ?)`
		remove, bump = `DELETE FROM casbin_rules WHERE tenant_id = ? AND rule_key = ?`, `UPDATE tenants SET policy_revision = policy_revision + 1 WHERE tenant_id = ?`
	}
	for _, tenant := range ids {
		if _, err := tx.ExecContext(ctx, bump, tenant); err != nil {
			return fmt.Errorf("tenant %q: %w", tenant, err)
		}
		for _, role := range heartbeatRoles {
			r := authz.BuiltinGrantRule(tenant, role, authz.ObjAllCards, authz.ActCardsHeartbeat)
			key := authz.RuleKey(r.PType, r.Values)
			if up {
				_, err = tx.ExecContext(ctx, insert, tenant, r.PType, r.Values[0], r.Values[1], r.Values[2], r.Values[3], r.Values[4], key)
			} else {
				_, err = tx.ExecContext(ctx, remove, tenant, key)
			}
			if err != nil {
				return fmt.Errorf("tenant %q: %w", tenant, err)
			}
		}
	}
	return nil
}
