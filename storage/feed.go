package storage

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"gorm.io/gorm"

	"github.com/agentcards/agentcards/cards/search"
	"github.com/agentcards/agentcards/migrations"
	"github.com/agentcards/agentcards/tenants"
)

var _ search.Feed = (*CardStore)(nil)

// notifyChannel is the Postgres channel a change-feed write notifies. The payload is the
// writer's schema, the tenant and, for a write of one entry, the entry: its sequence number,
// operation, revision and agent, separated by spaces (ids hold none; the agent comes last
// anyway). A channel belongs to the whole database, and deployments (or tests) in other schemas
// of it must not wake each other's followers, nor make them believe a write of theirs was heard.
// With the entry in hand a follower needs no read of the feed.
const notifyChannel = "agentcards_changes"

// notice returns, on Postgres, the payload of a notification of tenant's feed (see
// notifyChannel): with entry (its sequence number, operation, revision and agent, separated by
// spaces) when not "", else naming the tenant alone, whose followers then read the feed from
// where they are. "" elsewhere, where followers poll. It is sent by notifyAfter once tx commits.
func (db *DB) notice(tx *gorm.DB, tenant, entry string) (string, error) {
	if db.dialect != migrations.Postgres {
		return "", nil
	}
	schema, err := db.currentSchema(tx)
	if err != nil {
		return "", err
	}
	if entry == "" {
		return schema + " " + tenant, nil
	}
	return schema + " " + tenant + " " + entry, nil
}

// currentSchema returns the schema this DB's connections write in (Postgres), read once, on tx.
// Every connection of the pool has the search path of the one DSN.
func (db *DB) currentSchema(tx *gorm.DB) (string, error) {
	if s := db.schema.Load(); s != nil {
		return *s, nil
	}
	var schema string
	if err := tx.Raw("SELECT current_schema()").Row().Scan(&schema); err != nil {
		return "", err
	}
	db.schema.Store(&schema)
	return schema, nil
}

// notifyAfter has notice, a notification's payload (see pgWithChange), sent once the write it
// tells of has committed, on Postgres: by a goroutine of the DB, with the others waiting, in one
// statement, so that the write is answered without waiting for it. A NOTIFY inside the write's
// transaction makes its commit take a lock that every other notifying commit of the database
// waits for until it is durable: commits one at a time, none sharing a WAL flush with another.
// In a bench of 16 writers each inserting a row in autocommit: 9,071-11,523 rows/s without a
// notification, 3,271-3,642 with it in the statement, 6,660-7,432 with it sent after in a
// statement of its own (whose own commit, telling nothing worth keeping, does not wait for the
// WAL flush: synchronous_commit off for it). A notification lost here (the process ended first,
// the send failed, or too many were waiting) costs a follower nothing it cannot make up: its poll
// reads the whole window every few seconds (listeningFullPeriod in cards/search), as for a
// notice that did not arrive.
func (db *DB) notifyAfter(notice string) {
	if db.dialect != migrations.Postgres || notice == "" {
		return
	}
	n := &db.notes
	n.once.Do(func() {
		n.wake, n.stop, n.done = make(chan struct{}, 1), make(chan struct{}), make(chan struct{})
		go db.sendNotices()
	})
	n.mu.Lock()
	if n.closed || len(n.pending) >= notifyMaxPending {
		n.mu.Unlock()
		n.dropped.Add(1)
		return
	}
	n.pending = append(n.pending, notice)
	n.mu.Unlock()
	select {
	case n.wake <- struct{}{}:
	default: // a send is already due
	}
}

// notifier holds the notifications waiting to be sent (see notifyAfter).
type notifier struct {
	once    sync.Once
	mu      sync.Mutex
	pending []string
	closed  bool
	// wake tells sendNotices some are pending; stop asks it to send the last and end; done is
	// closed when it has.
	wake, stop, done chan struct{}
	// dropped counts the notifications not sent: more than notifyMaxPending waiting, queued
	// after Close, or in a statement that failed (see NotificationsDropped).
	dropped atomic.Uint64
}

// NotificationsDropped returns how many notifications of card writes were not sent (Postgres; 0
// elsewhere): none is lost for good, as followers read the whole feed window every few seconds,
// but while some are dropped other replicas see this one's writes seconds later instead of at
// once, and this count (the metric notifications_dropped_total) is where that shows.
func (db *DB) NotificationsDropped() uint64 { return db.notes.dropped.Load() }

// notifyMaxPending bounds the notifications waiting to be sent; beyond, they are dropped.
const notifyMaxPending = 10000

// notifyTimeout bounds one statement of notifications: the writes have committed by then and
// were answered whatever becomes of it.
const notifyTimeout = 2 * time.Second

