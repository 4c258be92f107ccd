package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/migrations"
	"github.com/agentcards/agentcards/tenants"
	"github.com/agentcards/agentcards/tenants/audit"
)

// CardStore keeps cards as one JSON document per (tenant, agent) plus the columns queries need,
// and records every write in the change feed in the same transaction.
type CardStore struct {
	db *DB
}

var _ cards.Store = (*CardStore)(nil)

// NewCardStore returns the card store over db.
func NewCardStore(db *DB) *CardStore { return &CardStore{db: db} }

// cardRow is a row of the cards table.
type cardRow struct {
	TenantID  string    `gorm:"column:tenant_id;primaryKey"`
	AgentID   string    `gorm:"column:agent_id;primaryKey"`
	ID        string    `gorm:"column:id"`
	Name      string    `gorm:"column:name"`
	Revision  int64     `gorm:"column:revision"`
	Doc       string    `gorm:"column:doc"`
	CreatedAt time.Time `gorm:"column:created_at;autoCreateTime:false"`
	UpdatedAt time.Time `gorm:"column:updated_at;autoUpdateTime:false"`
	// raw is the document as scanCardRow read it, decoded as it is (Doc is empty): one copy
	// fewer where the driver hands bytes (MySQL); go-sqlite3 and pgx hand a string, copied once
	// either way.
	raw []byte
}

func (cardRow) TableName() string { return "cards" }

// newCardRow converts a card of tenant into its row.
func newCardRow(tenant tenants.ID, c cards.Card) (cardRow, error) {
	doc, err := cards.MarshalDocument(c)
	if err != nil {
		return cardRow{}, fmt.Errorf("card %q: encode document: %w", c.AgentID, err)
	}
	return cardRow{
		TenantID: string(tenant), AgentID: c.AgentID, ID: c.ID, Name: c.Name, Revision: c.Revision,
		Doc: string(doc), CreatedAt: utc(c.CreatedAt), UpdatedAt: utc(c.UpdatedAt),
	}, nil
}

// card converts the row back: the document, then the server-owned fields from the columns.
func (r cardRow) card() (cards.Card, error) {
	return r.stored().Card()
}

// stored is the row as the card it holds, its document not decoded.
func (r cardRow) stored() cards.Stored {
	doc := r.raw
	if doc == nil {
		doc = []byte(r.Doc)
	}
	return cards.Stored{AgentID: r.AgentID, ID: r.ID, Revision: r.Revision, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, Document: doc}
}

// Create inserts a new card: cards.ErrExists if the agent already has one in the tenant,
// tenants.ErrNotFound if the tenant does not exist. It returns the card's revision: 1, or one
// past the last revision of the agent's deleted card (see tombstone.go); c.Revision is ignored.
func (s *CardStore) Create(ctx context.Context, tenant tenants.ID, c cards.Card) (int64, error) {
	row, err := newCardRow(tenant, c)
	if err != nil {
		return 0, err
	}
	now := utc(s.db.writer.NowFunc())
	entry := audit.New(ctx, "cards.register", audit.CardObject(c.AgentID), 0, 0)
	if s.db.dialect == migrations.Postgres {
		// One statement, in autocommit: the tombstone row locked, the row, its feed entry and
		// its audit entry, in one round trip instead of six (BEGIN, four statements, COMMIT);
		// then the notification (see notifyAfter).
		var notice string
		err = s.db.grouped(ctx, func(tx *gorm.DB) error {
			write := "INSERT INTO cards (tenant_id, agent_id, id, name, revision, doc, created_at, updated_at) " +
				"SELECT ?, ?, ?, ?, t.revision + 1, ?, ?, ? FROM t RETURNING tenant_id, agent_id, revision"
			q := "WITH t AS (" + tombstoneRows(1) + s.db.tombstoneKeep() + " RETURNING revision), " +
				strings.TrimPrefix(pgWithChange(write, opCreate), "WITH ")
			args := append([]any{row.TenantID, row.AgentID, row.TenantID, row.AgentID, row.ID, row.Name, row.Doc, row.CreatedAt, row.UpdatedAt, now},
				pgAuditArgs(row.TenantID, now, entry)...)
			return s.db.prepare(q).each(tx, func(rs *sql.Rows) error { return rs.Scan(&row.Revision, &notice) }, args...)
		})
		if err == nil {
			s.db.notifyAfter(notice)
		}
	} else {
		err = s.db.transact(ctx, func(tx *gorm.DB) error {
			last, err := s.db.lastRevisions(tx, row.TenantID, []string{row.AgentID})
			if err != nil {
				return err
			}
			row.Revision = last[row.AgentID] + 1
			_, err = s.db.prepare("INSERT INTO cards (tenant_id, agent_id, id, name, revision, doc, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)").
				exec(tx, row.TenantID, row.AgentID, row.ID, row.Name, row.Revision, row.Doc, row.CreatedAt, row.UpdatedAt)
			if err != nil {
				return err
			}
			entry.RevisionAfter = row.Revision
			if err := s.db.record(tx, row.TenantID, entry); err != nil {
				return err
			}
			return appendChangeAt(tx, s.db, row.TenantID, row.AgentID, opCreate, row.Revision, now)
		})
	}
	switch {
	case errors.Is(err, gorm.ErrDuplicatedKey):
		return 0, fault.Errorf(fault.Conflict, "card %q: already exists", c.AgentID)
	case errors.Is(err, gorm.ErrForeignKeyViolated):
		return 0, fault.Errorf(fault.NotFound, "tenant %q: not found", string(tenant))
	case err != nil:
		return 0, fmt.Errorf("create card %q: %w", c.AgentID, err)
	}
	return row.Revision, nil
}

// pgWithChange wraps write, a Postgres INSERT or UPDATE of one card returning its tenant_id,
// agent_id and revision, into one statement that also appends the change-feed entry (op, with
// changed_at the parameter after write's) and the audit entry (pgAudit, its parameters last),
// answering the card's revision and the notification of its feed entry (the payload
// notifyEntry would send), for notifyAfter. The statement writes neither entry, and answers no
// row, when write touched no row.
func pgWithChange(write, op string) string {
	return "WITH w AS (" + write + "), " +
		"f AS (INSERT INTO card_changes (tenant_id, agent_id, op, revision, changed_at) SELECT tenant_id, agent_id, '" + op + "', revision, ? FROM w " +
		"RETURNING tenant_id, seq, op, revision, agent_id), " + pgAudit + " " +
		"SELECT revision, current_schema() || ' ' || tenant_id || ' ' || seq || ' ' || op || ' ' || revision || ' ' || agent_id FROM f"
}

// CreateMany inserts new cards in one transaction, all or none, with their change-feed entries
// written together at its end, and sets each card's Revision as Create gives it. A card whose
// agent already has one makes it fail naming that card (its index in cs), as cards.ErrExists.
func (s *CardStore) CreateMany(ctx context.Context, tenant tenants.ID, cs []cards.Prepared) error {
	// The rows go in as multi-row INSERTs of plain SQL (see insertRows), not through GORM's
	// CreateInBatches, which reflected over every row; the documents are stored as validation
	// encoded them.
	values := make([]any, 0, len(cs)*len(insertCards.columns))
	sizes := make([]int, len(cs))
	ids := make([]string, len(cs))
	at := make(map[string]int, len(cs))
	for i, p := range cs {
		values = s.db.appendPrepared(values, tenant, p)
		sizes[i], ids[i], at[p.Card.AgentID] = len(p.Document), p.Card.AgentID, i
	}
	var notice string
	err := s.db.transact(ctx, func(tx *gorm.DB) error {
		taken, err := s.db.takenAgents(tx, string(tenant), ids)
		if err != nil {
			return err
		}
		if len(taken) > 0 {
			first := slices.MinFunc(taken, func(a, b string) int { return at[a] - at[b] })
			return fault.Errorf(fault.Conflict, "cards[%d]: card %q already exists", at[first], first)
		}
		last, err := s.db.lastRevisions(tx, string(tenant), ids)
		if err != nil {
			return err
		}
		for i := range cs {
			cs[i].Card.Revision = last[ids[i]] + 1
			values[i*len(insertCards.columns)+revisionColumn] = cs[i].Card.Revision
		}
		if err := s.db.insertRows(tx, insertCards, values, func(i int) int { return sizes[i] }); err != nil {
			return err
		}
		now := utc(tx.NowFunc())
		changes := make([]any, 0, len(cs)*len(insertChanges.columns))
		for _, p := range cs {
			changes = changeRow{TenantID: string(tenant), AgentID: p.Card.AgentID, Op: opCreate, Revision: p.Card.Revision, ChangedAt: now}.appendValues(changes)
		}
		if err := s.db.insertRows(tx, insertChanges, changes, nil); err != nil {
			return err
		}
		entries := make([]audit.Entry, len(cs))
		for i, p := range cs {
			entries[i] = audit.New(ctx, "cards.register_batch", audit.CardObject(p.Card.AgentID), 0, p.Card.Revision)
		}
		if err := s.db.recordAll(tx, string(tenant), entries); err != nil {
			return err
		}
		notice, err = s.db.notice(tx, string(tenant), "")
		return err
	})
	if err == nil {
		s.db.notifyAfter(notice) // once committed, as a single card's (see notifyAfter)
	}
	switch {
	case fault.KindOf(err) == fault.Conflict:
		return err
	case errors.Is(err, gorm.ErrDuplicatedKey):
		// Created meanwhile by another writer (Postgres and MySQL take writes concurrently).
		return fault.New(fault.Conflict, "a card of the batch was created meanwhile: already exists")
	case errors.Is(err, gorm.ErrForeignKeyViolated):
		return fault.Errorf(fault.NotFound, "tenant %q: not found", string(tenant))
	case err != nil:
		return fmt.Errorf("create %d cards: %w", len(cs), err)
	}
	return nil
}

