// Package storage implements the domain stores (cards.Store, tenants.Store, policy.RuleStore) with
// GORM over SQLite, Postgres and MySQL. Every row carries tenant_id and every query filters on it:
// tenant isolation is enforced here, not remembered by callers.
package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	"gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/agentcards/agentcards/migrations"
)

// DB is an open database of one dialect; the stores of this package share it.
type DB struct {
	gorm    *gorm.DB
	sql     *sql.DB
	dialect string
	dsn     string // for the dedicated LISTEN connection on Postgres
	// beforeListen, set only by tests, runs on each LISTEN connection (with its backend's pid)
	// before the LISTEN statement: a test delays or interrupts it there.
	beforeListen func(pid uint32)
	group        grouper
	// stmts holds the hot queries prepared once (see prepared), by query text.
	stmts sync.Map

	// mu guards closed and listeners; running counts the Listen goroutines, which Close stops
	// and waits for, so none queries a closed pool.
	mu        sync.Mutex
	closed    bool
	listeners []context.CancelFunc
	running   sync.WaitGroup
}

// errClosed is returned by Listen on a closed DB.
var errClosed = errors.New("storage: database closed")

// Open connects to a database. driver is "sqlite" (dsn: a file path or a file: URI), "postgres"
// or "mysql". It sets the driver options the stores rely on and pings the server.
func Open(ctx context.Context, driver, dsn string) (*DB, error) {
	var dialector gorm.Dialector
	inMemory := false
	switch driver {
	case migrations.SQLite:
		d, mem, err := sqliteDSN(dsn)
		if err != nil {
			return nil, err
		}
		inMemory = mem
		dialector = sqlite.Open(d)
	case migrations.Postgres:
		dialector = postgres.Open(dsn)
	case migrations.MySQL:
		d, err := mysqlDSN(dsn)
		if err != nil {
			return nil, err
		}
		dialector = mysql.Open(d)
	default:
		return nil, fmt.Errorf("storage: unknown driver %q (want sqlite, postgres or mysql)", driver)
	}
	g, err := gorm.Open(dialector, &gorm.Config{
		// Turn each driver's unique-violation code into gorm.ErrDuplicatedKey (and FK violations
		// into gorm.ErrForeignKeyViolated), so stores test errors with errors.Is, never by text.
		TranslateError: true,
		// Errors are returned to callers, who log them with request context; GORM's own logger
		// would print SQL (and card contents) to stdout.
		Logger: logger.Discard,
		// Timestamps are stored and compared in UTC on every dialect.
		NowFunc: func() time.Time { return time.Now().UTC().Truncate(time.Microsecond) },
		// Each write that needs a transaction opens one explicitly.
		SkipDefaultTransaction: true,
	})
	if err != nil {
		return nil, fmt.Errorf("storage: open %s: %w", driver, err)
	}
	sqlDB, err := g.DB()
	if err != nil {
		return nil, fmt.Errorf("storage: open %s: %w", driver, err)
	}
	configurePool(sqlDB, driver)
	if inMemory {
		// Every connection to ":memory:" is a database of its own: keep exactly one.
		sqlDB.SetMaxOpenConns(1)
	}
	db := &DB{gorm: g, sql: sqlDB, dialect: driver, dsn: dsn}
	if err := db.Ping(ctx); err != nil {
		_ = sqlDB.Close()
		return nil, err
	}
	return db, nil
}

// configurePool sizes the connection pool for the dialect.
func configurePool(db *sql.DB, driver string) {
	switch driver {
	case migrations.SQLite:
		// WAL lets readers run beside the one writer, but writers serialise on the file lock
		// anyway: a few connections serve the readers, more would only wait in busy_timeout.
		// More than one, so that reads are not queued behind a write transaction.
		db.SetMaxOpenConns(4)
		db.SetMaxIdleConns(4)
		// A local file has no server that drops idle connections.
		db.SetConnMaxLifetime(0)
	case migrations.Postgres:
		// N replicas share the server's max_connections (100 by default): 10 each leaves room
		// for several replicas, migrations and an operator's psql.
		db.SetMaxOpenConns(10)
		db.SetMaxIdleConns(5)
		// Recycle connections so that, behind a load balancer or after a failover, they spread
		// to the current servers instead of sticking to the old ones.
		db.SetConnMaxLifetime(30 * time.Minute)
		db.SetConnMaxIdleTime(5 * time.Minute)
	case migrations.MySQL:
		// max_connections is 151 by default; the same reasoning as for Postgres.
		db.SetMaxOpenConns(10)
		db.SetMaxIdleConns(5)
		// The server closes connections idle longer than wait_timeout (often lowered to a few
		// minutes by hosting providers, and proxies cut sooner); retiring them first avoids
		// "invalid connection" errors on a connection the server already dropped.
		db.SetConnMaxLifetime(3 * time.Minute)
		db.SetConnMaxIdleTime(time.Minute)
	}
}