// sendNotices sends the pending notifications whenever there are some, until stopped.
func (db *DB) sendNotices() {
	n := &db.notes
	defer close(n.done)
	for {
		select {
		case <-n.wake:
			db.flushNotices()
		case <-n.stop:
			db.flushNotices()
			return
		}
	}
}

// flushNotices sends every pending notification in one statement, in the order they came.
func (db *DB) flushNotices() {
	n := &db.notes
	n.mu.Lock()
	batch := n.pending
	n.pending = nil
	n.mu.Unlock()
	if len(batch) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), notifyTimeout)
	defer cancel()
	const send = "SELECT set_config('synchronous_commit', 'off', true), pg_notify(?, n) FROM unnest(?::text[]) AS n"
	if _, err := db.prepare(send).exec(db.writer.WithContext(ctx), notifyChannel, batch); err != nil {
		n.dropped.Add(uint64(len(batch)))
	}
}

// stopNotifier sends the notifications still pending and stops their goroutine (Close).
func (db *DB) stopNotifier() {
	n := &db.notes
	n.once.Do(func() {}) // none starts after this
	n.mu.Lock()
	stopped := n.closed
	n.closed = true
	n.mu.Unlock()
	if n.stop == nil {
		return
	}
	if !stopped {
		close(n.stop)
	}
	// A second Close waits for the first's last send too: the pool closes after it.
	<-n.done
}

// notified reads a notification's payload: the tenant and the entry, if the write was made in
// schema. A payload that does not parse is taken as naming the tenant only (a full sync).
func notified(payload, schema string) (search.Notice, bool) {
	f := strings.SplitN(payload, " ", 6)
	if len(f) < 2 || f[0] != schema || f[1] == "" {
		return search.Notice{}, false
	}
	n := search.Notice{Tenant: tenants.ID(f[1])}
	if len(f) != 6 {
		return n, true
	}
	seq, err1 := strconv.ParseInt(f[2], 10, 64)
	rev, err2 := strconv.ParseInt(f[4], 10, 64)
	if err1 != nil || err2 != nil || seq <= 0 || f[3] == "" || f[5] == "" {
		return n, true
	}
	n.Change = search.Change{Seq: seq, Op: f[3], Revision: rev, AgentID: f[5]}
	return n, true
}

// Changes returns the tenant's change-feed entries after seq after, in order.
func (s *CardStore) Changes(ctx context.Context, tenant tenants.ID, after int64, limit int) ([]search.Change, error) {
	// Every follower reads this every poll interval, and a new index reads back a window of it:
	// prepared, without GORM.
	rs, err := s.db.prepare("SELECT seq, agent_id, op, revision FROM card_changes WHERE tenant_id = ? AND seq > ? ORDER BY seq LIMIT ?").
		rows(ctx, string(tenant), after, limit)
	if err != nil {
		return nil, fmt.Errorf("read change feed: %w", err)
	}
	defer rs.Close()
	out := make([]search.Change, 0, min(limit, 1024))
	for rs.Next() {
		var c search.Change
		if err := rs.Scan(&c.Seq, &c.AgentID, &c.Op, &c.Revision); err != nil {
			return nil, fmt.Errorf("read change feed: %w", err)
		}
		out = append(out, c)
	}
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("read change feed: %w", err)
	}
	return out, nil
}

// LastSeq returns the tenant's newest change-feed sequence number (0 if none).
func (s *CardStore) LastSeq(ctx context.Context, tenant tenants.ID) (int64, error) {
	var last *int64
	err := s.db.gorm.WithContext(ctx).Model(&changeRow{}).
		Where("tenant_id = ?", string(tenant)).Select("MAX(seq)").Scan(&last).Error
	if err != nil {
		return 0, fmt.Errorf("read change feed: %w", err)
	}
	if last == nil {
		return 0, nil
	}
	return *last, nil
}

// HighestSeq returns the highest change-feed sequence number of any tenant (0 if none).
func (s *CardStore) HighestSeq(ctx context.Context) (int64, error) {
	var last *int64
	if err := s.db.gorm.WithContext(ctx).Model(&changeRow{}).Select("MAX(seq)").Scan(&last).Error; err != nil {
		return 0, fmt.Errorf("read change feed: %w", err)
	}
	if last == nil {
		return 0, nil
	}
	return *last, nil
}

