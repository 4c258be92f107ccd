package storage

// SetBeforeListen makes each LISTEN connection of db call f (with the backend's pid) just before
// its LISTEN statement, so a test can delay the LISTEN or cut the connection.
func SetBeforeListen(db *DB, f func(pid uint32)) { db.beforeListen = f }

// SetPruneBatch makes Prune delete n entries a statement, until the returned func restores it.
func SetPruneBatch(n int) func() {
	old := pruneBatch
	pruneBatch = n
	return func() { pruneBatch = old }
}

// SetVersionsPage makes Versions read n versions a query, until the returned func restores it.
func SetVersionsPage(n int) func() {
	old := versionsPage
	versionsPage = n
	return func() { versionsPage = old }
}

// QueueNoticeQuietly adds notice to the notifications db sends after card writes, without waking
// its sender: as a notice queued just as the sender finished a round, which only Close sends.
func QueueNoticeQuietly(db *DB, notice string) {
	db.notes.mu.Lock()
	defer db.notes.mu.Unlock()
	db.notes.pending = append(db.notes.pending, notice)
}

// NotifyAfter queues notice as a card write's notification (see notifyAfter).
func NotifyAfter(db *DB, notice string) { db.notifyAfter(notice) }

// Deadlocked reports whether err is a transaction the server rolled back that the stores run
// again (see retryDeadlocks).
func Deadlocked(err error) bool { return deadlocked(err) }

// ErrGaleraNotReady is a ping's error on a Galera node not ready for statements.
var ErrGaleraNotReady = errGaleraNotReady
