package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/agentcards/agentcards/web/api"
	"github.com/agentcards/agentcards/web/catalog"
)

// listColumns are the columns of the table of a list answer, by request; the members of an item
// not named here are left to --output json.
var listColumns = map[string][]string{
	"tenants.list":         {"id", "name", "status", "createdAt"},
	"cards.register_batch": {"agentId", "name", "revision", "visibility", "protocols", "capabilities"},
	"roles.list":           {"subject", "role"},
	"policies.list":        {"subject", "object", "action", "effect"},
	"delegations.list":     {"id", "agentId", "capability", "status", "mode", "latencyMs", "createdAt"},
	"audit.list":           {"at", "principal", "action", "object", "revisionBefore", "revisionAfter", "outcome"},
	"synonyms.list":        {"id", "words", "updatedAt"},
	"trust.list":           {"domain", "jwksUrl", "updatedAt"},
	"sources.list":         {"id", "kind", "url", "state", "cards", "failures", "lastError", "lastSyncAt"},
	"webhooks.list":        {"id", "url", "state", "failures", "lastError", "nextAttemptAt"},
	"webhooks.deliveries":  {"at", "eventId", "type", "agentId", "status", "ok", "error", "latencyMs"},
	"a2a.agents":           {"agentId", "name", "cardUrl", "description"},
	"a2a.catalog":          {"identifier", "type", "version", "url"},
	"keys.list":            {"kid", "kty", "crv", "alg", "use"},
}

// cellWidth bounds a table cell; longer text is cut with an ellipsis.
const cellWidth = 60

// minColumn is the narrowest a column is made to fit a table into the terminal.
const minColumn = 8

