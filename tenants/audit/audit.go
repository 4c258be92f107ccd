// Package audit is the tenant's record of who changed what. Every write the service commits
// (tenants, cards, endpoint secrets, roles, policies, delegation records) appends an Entry in the
// same transaction as the write itself, so that no write lands without its entry and no entry
// stands for a write that did not land; the stores write them (package storage). A write refused
// by policy leaves an entry too (outcome "denied"), written on its own since nothing else was.
//
// Who and why come from the context (authz.Actor): the principal of the request, or the
// service's own job (authz.AsJob); the request's catalogue name and id (authz.WithRequest), which
// the doors set for every request.
package audit

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/agentcards/agentcards/authz"
	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/tenants"
	"github.com/agentcards/agentcards/tenants/paging"
)

// Outcomes of an entry. A committed write is OK; a delegation record's entry carries the
// record's status instead (pending, completed, rejected, ...).
const (
	OK     = "ok"
	Denied = "denied"
)

// JobPrefix namespaces the principal of the service's own jobs (a scheduled refresh, a
// delegation that timed out), which no user subject can take (authz.ValidateSubject).
const JobPrefix = authz.JobPrefix

// Entry is one change, or one refused try, in a tenant's trail.
type Entry struct {
	// Seq orders the entries of the whole database: a later entry has a greater Seq.
	Seq int64 `json:"seq"`
	// At is when the write committed (its transaction's clock).
	At time.Time `json:"at"`
	// Principal is who wrote: the token's subject, agent:<id> for an agent with a delegation
	// token, agentcards:<job> for the service's own jobs.
	Principal string `json:"principal"`
	// RequestID is the request's id (its X-Request-Id), empty for jobs.
	RequestID string `json:"requestId,omitempty"`
	// Action is the request's catalogue name (cards.update), or the job's.
	Action string `json:"action"`
	// Object is what changed: tenant, cards/<agentId>, cards/<agentId>/secret, roles/<subject>,
	// policies/<subject>, synonyms/<id>, delegations/<id>; for a refusal, the policy object asked for.
	Object string `json:"object"`
	// Detail says more where the object does not: the role granted, the policy's rule, the
	// action refused.
	Detail string `json:"detail,omitempty"`
	// RevisionBefore and RevisionAfter are the card's revisions around the write (0: none, as
	// before a create or after a delete), or the tenant's policy revision around a role or
	// policy change.
	RevisionBefore int64 `json:"revisionBefore,omitempty"`
	RevisionAfter  int64 `json:"revisionAfter,omitempty"`
	// Outcome is ok for a committed write, denied for a refused one, or a delegation's status.
	Outcome string `json:"outcome"`
	// Attempts counts the tries a denied entry stands for: the same principal refused the same
	// action on the same object again within the hour after At (absent: one), or on other objects
	// past the ten a principal's refusals of one action add in an hour.
	Attempts int `json:"attempts,omitempty"`
}

// New returns the entry of a committed write in ctx; the store sets Seq and At.
func New(ctx context.Context, fallback, object string, before, after int64) Entry {
	p, action, rid := authz.Actor(ctx, fallback)
	return Entry{Principal: p, Action: action, RequestID: rid, Object: object, RevisionBefore: before, RevisionAfter: after, Outcome: OK}
}

// Objects of the trail.
const (
	TenantObject = "tenant"
)

// CardObject is the object of a card's entries; SecretObject of its endpoint secret's.
func CardObject(agentID string) string { return "cards/" + agentID }

// SecretObject is the object of the entries of a card's endpoint secret.
func SecretObject(agentID string) string { return "cards/" + agentID + "/secret" }

// RoleObject is the object of a subject's role changes.
func RoleObject(subject string) string { return "roles/" + subject }

// PolicyObject is the object of the changes of a subject's policies.
func PolicyObject(subject string) string { return "policies/" + subject }

// SynonymsObject is the object of the entries of a synonym set of the tenant's searches.
func SynonymsObject(id string) string { return "synonyms/" + id }

// TrustObject is the object of the entries of an issuer of the tenant's trust policy.
func TrustObject(domain string) string { return "trust/" + domain }

// WebhookObject is the object of the entries of a webhook subscription.
func WebhookObject(id string) string { return "webhooks/" + id }

// SourceObject is the object of the entries of a source the tenant follows.
func SourceObject(id string) string { return "sources/" + id }

// DelegationObject is the object of a delegation record's entries.
func DelegationObject(id string) string { return "delegations/" + id }

// Filter selects entries of a tenant, newest first.
type Filter struct {
	// Principal is who wrote (exact).
	Principal string
	// Action is the action (exact).
	Action string
	// ObjectPrefix selects objects that start with it (cards/ for every card's).
	ObjectPrefix string
	// Since and Until bound At: Since ≤ At < Until (zero: unbounded).
	Since, Until time.Time
	// Before is where the page starts: only entries with a smaller Seq (0: from the newest).
	Before int64
	Limit  int
}

