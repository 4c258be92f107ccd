package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agentcards/agentcards/web/api"
	"github.com/agentcards/agentcards/web/client"
)

// meshSource is the source delegations.import names for agentkit-mesh's records.
const meshSource = "agentkit-mesh"

// meshDelegation is a row of agentkit-mesh's delegations table, every column read as text
// (SQLite keeps what was written, whatever the column's type): status one of pending, running,
// completed, failed, timeout, accepted; created_at and updated_at as JavaScript's toISOString
// writes them (updated_at "" in registries older than the column).
type meshDelegation struct {
	id, source, target, task                                 string
	status, result, errorText, latency, createdAt, updatedAt sql.NullString
}

// meshHistory is a registry's delegations table: found is false when the registry has none.
type meshHistory struct {
	found bool
	rows  []meshDelegation
}

// readMeshDelegations reads the delegations table, read-only, oldest first. A registry without
// one (agentkit-mesh before it kept delegations) has nothing to move.
func readMeshDelegations(ctx context.Context, path string) (meshHistory, error) {
	db, err := sql.Open("sqlite3", "file:"+url.PathEscape(path)+"?mode=ro")
	if err != nil {
		return meshHistory{}, err
	}
	defer db.Close()
	cols := map[string]bool{}
	info, err := db.QueryContext(ctx, "SELECT name FROM pragma_table_info('delegations')")
	if err != nil {
		return meshHistory{}, fmt.Errorf("--from %s: %w", path, err)
	}
	for info.Next() {
		var c string
		if err := info.Scan(&c); err != nil {
			info.Close()
			return meshHistory{}, err
		}
		cols[c] = true
	}
	info.Close()
	if len(cols) == 0 {
		return meshHistory{}, nil
	}
	for _, c := range []string{"id", "source_agent", "target_agent", "task", "status", "created_at"} {
		if !cols[c] {
			return meshHistory{}, fmt.Errorf("--from %s: its delegations table has no %s column: not agentkit-mesh's", path, c)
		}
	}
	optional := func(c string) string {
		if cols[c] {
			return c
		}
		return "NULL AS " + c
	}
	q := "SELECT id, source_agent, target_agent, task, status, " + optional("result") + ", " + optional("error") + ", " +
		optional("latency_ms") + ", created_at, " + optional("updated_at") + " FROM delegations ORDER BY created_at, id"
	rs, err := db.QueryContext(ctx, q)
	if err != nil {
		return meshHistory{}, fmt.Errorf("--from %s: %w", path, err)
	}
	defer rs.Close()
	h := meshHistory{found: true}
	for rs.Next() {
		var d meshDelegation
		var id, source, target, task sql.NullString
		if err := rs.Scan(&id, &source, &target, &task, &d.status, &d.result, &d.errorText, &d.latency, &d.createdAt, &d.updatedAt); err != nil {
			return meshHistory{}, fmt.Errorf("--from %s: delegations: %w", path, err)
		}
		d.id, d.source, d.target, d.task = id.String, source.String, target.String, task.String
		h.rows = append(h.rows, d)
	}
	return h, rs.Err()
}

// planDelegation turns a row into the record delegations.import takes, or says why it cannot be
// one. The service checks the rest (the id's form, the status) and says why it refuses.
func planDelegation(d meshDelegation) (api.ImportedDelegation, string) {
	r := api.ImportedDelegation{ID: d.id, Caller: d.source, AgentID: meshAgentID(d.target), Task: d.task, Status: d.status.String,
		Error: d.errorText.String}
	if r.AgentID == "" {
		return r, fmt.Sprintf("target_agent %q has no character an agentId may hold", d.target)
	}
	if d.status.String == "accepted" {
		// agentkit-mesh records accepted for an async delegation only.
		r.Mode = "async"
	}
	if d.result.Valid {
		r.Result, _ = json.Marshal(d.result.String)
	}
	if d.latency.Valid && d.latency.String != "" {
		n, err := strconv.ParseFloat(d.latency.String, 64)
		if err != nil || math.IsNaN(n) || math.Abs(n) > math.MaxInt64/2 {
			return r, fmt.Sprintf("latency_ms %q: not a number of milliseconds", d.latency.String)
		}
		r.LatencyMS = int64(n)
	}
	var err error
	if r.CreatedAt, err = time.Parse(time.RFC3339Nano, d.createdAt.String); err != nil {
		return r, fmt.Sprintf("created_at %q: not a time as agentkit-mesh writes it (2026-03-01T10:00:00.000Z)", d.createdAt.String)
	}
	if d.updatedAt.String != "" {
		if r.UpdatedAt, err = time.Parse(time.RFC3339Nano, d.updatedAt.String); err != nil {
			return r, fmt.Sprintf("updated_at %q: not a time as agentkit-mesh writes it (2026-03-01T10:00:00.000Z)", d.updatedAt.String)
		}
	}
	return r, ""
}

