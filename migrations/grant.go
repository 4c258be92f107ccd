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
		grantMigration(7, dialect, heartbeatGrant),
		grantMigration(18, dialect, searchManageGrant),
		grantMigration(21, dialect, webhooksManageGrant),
		grantMigration(23, dialect, trustManageGrant),
		grantMigration(25, dialect, sourcesManageGrant),
	}
}

// builtinGrant is an action a migration gives built-in roles of every existing tenant, as new
// tenants are seeded with it.
type builtinGrant struct {
	roles    []string
	obj, act string
}

// heartbeatGrant is cards:heartbeat, given to the built-in editor and admin roles (migration 7).
var heartbeatGrant = builtinGrant{roles: []string{authz.RoleAdmin, authz.RoleEditor}, obj: authz.ObjAllCards, act: authz.ActCardsHeartbeat}

// searchManageGrant is search:manage, given to the built-in admin role (migration 18).
var searchManageGrant = builtinGrant{roles: []string{authz.RoleAdmin}, obj: authz.ObjSearch, act: authz.ActSearchManage}

// webhooksManageGrant is webhooks:manage, given to the built-in admin role (migration 21, after
// the tables of migration 20).
var webhooksManageGrant = builtinGrant{roles: []string{authz.RoleAdmin}, obj: authz.ObjWebhooks, act: authz.ActWebhooksManage}

// trustManageGrant is trust:manage, given to the built-in admin role (migration 23, after the
// trust column of migration 22).
var trustManageGrant = builtinGrant{roles: []string{authz.RoleAdmin}, obj: authz.ObjTrust, act: authz.ActTrustManage}

// sourcesManageGrant is sources:manage, given to the built-in admin role (migration 25, after the
// sources table of migration 24).
var sourcesManageGrant = builtinGrant{roles: []string{authz.RoleAdmin}, obj: authz.ObjSources, act: authz.ActSourcesManage}

// grantMigration is the Go migration version that gives g to every existing tenant (up) or
// takes it back (down).
func grantMigration(version int64, dialect string, g builtinGrant) *goose.Migration {
	return goose.NewGoMigration(version,
		&goose.GoFunc{RunTx: func(ctx context.Context, tx *sql.Tx) error { return grantBuiltin(ctx, tx, dialect, g, true) }},
		&goose.GoFunc{RunTx: func(ctx context.Context, tx *sql.Tx) error { return grantBuiltin(ctx, tx, dialect, g, false) }})
}

// grantBuiltin gives g's built-in roles of every existing tenant g's action (new tenants are
// seeded with it), or takes it back (down). The rule key is a hash computed in Go, which SQLite
// has no SQL function for; hence a Go migration. Each tenant's policy revision moves, so a cached
// enforcer is rebuilt.
func grantBuiltin(ctx context.Context, tx *sql.Tx, dialect string, g builtinGrant, up bool) error {
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
		for _, role := range g.roles {
			r := authz.BuiltinGrantRule(tenant, role, g.obj, g.act)
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
