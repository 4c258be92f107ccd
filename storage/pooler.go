package storage

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/agentcards/agentcards/migrations"
)

// A pooler in transaction mode (PgBouncer's pool_mode = transaction) runs each transaction, and
// each statement outside one, on whichever server connection is free. What a session keeps
// between transactions is then left on a server connection that other clients get next: named
// prepared statements, session advisory locks, LISTEN, SET without LOCAL. The pool works through
// such a pooler once its DSN asks pgx for no named prepared statements (namedStatementsOff); what
// needs a session of its own takes the direct DSN (UseDirect). See docs/scaling.md.

// namedStatementsOff reports whether a Postgres DSN sets pgx's default_query_exec_mode to a mode
// without named prepared statements (exec, simple_protocol, describe_exec, cache_describe). The
// hot queries then run as text on the pool instead of as statements prepared on each connection
// (see prepared), which a pooler would run on a server connection that has not prepared them.
func namedStatementsOff(dsn string) bool {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return false // the pool's own connection reports the error
	}
	return cfg.DefaultQueryExecMode != pgx.QueryExecModeCacheStatement
}

// UseDirect sets a DSN that reaches Postgres itself, for the work that needs a session of its
// own where the pool's DSN goes through a pooler in transaction mode: migrations, whose advisory
// lock belongs to the session that took it, and the change-feed LISTEN, whose notifications reach
// only the session that listens. It checks that both DSNs reach the same database and schema, as
// the migration lock and the notifications are per schema. Call it before Migrate and Listen; ""
// leaves both on the pool's DSN.
func (db *DB) UseDirect(ctx context.Context, dsn string) error {
	if dsn == "" {
		return nil
	}
	if db.dialect != migrations.Postgres {
		return fmt.Errorf("storage: a direct DSN is for postgres, not %s", db.dialect)
	}
	direct, err := sql.Open("pgx", dsn)
	if err != nil {
		return fmt.Errorf("storage: the direct DSN: %w", err)
	}
	defer direct.Close()
	const where = "SELECT current_database() || '.' || coalesce(current_schema(), '')"
	var pooled, reached string
	if err := db.sql.QueryRowContext(ctx, where).Scan(&pooled); err != nil {
		return fmt.Errorf("storage: read the schema of the DSN: %w", err)
	}
	if err := direct.QueryRowContext(ctx, where).Scan(&reached); err != nil {
		return fmt.Errorf("storage: read the schema of the direct DSN: %w", err)
	}
	if reached != pooled {
		return fmt.Errorf("storage: the direct DSN reaches %s, the DSN %s: both must reach the same database and schema", reached, pooled)
	}
	db.direct = dsn
	return nil
}

// listenDSN is the DSN of the LISTEN connection: the direct one if set.
func (db *DB) listenDSN() string {
	if db.direct != "" {
		return db.direct
	}
	return db.dsn
}
