package delegation

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/agentcards/agentcards/authz"
	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/tenants"
)

// Import is a batch of delegation records another registry made, kept as the tenant's history:
// nothing is sent to any agent.
type Import struct {
	// Source is the registry the records come from, one of ImportSources; each record keeps it as
	// its Imported.
	Source  string         `json:"source"`
	Records []ImportRecord `json:"records"`
}

// ImportRecord is one delegation as the registry it comes from recorded it.
type ImportRecord struct {
	// ID is the record's id there, a UUID in its canonical lowercase form (of any version); the
	// record keeps it.
	ID string `json:"id"`
	// Caller is who delegated there, in that registry's words (agentkit-mesh's "api", or an
	// agent's name); the record's caller is ImportCaller, a slash and this.
	Caller  string `json:"caller,omitempty"`
	AgentID string `json:"agentId"`
	// Mode is sync when empty.
	Mode Mode   `json:"mode,omitempty"`
	Task string `json:"task,omitempty"`
	// Status is where the delegation stood there; one that could still change (pending, running,
	// accepted) is recorded as timeout, since nothing will finish it now.
	Status    Status          `json:"status"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     string          `json:"error,omitempty"`
	LatencyMS int64           `json:"latencyMs,omitempty"`
	CreatedAt time.Time       `json:"createdAt"`
	// UpdatedAt is CreatedAt when zero.
	UpdatedAt time.Time `json:"updatedAt,omitzero"`
}

// Imported is what an Import did: the ids of the records it wrote, and of those the tenant held
// already, which it left as they were.
type Imported struct {
	Imported []string `json:"imported"`
	Existing []string `json:"existing"`
}

// ImportSources are the registries whose records Import takes.
var ImportSources = []string{"agentkit-mesh"}

// MaxImport is the most records one Import takes.
const MaxImport = 1000

// ImportCaller begins the caller of every imported record: it is in the namespace of the
// service's jobs, which no subject may take, so no caller mistakes an imported record for one of
// its own, and the records are read as any other caller's (by those who may read them all).
const ImportCaller = authz.JobPrefix + "import"

// maxImportedCaller bounds the source's caller, so that the record's fits the caller column
// (authz.MaxSubjectLength characters) after ImportCaller and the slash.
var maxImportedCaller = authz.MaxSubjectLength - len(ImportCaller) - 1

// epoch is the earliest time a record may have been made: the databases agree on times from
// then on (MySQL's DATETIME starts at year 1000, and none of them before year 1).
var epoch = time.Unix(0, 0)

// importLeeway is how far past the server's clock a record's times may be: another registry's
// clock may run a little ahead.
const importLeeway = 5 * time.Minute

// Import writes the records of in as the tenant's delegation records, all or none: records whose
// ids the tenant holds already are left as they are and reported, so that an import run again
// writes nothing twice. Only those who manage the tenant's policies may import, and no agent
// with a delegation token. A record refused for its content refuses the import, naming it by
// index (records[3]: ...).
func (x *Dispatcher) Import(ctx context.Context, tenant tenants.ID, in Import) (Imported, error) {
	if _, err := authz.Caller(ctx); err != nil {
		return Imported{}, err
	}
	ctx, err := x.d.Gate.Enter(ctx, string(tenant))
	if err != nil {
		return Imported{}, err
	}
	if err := x.d.Authz.Check(ctx, string(tenant), authz.ObjPolicies, authz.ActPoliciesManage); err != nil {
		return Imported{}, err
	}
	if !slices.Contains(ImportSources, in.Source) {
		return Imported{}, fault.Errorf(fault.Invalid, "source %q must be one of %s: invalid", in.Source, strings.Join(ImportSources, ", "))
	}
	if len(in.Records) == 0 || len(in.Records) > MaxImport {
		return Imported{}, fault.Errorf(fault.Invalid, "records: an import holds 1 to %d records, not %d: invalid", MaxImport, len(in.Records))
	}
	now := x.now()
	ds := make([]Delegation, len(in.Records))
	seen := make(map[string]int, len(in.Records))
	for i, r := range in.Records {
		if j, ok := seen[r.ID]; ok {
			return Imported{}, fault.Errorf(fault.Invalid, "records[%d]: id %q is also records[%d]'s: invalid", i, r.ID, j)
		}
		seen[r.ID] = i
		d, err := x.imported(ctx, tenant, in.Source, r, now)
		if err != nil {
			return Imported{}, fault.Wrap(err, fault.KindOf(err), "records[%d]: %s", i, fault.MessageOf(err))
		}
		ds[i] = d
	}
	existing, err := x.d.Store.Import(ctx, tenant, ds)
	if err != nil {
		return Imported{}, err
	}
	out := Imported{Imported: make([]string, 0, len(ds)-len(existing)), Existing: existing}
	if out.Existing == nil {
		out.Existing = []string{}
	}
	for _, d := range ds {
		if !slices.Contains(existing, d.ID) {
			out.Imported = append(out.Imported, d.ID)
		}
	}
	return out, nil
}

// imported is the record r becomes, or why it cannot be one (fault.Invalid).
func (x *Dispatcher) imported(ctx context.Context, tenant tenants.ID, source string, r ImportRecord, now time.Time) (Delegation, error) {
	if r.Mode == "" {
		r.Mode = ModeSync
	}
	if r.UpdatedAt.IsZero() {
		r.UpdatedAt = r.CreatedAt
	}
	if bytes.Equal(bytes.TrimSpace(r.Result), []byte("null")) {
		r.Result = nil
	}
	switch {
	case !wellFormedID(r.ID):
		return Delegation{}, fault.Errorf(fault.Invalid, "id %q is not a UUID in lowercase hexadecimal (8-4-4-4-12): invalid", r.ID)
	case utf8.RuneCountInString(r.Caller) > maxImportedCaller:
		return Delegation{}, fault.Errorf(fault.Invalid, "caller is over %d characters: invalid", maxImportedCaller)
	case strings.IndexFunc(r.Caller, unicode.IsControl) >= 0:
		return Delegation{}, fault.New(fault.Invalid, "caller may not contain control characters: invalid")
	case cards.ValidateAgentID(r.AgentID) != nil:
		return Delegation{}, fault.Errorf(fault.Invalid, "agentId %q must match [A-Za-z0-9][A-Za-z0-9_.-]{0,127}: invalid", r.AgentID)
	case r.Mode != ModeSync && r.Mode != ModeAsync:
		return Delegation{}, fault.Errorf(fault.Invalid, "mode %q must be sync or async: invalid", r.Mode)
	case !validStatus(r.Status):
		return Delegation{}, fault.Errorf(fault.Invalid, "status %q is not a delegation status: invalid", r.Status)
	case int64(len(r.Result)) > x.cfg.MaxResultBytes:
		return Delegation{}, fault.Errorf(fault.Invalid, "result is over %d bytes: invalid", x.cfg.MaxResultBytes)
	case r.LatencyMS < 0:
		return Delegation{}, fault.New(fault.Invalid, "latencyMs must not be negative: invalid")
	case r.CreatedAt.IsZero():
		return Delegation{}, fault.New(fault.Invalid, "createdAt is required: invalid")
	case r.CreatedAt.Before(epoch) || r.CreatedAt.After(now.Add(importLeeway)):
		return Delegation{}, fault.Errorf(fault.Invalid, "createdAt %s is not between 1970 and now: invalid", r.CreatedAt.Format(time.RFC3339))
	case r.UpdatedAt.Before(r.CreatedAt):
		return Delegation{}, fault.New(fault.Invalid, "updatedAt is before createdAt: invalid")
	case r.UpdatedAt.After(now.Add(importLeeway)):
		return Delegation{}, fault.Errorf(fault.Invalid, "updatedAt %s is after now: invalid", r.UpdatedAt.Format(time.RFC3339))
	}
	if err := cards.CheckDepth(r.Result, "result", nil, x.cfg.MaxJSONDepth); err != nil {
		return Delegation{}, err
	}
	caller := ImportCaller
	if r.Caller != "" {
		caller += "/" + r.Caller
	}
	out := Outcome{Status: r.Status, Result: r.Result, Error: errorText([]byte(r.Error)), LatencyMS: r.LatencyMS}
	if !r.Status.Terminal() {
		// Nothing will finish it now: as a delegation of ours past its deadline, it is a timeout.
		out.Status, out.Result = StatusTimeout, nil
		out.Error = errorText([]byte(fmt.Sprintf("unfinished when imported: it was %s in %s", r.Status, source) + suffix(out.Error)))
	}
	out = out.storable()
	d := Delegation{
		ID: r.ID, Caller: caller, AgentID: r.AgentID, Mode: r.Mode, Transport: TransportHTTP,
		Status: out.Status, Result: out.Result, Error: out.Error, LatencyMS: out.LatencyMS,
		CreatedAt: r.CreatedAt.UTC().Truncate(time.Microsecond), UpdatedAt: r.UpdatedAt.UTC().Truncate(time.Microsecond),
		Imported: source,
	}
	d.Task, d.TaskTruncated = x.recordedTask(ctx, tenant, r.Task)
	return d, nil
}

// suffix is "; " and s, or nothing for an empty s.
func suffix(s string) string {
	if s == "" {
		return ""
	}
	return "; " + s
}
