// Package follow mirrors other registries into a tenant: a tenant follows a source (another
// agentcards tenant through its change feed, an AI Catalog document, or a list of A2A card URLs)
// and keeps a read-only copy of its cards, each marked with the source (cards.Mirror). One
// replica at a time syncs a source (a lease per source); where it got to is stored, so a sync
// resumes across restarts. docs/federation.md describes it for tenant admins.
package follow

import (
	"context"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/tenants"
)

// The kinds of source.
const (
	// KindAgentcards is a tenant of another agentcards service, followed through its change feed
	// (cards.changes) with a token that service issued; every page and event is checked against
	// the service's JWKS.
	KindAgentcards = "agentcards"
	// KindAICatalog is an AI Catalog document: every A2A card it lists (nested catalogs too),
	// read again every interval.
	KindAICatalog = "ai-catalog"
	// KindA2AURLs is a list of A2A card URLs, each read again every interval.
	KindA2AURLs = "a2a-urls"
)

// Kinds are the kinds of source a tenant may follow.
var Kinds = []string{KindAgentcards, KindAICatalog, KindA2AURLs}

// The states of a source.
const (
	// StateSyncing: its first sync has not ended yet.
	StateSyncing = "syncing"
	// StateActive: its last sync ended well; an agentcards source is followed live.
	StateActive = "active"
	// StateFailing: its last sync failed (LastError says how); its cards stay as last synced,
	// and it is tried again with backoff.
	StateFailing = "failing"
	// StateRemoving: it was removed and its cards are being removed; it is gone once they are.
	StateRemoving = "removing"
)

// Bounds of a source.
const (
	MaxURLs     = 1000
	MaxURLBytes = 2048
	MaxTokenLen = 16 << 10
	// MinInterval and MaxInterval bound how often a polled source (ai-catalog, a2a-urls) is read;
	// DefaultInterval is when none is given.
	MinInterval     = 10 * time.Second
	MaxInterval     = 24 * time.Hour
	DefaultInterval = 5 * time.Minute
	// MaxConflicts bounds the agent ids a source's state names as conflicts.
	MaxConflicts = 20
)

// Source is a registry a tenant follows, with the state of its sync.
type Source struct {
	ID   string `json:"id" doc:"the source's id, src_ and 16 hex digits"`
	Kind string `json:"kind" enum:"agentcards,ai-catalog,a2a-urls"`
	// URL is the agentcards tenant's URL (https://host/v1/tenants/{id}) or the AI Catalog's.
	URL string `json:"url,omitempty" doc:"an agentcards tenant's URL (.../v1/tenants/{id}) or an AI Catalog document's"`
	// URLs are the A2A card URLs of an a2a-urls source.
	URLs []string `json:"urls,omitempty" doc:"the A2A card URLs of an a2a-urls source"`
	// Token says whether the source is read with a token (which is never answered).
	Token bool `json:"token,omitempty" doc:"whether a token is sent to the source (the token itself is never answered)"`
	// Interval is how often a polled source is read, in seconds.
	Interval int    `json:"intervalSeconds,omitempty" doc:"how often an ai-catalog or a2a-urls source is read again, in seconds"`
	State    string `json:"state" enum:"syncing,active,failing,removing"`
	// Cards counts the cards mirrored from the source at its last sync.
	Cards int `json:"cards" doc:"the cards mirrored from the source"`
	// Conflicts are agent ids the source lists that the tenant has a card of its own for (or
	// another source's): such a card is never overwritten, and the source's is not mirrored.
	Conflicts []string `json:"conflicts,omitempty" doc:"agent ids the source lists whose card here is not its mirror (left as it is), at most 20"`
	// Failures counts the failed syncs since the last one that ended well; LastError is what the
	// last said.
	Failures   int        `json:"failures"`
	LastError  string     `json:"lastError,omitempty"`
	LastSyncAt *time.Time `json:"lastSyncAt,omitempty" doc:"when a sync last ended well (for an agentcards source, last caught up)"`
	NextSyncAt time.Time  `json:"nextSyncAt" doc:"when the source is next read (an agentcards source followed live: when its lease is next renewed)"`
	CreatedAt  time.Time  `json:"createdAt"`
	UpdatedAt  time.Time  `json:"updatedAt"`
}

// Spec is what an admin sends to follow a source: its kind and where it is.
type Spec struct {
	Kind     string
	URL      string
	URLs     []string
	Token    string
	Interval int
}