// printAnswer prints a request's answer: as JSON (indented), or as a table for a reader: a list
// as rows (the columns of listColumns, or the search's view), anything else as its members, one
// a line. A table fits width columns (none when 0): a row's cells are cut, a member's value
// wrapped. An answer with nothing in it (204) prints nothing.
func printAnswer(w io.Writer, r catalog.Request, answer any, format string, view []string, width int) error {
	if r.Out == reflect.TypeFor[api.Empty]() {
		return nil
	}
	raw, err := json.Marshal(answer)
	if err != nil {
		return err
	}
	if format == "json" || r.Out == reflect.TypeFor[api.A2AAgentCard]() {
		var b bytes.Buffer
		if err := json.Indent(&b, raw, "", "  "); err != nil {
			return err
		}
		b.WriteByte('\n')
		_, err := w.Write(b.Bytes())
		return err
	}
	columns := listColumns[r.Name]
	if view != nil {
		columns = view
	}
	var list struct {
		Items      []map[string]json.RawMessage `json:"items"`
		Keys       []map[string]json.RawMessage `json:"keys"`
		Entries    []map[string]json.RawMessage `json:"entries"`
		Total      *int                         `json:"total"`
		NextCursor string                       `json:"nextCursor"`
	}
	if columns != nil && json.Unmarshal(raw, &list) == nil {
		rows := list.Items
		switch r.Name {
		case "keys.list":
			rows = list.Keys
		case "a2a.catalog":
			rows = list.Entries
		}
		return printTable(w, columns, rows, list.Total, list.NextCursor, width)
	}
	members, err := orderedMembers(raw)
	if err != nil {
		return err
	}
	nameWidth := 0
	for _, m := range members {
		nameWidth = max(nameWidth, utf8.RuneCountInString(m.name))
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, m := range members {
		cell := formatCell(m.value, false)
		if cell == "" {
			continue
		}
		lines := []string{cell}
		if width > 0 {
			lines = wrapText(cell, max(width-nameWidth-2, minColumn))
		}
		fmt.Fprintf(tw, "%s\t%s\n", m.name, lines[0])
		for _, l := range lines[1:] {
			fmt.Fprintf(tw, "\t%s\n", l)
		}
	}
	return tw.Flush()
}

// printTable prints rows under their columns, then how many there are and the next page's cursor.
// A column empty in every row (the score of a search without q) is left out. With a width, the
// widest columns are narrowed until the table fits it, their cells cut; explain's are wrapped.
func printTable(w io.Writer, columns []string, rows []map[string]json.RawMessage, total *int, next string, width int) error {
	var kept []string
	for _, c := range columns {
		for _, row := range rows {
			if formatCell(row[c], true) != "" {
				kept = append(kept, c)
				break
			}
		}
	}
	if len(rows) == 0 {
		kept = columns
	}
	table := [][]string{kept}
	for _, row := range rows {
		line := make([]string, len(kept))
		for j, c := range kept {
			line[j] = formatCell(row[c], true)
			if c == "explain" {
				line[j] = explainCell(row[c])
			}
		}
		table = append(table, line)
	}
	widths := make([]int, len(kept))
	for _, line := range table {
		for j, cell := range line {
			widths[j] = max(widths[j], utf8.RuneCountInString(cell))
		}
	}
	if width > 0 {
		widths = fitColumns(widths, width)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, line := range table {
		if width == 0 {
			fmt.Fprintln(tw, strings.Join(line, "\t"))
			continue
		}
		// A wrapped cell continues on lines of its own, under its column.
		var more [][]string
		for j, cell := range line {
			if kept[j] != "explain" {
				line[j] = cut(cell, widths[j])
				continue
			}
			parts := wrapWords(strings.Split(cell, "; "), "; ", widths[j]-1)
			line[j] = parts[0]
			for k, part := range parts[1:] {
				if k >= len(more) {
					more = append(more, make([]string, len(line)))
				}
				more[k][j] = part
			}
		}
		fmt.Fprintln(tw, strings.Join(line, "\t"))
		for _, l := range more {
			fmt.Fprintln(tw, strings.Join(l, "\t"))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	switch {
	case total != nil && next != "":
		fmt.Fprintf(w, "%d of %d; the next page: --cursor %s\n", len(rows), *total, next)
	case total != nil:
		fmt.Fprintf(w, "%d of %d\n", len(rows), *total)
	case next != "":
		fmt.Fprintf(w, "%d shown; the next page: --cursor %s\n", len(rows), next)
	default:
		fmt.Fprintf(w, "%d shown; no more\n", len(rows))
	}
	return nil
}

// fitColumns narrows the widest of the columns, one character at a time and none below
// minColumn, until they and the two spaces between each fit width.
func fitColumns(widths []int, width int) []int {
	sum := 2 * (len(widths) - 1)
	for _, n := range widths {
		sum += n
	}
	for sum > width {
		widest := 0
		for j, n := range widths {
			if n > widths[widest] {
				widest = j
			}
		}
		if widths[widest] <= minColumn {
			break
		}
		widths[widest]--
		sum--
	}
	return widths
}

// cut shortens s to n characters, its last an ellipsis.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:max(n-1, 0)]) + "…"
}

// wrapText breaks s into lines of at most n characters, at spaces where it can; a longer word
// (a URL) is broken where it must be.
func wrapText(s string, n int) []string {
	return wrapWords(strings.Fields(s), " ", n)
}

// wrapWords joins words by sep into lines of at most n characters; a line that another follows
// ends with sep's mark (";" of "; "). A word longer than a line is broken where it must be.
func wrapWords(words []string, sep string, n int) []string {
	mark := []rune(strings.TrimSpace(sep))
	var lines []string
	var line []rune
	for _, word := range words {
		w := []rune(word)
		if len(line) > 0 && len(line)+len([]rune(sep))+len(w) <= n {
			line = append(append(line, []rune(sep)...), w...)
			continue
		}
		if len(line) > 0 {
			lines = append(lines, string(append(line, mark...)))
		}
		for len(w) > n {
			lines = append(lines, string(w[:n]))
			w = w[n:]
		}
		line = w
	}
	if len(line) > 0 || len(lines) == 0 {
		lines = append(lines, string(line))
	}
	return lines
}

// formatCell renders a JSON value for a reader: a string as it is, a list of strings (or of
// objects with names) joined by commas, a number as JSON, and anything else as compact JSON.
// In a table cell, text is cut to cellWidth and kept on one line.
func formatCell(raw json.RawMessage, cell bool) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	var list []json.RawMessage
	var liveness struct {
		State      string  `json:"state"`
		LastSeenAt *string `json:"lastSeenAt"`
	}
	switch {
	case json.Unmarshal(raw, &s) == nil:
	case raw[0] == '{' && json.Unmarshal(raw, &liveness) == nil && liveness.State != "":
		// A card's liveness, or a heartbeat's answer: its state, and when last heard from.
		s = liveness.State
		if liveness.LastSeenAt != nil && !cell {
			s += ", last seen " + *liveness.LastSeenAt
		}
	case json.Unmarshal(raw, &list) == nil:
		parts := make([]string, 0, len(list))
		for _, item := range list {
			var str string
			var named struct{ Name string }
			switch {
			case json.Unmarshal(item, &str) == nil:
				parts = append(parts, str)
			case json.Unmarshal(item, &named) == nil && named.Name != "":
				parts = append(parts, named.Name)
			default:
				parts = append(parts, string(compactJSON(item)))
			}
		}
		s = strings.Join(parts, ", ")
	default:
		var f float64
		if json.Unmarshal(raw, &f) == nil && strings.ContainsAny(string(raw), ".eE") {
			s = strconv.FormatFloat(f, 'f', 3, 64)
		} else {
			s = string(compactJSON(raw))
		}
	}
	if !cell {
		return s
	}
	return cut(strings.Join(strings.Fields(s), " "), cellWidth)
}

// explainCell renders a search result's explanation on one line, uncut: what each word of q
// added, and how when not by the word itself ("pull +0.513; l10n +0.2 (synonym translation);
// slack -"), then, for a card the encoder re-ranked, its cosine and rank ("meaning 0.430 (rank
// 1.341)").
func explainCell(raw json.RawMessage) string {
	var e api.Explanation
	if len(raw) == 0 || json.Unmarshal(raw, &e) != nil {
		return formatCell(raw, true)
	}
	parts := make([]string, 0, len(e.Words))
	for _, w := range e.Words {
		if w.Adds == 0 {
			parts = append(parts, w.Word+" -")
			continue
		}
		part := w.Word + " +" + strconv.FormatFloat(w.Adds, 'f', 3, 64)
		if w.By != "word" {
			part += " (" + w.By + " " + w.Matched + ")"
		}
		parts = append(parts, part)
	}
	if sim := e.Similarity; sim != nil {
		parts = append(parts, "meaning "+strconv.FormatFloat(sim.Cosine, 'f', 3, 64)+" (rank "+strconv.FormatFloat(sim.Rank, 'f', 3, 64)+")")
	}
	return strings.Join(parts, "; ")
}

func compactJSON(raw json.RawMessage) []byte {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
}

// member is one member of a JSON object.
type member struct {
	name  string
	value json.RawMessage
}

// orderedMembers lists the members of a JSON object in their order.
func orderedMembers(raw []byte) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return []member{{name: "value", value: raw}}, nil
	}
	var out []member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		out = append(out, member{name: tok.(string), value: v})
	}
	return out, nil
}
