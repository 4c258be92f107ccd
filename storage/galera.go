package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
)

// A MariaDB Galera node answers pings while it is not part of the cluster's primary component or
// is still catching up with it (joining by state transfer, or cut off from the other nodes):
// statements on its tables then fail with error 1047,
// "WSREP has not yet prepared node for application use". For this replica its database is then
// as good as down, so a ping says so: the tenant gate answers from memory or 503 instead of
// passing requests that fail with 500, and /ready answers 503 so that a load balancer sends
// requests to the replicas of the other nodes.

const (
	galeraNo  = 1
	galeraYes = 2
)

// errGaleraNotReady is a ping of a Galera node that is not ready for statements.
var errGaleraNotReady = errors.New("the Galera node is not ready (wsrep_ready is OFF): it is joining the cluster or outside its primary component")

// galeraReady returns errGaleraNotReady if the MySQL server is a Galera node not ready for
// statements. Whether the server is a Galera node is asked once; each later call on a Galera
// node asks wsrep_ready, one more round trip, and none on another server.
func (db *DB) galeraReady(ctx context.Context, pool *sql.DB) error {
	if db.galera.Load() == 0 {
		on, err := showValue(ctx, pool, "SHOW VARIABLES LIKE 'wsrep_on'")
		if err != nil {
			return err
		}
		if strings.EqualFold(on, "ON") {
			db.galera.Store(galeraYes)
		} else {
			db.galera.Store(galeraNo)
		}
	}
	if db.galera.Load() != galeraYes {
		return nil
	}
	ready, err := showValue(ctx, pool, "SHOW STATUS LIKE 'wsrep_ready'")
	if err != nil {
		return err
	}
	if !strings.EqualFold(ready, "ON") {
		return errGaleraNotReady
	}
	return nil
}

// showValue runs a SHOW ... LIKE of one variable and returns its value, "" if there is none
// (a server without Galera has no wsrep variables).
func showValue(ctx context.Context, pool *sql.DB, query string) (string, error) {
	var name, value string
	err := pool.QueryRowContext(ctx, query).Scan(&name, &value)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("%s: %w", query, err)
	}
	return value, nil
}