// meshRecordOutcome is a delegation row that was not imported, and why.
type meshRecordOutcome struct {
	ID     string `json:"id"`
	Reason string `json:"reason"`
}

// meshHistorySummary is what became of the delegations table: Found is false when the registry
// has none.
type meshHistorySummary struct {
	Found    bool                `json:"found"`
	Total    int                 `json:"total"`
	Imported []string            `json:"imported"`
	Existing []string            `json:"existing"`
	Skipped  []meshRecordOutcome `json:"skipped"`
}

// meshHistoryImport sends the planned records and keeps what became of them.
type meshHistoryImport struct {
	cl       *client.Client
	progress *progress
	sum      meshHistorySummary
	done     map[string]bool // the rows imported, found there or skipped, by id
	// refusal, once set, is why the service takes no record: every row not sent yet is skipped
	// with it.
	refusal string
}

// moveDelegations imports the history's rows in batches of batch records. A batch the service
// refuses for a record of it, or finds too large, goes again in halves, so that each refused row
// is skipped with the service's reason and the others go in. A refusal of the import itself
// (forbidden: the caller does not manage the tenant's policies) skips every row with its reason;
// one of the caller or a server that fails ends the import (the error), the rows not sent
// accounted as not tried.
func moveDelegations(ctx context.Context, cl *client.Client, progress *progress, h meshHistory, batch int) (meshHistorySummary, error) {
	im := meshHistoryImport{cl: cl, progress: progress, done: map[string]bool{},
		sum: meshHistorySummary{Found: h.found, Total: len(h.rows), Imported: []string{}, Existing: []string{}, Skipped: []meshRecordOutcome{}}}
	var records []api.ImportedDelegation
	for _, d := range h.rows {
		r, reason := planDelegation(d)
		if reason != "" {
			im.skip(d.id, reason)
			continue
		}
		records = append(records, r)
	}
	for start := 0; start < len(records); start += batch {
		part := records[start:min(start+batch, len(records))]
		if err := im.send(ctx, part); err != nil {
			for _, r := range records[start:] {
				if !im.done[r.ID] {
					im.skip(r.ID, "not tried: the import stopped")
				}
			}
			return im.sum, err
		}
	}
	return im.sum, nil
}

// send imports records, all or none, and splits them on a refusal of one of them.
func (im *meshHistoryImport) send(ctx context.Context, records []api.ImportedDelegation) error {
	if im.refusal != "" {
		for _, r := range records {
			im.skip(r.ID, im.refusal)
		}
		return nil
	}
	out, err := im.cl.Delegations.Import(ctx, api.DelegationsImport{Source: meshSource, Records: records})
	if err == nil {
		im.sum.Imported = append(im.sum.Imported, out.Imported...)
		im.sum.Existing = append(im.sum.Existing, out.Existing...)
		for _, r := range records {
			im.done[r.ID] = true
		}
		im.progress.add(len(records))
		return nil
	}
	var ce *client.Error
	if !errors.As(err, &ce) || fatal(ce) {
		return err
	}
	switch {
	case (ce.Code == "invalid" || ce.Status == http.StatusRequestEntityTooLarge) && len(records) > 1:
		half := len(records) / 2
		if err := im.send(ctx, records[:half]); err != nil {
			return err
		}
		return im.send(ctx, records[half:])
	case ce.Code == "invalid" || ce.Status == http.StatusRequestEntityTooLarge:
		// One record, which the message names as the first of its batch.
		im.skip(records[0].ID, ce.Code+": "+strings.TrimPrefix(ce.Message, "records[0]: "))
		return nil
	}
	im.refusal = ce.Code + ": " + ce.Message
	return im.send(ctx, records)
}

func (im *meshHistoryImport) skip(id, reason string) {
	im.sum.Skipped = append(im.sum.Skipped, meshRecordOutcome{ID: id, Reason: reason})
	im.done[id] = true
	im.progress.add(1)
}

// printHistorySummary prints, as a table, what became of the delegations table.
func printHistorySummary(w io.Writer, s meshHistorySummary) error {
	if !s.Found {
		_, err := fmt.Fprintln(w, "\nthe registry has no delegations table: no delegation records to move")
		return err
	}
	fmt.Fprintf(w, "\nimported %d of %d delegation records; %d already there; skipped %d\n", len(s.Imported), s.Total, len(s.Existing), len(s.Skipped))
	if len(s.Skipped) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\ndelegation\treason")
	for _, k := range s.Skipped {
		fmt.Fprintf(tw, "%s\t%s\n", k.ID, k.Reason)
	}
	return tw.Flush()
}

// notTried is the summary of a history the import stopped before: every row not tried.
func notTried(h meshHistory) *meshHistorySummary {
	s := &meshHistorySummary{Found: h.found, Total: len(h.rows), Imported: []string{}, Existing: []string{}, Skipped: []meshRecordOutcome{}}
	for _, d := range h.rows {
		s.Skipped = append(s.Skipped, meshRecordOutcome{ID: d.id, Reason: "not tried: the import stopped"})
	}
	return s
}
