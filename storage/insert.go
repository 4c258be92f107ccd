package storage

import (
	"database/sql"
	"fmt"
	"math/bits"
	"slices"
	"strings"
	"sync"
	"time"

	"gorm.io/gorm"

	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/migrations"
	"github.com/agentcards/agentcards/tenants"
)

// maxBinds bounds the bind values of one statement of many rows. The dialects allow more (the
// SQLite we build, 3.32 or later, 32,766; Postgres and MySQL 65,535), but a few thousand values
// already spread a statement's round trip and parsing over its rows, and stay far below each.
const maxBinds = 4096

// maxInsertBytes bounds the large values (card documents) one INSERT carries, unless a single
// row is larger: MySQL refuses a packet over max_allowed_packet, 4 MiB by default before 8.0.
const maxInsertBytes = 1 << 20

// rowsInsert is a multi-row INSERT into the given columns of a table, written as plain SQL with
// placeholders: a batch's rows go in without GORM's reflection over each of them.
type rowsInsert struct {
	table   string
	columns []string
	// textBytes names the column whose values may come as []byte, to be stored as text ("":
	// none); on SQLite only (see insertRows).
	textBytes string
	// texts holds the statement text for each form (rowsForm), built once.
	texts sync.Map
}

// rowsForm is the shape of one statement of a rowsInsert: its rows (a power of two), the
// columns whose one value serves every row (a bit per column), and whether textBytes comes as
// bytes.
type rowsForm struct {
	rows   int
	shared uint64
	bytes  bool
}

// The multi-row inserts of CreateMany, in the columns of cardRow and changeRow.
var (
	insertCards = &rowsInsert{table: "cards", textBytes: "doc",
		columns: []string{"tenant_id", "agent_id", "id", "name", "revision", "doc", "created_at", "updated_at"}}
	insertChanges = &rowsInsert{table: "card_changes",
		columns: []string{"tenant_id", "agent_id", "op", "revision", "changed_at"}}
)

// revisionColumn is the place of the revision in a row of insertCards.
const revisionColumn = 4

// text returns the statement of form f. With shared columns or bytes (SQLite only) the
// parameters are numbered: the shared columns' first (?1, ?2, ...), then the others row after
// row; textBytes as bytes is cast to TEXT.
func (ins *rowsInsert) text(f rowsForm) string {
	if t, ok := ins.texts.Load(f); ok {
		return t.(string)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "INSERT INTO %s (%s) VALUES ", ins.table, strings.Join(ins.columns, ", "))
	if f.shared == 0 && !f.bytes {
		row := "(?" + strings.Repeat(", ?", len(ins.columns)-1) + ")"
		b.Grow(f.rows * (len(row) + 2))
		b.WriteString(row)
		for range f.rows - 1 {
			b.WriteString(", ")
			b.WriteString(row)
		}
	} else {
		param := make([]int, len(ins.columns)) // a shared column's number
		next := 1
		for c := range ins.columns {
			if f.shared&(1<<c) != 0 {
				param[c] = next
				next++
			}
		}
		for r := range f.rows {
			if r > 0 {
				b.WriteString(", ")
			}
			b.WriteByte('(')
			for c := range ins.columns {
				if c > 0 {
					b.WriteString(", ")
				}
				n := param[c]
				if n == 0 {
					n = next
					next++
				}
				if f.bytes && ins.columns[c] == ins.textBytes {
					fmt.Fprintf(&b, "CAST(?%d AS TEXT)", n)
				} else {
					fmt.Fprintf(&b, "?%d", n)
				}
			}
			b.WriteByte(')')
		}
	}
	t, _ := ins.texts.LoadOrStore(f, b.String())
	return t.(string)
}