// sqliteParams are the connection settings every SQLite connection needs, each added to the DSN
// unless the caller already set it:
//   - WAL: readers do not block the writer nor the writer the readers.
//   - busy_timeout: a writer waits up to 5 s for the lock instead of failing at once.
//   - txlock=immediate: transactions take the write lock at BEGIN. A deferred transaction that
//     reads and then writes cannot be granted the lock if another writer went first, and fails
//     with "database is locked" regardless of busy_timeout.
//   - foreign_keys: SQLite leaves them off unless asked, per connection.
//   - synchronous=NORMAL: durable at every checkpoint and safe against corruption in WAL mode,
//     without an fsync per commit.
var sqliteParams = [][2]string{
	{"_journal_mode", "WAL"},
	{"_busy_timeout", "5000"},
	{"_txlock", "immediate"},
	{"_foreign_keys", "on"},
	{"_synchronous", "NORMAL"},
}

// sqliteDSN adds sqliteParams to dsn and creates the database file's directory. It reports
// whether the database is in memory.
func sqliteDSN(dsn string) (string, bool, error) {
	if dsn == "" {
		return "", false, errors.New("storage: sqlite needs a file path")
	}
	file, query, _ := strings.Cut(dsn, "?")
	q, err := url.ParseQuery(query)
	if err != nil {
		return "", false, fmt.Errorf("storage: sqlite dsn parameters: %w", err)
	}
	var add []string
	for _, p := range sqliteParams {
		if !q.Has(p[0]) {
			add = append(add, p[0]+"="+p[1])
		}
	}
	// The file's path: "file:" URIs may carry "//" before an absolute path.
	name := strings.TrimPrefix(file, "file:")
	if strings.HasPrefix(file, "file:") && strings.HasPrefix(name, "//") {
		name = strings.TrimPrefix(name, "//")
	}
	inMemory := name == ":memory:" || name == "" || q.Get("mode") == "memory"
	if !inMemory {
		if err := os.MkdirAll(filepath.Dir(name), 0o750); err != nil {
			return "", false, fmt.Errorf("storage: create the database directory: %w", err)
		}
	}
	if len(add) == 0 {
		return dsn, inMemory, nil
	}
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	return dsn + sep + strings.Join(add, "&"), inMemory, nil
}

// mysqlDSN makes sure of the settings the stores rely on: parseTime (DATETIME scans into
// time.Time), loc=UTC (times are written and read as UTC) and charset utf8mb4 (the tables'
// charset; MySQL's "utf8" is 3-byte only).
func mysqlDSN(dsn string) (string, error) {
	cfg, err := gomysql.ParseDSN(dsn)
	if err != nil {
		return "", fmt.Errorf("storage: mysql dsn: %w", err)
	}
	cfg.ParseTime = true
	cfg.Loc = time.UTC
	if err := cfg.Apply(gomysql.Charset("utf8mb4", cfg.Collation)); err != nil {
		return "", fmt.Errorf("storage: mysql dsn: %w", err)
	}
	return cfg.FormatDSN(), nil
}

// Dialect is the driver name the database was opened with: "sqlite", "postgres" or "mysql".
func (db *DB) Dialect() string { return db.dialect }

// SQL returns the underlying pool, for migrations and health checks.
func (db *DB) SQL() *sql.DB { return db.sql }

// Ping checks that the database answers; the readiness probe calls it.
func (db *DB) Ping(ctx context.Context) error {
	if err := db.sql.PingContext(ctx); err != nil {
		return fmt.Errorf("storage: ping %s: %w", db.dialect, err)
	}
	return nil
}

// Close stops the change-feed listeners (see Listen) and waits for them, then closes the pool.
func (db *DB) Close() error {
	db.mu.Lock()
	db.closed = true
	for _, stop := range db.listeners {
		stop()
	}
	db.listeners = nil
	db.mu.Unlock()
	db.running.Wait()
	return db.sql.Close()
}

// Migrate applies the pending schema migrations of the database's dialect.
func (db *DB) Migrate(ctx context.Context) error {
	return migrations.Up(ctx, db.sql, db.dialect)
}

// with returns a GORM session bound to ctx: every store call goes through it.
func (db *DB) with(ctx context.Context) *gorm.DB { return db.gorm.WithContext(ctx) }

// utc normalises a time as every dialect stores it: UTC, microsecond precision.
func utc(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }
