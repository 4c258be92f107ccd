package migrations

import (
	"database/sql"
	"time"

	"github.com/pressly/goose/v3/lock"
)

// LeaseLocker is a MySQL locker that takes the Galera lease whatever the server, under a named
// lock of its own (as replicas on different nodes, whose named locks do not meet), with a lease
// of leaseFor renewed every renewEvery.
func LeaseLocker(db *sql.DB, name string, timeout, leaseFor, renewEvery time.Duration) lock.SessionLocker {
	return &mysqlLocker{name: "agentcards_test:" + name, timeout: timeout, galera: true, holder: name,
		db: db, leaseFor: leaseFor, renewEvery: renewEvery}
}