// sharedColumns returns the columns (a bit each) of the rows in args (width values a row) that
// hold one value, a string, integer or time, in every row.
func sharedColumns(args []any, width int) uint64 {
	var mask uint64
	for c := range width {
		switch args[c].(type) {
		case string, int64, int, time.Time:
		default:
			continue
		}
		same := true
		for i := c + width; i < len(args) && same; i += width {
			same = args[i] == args[c]
		}
		if same {
			mask |= 1 << c
		}
	}
	return mask
}

// insertRows inserts rows on tx (a transaction's connection), args holding their values one row
// after another in the columns of ins. Each statement takes a power of two rows, as many as
// maxBinds allows and the rows' sizes (size(i) is row i's bytes; nil if they are small) keep
// under maxInsertBytes: a handful of statements, each prepared once per connection, serve every
// number of rows.
//
// On SQLite, whose one writing connection runs every write (see group.go), a value that every
// row holds (the tenant, the time, the action of a batch's audit entries) is bound once, and the
// column textBytes may come as []byte, bound without the copy go-sqlite3 makes of a string and
// stored as TEXT all the same: each value bound is a call into C and, for text, a copy on each
// side of it, and binding is a large share of the writing connection's time when batches of
// cards are registered.
func (db *DB) insertRows(tx *gorm.DB, ins *rowsInsert, args []any, size func(i int) int) error {
	width := len(ins.columns)
	n := len(args) / width
	var shared uint64
	asBytes := false
	if db.dialect == migrations.SQLite && n > 0 {
		if n > 1 {
			shared = sharedColumns(args, width)
		}
		// Any row's bytes make every statement cast the column (a string cast to TEXT is
		// itself).
		for i := slices.Index(ins.columns, ins.textBytes); i >= 0 && i < len(args) && !asBytes; i += width {
			_, asBytes = args[i].([]byte)
		}
	}
	var packed []any
	for done := 0; done < n; {
		rows := 1 << (bits.Len(uint(min(n-done, maxBinds/width))) - 1)
		for size != nil && rows > 1 && bytesOf(size, done, done+rows) > maxInsertBytes {
			rows /= 2
		}
		values := args[done*width : (done+rows)*width]
		if shared != 0 {
			packed = packed[:0]
			for c := range width {
				if shared&(1<<c) != 0 {
					packed = append(packed, values[c])
				}
			}
			for i, v := range values {
				if shared&(1<<(i%width)) == 0 {
					packed = append(packed, v)
				}
			}
			values = packed
		}
		if _, err := db.prepare(ins.text(rowsForm{rows, shared, asBytes})).exec(tx, values...); err != nil {
			return err
		}
		done += rows
	}
	return nil
}

// bytesOf sums size over rows [from, to).
func bytesOf(size func(i int) int, from, to int) int {
	sum := 0
	for i := from; i < to; i++ {
		sum += size(i)
	}
	return sum
}

// each runs the query on tx (a transaction's connection, or the writing pool in autocommit) and
// calls scan on each row it returns.
func (p *prepared) each(tx *gorm.DB, scan func(*sql.Rows) error, args ...any) error {
	ctx := tx.Statement.Context
	var rs *sql.Rows
	var err error
	switch pool := tx.Statement.ConnPool.(type) {
	case *sql.Tx:
		if stmt := p.inTx(); stmt != nil {
			txStmt := pool.StmtContext(ctx, stmt)
			defer txStmt.Close()
			rs, err = txStmt.QueryContext(ctx, args...)
		} else {
			rs, err = pool.QueryContext(ctx, rebind(p.db.dialect, p.query), args...)
		}
	case *sql.DB: // autocommit, see grouped
		if p.db.unprepared {
			rs, err = pool.QueryContext(ctx, rebind(p.db.dialect, p.query), args...)
			break
		}
		stmt, perr := p.get(ctx, true)
		if perr != nil {
			return perr
		}
		rs, err = stmt.QueryContext(ctx, args...)
	default:
		return fmt.Errorf("storage: prepared query on a %T", pool)
	}
	if err = p.db.translate(err); err != nil {
		return err
	}
	return scanAll(rs, scan)
}

