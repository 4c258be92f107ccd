// Package storage implements the domain stores (cards.Store, tenants.Store, policy.RuleStore) with
// GORM over SQLite, Postgres and MySQL. Every row carries tenant_id and every query filters on it:
// tenant isolation is enforced here, not remembered by callers.
package storage

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
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
//
// Reads and writes go to separate pools. On Postgres and MySQL they are the same pool: those
// servers take concurrent writers on separate connections. On SQLite, whose writers queue on one
// file lock, writes go to a single connection fed in order (card writes and delegation records
// through the group committer, see group.go) and reads to a pool of read-only connections that WAL
// lets run beside it. Several writing connections only took turns at the lock, the waiting ones
// asleep in SQLite's busy handler (which polls in steps of up to 100 ms and is not woken when the
// lock frees), and held the connections that reads needed meanwhile.
type DB struct {
	gorm *gorm.DB // reads
	sql  *sql.DB
	// writer and wsql are the writing pool: on SQLite its one connection, elsewhere gorm and sql.
	writer  *gorm.DB
	wsql    *sql.DB
	dialect string
	dsn     string // for the dedicated LISTEN connection on Postgres, unless direct is set
	// direct, if set, reaches Postgres itself where dsn goes through a pooler (see UseDirect).
	direct string
	// unprepared: the Postgres DSN asks pgx for no named prepared statements, so the hot
	// queries are sent as text too (see prepared).
	unprepared bool
	// probe is the one connection Alive pings on (Postgres, MySQL), opened at its first ping
	// with probeDriver and probeDSN.
	probeOnce             sync.Once
	probe                 *sql.DB
	probeErr              error
	probeDriver, probeDSN string
	// beforeListen, set only by tests, runs on each LISTEN connection (with its backend's pid)
	// before the LISTEN statement: a test delays or interrupts it there.
	beforeListen func(pid uint32)
	group        grouper
	// notes sends the notifications of card writes after they commit (Postgres; see notifyAfter).
	notes notifier
	// schema is the Postgres schema the pool writes in, once read (see currentSchema).
	schema atomic.Pointer[string]
	// checkpoints copies SQLite's log into its file in the background (see checkpoint.go);
	// nil for other dialects and for a database in memory.
	checkpoints *checkpointer
	// stmts holds the hot queries prepared once (see prepared), by query text.
	stmts sync.Map
	// galera is whether the MySQL server is a Galera node (see galeraReady): 0 not known yet,
	// else galeraNo or galeraYes.
	galera atomic.Int32

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
	readDSN := "" // SQLite's read-only pool; none elsewhere, or for a database in memory
	probeDriver, probeDSN := "", ""
	fileDSN := "" // SQLite's file, for the checkpointer
	unprepared := false
	switch driver {
	case migrations.SQLite:
		d, mem, err := sqliteDSN(dsn)
		if err != nil {
			return nil, err
		}
		if !mem {
			if readDSN, err = sqliteReadDSN(d); err != nil {
				return nil, err
			}
			fileDSN = d
		}
		dialector = sqlite.New(sqlite.Config{DriverName: writerDriver, DSN: d})
	case migrations.Postgres:
		dialector = postgres.Open(dsn)
		probeDriver, probeDSN = "pgx", dsn
		unprepared = namedStatementsOff(dsn)
	case migrations.MySQL:
		d, err := mysqlDSN(dsn)
		if err != nil {
			return nil, err
		}
		dialector = mysql.Open(d)
		probeDriver, probeDSN = "mysql", d
	default:
		return nil, fmt.Errorf("storage: unknown driver %q (want sqlite, postgres or mysql)", driver)
	}
	w, err := openGorm(dialector)
	if err != nil {
		return nil, fmt.Errorf("storage: open %s: %w", driver, err)
	}
	wsql, err := w.DB()
	if err != nil {
		return nil, fmt.Errorf("storage: open %s: %w", driver, err)
	}
	db := &DB{gorm: w, sql: wsql, writer: w, wsql: wsql, dialect: driver, dsn: dsn, probeDriver: probeDriver, probeDSN: probeDSN,
		unprepared: unprepared}
	if driver != migrations.SQLite {
		configurePool(wsql, driver)
	} else {
		// The one writing connection: writes wait for it in order in database/sql's queue (or
		// the group committer's) instead of asleep in the busy handler. Kept open for good, as
		// a local file has no server that drops idle connections.
		wsql.SetMaxOpenConns(1)
		wsql.SetMaxIdleConns(1)
		wsql.SetConnMaxLifetime(0)
	}
	// The writer connects first: it turns the file to WAL mode (a persistent setting) before a
	// read-only connection, which cannot, opens it.
	if err := db.ping(ctx, wsql); err != nil {
		_ = wsql.Close()
		return nil, err
	}
	if readDSN != "" {
		r, err := openGorm(sqlite.Open(readDSN))
		if err == nil {
			db.gorm = r
			db.sql, err = r.DB()
		}
		if err == nil {
			configurePool(db.sql, driver)
			err = db.ping(ctx, db.sql)
		}
		if err != nil {
			_ = wsql.Close()
			if db.sql != wsql {
				_ = db.sql.Close()
			}
			return nil, fmt.Errorf("storage: open %s for reading: %w", driver, err)
		}
		// A file database (the only kind with a read pool) checkpoints in the background.
		if db.checkpoints, err = startCheckpointer(fileDSN); err != nil {
			_ = wsql.Close()
			_ = db.sql.Close()
			return nil, err
		}
	}
	return db, nil
}