// Validate checks a spec: a known kind, the URLs it needs and no others, a token only for an
// agentcards source, an interval only for a polled one; refused names an address the outbound
// guard refuses. An agentcards source is read over https, or over http from a host plainHTTP
// allows (an address outbound.allow lists): its token and its cursors go there. It returns the
// spec as stored: an agentcards URL without a trailing slash, a polled source's interval filled.
func (s Spec) Validate(refused, plainHTTP func(host string) bool) (Spec, error) {
	switch s.Kind {
	case KindAgentcards, KindAICatalog:
		if len(s.URLs) > 0 {
			return s, fault.Errorf(fault.Invalid, "urls: only an a2a-urls source has them; send url: invalid")
		}
		if err := checkURL("url", s.URL, refused); err != nil {
			return s, err
		}
	case KindA2AURLs:
		if s.URL != "" {
			return s, fault.Errorf(fault.Invalid, "url: an a2a-urls source has urls, not url: invalid")
		}
		if len(s.URLs) == 0 || len(s.URLs) > MaxURLs {
			return s, fault.Errorf(fault.Invalid, "urls: from 1 to %d card URLs: invalid", MaxURLs)
		}
		seen := map[string]bool{}
		for i, u := range s.URLs {
			if err := checkURL("urls["+itoa(i)+"]", u, refused); err != nil {
				return s, err
			}
			if seen[u] {
				return s, fault.Errorf(fault.Invalid, "urls[%d]: %q is listed twice: invalid", i, u)
			}
			seen[u] = true
		}
	case "":
		return s, fault.Errorf(fault.Invalid, "kind: required, one of %s: invalid", strings.Join(Kinds, ", "))
	default:
		return s, fault.Errorf(fault.Invalid, "kind: %q is not one of %s: invalid", s.Kind, strings.Join(Kinds, ", "))
	}
	if s.Token != "" && s.Kind != KindAgentcards {
		return s, fault.Errorf(fault.Invalid, "token: only an agentcards source is read with a token: invalid")
	}
	if len(s.Token) > MaxTokenLen || strings.ContainsAny(s.Token, " \t\r\n") {
		return s, fault.Errorf(fault.Invalid, "token: at most %d characters, no spaces: invalid", MaxTokenLen)
	}
	if s.Kind == KindAgentcards {
		if s.Interval != 0 {
			return s, fault.Errorf(fault.Invalid, "intervalSeconds: an agentcards source is followed live, not polled: invalid")
		}
		u, _ := url.Parse(s.URL)
		if u.Scheme != "https" && (plainHTTP == nil || !plainHTTP(u.Hostname())) {
			return s, fault.Errorf(fault.Invalid, "url: an agentcards source is read over https (its token goes there): invalid")
		}
		tenant, ok := TenantOfURL(u)
		if !ok {
			return s, fault.Errorf(fault.Invalid, "url: an agentcards source is a tenant's URL, https://host/v1/tenants/{id}: invalid")
		}
		if err := tenants.ValidateID(tenants.ID(tenant)); err != nil {
			return s, fault.Errorf(fault.Invalid, "url: the tenant %q: %s", tenant, fault.MessageOf(err))
		}
		s.URL = strings.TrimSuffix(s.URL, "/")
	} else if s.Interval == 0 {
		s.Interval = int(DefaultInterval / time.Second)
	} else if s.Interval < int(MinInterval/time.Second) || s.Interval > int(MaxInterval/time.Second) {
		return s, fault.Errorf(fault.Invalid, "intervalSeconds: from %d to %d: invalid", int(MinInterval.Seconds()), int(MaxInterval.Seconds()))
	}
	return s, nil
}

// TenantOfURL returns the tenant id of an agentcards tenant's URL: the segment after
// /v1/tenants/, which is the path's last.
func TenantOfURL(u *url.URL) (string, bool) {
	if u == nil {
		return "", false
	}
	segs := strings.Split(strings.TrimSuffix(u.Path, "/"), "/")
	n := len(segs)
	if n < 3 || segs[n-3] != "v1" || segs[n-2] != "tenants" || segs[n-1] == "" || u.RawQuery != "" || u.Fragment != "" {
		return "", false
	}
	return segs[n-1], true
}

// Every returns how often a polled source is read.
func (s Source) Every() time.Duration {
	if s.Interval > 0 {
		return time.Duration(s.Interval) * time.Second
	}
	return DefaultInterval
}

// checkURL checks one URL of a spec: absolute http(s), bounded, and not at a literal address
// the outbound guard refuses (names are checked when they are read, as they resolve then).
func checkURL(field, raw string, refused func(host string) bool) error {
	if len(raw) > MaxURLBytes {
		return fault.Errorf(fault.Invalid, "%s: over %d bytes: invalid", field, MaxURLBytes)
	}
	if err := cards.CheckHTTPURL(field, raw); err != nil {
		return err
	}
	u, _ := url.Parse(raw)
	if refused != nil && refused(u.Hostname()) {
		return fault.Errorf(fault.URLBlocked, "%s: %s is an address this server does not send to: blocked url", field, u.Hostname())
	}
	return nil
}