// scanAll calls scan on each row of rs, then closes it.
func scanAll(rs *sql.Rows, scan func(*sql.Rows) error) error {
	defer rs.Close()
	for rs.Next() {
		if err := scan(rs); err != nil {
			return err
		}
	}
	return rs.Err()
}

// appendPrepared appends the values of p's row in tenant, in the columns of insertCards: its
// document as the bytes validation encoded where insertRows takes them (SQLite), else as a
// string, which every driver binds to a text column.
func (db *DB) appendPrepared(values []any, tenant tenants.ID, p cards.Prepared) []any {
	c := p.Card
	var doc any = p.Document
	if db.dialect != migrations.SQLite {
		doc = string(p.Document)
	}
	return append(values, string(tenant), c.AgentID, c.ID, c.Name, c.Revision, doc, utc(c.CreatedAt), utc(c.UpdatedAt))
}

// appendValues appends the row's values in the columns of insertChanges (seq is the database's).
func (r changeRow) appendValues(values []any) []any {
	return append(values, r.TenantID, r.AgentID, r.Op, r.Revision, r.ChangedAt)
}

// maxLookup is the most agent ids one query of takenAgents binds (with the tenant, under maxBinds).
const maxLookup = 2048

// cardsByAgent returns the query of columns (of the cards table, comma-separated) for the cards
// of tenant whose agent ids are in ids, and its arguments; a card comes once for each time its
// id is in ids, or once, in no particular order.
//
// On Postgres the query looks each id up on its own by the cards' key, for an array of ids (one
// statement for every size). Postgres plans a list (agent_id IN (...)) from its statistics of
// how many cards the tenant holds: for a tenant its statistics do not know yet (a new one, or
// one that grew since; they are gathered in the background, after a tenth of the table has
// changed) it guesses a few dozen, and then reads every card of the tenant, the list as a
// filter, rather than descend the index once per id, so that registering batches into a new
// tenant would read, for each batch, every card registered before. A lookup by the whole key
// finds at most one row whatever the statistics say, so each id costs one descent. With
// statistics up to date the two forms take about the same time for up to a few hundred ids,
// and a list of thousands is somewhat faster. SQLite and MySQL descend the index once per id of
// a list; the list is padded (with its last id again) to a power of two, so that a handful of
// prepared statements serve every size.
func (db *DB) cardsByAgent(columns, tenant string, ids []string) (string, []any) {
	if db.dialect == migrations.Postgres {
		return "SELECT c.* FROM unnest(?::text[]) AS k(agent_id) CROSS JOIN LATERAL (SELECT " + columns +
			" FROM cards WHERE tenant_id = ? AND agent_id = k.agent_id LIMIT 1) c", []any{ids, tenant}
	}
	size := 1 << bits.Len(uint(len(ids)-1))
	args := make([]any, 0, size+1)
	args = append(args, tenant)
	for i := range size {
		args = append(args, ids[min(i, len(ids)-1)])
	}
	return "SELECT " + columns + " FROM cards WHERE tenant_id = ? AND agent_id IN (?" + strings.Repeat(", ?", size-1) + ")", args
}

// takenAgents returns those of ids that already have a card in tenant, read on tx.
func (db *DB) takenAgents(tx *gorm.DB, tenant string, ids []string) ([]string, error) {
	var taken []string
	scan := func(rs *sql.Rows) error {
		var id string
		if err := rs.Scan(&id); err != nil {
			return err
		}
		taken = append(taken, id)
		return nil
	}
	for len(ids) > 0 {
		part := ids[:min(len(ids), maxLookup)]
		ids = ids[len(part):]
		query, args := db.cardsByAgent("agent_id", tenant, part)
		if err := db.prepare(query).each(tx, scan, args...); err != nil {
			return nil, fmt.Errorf("look up the batch's cards: %w", err)
		}
	}
	return taken, nil
}