// openGorm opens a GORM handle with the settings every store relies on.
func openGorm(dialector gorm.Dialector) (*gorm.DB, error) {
	return gorm.Open(dialector, &gorm.Config{
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
}

// SetMaxConns sets the most connections the pool of a Postgres or MySQL server opens, all kept
// idle as configurePool keeps its default's (database.maxConns); on SQLite it does nothing (one
// writing connection, a read pool of its own size).
func (db *DB) SetMaxConns(n int) {
	if db.dialect == migrations.SQLite || n <= 0 {
		return
	}
	db.wsql.SetMaxOpenConns(n)
	db.wsql.SetMaxIdleConns(n)
}

// configurePool sizes the connection pool for the dialect.
func configurePool(db *sql.DB, driver string) {
	switch driver {
	case migrations.SQLite:
		// The read-only pool (the writer has its own connection, see Open). WAL lets any
		// number of readers run beside the writer; a few more than the cores keep them busy
		// while some wait on the disk.
		db.SetMaxOpenConns(4)
		db.SetMaxIdleConns(4)
		// A local file has no server that drops idle connections.
		db.SetConnMaxLifetime(0)
	case migrations.Postgres:
		// N replicas share the server's max_connections (100 by default): 10 each leaves room
		// for several replicas, migrations and an operator's psql.
		db.SetMaxOpenConns(10)
		// As many kept idle as may be open: with fewer, a connection returned while the idle
		// ones are full is closed, so under load requests open and close connections all the
		// time, which slows writes. ConnMaxIdleTime closes them when the load is gone.
		db.SetMaxIdleConns(10)
		// Recycle connections so that, behind a load balancer or after a failover, they spread
		// to the current servers instead of sticking to the old ones.
		db.SetConnMaxLifetime(30 * time.Minute)
		db.SetConnMaxIdleTime(5 * time.Minute)
	case migrations.MySQL:
		// max_connections is 151 by default; the same reasoning as for Postgres.
		db.SetMaxOpenConns(10)
		db.SetMaxIdleConns(10) // as for Postgres
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

// sqliteReadParams turn a connection of sqliteDSN into one of the read-only pool:
//   - query_only: a write sent to the read pool by mistake fails at once, instead of taking the
//     file's write lock beside the writer connection.
//   - txlock=deferred: a read transaction takes no write lock at BEGIN (immediate would).
var sqliteReadParams = [][2]string{
	{"_query_only", "true"},
	{"_txlock", "deferred"},
}

// sqliteReadDSN returns dsn, a DSN of sqliteDSN, with sqliteReadParams in place of any value
// it had for them.
func sqliteReadDSN(dsn string) (string, error) {
	file, query, _ := strings.Cut(dsn, "?")
	q, err := url.ParseQuery(query)
	if err != nil {
		return "", fmt.Errorf("storage: sqlite dsn parameters: %w", err)
	}
	for _, p := range sqliteReadParams {
		q.Set(p[0], p[1])
	}
	return file + "?" + q.Encode(), nil
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

// SQL returns the pool that writes (on SQLite its one connection), for migrations and tests.
func (db *DB) SQL() *sql.DB { return db.wsql }

// ReadSQL is the pool reads go to: on SQLite the read-only connections, elsewhere the one pool.
func (db *DB) ReadSQL() *sql.DB { return db.sql }

// Ping checks that the database answers; the readiness probe calls it. It asks the read pool,
// which a queue of writes does not hold up.
func (db *DB) Ping(ctx context.Context) error { return db.ping(ctx, db.sql) }

// DropIdle closes the idle connections of the pool (Postgres, MySQL): once the database answers
// again after an outage, those it held were opened to a server that went away or restarted, and
// a statement sent on one fails. Requests open new ones. On SQLite it does nothing.
func (db *DB) DropIdle() {
	if db.dialect == migrations.SQLite {
		return
	}
	// As many are kept idle as may be open (configurePool, SetMaxConns).
	n := db.wsql.Stats().MaxOpenConnections
	db.wsql.SetMaxIdleConns(0)
	db.wsql.SetMaxIdleConns(n)
}

// Alive pings the database on a connection of its own (Postgres, MySQL): whether the server
// answers, even while every connection of the pools is busy (a locked table, a long query),
// where a ping of the pool would wait for one of them and say the database is down. On SQLite,
// a local file, it pings the read pool.
func (db *DB) Alive(ctx context.Context) error {
	if db.probeDriver == "" {
		return db.Ping(ctx)
	}
	db.probeOnce.Do(func() {
		db.probe, db.probeErr = sql.Open(db.probeDriver, db.probeDSN)
		if db.probeErr == nil {
			configurePool(db.probe, db.dialect)
			db.probe.SetMaxOpenConns(1)
			db.probe.SetMaxIdleConns(1)
			// Kept open: a ping that must first dial and authenticate within its second could
			// take a merely slow network for a database that is down.
			db.probe.SetConnMaxIdleTime(0)
			db.probe.SetConnMaxLifetime(0)
		}
	})
	if db.probeErr != nil {
		return fmt.Errorf("storage: ping %s: %w", db.dialect, db.probeErr)
	}
	if db.probe == nil { // closed before the first ping
		return fmt.Errorf("storage: ping %s: %w", db.dialect, sql.ErrConnDone)
	}
	return db.ping(ctx, db.probe)
}

func (db *DB) ping(ctx context.Context, pool *sql.DB) error {
	err := pool.PingContext(ctx)
	if errors.Is(err, driver.ErrBadConn) {
		// The connection pinged was found dead and is closed now: its server went away (a
		// restart, a failover), and so did that of the pool's other idle connections. The
		// database may well answer on a new one, which database/sql opens for a ping only when
		// asked again.
		if pool == db.wsql {
			db.DropIdle()
		}
		err = pool.PingContext(ctx)
	}
	if err != nil {
		return fmt.Errorf("storage: ping %s: %w", db.dialect, err)
	}
	if db.dialect == migrations.MySQL {
		if err := db.galeraReady(ctx, pool); err != nil {
			return fmt.Errorf("storage: ping %s: %w", db.dialect, err)
		}
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
	db.stopNotifier()
	var err error
	if db.checkpoints != nil {
		err = db.checkpoints.close()
	}
	err = errors.Join(err, db.wsql.Close())
	db.probeOnce.Do(func() {}) // no probe opened after this
	if db.probe != nil {
		err = errors.Join(err, db.probe.Close())
	}
	if db.sql != db.wsql {
		err = errors.Join(err, db.sql.Close())
	}
	return err
}

// Migrate applies the pending schema migrations of the database's dialect, on the direct
// connection if there is one (see UseDirect).
func (db *DB) Migrate(ctx context.Context) error {
	if db.direct == "" {
		return migrations.Up(ctx, db.wsql, db.dialect)
	}
	direct, err := sql.Open("pgx", db.direct)
	if err != nil {
		return fmt.Errorf("storage: open the direct connection: %w", err)
	}
	defer direct.Close()
	return migrations.Up(ctx, direct, db.dialect)
}

// with returns a GORM session on the read pool bound to ctx: every store read goes through it.
func (db *DB) with(ctx context.Context) *gorm.DB { return db.gorm.WithContext(ctx) }

// writing returns a GORM session on the writing pool bound to ctx, for the writes that do not go
// through the group committer (tenants, rules, secrets, pruning).
func (db *DB) writing(ctx context.Context) *gorm.DB { return db.writer.WithContext(ctx) }

// utc normalises a time as every dialect stores it: UTC, microsecond precision.
func utc(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }
