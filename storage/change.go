package storage

import (
	"fmt"
	"time"

	"gorm.io/gorm"
)

// The operations the change feed records.
const (
	opCreate = "create"
	opUpdate = "update"
	opDelete = "delete"
	// opPurge says that a tenant and everything it owned is gone; its agent_id is empty.
	opPurge = "purge"
)

// changeRow is one entry of the change feed (table card_changes). It is written in the
// transaction of the write it records, so a follower never sees a change that was rolled back
// nor misses one that was committed.
type changeRow struct {
	Seq       int64     `gorm:"column:seq;primaryKey;autoIncrement"`
	TenantID  string    `gorm:"column:tenant_id"`
	AgentID   string    `gorm:"column:agent_id"`
	Op        string    `gorm:"column:op"`
	Revision  int64     `gorm:"column:revision"`
	ChangedAt time.Time `gorm:"column:changed_at"`
}

func (changeRow) TableName() string { return "card_changes" }

// appendChange records a write in the change feed inside the transaction tx, and returns the
// notification of it to send once tx commits (db.notifyAfter; "" but on Postgres).
func (db *DB) appendChange(tx *gorm.DB, tenant, agentID, op string, revision int64) (string, error) {
	row := changeRow{TenantID: tenant, AgentID: agentID, Op: op, Revision: revision, ChangedAt: utc(tx.NowFunc())}
	if err := tx.Create(&row).Error; err != nil {
		return "", err
	}
	return db.notice(tx, tenant, fmt.Sprintf("%d %s %d %s", row.Seq, op, revision, agentID))
}

// appendChangeAt records a write in the change feed inside tx, changed at now, with a prepared
// statement (the card writes' path on SQLite and MySQL; Postgres's card writes use pgWithChange,
// and followers there hear of them by notifyAfter).
func appendChangeAt(tx *gorm.DB, db *DB, tenant, agentID, op string, revision int64, now time.Time) error {
	_, err := db.prepare("INSERT INTO card_changes (tenant_id, agent_id, op, revision, changed_at) VALUES (?, ?, ?, ?, ?)").
		exec(tx, tenant, agentID, op, revision, now)
	return err
}
