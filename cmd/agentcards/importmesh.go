package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"text/tabwriter"

	_ "github.com/mattn/go-sqlite3" // the agentkit-mesh registry is a SQLite file

	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/web/api"
	"github.com/agentcards/agentcards/web/client"
)

// meshAgent is a row of agentkit-mesh's agents table, read as that registry writes it:
// capabilities a JSON list of strings, resources a JSON list of {type, uri, description,
// access}, auth a JSON {type: bearer|header|none, token, headerName} or NULL.
type meshAgent struct {
	name, description, capabilities, resources, endpoint, protocol string
	auth, registeredAt, lastSeen                                   sql.NullString
}

// meshOutcome is what became of one row.
type meshOutcome struct {
	Name    string `json:"name"`
	AgentID string `json:"agentId,omitempty"`
	Reason  string `json:"reason,omitempty"`
}

// meshPlan is a row turned into what is sent: a card, and the secret agentkit-mesh sent to its
// endpoint, if any, with the header it went in (none: a bearer token).
type meshPlan struct {
	row    int
	name   string
	card   api.CardInput
	secret string
	header string
}

// runImportMesh moves an agentkit-mesh registry into a tenant. Each row becomes a card (its
// name the agentId where it is one), or is skipped with the reason; cards go in batches, all or
// none each, so a bad row leaves nothing of itself, and a card with a secret goes alone
// with its secret, removed again if the secret cannot be set. With --delegations the rows of
// its delegations table then become delegation records (moveDelegations).
func runImportMesh(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	fs := flag.NewFlagSet("agentcards cards import-mesh", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var conn connection
	conn.register(fs, getenv)
	from := fs.String("from", "", "the agentkit-mesh database (~/.agentkit-mesh/registry.db)")
	tenant := fs.String("tenant", "", "the tenant the cards go into (default the token's)")
	batch := fs.Int("batch", 100, "cards, and delegation records, per request: 1 to 1000")
	visibility := fs.String("visibility", "", "the cards' visibility: private, tenant (the default) or public")
	delegations := fs.Bool("delegations", false, "also move the registry's delegation history (its delegations table) as delegation records; needs policies:manage")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: agentcards cards import-mesh --from mesh.db [--tenant T] [flags]\n\n%s.\n\nflags:\n", clientCommands["cards"]["import-mesh"])
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return usageError{err}
	}
	if fs.NArg() > 0 || *from == "" {
		fs.Usage()
		return usagef("import-mesh needs --from and no arguments")
	}
	if *batch < 1 || *batch > 1000 {
		return usagef("--batch %d: want 1 to 1000", *batch)
	}
	format, err := conn.format(stdout)
	if err != nil {
		return err
	}
	cl, err := conn.tenantClient(getenv, *tenant)
	if err != nil {
		return err
	}
	rows, err := readMesh(ctx, *from)
	if err != nil {
		return err
	}
	var history meshHistory
	if *delegations {
		if history, err = readMeshDelegations(ctx, *from); err != nil {
			return err
		}
	}
	var plans []meshPlan
	var skipped []meshOutcome
	for i, row := range rows {
		p, reason := planMesh(row, *visibility)
		if reason != "" {
			skipped = append(skipped, meshOutcome{Name: row.name, AgentID: p.card.AgentID, Reason: reason})
			continue
		}
		p.row = i
		plans = append(plans, p)
	}
	progress := newProgress(stderr, len(rows)+len(history.rows))
	progress.add(len(skipped))
	im := meshImport{cl: cl, progress: progress, done: map[int]bool{}}
	var plain, withSecret []meshPlan
	for _, p := range plans {
		if p.secret != "" {
			withSecret = append(withSecret, p)
		} else {
			plain = append(plain, p)
		}
	}
	for start := 0; start < len(plain) && err == nil; start += *batch {
		err = im.batch(ctx, plain[start:min(start+*batch, len(plain))])
	}
	for _, p := range withSecret {
		if err != nil {
			break
		}
		err = im.alone(ctx, p)
	}
	if err != nil {
		// What the import did not reach is accounted for: every row is imported or skipped.
		for _, p := range plans {
			if !im.done[p.row] {
				im.skipped = append(im.skipped, meshOutcome{Name: p.name, AgentID: p.card.AgentID, Reason: "not tried: the import stopped"})
			}
		}
	}
	var moved *meshHistorySummary
	if *delegations {
		if err == nil {
			var hs meshHistorySummary
			hs, err = moveDelegations(ctx, cl, progress, history, *batch)
			moved = &hs
		} else {
			moved = notTried(history)
		}
	}
	progress.done()
	skipped = append(skipped, im.skipped...)
	if perr := printMeshSummary(stdout, format, cl.Tenant(), len(rows), im.imported, skipped, moved); perr != nil {
		return perr
	}
	if err != nil {
		return err
	}
	var refused []string
	if len(skipped) > 0 {
		refused = append(refused, fmt.Sprintf("%d of %d agents", len(skipped), len(rows)))
	}
	if moved != nil && len(moved.Skipped) > 0 {
		refused = append(refused, fmt.Sprintf("%d of %d delegation records", len(moved.Skipped), moved.Total))
	}
	if len(refused) > 0 {
		return fmt.Errorf("%s were skipped (the summary says why)", strings.Join(refused, " and "))
	}
	return nil
}