// cardColumns are the columns scanCardRow scans; selectCards reads them, for the prepared card
// queries.
const (
	cardColumns = "agent_id, id, name, revision, doc, created_at, updated_at"
	selectCards = "SELECT " + cardColumns + " FROM cards "
)

// scanCardRow scans one row of selectCards (from a *sql.Row or *sql.Rows) of tenant.
func scanCardRow(r interface{ Scan(...any) error }, tenant tenants.ID) (cardRow, error) {
	row := cardRow{TenantID: string(tenant)}
	err := r.Scan(&row.AgentID, &row.ID, &row.Name, &row.Revision, &row.raw, &row.CreatedAt, &row.UpdatedAt)
	return row, err
}

// Get returns the card of agentID; cards.ErrNotFound if the tenant has none.
func (s *CardStore) Get(ctx context.Context, tenant tenants.ID, agentID string) (cards.Card, error) {
	// Every card read and every delegation comes here: prepared once, without reflection.
	r, err := s.db.prepare(selectCards+"WHERE tenant_id = ? AND agent_id = ?").queryRow(ctx, string(tenant), agentID)
	if err != nil {
		return cards.Card{}, fmt.Errorf("get card %q: %w", agentID, err)
	}
	row, err := scanCardRow(r, tenant)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return cards.Card{}, fault.Errorf(fault.NotFound, "card %q: not found", agentID)
	case err != nil:
		return cards.Card{}, fmt.Errorf("get card %q: %w", agentID, err)
	}
	return row.card()
}

// Replace overwrites the card if it is still the card read (its id) at revision prev, with one
// conditional UPDATE, so of concurrent writers that read the same revision exactly one wins. The
// id is checked too: a card deleted and created again goes on from the old one's revision (see
// tombstone.go), except an id deleted before the tombstones existed (migration 12), and a write
// of the old card must not land on the new one.
func (s *CardStore) Replace(ctx context.Context, tenant tenants.ID, c cards.Card, prev int64) error {
	row, err := newCardRow(tenant, c)
	if err != nil {
		return err
	}
	now := utc(s.db.writer.NowFunc())
	const update = "UPDATE cards SET name = ?, revision = ?, doc = ?, created_at = ?, updated_at = ? " +
		"WHERE tenant_id = ? AND agent_id = ? AND id = ? AND revision = ?"
	args := []any{row.Name, row.Revision, row.Doc, row.CreatedAt, row.UpdatedAt, row.TenantID, row.AgentID, row.ID, prev}
	entry := audit.New(ctx, "cards.replace", audit.CardObject(c.AgentID), prev, row.Revision)
	// missed tells why the update changed no row: the revision moved on, the card was deleted
	// and created again, or there is no card. written reports whether the stored card is still
	// the one read at prev all the same (MySQL counts a matched row the update left unchanged as
	// not affected), and the write then stands.
	missed := func(tx *gorm.DB) (written bool, err error) {
		id, cur, err := currentVersion(tx, row.TenantID, row.AgentID)
		if err != nil {
			return false, err
		}
		if id != row.ID {
			return false, fault.Errorf(fault.Stale, "card %q was deleted and created again since revision %d was read: revision does not match", c.AgentID, prev)
		}
		if cur != prev {
			return false, fault.Errorf(fault.Stale, "card %q is at revision %d, not %d: revision does not match", c.AgentID, cur, prev)
		}
		return true, nil
	}
	if s.db.dialect == migrations.Postgres {
		// One statement, in autocommit, then the notification, as in Create. The statement
		// answers the notification's payload only when it updated the card.
		var notice string
		err = s.db.grouped(ctx, func(tx *gorm.DB) error {
			args = append(append(args, now), pgAuditArgs(row.TenantID, now, entry)...)
			return s.db.prepare(pgWithChange(update+" RETURNING tenant_id, agent_id, revision", opUpdate)).each(tx, func(rs *sql.Rows) error {
				return rs.Scan(new(int64), &notice)
			}, args...)
		})
		if err == nil {
			s.db.notifyAfter(notice) // none if it updated nothing
		}
		if err != nil || notice != "" {
			return wrapReplace(c.AgentID, err)
		}
		// Postgres counts a matched row as changed: the revision moved on, or the card went,
		// even if it is back at prev by now (deleted and created again since the update).
		if written, err := missed(s.db.with(ctx)); err != nil || !written {
			return err
		}
		return fault.Errorf(fault.Stale, "card %q changed meanwhile: revision does not match", c.AgentID)
	}
	return s.db.transact(ctx, func(tx *gorm.DB) error {
		res, err := s.db.prepare(update).exec(tx, args...)
		if err != nil {
			return wrapReplace(c.AgentID, err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return wrapReplace(c.AgentID, err)
		} else if n == 0 {
			if _, err := missed(tx); err != nil {
				return err
			}
		}
		if err := s.db.record(tx, row.TenantID, entry); err != nil {
			return err
		}
		return appendChangeAt(tx, s.db, row.TenantID, row.AgentID, opUpdate, row.Revision, now)
	})
}

func wrapReplace(agentID string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("replace card %q: %w", agentID, err)
}

// Delete removes the card if its revision is rev, or whatever its revision when rev is 0.
func (s *CardStore) Delete(ctx context.Context, tenant tenants.ID, agentID string, rev int64) error {
	entry := audit.New(ctx, "cards.remove", audit.CardObject(agentID), 0, 0)
	var notice string
	err := s.db.transact(ctx, func(tx *gorm.DB) error {
		if err := s.db.lockTombstone(tx, string(tenant), agentID); err != nil {
			return fmt.Errorf("delete card %q: %w", agentID, err)
		}
		cur, err := currentRevision(tx.Clauses(clause.Locking{Strength: "UPDATE"}), string(tenant), agentID)
		if err != nil {
			return err
		}
		if rev != 0 && cur != rev {
			return fault.Errorf(fault.Stale, "card %q is at revision %d, not %d: revision does not match", agentID, cur, rev)
		}
		res := tx.Where("tenant_id = ? AND agent_id = ? AND revision = ?", string(tenant), agentID, cur).Delete(&cardRow{})
		if res.Error != nil {
			return fmt.Errorf("delete card %q: %w", agentID, res.Error)
		}
		if res.RowsAffected == 0 {
			// Unreachable with the row locked; kept so a lost race can never record a delete.
			return fault.Errorf(fault.Stale, "card %q changed meanwhile: revision does not match", agentID)
		}
		// The card's endpoint secret goes with it: a card created again under this id, perhaps
		// by someone else and pointing elsewhere, must not inherit it.
		res = tx.Where("tenant_id = ? AND agent_id = ?", string(tenant), agentID).Delete(&secretRow{})
		if res.Error != nil {
			return fmt.Errorf("delete the secret of card %q: %w", agentID, res.Error)
		}
		if res.RowsAffected > 0 {
			entry.Detail = "with its endpoint secret"
		}
		// So does its liveness, which a card created again under this id must earn afresh.
		if err := deleteLiveness(tx, string(tenant), agentID); err != nil {
			return fmt.Errorf("delete the liveness of card %q: %w", agentID, err)
		}
		// A card created again under this id goes on from its last revision.
		if err := s.db.bury(tx, string(tenant), agentID, cur); err != nil {
			return fmt.Errorf("delete card %q: %w", agentID, err)
		}
		entry.RevisionBefore = cur
		if err := s.db.record(tx, string(tenant), entry); err != nil {
			return err
		}
		notice, err = s.db.appendChange(tx, string(tenant), agentID, opDelete, cur)
		return err
	})
	if err == nil {
		s.db.notifyAfter(notice) // once committed, as a write's (see notifyAfter)
	}
	return err
}

// currentVersion reads the stored id and revision of a card inside a transaction.
func currentVersion(tx *gorm.DB, tenant, agentID string) (string, int64, error) {
	var row cardRow
	err := tx.Select("id", "revision").Where("tenant_id = ? AND agent_id = ?", tenant, agentID).Take(&row).Error
	switch {
	case errors.Is(err, gorm.ErrRecordNotFound):
		return "", 0, fault.Errorf(fault.NotFound, "card %q: not found", agentID)
	case err != nil:
		return "", 0, fmt.Errorf("read card %q: %w", agentID, err)
	}
	return row.ID, row.Revision, nil
}

// currentRevision reads the stored revision of a card inside a transaction.
func currentRevision(tx *gorm.DB, tenant, agentID string) (int64, error) {
	var row cardRow
	err := tx.Select("revision").Where("tenant_id = ? AND agent_id = ?", tenant, agentID).Take(&row).Error
	switch {
	case errors.Is(err, gorm.ErrRecordNotFound):
		return 0, fault.Errorf(fault.NotFound, "card %q: not found", agentID)
	case err != nil:
		return 0, fmt.Errorf("read card %q: %w", agentID, err)
	}
	return row.Revision, nil
}

// IDs returns the agent ids of the tenant's cards in ascending byte order (the id columns use a
// binary collation on every dialect).
func (s *CardStore) IDs(ctx context.Context, tenant tenants.ID) ([]string, error) {
	ids := []string{}
	err := s.db.with(ctx).Model(&cardRow{}).Where("tenant_id = ?", string(tenant)).
		Order("agent_id").Pluck("agent_id", &ids).Error
	if err != nil {
		return nil, fmt.Errorf("list card ids: %w", err)
	}
	return ids, nil
}

// CountUpTo returns how many cards the tenant has, counting no further than most: the rows
// read are bounded, whatever the tenant's size.
func (s *CardStore) CountUpTo(ctx context.Context, tenant tenants.ID, most int) (int, error) {
	row, err := s.db.prepare("SELECT COUNT(*) FROM (SELECT 1 FROM cards WHERE tenant_id = ? LIMIT ?) AS c").
		queryRow(ctx, string(tenant), max(most, 0))
	var n int
	if err == nil {
		err = row.Scan(&n)
	}
	if err != nil {
		return 0, fmt.Errorf("count cards: %w", err)
	}
	return n, nil
}

// Versions returns the version of each of the tenant's cards, in ascending agent id order (see
// IDs): what a search index restored from a snapshot compares itself with. It reads them
// versionsPage at a time, each page after the last agent id of the one before, so that an index
// build's reads (cards.WithBatchRead) stay bounded as db.bounded wants.
func (s *CardStore) Versions(ctx context.Context, tenant tenants.ID) ([]cards.Version, error) {
	out := []cards.Version{}
	after := ""
	for {
		n := len(out)
		var err error
		if out, err = s.versionsAfter(ctx, tenant, after, out); err != nil {
			return nil, fmt.Errorf("list card versions: %w", err)
		}
		if len(out)-n < versionsPage {
			return out, nil
		}
		after = out[len(out)-1].AgentID
	}
}

// versionsPage is how many versions one query of Versions reads.
var versionsPage = getManyMax

// versionsAfter appends to out the versions of the tenant's cards after agent id after, a page.
func (s *CardStore) versionsAfter(ctx context.Context, tenant tenants.ID, after string, out []cards.Version) ([]cards.Version, error) {
	rs, err := s.db.prepare("SELECT agent_id, id, revision, updated_at FROM cards WHERE tenant_id = ? AND agent_id > ? ORDER BY agent_id LIMIT "+
		strconv.Itoa(versionsPage)).rows(s.db.bounded(ctx), string(tenant), after)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	for rs.Next() {
		var v cards.Version
		if err := rs.Scan(&v.AgentID, &v.ID, &v.Revision, &v.UpdatedAt); err != nil {
			return nil, err
		}
		v.UpdatedAt = v.UpdatedAt.UTC()
		out = append(out, v)
	}
	if err := rs.Err(); err != nil {
		return nil, err
	}
	return out, ctx.Err()
}

// Documents returns up to limit of the tenant's cards after agent id after, in ascending agent
// id order, their documents not decoded: a search index pages through them to keep a copy of its
// cards for reads during a database outage.
func (s *CardStore) Documents(ctx context.Context, tenant tenants.ID, after string, limit int) ([]cards.Stored, error) {
	rs, err := s.db.prepare(selectCards+"WHERE tenant_id = ? AND agent_id > ? ORDER BY agent_id LIMIT "+
		strconv.Itoa(limit)).rows(s.db.bounded(ctx), string(tenant), after)
	if err != nil {
		return nil, fmt.Errorf("list card documents: %w", err)
	}
	defer rs.Close()
	out := make([]cards.Stored, 0, limit)
	for rs.Next() {
		r, err := scanCardRow(rs, tenant)
		if err != nil {
			return nil, fmt.Errorf("list card documents: %w", err)
		}
		out = append(out, r.stored())
	}
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("list card documents: %w", err)
	}
	return out, ctx.Err()
}

// getManyMax is the most ids one GetMany query reads (a power of two, see GetMany).
const getManyMax = 4096

// GetMany returns the cards of ids that exist, in the order of ids, with one query per 4096.
func (s *CardStore) GetMany(ctx context.Context, tenant tenants.ID, ids []string) ([]cards.Card, error) {
	out := make([]cards.Card, 0, len(ids))
	// One query takes at most getManyMax ids: the databases bound the parameters of a statement
	// (SQLite to 32,766).
	for len(ids) > getManyMax {
		part, err := s.GetMany(ctx, tenant, ids[:getManyMax])
		if err != nil {
			return nil, err
		}
		out = append(out, part...)
		ids = ids[getManyMax:]
	}
	if len(ids) == 0 {
		return out, nil
	}
	// Index builds and search pages come here: a prepared query without GORM (see cardsByAgent).
	query, args := s.db.cardsByAgent(cardColumns, string(tenant), ids)
	rs, err := s.db.prepare(query).rows(s.db.bounded(ctx), args...)
	if err != nil {
		return nil, fmt.Errorf("get cards: %w", err)
	}
	defer rs.Close()
	// Each document is read into one buffer and decoded at once (decoding copies what it
	// keeps), instead of into a new array a card: a build reads every card of a tenant.
	byID := make(map[string]cards.Card, len(ids))
	var doc sql.RawBytes
	for rs.Next() {
		row := cardRow{TenantID: string(tenant)}
		if err := rs.Scan(&row.AgentID, &row.ID, &row.Name, &row.Revision, &doc, &row.CreatedAt, &row.UpdatedAt); err != nil {
			return nil, fmt.Errorf("get cards: %w", err)
		}
		row.raw = doc
		c, err := row.card()
		if err != nil {
			return nil, err
		}
		byID[row.AgentID] = c
	}
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("get cards: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("get cards: %w", err)
	}
	for _, id := range ids {
		if c, ok := byID[id]; ok {
			out = append(out, c)
		}
	}
	return out, nil
}