// SeqBefore returns the tenant's highest change-feed sequence number written before t (0 if none).
func (s *CardStore) SeqBefore(ctx context.Context, tenant tenants.ID, t time.Time) (int64, error) {
	var seq *int64
	err := s.db.gorm.WithContext(ctx).Model(&changeRow{}).
		Where("tenant_id = ? AND changed_at < ?", string(tenant), utc(t)).Select("MAX(seq)").Scan(&seq).Error
	if err != nil {
		return 0, fmt.Errorf("read change feed: %w", err)
	}
	if seq == nil {
		return 0, nil
	}
	return *seq, nil
}

// ErrNoListen is returned by Listen on databases without LISTEN/NOTIFY; poll instead.
var ErrNoListen = errors.New("storage: this database has no LISTEN/NOTIFY")

// Listen delivers a notice of every change-feed write (of any replica) to out until ctx ends
// or db is closed, over a dedicated Postgres connection; it reconnects after errors. Followers
// use it to sync at once instead of at their next poll.
//
// A notification sent while no LISTEN is in effect is lost, so Listen returns only once LISTEN
// is in effect (a write that commits after that is always heard), and each time LISTEN is
// (re)established it calls resync (if set) before delivering anything: the follower must read
// every loaded tenant's feed again for what was written meanwhile. If the first attempt fails
// (or takes over listenConnectTimeout), Listen returns its error and keeps trying in the
// background, every second, as after any later failure. Close waits for the listener to stop.
func (db *DB) Listen(ctx context.Context, out chan<- search.Notice, resync func(), onError func(error)) error {
	if db.dialect != "postgres" {
		return ErrNoListen
	}
	ctx, stop := context.WithCancel(ctx)
	db.mu.Lock()
	if db.closed {
		db.mu.Unlock()
		stop()
		return errClosed
	}
	db.listeners = append(db.listeners, stop)
	db.running.Add(1)
	db.mu.Unlock()
	first := make(chan error, 1)
	go func() {
		defer db.running.Done()
		defer stop()
		waiting := true // Listen has not returned yet: the first outcome is its result
		listening := func() {
			if resync != nil {
				resync()
			}
			if waiting {
				waiting = false
				first <- nil
			}
		}
		for ctx.Err() == nil {
			err := db.listenOnce(ctx, out, listening)
			if ctx.Err() != nil {
				break
			}
			if waiting {
				waiting = false
				first <- err
			} else if onError != nil {
				onError(err)
			}
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
		if waiting {
			first <- ctx.Err()
		}
	}()
	return <-first
}

// listenConnectTimeout bounds connecting and starting LISTEN, so that a database that stopped
// answering cannot hold a starting server (or a reconnection) for the operating system's TCP
// timeout.
const listenConnectTimeout = 10 * time.Second

// ListenApplication is the application_name of a LISTEN connection in pg_stat_activity, for
// the deployment in schema: operators (and tests) tell the listeners apart by it.
func ListenApplication(schema string) string { return "agentcards-listen " + schema }

// listenOnce runs one LISTEN connection until it fails or ctx ends, calling listening once the
// LISTEN is in effect.
func (db *DB) listenOnce(ctx context.Context, out chan<- search.Notice, listening func()) error {
	setupCtx, cancel := context.WithTimeout(ctx, listenConnectTimeout)
	defer cancel()
	conn, err := pgx.Connect(setupCtx, db.listenDSN())
	if err != nil {
		return fmt.Errorf("listen: connect: %w", err)
	}
	defer conn.Close(context.Background())
	// The application name says whose listener this is in pg_stat_activity: its schema.
	var schema string
	if err := conn.QueryRow(setupCtx, "SELECT current_schema()").Scan(&schema); err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	if _, err := conn.Exec(setupCtx, "SELECT set_config('application_name', $1, false)", ListenApplication(schema)); err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	if db.beforeListen != nil {
		db.beforeListen(conn.PgConn().PID())
	}
	if _, err := conn.Exec(setupCtx, "LISTEN "+notifyChannel); err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	cancel()
	listening()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return fmt.Errorf("listen: %w", err)
		}
		notice, ok := notified(n.Payload, schema)
		if !ok {
			continue // a write in another schema of the database
		}
		select {
		case out <- notice:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// PruneChanges deletes the tenant's change-feed entries written before t and reports how many.
// Followers read back only a request timeout or so, and a new index starts from a snapshot, so
// old entries serve nobody; without pruning the feed grows with every write for ever.
func (s *CardStore) PruneChanges(ctx context.Context, tenant tenants.ID, before time.Time) (int64, error) {
	res := s.db.writing(ctx).Where("tenant_id = ? AND changed_at < ?", string(tenant), utc(before)).Delete(&changeRow{})
	if res.Error != nil {
		return 0, fmt.Errorf("prune change feed of %q: %w", string(tenant), res.Error)
	}
	return res.RowsAffected, nil
}