// readMesh reads the agents table, read-only. Columns that older agentkit-mesh versions did not
// have yet (resources, auth) read as absent.
func readMesh(ctx context.Context, path string) ([]meshAgent, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, usageError{fmt.Errorf("--from: %w", err)}
	}
	db, err := sql.Open("sqlite3", "file:"+url.PathEscape(path)+"?mode=ro")
	if err != nil {
		return nil, err
	}
	defer db.Close()
	cols := map[string]bool{}
	info, err := db.QueryContext(ctx, "SELECT name FROM pragma_table_info('agents')")
	if err != nil {
		return nil, fmt.Errorf("--from %s: %w", path, err)
	}
	for info.Next() {
		var c string
		if err := info.Scan(&c); err != nil {
			info.Close()
			return nil, err
		}
		cols[c] = true
	}
	info.Close()
	for _, c := range []string{"name", "description", "capabilities", "endpoint"} {
		if !cols[c] {
			return nil, fmt.Errorf("--from %s: no agents table with a %s column: not an agentkit-mesh registry", path, c)
		}
	}
	optional := func(c, otherwise string) string {
		if cols[c] {
			return c
		}
		return otherwise + " AS " + c
	}
	q := "SELECT name, description, capabilities, " + optional("resources", "'[]'") + ", endpoint, " +
		optional("protocol", "'http'") + ", " + optional("auth", "NULL") + ", " + optional("registered_at", "NULL") +
		", " + optional("last_seen", "NULL") + " FROM agents ORDER BY name"
	rs, err := db.QueryContext(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("--from %s: %w", path, err)
	}
	defer rs.Close()
	var out []meshAgent
	for rs.Next() {
		var a meshAgent
		var desc, caps, res, proto sql.NullString
		if err := rs.Scan(&a.name, &desc, &caps, &res, &a.endpoint, &proto, &a.auth, &a.registeredAt, &a.lastSeen); err != nil {
			return nil, fmt.Errorf("--from %s: %w", path, err)
		}
		a.description, a.capabilities, a.resources, a.protocol = desc.String, caps.String, res.String, proto.String
		out = append(out, a)
	}
	return out, rs.Err()
}

var notAgentID = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// meshAgentID is the agentId of a row: its name where that is one, else the name with each run
// of other characters made a dash (and cut to the length an id may have).
func meshAgentID(name string) string {
	if cards.ValidateAgentID(name) == nil {
		return name
	}
	id := strings.TrimLeft(notAgentID.ReplaceAllString(name, "-"), "-_.")
	if len(id) > 128 {
		id = id[:128]
	}
	return id
}

// planMesh turns a row into a card, or says why it cannot be one.
func planMesh(a meshAgent, visibility string) (meshPlan, string) {
	p := meshPlan{name: a.name}
	p.card.AgentID = meshAgentID(a.name)
	if p.card.AgentID == "" {
		return p, fmt.Sprintf("the name %q has no character an agentId may hold", a.name)
	}
	p.card.Name, p.card.Description, p.card.Endpoint, p.card.Visibility = a.name, a.description, a.endpoint, visibility
	var caps []string
	if err := json.Unmarshal([]byte(a.capabilities), &caps); err != nil {
		return p, fmt.Sprintf("capabilities %q: not a JSON list of strings", a.capabilities)
	}
	for _, c := range caps {
		p.card.Capabilities = append(p.card.Capabilities, cards.Capability{Name: c})
	}
	var res []struct {
		Type, URI, Description, Access string
	}
	if a.resources != "" {
		if err := json.Unmarshal([]byte(a.resources), &res); err != nil {
			return p, fmt.Sprintf("resources %q: not a JSON list of {type, uri}", a.resources)
		}
	}
	for _, r := range res {
		p.card.Resources = append(p.card.Resources, cards.Resource{URI: r.URI, Access: r.Access})
	}
	if a.protocol == "" {
		a.protocol = "http"
	}
	p.card.Protocols = []string{a.protocol}
	if a.auth.Valid && a.auth.String != "" && a.auth.String != "null" {
		var auth struct{ Type, Token, HeaderName string }
		if err := json.Unmarshal([]byte(a.auth.String), &auth); err != nil {
			return p, "auth: not the JSON agentkit-mesh writes"
		}
		switch auth.Type {
		case "", "none":
		case "bearer":
			if auth.Token == "" {
				return p, "auth: a bearer type without a token"
			}
			p.secret = auth.Token
		case "header":
			if auth.Token == "" || auth.HeaderName == "" {
				return p, "auth: a header type without a token or a header name"
			}
			p.secret, p.header = auth.Token, auth.HeaderName
		default:
			return p, fmt.Sprintf("auth: %q is not a credential type agentkit-mesh has (bearer, header, none)", auth.Type)
		}
	}
	meta := map[string]any{"source": "agentkit-mesh"}
	if a.registeredAt.Valid {
		meta["registeredAt"] = a.registeredAt.String
	}
	if a.lastSeen.Valid {
		meta["lastSeen"] = a.lastSeen.String
	}
	p.card.Metadata, _ = json.Marshal(map[string]any{"agentkitMesh": meta})
	return p, ""
}

// meshImport sends the planned cards and keeps what became of them.
type meshImport struct {
	cl       *client.Client
	progress *progress
	imported []string
	skipped  []meshOutcome
	done     map[int]bool // the rows imported or skipped
}

// batch registers the plans, all or none. A batch over the body limit is sent in halves; one the
// service refuses for a card of it (a conflict, an invalid card) is sent again a card at a time,
// so that each refused card is skipped with its own reason and the others go in.
func (im *meshImport) batch(ctx context.Context, plans []meshPlan) error {
	in := api.CardsRegisterBatch{Cards: make([]api.CardInput, len(plans))}
	for i, p := range plans {
		in.Cards[i] = p.card
	}
	out, err := im.cl.Cards.RegisterBatch(ctx, in)
	if err == nil {
		for i, c := range out.Items {
			im.imported = append(im.imported, c.AgentID)
			im.done[plans[i].row] = true
		}
		im.progress.add(len(plans))
		return nil
	}
	var ce *client.Error
	if !errors.As(err, &ce) || fatal(ce) {
		return err
	}
	if ce.Status == http.StatusRequestEntityTooLarge && len(plans) > 1 {
		half := len(plans) / 2
		if err := im.batch(ctx, plans[:half]); err != nil {
			return err
		}
		return im.batch(ctx, plans[half:])
	}
	for _, p := range plans {
		if err := im.alone(ctx, p); err != nil {
			return err
		}
	}
	return nil
}