func itoa(i int) string {
	const digits = "0123456789"
	if i < 10 {
		return digits[i : i+1]
	}
	return itoa(i/10) + digits[i%10:i%10+1]
}

// Store keeps the tenants' sources and the state of their syncs; storage's SourceStore is one.
// Every write of sync state names the lease's owner and changes nothing once another replica
// holds the lease: a replica whose lease lapsed cannot move the cursor another now advances.
type Store interface {
	// Create stores s with its sealed token (empty: none), unless the tenant has max sources
	// already (conflict) or another source of the same kind and URL (conflict).
	Create(ctx context.Context, tenant tenants.ID, s Source, sealedToken string, max int) (Source, error)
	// List answers the tenant's sources, oldest first.
	List(ctx context.Context, tenant tenants.ID) ([]Source, error)
	// Get answers one source; not found when the tenant has none of that id.
	Get(ctx context.Context, tenant tenants.ID, id string) (Source, error)
	// Update applies p to the source under its row's lock, with the audit entry saying what
	// changed, and answers it as stored; not found when there is none, conflict when it is
	// removing. A failing source is made due at p.At, its failures kept.
	Update(ctx context.Context, tenant tenants.ID, id string, p Patch) (Source, error)
	// Removing marks the source removing, due at at, with the audit entry of its removal; not
	// found when there is none. Its lease stays: the sync that holds it is refused its next
	// Progress and gives it up; then the follower removes the source's cards and Deletes it.
	Removing(ctx context.Context, tenant tenants.ID, id string, at time.Time) (Source, error)
	// Delete deletes a removing source that owner holds the lease of.
	Delete(ctx context.Context, tenant tenants.ID, id, owner string) error
	// Due lists the sources of active tenants due at now (NextSyncAt) whose lease has lapsed,
	// at most limit: agentcards sources first, then those due longest first.
	Due(ctx context.Context, now time.Time, limit int) ([]Due, error)
	// Claim leases the source to owner until until if its lease has lapsed at now (or is
	// owner's), and answers it with its sealed token and cursor; false when another holds it.
	Claim(ctx context.Context, tenant tenants.ID, id, owner string, now, until time.Time) (Claimed, bool, error)
	// Progress writes p on owner's source; false when owner no longer holds the lease, the
	// source is gone, or it is removing and p is neither a release nor the removal's. A release
	// of a removing source by another sync only gives the lease up, the removal due at once.
	Progress(ctx context.Context, tenant tenants.ID, id, owner string, p Progress) (bool, error)
	// Fail records a failed sync of owner's source (failing, failures and LastError; next
	// attempt as f says, within 30 s for a source being removed) and gives up the lease.
	Fail(ctx context.Context, tenant tenants.ID, id, owner string, f Failure) error
}

// Patch is a change of a source: a new sealed token ("" drops it), or a new interval. Nil
// members stay as they are.
type Patch struct {
	SealedToken *string
	Interval    *int
	At          time.Time
}

// Due is a source due for a sync, its kind and state.
type Due struct {
	Tenant      tenants.ID
	ID          string
	Kind, State string
}

// Claimed is a source leased for a sync: as stored, with its sealed token and its cursor (for an
// agentcards source, the change feed's cursor after the last change applied; "" before the
// first sync ended).
type Claimed struct {
	Tenant      tenants.ID
	Source      Source
	SealedToken string
	Cursor      string
	// ListedAt is when an agentcards source's cards were last listed whole (zero: never).
	ListedAt time.Time
}

// Progress is what a sync writes of its source. Nil members stay as they are.
type Progress struct {
	Cursor    *string
	Cards     *int
	Conflicts *[]string
	// Synced marks a sync that ended well (a change applied, a listing) at At: the source is
	// active, its failures cleared, LastSyncAt set. Active marks it active, its last error
	// cleared, its failures kept (a stream opened). ListedAt is when its cards were listed.
	Synced, Active bool
	ListedAt       *time.Time
	At             time.Time
	// Until renews the lease; Release gives it up instead, the source next due at Next.
	Until   time.Time
	Release bool
	Next    time.Time
	// Removing is the progress of the sync that removes a removing source; any other sync of it
	// is refused (false), so that it stops.
	Removing bool
}

// Failure is a failed sync: when, when the next is due (or, with Backoff, At and the pause
// after the source's failures in a row, counting this one), and what it said.
type Failure struct {
	At, Next time.Time
	Backoff  func(failures int) time.Duration
	Error    string
}

// conflictList keeps at most MaxConflicts agent ids, in order.
func conflictList(ids []string) []string {
	out := slices.Clone(ids)
	slices.Sort(out)
	out = slices.Compact(out)
	if len(out) > MaxConflicts {
		out = out[:MaxConflicts]
	}
	if out == nil {
		out = []string{}
	}
	return out
}