// Store keeps the trail; storage's AuditStore is one.
type Store interface {
	// List returns the tenant's entries that f selects, newest first.
	List(ctx context.Context, tenant tenants.ID, f Filter) ([]Entry, error)
	// Refused records e, a refused write, on its own; the same refusal again within the hour
	// counts into the newest such entry.
	Refused(ctx context.Context, tenant tenants.ID, e Entry) error
	// Prune deletes the entries older than before, of every tenant, and reports how many.
	Prune(ctx context.Context, before time.Time) (int64, error)
}

// Gate admits the caller in ctx into a tenant (tenants.Service).
type Gate interface {
	Enter(ctx context.Context, tenant string) (context.Context, error)
}

// Authorizer answers whether the caller in ctx may act on an object of a tenant.
type Authorizer interface {
	Check(ctx context.Context, tenant, obj, act string) error
}

// Service reads the trail, and records refused writes.
type Service struct {
	Store Store
	Gate  Gate
	Authz Authorizer
	// Log, when set, is told of a refusal that could not be recorded.
	Log *slog.Logger
}

// Refused records a refused check of the caller in ctx (policy/Enforcers.Refused) when it refused
// a write request: the object and action asked for. Refused heartbeats and delegations are left
// out: heartbeats are not in the trail at all, and a refused delegation is recorded as a rejected
// delegation record, with its own entry. The refusal stands whether or not its entry is written.
func (s *Service) Refused(ctx context.Context, tenant, obj, act string) {
	r, ok := authz.RequestFrom(ctx)
	if !ok || !r.Write || act == authz.ActDelegate || act == authz.ActCardsHeartbeat {
		return
	}
	e := New(ctx, r.Name, obj, 0, 0)
	e.Detail, e.Outcome = act, Denied
	if err := s.Store.Refused(ctx, tenants.ID(tenant), e); err != nil && s.Log != nil {
		s.Log.Warn("could not record a refused write in the audit trail", "tenant", tenant, "object", obj, "action", act, "err", err)
	}
}

// The page sizes of the trail.
const (
	DefaultLimit = 50
	MaxLimit     = 500
)

// auditList names the trail's cursors to the codec.
const auditList = "audit"

// maxFilterLength bounds a filter's text.
const maxFilterLength = 512

// List returns a page of the tenant's entries that f selects, newest first, and the cursor of the
// next page ("" at the end). Those who manage the tenant's policies may, and those granted
// audit:read on audit.
func (s *Service) List(ctx context.Context, tenant tenants.ID, f Filter, page paging.Page) ([]Entry, string, error) {
	if _, err := authz.Caller(ctx); err != nil {
		return nil, "", err
	}
	ctx, err := s.Gate.Enter(ctx, string(tenant))
	if err != nil {
		return nil, "", err
	}
	if err := s.mayRead(ctx, tenant); err != nil {
		return nil, "", err
	}
	for name, v := range map[string]string{"principal": f.Principal, "action": f.Action, "object": f.ObjectPrefix} {
		// No principal, action or object has a space or a control character: refused rather
		// than compared, as MySQL's collation would ignore trailing spaces.
		if len(v) > maxFilterLength || !utf8.ValidString(v) || strings.IndexFunc(v, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
			return nil, "", fault.Errorf(fault.Invalid, "%s: at most %d bytes of UTF-8, no spaces or control characters: invalid", name, maxFilterLength)
		}
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && !f.Since.Before(f.Until) {
		return nil, "", fault.New(fault.Invalid, "since must be before until: invalid")
	}
	if f.Limit, err = page.Check(DefaultLimit, MaxLimit); err != nil {
		return nil, "", err
	}
	f.Before = 0
	if page.Cursor != "" {
		if err := paging.DecodeCursor(auditList, page.Cursor, &f.Before); err != nil {
			return nil, "", err
		}
		if f.Before <= 0 {
			return nil, "", paging.ErrCursor
		}
	}
	limit := f.Limit
	f.Limit++
	list, err := s.Store.List(ctx, tenant, f)
	if err != nil {
		return nil, "", err
	}
	next := ""
	if len(list) > limit {
		list = list[:limit]
		next = paging.EncodeCursor(auditList, list[limit-1].Seq)
	}
	return list, next, nil
}

// mayRead checks that the caller may read the trail: policies:manage on policies, or audit:read
// on audit.
func (s *Service) mayRead(ctx context.Context, tenant tenants.ID) error {
	err := s.Authz.Check(ctx, string(tenant), authz.ObjPolicies, authz.ActPoliciesManage)
	if !errors.Is(err, authz.ErrForbidden) {
		return err
	}
	if err := s.Authz.Check(ctx, string(tenant), authz.ObjAudit, authz.ActAuditRead); err != nil {
		return err
	}
	return nil
}