// fatal reports whether a refusal ends the import rather than one card: the caller is not
// admitted (a token refused, a suspended tenant), or the service cannot answer.
func fatal(ce *client.Error) bool {
	return ce.Status == http.StatusUnauthorized || ce.Code == "tenant_suspended" || ce.Status >= 500 || ce.Status == 0
}

// alone registers one card, then sets its endpoint secret if it has one; a card whose secret
// cannot be set is removed again, so none is left that agentkit-mesh would have called with a
// credential and agentcards would call without.
func (im *meshImport) alone(ctx context.Context, p meshPlan) error {
	c, err := im.cl.Cards.Register(ctx, api.CardsRegister{CardInput: p.card})
	if err != nil {
		return im.refused(p, "", err)
	}
	if p.secret != "" {
		if _, err := im.cl.Secrets.Set(ctx, api.SecretsSet{AgentID: c.AgentID, Secret: p.secret, Header: p.header}); err != nil {
			if _, rerr := im.cl.Cards.Remove(ctx, api.CardsRemove{AgentID: c.AgentID, IfRevision: c.Revision}); rerr != nil {
				return fmt.Errorf("the card %s was registered but its endpoint secret was not set (%v), and removing it failed: %w", c.AgentID, err, rerr)
			}
			return im.refused(p, "its endpoint secret: ", err)
		}
	}
	im.imported = append(im.imported, c.AgentID)
	im.done[p.row] = true
	im.progress.add(1)
	return nil
}

// refused skips a card the service refused, and ends the import on a refusal of the caller or
// on anything else, such as a server that stopped answering.
func (im *meshImport) refused(p meshPlan, what string, err error) error {
	var ce *client.Error
	if !errors.As(err, &ce) || fatal(ce) {
		return err
	}
	im.skip(p, what+ce.Code+": "+ce.Message)
	return nil
}

func (im *meshImport) skip(p meshPlan, reason string) {
	im.skipped = append(im.skipped, meshOutcome{Name: p.name, AgentID: p.card.AgentID, Reason: reason})
	im.done[p.row] = true
	im.progress.add(1)
}

// printMeshSummary prints how many agents were imported and which were skipped, and why, and,
// when moved, what became of the delegation records.
func printMeshSummary(w io.Writer, format, tenant string, total int, imported []string, skipped []meshOutcome, moved *meshHistorySummary) error {
	if format == "json" {
		out := struct {
			Tenant      string              `json:"tenant"`
			Total       int                 `json:"total"`
			Imported    []string            `json:"imported"`
			Skipped     []meshOutcome       `json:"skipped"`
			Delegations *meshHistorySummary `json:"delegations,omitempty"`
		}{tenant, total, imported, skipped, moved}
		if out.Imported == nil {
			out.Imported = []string{}
		}
		if out.Skipped == nil {
			out.Skipped = []meshOutcome{}
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	fmt.Fprintf(w, "imported %d of %d agents into tenant %s; skipped %d\n", len(imported), total, tenant, len(skipped))
	if len(skipped) > 0 {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "\nname\tagentId\treason")
		for _, s := range skipped {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Name, s.AgentID, s.Reason)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if moved == nil {
		return nil
	}
	return printHistorySummary(w, *moved)
}

// progress draws a bar on a terminal while rows are imported; elsewhere it draws nothing.
type progress struct {
	w            io.Writer
	total, count int
	on           bool
}

func newProgress(w io.Writer, total int) *progress {
	return &progress{w: w, total: total, on: isTerminal(w) && total > 0}
}

func (p *progress) add(n int) {
	p.count += n
	if !p.on {
		return
	}
	const width = 30
	filled := width * p.count / p.total
	fmt.Fprintf(p.w, "\rimporting [%s%s] %d/%d", strings.Repeat("#", filled), strings.Repeat(" ", width-filled), p.count, p.total)
}

func (p *progress) done() {
	if p.on {
		fmt.Fprintln(p.w)
	}
}
