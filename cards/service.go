package cards

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/agentcards/agentcards/authz"
	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/tenants"
)

// Store persists cards. Every method is scoped to one tenant; a card of another tenant is
// indistinguishable from a missing one. Each write also appends to the change feed in the same
// transaction.
type Store interface {
	// Create inserts a new card; ErrExists if the agent already has one. It returns the card's
	// revision: 1 for an agent id never used, else one past the last revision of the agent's
	// deleted card, so that an agent id's revisions (its ETags) never repeat.
	Create(ctx context.Context, tenant tenants.ID, c Card) (int64, error)
	Get(ctx context.Context, tenant tenants.ID, agentID string) (Card, error)
	// Replace overwrites the card if its stored revision is still prev: ErrStale if it is not,
	// ErrNotFound if there is no card. c.Revision is the new revision.
	Replace(ctx context.Context, tenant tenants.ID, c Card, prev int64) error
	// Delete removes the card if its revision is rev (any revision when rev is 0).
	Delete(ctx context.Context, tenant tenants.ID, agentID string, rev int64) error
	// IDs returns the agent ids of the tenant's cards in ascending byte order.
	IDs(ctx context.Context, tenant tenants.ID) ([]string, error)
	// CountUpTo returns how many cards the tenant has, counting no further than most.
	CountUpTo(ctx context.Context, tenant tenants.ID, most int) (int, error)
	// CreateMany inserts new cards in one transaction, all or none; ErrExists names the first
	// card (by its index) whose agent already has one. Each comes with its stored document, and
	// is given its revision as Create gives it.
	CreateMany(ctx context.Context, tenant tenants.ID, cs []Prepared) error
	// GetMany returns the cards of the given agents that exist, in the order of ids.
	GetMany(ctx context.Context, tenant tenants.ID, ids []string) ([]Card, error)
}

// Version names one stored version of an agent's card: the card's id (new with every create),
// its revision (moved on by every write) and when it was written. Two cards with the same
// version are the same card; the time tells apart two writes that took the same revision in
// two histories of the database (one restored from a backup, then written to).
type Version struct {
	AgentID   string
	ID        string
	Revision  int64
	UpdatedAt time.Time
}

// Stored is a card as the store keeps it: its document (MarshalDocument's), not decoded, and
// the server-owned fields the store keeps beside it. A search index keeps its tenant's cards so,
// to answer reads while the database does not answer.
type Stored struct {
	AgentID              string
	ID                   string
	Revision             int64
	CreatedAt, UpdatedAt time.Time
	Document             []byte
}

// Card decodes the document and sets the server-owned fields.
func (s Stored) Card() (Card, error) {
	c, err := UnmarshalDocument(s.Document)
	if err != nil {
		return Card{}, fmt.Errorf("card %q: %w", s.AgentID, err)
	}
	c.AgentID = s.AgentID
	c.ID, c.Revision = s.ID, s.Revision
	c.CreatedAt, c.UpdatedAt = s.CreatedAt.UTC(), s.UpdatedAt.UTC()
	return c, nil
}

// Prepared is a new card with its stored document (MarshalDocument's), which validation encoded
// to check its size: a batch hands it to the store, which writes it instead of encoding the card
// again.
type Prepared struct {
	Card     Card
	Document []byte
}

// Authorizer answers whether the caller in ctx may act on an object of a tenant.
type Authorizer interface {
	Check(ctx context.Context, tenant, obj, act string) error
}

// Indexer is told of every write the service commits, so that a search index applies it before
// the writer's next search (read your own writes); cards/search's Index is one.
type Indexer interface {
	// Written applies the current state of the agents' cards (as the store has it now: written,
	// or gone) to the tenant's index, if it is loaded.
	Written(ctx context.Context, tenant tenants.ID, agentIDs ...string) error
	// Wrote applies cards as they were written by writes that began at started and have
	// committed: without reading them back where it can tell they are newer than what the
	// index holds, as Written otherwise.
	Wrote(ctx context.Context, tenant tenants.ID, started time.Time, written ...Card) error
}

// Gate admits the caller in ctx into a tenant (it exists, is the caller's, is active) and returns
// the context that carries the tenant's policy version; tenants.Service is the one gate.
type Gate interface {
	Enter(ctx context.Context, tenant string) (context.Context, error)
}

// Service is what the API does with cards. Every entry point takes the caller from ctx through
// authz.Caller (a delegation token opens none of them) and passes the tenant gate first, so a
// door that calls it directly gets the same refusals as the REST API.
type Service struct {
	Store Store
	Gate  Gate
	Authz Authorizer
	// Index, when set, is synced after every write (nil with search.index: none).
	Index Indexer
	// Liveness, when set, takes heartbeats and gives each card read its liveness.
	Liveness Presence
	// Memory, when set, keeps the cards read and answers a read with them while the database
	// does not (search's Index).
	Memory Memory
	// Committed, when set, is told of the tenant after each of its card writes commits, once the
	// index has it: the change feed's live streams of this replica read it at once.
	Committed func(tenants.ID)
	// MaxJSONDepth bounds how deeply a card's free-form values (metadata, a capability's
	// inputSchema) nest, on every write (DecodeWithin); 0 is DefaultMaxJSONDepth.
	MaxJSONDepth int
	// Sources, when set, says whether the tenant still follows a source: a mirror of one it no
	// longer follows is the tenant's own card again (see mirrored).
	Sources Following
	// Now and NewID are injected so tests can pin them.
	Now   func() time.Time
	NewID func() string
}

// JSONDepth is the bound on the nesting of free-form values that s enforces (MaxJSONDepth).
func (s *Service) JSONDepth() int {
	if s.MaxJSONDepth > 0 {
		return s.MaxJSONDepth
	}
	return DefaultMaxJSONDepth
}

// Memory holds cards as a loaded search index has them, for reads while the database does not
// answer.
type Memory interface {
	// Remembered returns the agent's card if memory holds the version the index has.
	Remembered(tenant tenants.ID, agentID string) (Card, bool)
	// Keep holds c, just read, if it is the version the index has.
	Keep(tenant tenants.ID, c Card)
}

// Read reads the agent's card: from m if the tenant gate found the database down for this
// request (it marked the request stale, after a ping), or tenants.ErrDown if m does not hold
// the card; else from store, handing m the card read to keep, or from m after all if that read
// fails and the gate finds the database down (tenants.FoundDown). m may be nil. Every read of a
// card a door answers with goes through it (cards.Service.Get, the A2A card).
func Read(ctx context.Context, store Store, m Memory, tenant tenants.ID, agentID string) (Card, error) {
	if m != nil && ctx.Err() == nil && tenants.Stale(ctx) {
		if c, ok := m.Remembered(tenant, agentID); ok {
			return c, nil
		}
		// The database did not answer a moment ago (it may hang): not asked again for a card
		// memory does not hold.
		return Card{}, tenants.ErrDown
	}
	c, err := store.Get(ctx, tenant, agentID)
	if err == nil && m != nil {
		m.Keep(tenant, c)
	}
	if err != nil && m != nil && tenants.FoundDown(ctx, err) {
		// The database stopped answering since the gate let the request in.
		if c, ok := m.Remembered(tenant, agentID); ok {
			return c, nil
		}
		return Card{}, tenants.ErrDown
	}
	return c, err
}

// Presence keeps whether cards' agents are alive; cards/liveness's Tracker is one.
type Presence interface {
	// Of returns the liveness of the agent's card cardID.
	Of(ctx context.Context, tenant tenants.ID, agentID, cardID string) (Liveness, error)
	// Beat records a heartbeat of the agent's card cardID, and returns its liveness once stored.
	Beat(ctx context.Context, tenant tenants.ID, agentID, cardID string) (Liveness, error)
	// Removed forgets the liveness of the agent's card, just deleted.
	Removed(tenant tenants.ID, agentID string)
}

// Precondition carries the HTTP conditional headers of a write.
type Precondition struct {
	// IfMatch lists acceptable current revisions (If-Match: "3").
	IfMatch []int64
	// IfMatchAny is If-Match: *, the card must exist. IfMatchNone is an If-Match header with no
	// value that could ever match.
	IfMatchAny, IfMatchNone bool
	// IfNoneMatchAny is If-None-Match: *, the card must not exist.
	IfNoneMatchAny bool
}

func (p Precondition) conditional() bool { return len(p.IfMatch) > 0 || p.IfMatchAny || p.IfMatchNone }

// check applies the precondition to the current state (exists, rev).
func (p Precondition) check(exists bool, rev int64) error {
	if p.IfNoneMatchAny && exists {
		return fault.New(fault.Stale, "If-None-Match: * but the card exists: revision does not match")
	}
	if !p.conditional() {
		return nil
	}
	if !exists {
		return fault.New(fault.Stale, "If-Match given but the card does not exist: revision does not match")
	}
	if p.IfMatchAny {
		return nil
	}
	for _, r := range p.IfMatch {
		if r == rev {
			return nil
		}
	}
	return fault.Errorf(fault.Stale, "current revision is %d: revision does not match", rev)
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now().UTC().Truncate(time.Microsecond)
	}
	return time.Now().UTC().Truncate(time.Microsecond)
}

func (s *Service) newID() string {
	if s.NewID != nil {
		return s.NewID()
	}
	return uuid.NewString()
}

// prepare validates a decoded card and returns its stored form, whose size it checked, in
// valid UTF-8 (validUTF8).
func prepare(c *Card) ([]byte, error) {
	c.normalize()
	c.validUTF8()
	if err := c.Validate(); err != nil {
		return nil, err
	}
	doc, err := c.document()
	if err != nil {
		return nil, err
	}
	if len(doc) > MaxDocumentBytes {
		return nil, fault.Errorf(fault.TooLarge, "the card document is %d bytes, over the limit of %d: card is too large", len(doc), MaxDocumentBytes)
	}
	return doc, nil
}

// Register creates a card from a client document; ErrExists if the agent already has one.
func (s *Service) Register(ctx context.Context, tenant tenants.ID, body []byte) (Card, error) {
	ctx, err := s.enter(ctx, tenant)
	if err != nil {
		return Card{}, err
	}
	c, err := DecodeWithin(body, s.JSONDepth())
	if err != nil {
		return Card{}, err
	}
	if _, err := prepare(&c); err != nil {
		return Card{}, err
	}
	if err := s.Authz.Check(ctx, string(tenant), authz.CardObject(c.AgentID), authz.ActCardsWrite); err != nil {
		return Card{}, err
	}
	return s.create(ctx, tenant, c)
}

// CreateImported creates a card mapped from another format (an A2A import), validated and
// normalized as every card is. The record of where it came from is the server's: it is attached
// after validation, so it counts neither as client input nor against the document size limit.
// ErrExists if the agent already has a card.
func (s *Service) CreateImported(ctx context.Context, tenant tenants.ID, c Card, rec ImportRecord) (Card, error) {
	ctx, err := s.enter(ctx, tenant)
	if err != nil {
		return Card{}, err
	}
	if _, err := prepare(&c); err != nil {
		if kind := fault.KindOf(err); kind != "" {
			return Card{}, fault.Errorf(kind, "the card maps to an invalid registry card: %s", fault.MessageOf(err))
		}
		return Card{}, err
	}
	if err := s.Authz.Check(ctx, string(tenant), authz.CardObject(c.AgentID), authz.ActCardsWrite); err != nil {
		return Card{}, err
	}
	if c.A2A == nil {
		c.A2A = &A2A{}
	}
	c.A2A.Import = &rec
	if rec.URL != "" {
		c.Source = &Source{URL: rec.URL, Verified: rec.Vouched()}
	}
	return s.create(ctx, tenant, c)
}

// Refreshed stores what a refresh of the card cur found: c, the card mapped from the A2A card
// fetched again (with rec, its import record), or nil when it was refused for the reason given.
// A card whose content differs from cur's replaces it (updated); one that maps to the same
// content leaves it (unchanged). Either way, and when refused, the card's source records the
// refresh, as a new revision; registry-only fields (visibility, status, deprecation, metadata)
// stay as they are. The caller has checked cards:write. ErrStale if the card was written since cur
// was read (the caller reads it again and retries), ErrNotFound if it was deleted.
func (s *Service) Refreshed(ctx context.Context, tenant tenants.ID, cur Card, c *Card, rec ImportRecord, refused string) (Card, RefreshOutcome, error) {
	ctx, err := s.enter(ctx, tenant)
	if err != nil {
		return Card{}, RefreshOutcome{}, err
	}
	next, outcome := cur, RefreshOutcome{Outcome: RefreshRefused, Reason: refused}
	if c != nil {
		fresh := *c
		fresh.AgentID = cur.AgentID
		fresh.Visibility, fresh.Status, fresh.Deprecation, fresh.Metadata = cur.Visibility, cur.Status, cur.Deprecation, cur.Metadata
		if _, err := prepare(&fresh); err != nil {
			if kind := fault.KindOf(err); kind != "" {
				return Card{}, RefreshOutcome{}, fault.Errorf(kind, "the card maps to an invalid registry card: %s", fault.MessageOf(err))
			}
			return Card{}, RefreshOutcome{}, err
		}
		if fresh.A2A == nil {
			fresh.A2A = &A2A{}
		}
		fresh.A2A.Import = &rec
		outcome = RefreshOutcome{Outcome: RefreshUnchanged}
		if !sameContent(cur, fresh) {
			next, outcome = fresh, RefreshOutcome{Outcome: RefreshUpdated}
		} else {
			// The same content, attested by this fetch: its import record is the new one.
			a2a := A2A{}
			if cur.A2A != nil {
				a2a = *cur.A2A
			}
			a2a.Import = &rec
			next.A2A = &a2a
		}
	}
	now := s.now()
	src := *cur.Source
	src.RefreshedAt, src.Refresh = &now, &outcome
	if c != nil {
		src.Verified = rec.Vouched()
	}
	next.Source = &src
	next.ID, next.Revision, next.CreatedAt, next.UpdatedAt = cur.ID, cur.Revision+1, cur.CreatedAt, now
	started := time.Now()
	if err := s.Store.Replace(ctx, tenant, next, cur.Revision); err != nil {
		return Card{}, RefreshOutcome{}, err // ErrStale: written meanwhile; ErrNotFound: deleted
	}
	return s.written(ctx, tenant, started, next), outcome, nil
}

// Retrusted stores trust as cur's trust check, as a new revision of cur whose content is
// otherwise unchanged: the tenant's trust policy, weighed again against the card, says something
// else of it. ErrStale if the card was written since cur was read (the caller reads it again and
// weighs it again), ErrNotFound if it was deleted; invalid for a card with no import record.
func (s *Service) Retrusted(ctx context.Context, tenant tenants.ID, cur Card, trust TrustCheck) (Card, error) {
	ctx, err := s.enter(ctx, tenant)
	if err != nil {
		return Card{}, err
	}
	if cur.A2A == nil || cur.A2A.Import == nil {
		return Card{}, fault.Errorf(fault.Invalid, "card %q was not imported: it has no trust to record", cur.AgentID)
	}
	next := cur
	a2a, rec := *cur.A2A, *cur.A2A.Import
	rec.Trust = &trust
	a2a.Import = &rec
	next.A2A = &a2a
	now := s.now()
	next.Revision, next.UpdatedAt = cur.Revision+1, now
	started := time.Now()
	if err := s.Store.Replace(ctx, tenant, next, cur.Revision); err != nil {
		return Card{}, err
	}
	return s.written(ctx, tenant, started, next), nil
}

// keepImport carries cur's import record over to c, its next revision, when c says what cur says
// but for the registry's own fields (status, deprecation, visibility, metadata): the record
// attests the content as imported (its signature verified, say), which such a write leaves as it
// was. Any other change drops it.
func keepImport(cur Card, c *Card) {
	if cur.A2A == nil || cur.A2A.Import == nil {
		return
	}
	a, b := cur, *c
	for _, x := range []*Card{&a, &b} {
		x.Status, x.Deprecation, x.Visibility, x.Metadata = "", nil, "", nil
	}
	if !sameContent(a, b) {
		return
	}
	if c.A2A == nil {
		c.A2A = &A2A{}
	}
	c.A2A.Import = cur.A2A.Import
}

// sameContent reports whether two cards say the same, apart from what the server records about
// them (their source, their import record).
func sameContent(a, b Card) bool {
	strip := func(c Card) any {
		c.Source, c.Mirror = nil, nil
		if c.A2A != nil {
			a2a := *c.A2A
			a2a.Import = nil
			c.A2A = &a2a
			if reflect.ValueOf(a2a).IsZero() {
				c.A2A = nil
			}
		}
		// Compared as JSON values: free-form members (a2a.interfaces, metadata) may hold the same
		// objects with their members in another order.
		doc, err := c.document()
		if err != nil {
			return nil
		}
		dec := json.NewDecoder(bytes.NewReader(doc))
		dec.UseNumber() // numbers as written: 2^53+1 is not 2^53
		var v any
		if dec.Decode(&v) != nil {
			return nil
		}
		return v
	}
	x, y := strip(a), strip(b)
	return x != nil && y != nil && reflect.DeepEqual(x, y)
}

// create stores a validated card as a new one, at the revision the store gives it.
func (s *Service) create(ctx context.Context, tenant tenants.ID, c Card) (Card, error) {
	now := s.now()
	c.ID, c.CreatedAt, c.UpdatedAt = s.newID(), now, now
	started := time.Now()
	rev, err := s.Store.Create(ctx, tenant, c)
	if err != nil {
		return Card{}, err
	}
	c.Revision = rev
	return s.written(ctx, tenant, started, c), nil
}

// enter admits the caller in ctx into tenant: the first step of every entry point.
func (s *Service) enter(ctx context.Context, tenant tenants.ID) (context.Context, error) {
	if _, err := authz.Caller(ctx); err != nil {
		return ctx, err
	}
	return s.Gate.Enter(ctx, string(tenant))
}

// MaxBatch is the most cards one batch registration may carry.
const MaxBatch = 1000

// notAnArray refuses a batch body that is not a JSON array.
func notAnArray() error {
	return fault.New(fault.Malformed, "the body must be a JSON array of cards: malformed JSON")
}

// splitArray returns the elements of a JSON array, found by a pass that looks only for where
// each ends and checks what lies between them; it does not check the elements' own syntax (each
// is decoded on its own later, which does). Decoding the array into raw messages scanned each
// element twice more.
func splitArray(body []byte) ([]json.RawMessage, error) {
	i := skipSpace(body, 0)
	if i == len(body) || body[i] != '[' {
		return nil, notAnArray()
	}
	docs := []json.RawMessage{}
	if i = skipSpace(body, i+1); i < len(body) && body[i] == ']' {
		if skipSpace(body, i+1) != len(body) {
			return nil, notAnArray()
		}
		return docs, nil
	}
	for {
		end, ok := valueEnd(body, i)
		if !ok {
			return nil, notAnArray()
		}
		docs = append(docs, body[i:end:end])
		if i = skipSpace(body, end); i == len(body) {
			return nil, notAnArray()
		}
		switch body[i] {
		case ',':
			i = skipSpace(body, i+1)
		case ']':
			if skipSpace(body, i+1) != len(body) {
				return nil, notAnArray()
			}
			return docs, nil
		default:
			return nil, notAnArray()
		}
	}
}

// RegisterBatch creates the cards of a JSON array of client documents, all or none, in one
// transaction with one change-feed write. A body that is not a JSON array is refused as a whole;
// otherwise a card that is malformed, invalid, not the caller's to write, repeated in the batch
// or already registered fails the whole batch, and the error names it by its index
// ("cards[3]: ..."). It returns the cards created, each with its stored document (for
// AppendMarshal); body is not kept.
func (s *Service) RegisterBatch(ctx context.Context, tenant tenants.ID, body []byte) ([]Prepared, error) {
	ctx, err := s.enter(ctx, tenant)
	if err != nil {
		return nil, err
	}
	ps, err := s.prepareBatch(ctx, tenant, body)
	if err != nil {
		// The body's syntax is checked only now: if every card decoded, each one's decoding
		// checked its own, and splitArray what lies between them, so the body was JSON. A body
		// that is not is refused as such, whatever else is wrong with its cards.
		if !json.Valid(body) {
			return nil, notAnArray()
		}
		return nil, err
	}
	started := time.Now()
	if err := s.Store.CreateMany(ctx, tenant, ps); err != nil {
		return nil, err
	}
	cs := make([]Card, len(ps))
	for i, p := range ps {
		cs[i] = p.Card
	}
	s.applyWritten(ctx, tenant, started, cs...)
	if s.Liveness != nil {
		for i := range ps {
			ps[i].Card = s.withLiveness(ctx, tenant, ps[i].Card)
		}
	}
	return ps, nil
}

// prepareBatch decodes, validates and authorizes the cards of a batch and gives them their
// server fields.
func (s *Service) prepareBatch(ctx context.Context, tenant tenants.ID, body []byte) ([]Prepared, error) {
	docs, err := splitArray(body)
	if err != nil {
		return nil, err
	}
	if len(docs) == 0 || len(docs) > MaxBatch {
		return nil, fault.Errorf(fault.Invalid, "a batch holds 1 to %d cards, not %d", MaxBatch, len(docs))
	}
	at := func(i int, err error) error {
		if kind := fault.KindOf(err); kind != "" {
			return fault.Wrap(err, kind, "cards[%d]: %s", i, fault.MessageOf(err))
		}
		return err
	}
	ps := make([]Prepared, len(docs))
	errs := make([]error, len(docs))
	decodeEach(docs, ps, errs, s.JSONDepth())
	seen := make(map[string]int, len(docs))
	now := s.now()
	for i := range ps {
		if errs[i] != nil {
			return nil, at(i, errs[i])
		}
		c := ps[i].Card
		if j, ok := seen[c.AgentID]; ok {
			return nil, fault.Errorf(fault.Invalid, "cards[%d]: agentId %q is also cards[%d]", i, c.AgentID, j)
		}
		seen[c.AgentID] = i
		if err := s.Authz.Check(ctx, string(tenant), authz.CardObject(c.AgentID), authz.ActCardsWrite); err != nil {
			return nil, at(i, err)
		}
		c.ID, c.CreatedAt, c.UpdatedAt = s.newID(), now, now
		ps[i].Card = c
	}
	return ps, nil
}

// decodeEach decodes (DecodeWithin maxDepth) and prepares each document of a batch into ps, or
// its error into errs. Decoding is most of a batch's CPU and each card is independent of the
// others, so a large batch is shared among the processors; the caller still meets the cards and
// their errors in order.
func decodeEach(docs []json.RawMessage, ps []Prepared, errs []error, maxDepth int) {
	one := func(i int) {
		// On a goroutine of its own a panic would end the process, past the server's recovery.
		defer func() {
			if p := recover(); p != nil {
				errs[i] = fmt.Errorf("decode the card: panic: %v", p)
			}
		}()
		c, err := DecodeWithin(docs[i], maxDepth)
		if err == nil {
			ps[i].Document, err = prepare(&c)
		}
		ps[i].Card, errs[i] = c, err
	}
	// Below a few hundred cards a second goroutine costs more than it saves.
	workers := min(runtime.GOMAXPROCS(0), len(docs)/128)
	if workers <= 1 {
		for i := range docs {
			one(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < len(docs); i = int(next.Add(1)) - 1 {
				one(i)
			}
		})
	}
	wg.Wait()
}

// maxAttempts bounds the retries of a write that lost a race to another writer.
const maxAttempts = 16

// retryPause waits before attempt (from 1) of a write that lost the race to another writer: a
// random pause up to 1, 2, 4 ... 32 ms, so that writers of one card that keep colliding spread
// out. It reports false if ctx ended.
func retryPause(ctx context.Context, attempt int) bool {
	if attempt == 0 {
		return true
	}
	t := time.NewTimer(time.Duration(rand.Int64N(int64(time.Millisecond) << min(attempt-1, 5))))
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// contended is the answer to a write that lost the race to other writers of the card
// maxAttempts times: nothing was written.
func contended(agentID string) error {
	return fault.Errorf(fault.Conflict, "card %q changed under %d attempts to write it, each time by another writer: nothing was written; try again", agentID, maxAttempts)
}

// base returns the card a replace or patch writes over, checked against pre: whether it exists
// (mayBeMissing: a card not found is not an error), and whether it was guessed from memory. With
// guess, it is first the card memory holds of the version the tenant's loaded index has (see
// Memory: the index's outage copy, kept by every install, or a card a search or read answered),
// when memory holds one and pre holds on it; else, and always on a later attempt, the
// database's. A guess saves the write a read of the database, a round trip and a connection of
// the pool taken and given back, and is safe because the write is conditional: the store
// replaces the card only if it is still the card and revision read (a card's content never
// changes without its revision), so a guess older than the database fails the write with
// ErrStale (or ErrNotFound), which then reads the database and starts again. A precondition
// that fails on a guess is checked again on the database's card, never answered from memory.
// Under a mixed load of searches and writes on Postgres, writes spend most of their time waiting
// for the pool's connections, so a read saved is a wait saved.
func (s *Service) base(ctx context.Context, tenant tenants.ID, agentID string, pre Precondition, guess, mayBeMissing bool) (cur Card, exists, guessed bool, err error) {
	if guess && s.Memory != nil && !tenants.Stale(ctx) {
		if c, ok := s.Memory.Remembered(tenant, agentID); ok && pre.check(true, c.Revision) == nil {
			return c, true, true, nil
		}
	}
	cur, err = s.Store.Get(ctx, tenant, agentID)
	exists = err == nil
	if err != nil && !(mayBeMissing && errors.Is(err, ErrNotFound)) {
		return Card{}, false, false, err
	}
	if err := pre.check(exists, cur.Revision); err != nil {
		return Card{}, false, false, err
	}
	return cur, exists, false, nil
}

// Put creates or replaces the card of agentID. It reports whether the card was created.
func (s *Service) Put(ctx context.Context, tenant tenants.ID, agentID string, body []byte, pre Precondition) (Card, bool, error) {
	ctx, err := s.enter(ctx, tenant)
	if err != nil {
		return Card{}, false, err
	}
	if err := ValidateAgentID(agentID); err != nil {
		return Card{}, false, err
	}
	in, err := DecodeWithin(body, s.JSONDepth())
	if err != nil {
		return Card{}, false, err
	}
	if in.AgentID == "" {
		in.AgentID = agentID
	}
	if in.AgentID != agentID {
		return Card{}, false, fault.Errorf(fault.Invalid, "agentId %q does not match the path's %q: invalid", in.AgentID, agentID)
	}
	if _, err := prepare(&in); err != nil {
		return Card{}, false, err
	}
	if err := s.Authz.Check(ctx, string(tenant), authz.CardObject(agentID), authz.ActCardsWrite); err != nil {
		return Card{}, false, err
	}
	guess := true
	for attempt := 0; attempt < maxAttempts; attempt++ {
		if !retryPause(ctx, attempt) {
			return Card{}, false, ctx.Err()
		}
		// Each attempt starts from the card as sent: one that replaced a card took over its
		// source and import record, which a card created in its place must not inherit.
		c := in
		if in.A2A != nil {
			a := *in.A2A
			c.A2A = &a
		}
		cur, exists, guessed, err := s.base(ctx, tenant, agentID, pre, guess, true)
		guess = false
		if err != nil {
			return Card{}, false, err
		}
		if exists && cur.Mirror != nil {
			if guessed {
				attempt--
				continue // decided on the database's card, not memory's
			}
			if err := s.mirrored(ctx, tenant, cur); err != nil {
				return Card{}, false, err
			}
		}
		now := s.now()
		if !exists {
			c.ID, c.CreatedAt, c.UpdatedAt = s.newID(), now, now
			started := time.Now()
			c.Revision, err = s.Store.Create(ctx, tenant, c)
			if errors.Is(err, ErrExists) {
				continue // created meanwhile: read it again, and replace it if the precondition holds
			}
			if err != nil {
				return Card{}, false, err
			}
			return s.written(ctx, tenant, started, c), true, nil
		}
		c.ID, c.Revision, c.CreatedAt, c.UpdatedAt = cur.ID, cur.Revision+1, cur.CreatedAt, now
		c.Source = cur.Source // where the card is refreshed from outlives the writes to it
		keepImport(cur, &c)
		started := time.Now()
		err = s.Store.Replace(ctx, tenant, c, cur.Revision)
		if errors.Is(err, ErrStale) || errors.Is(err, ErrNotFound) {
			// Changed since it was read: read it again and check the precondition on what is
			// there now, so that the write takes effect, or is refused, on one state of the card.
			// A guess from memory that missed does not count as an attempt, nor wait.
			if guessed {
				attempt--
			}
			continue
		}
		if err != nil {
			return Card{}, false, err
		}
		return s.written(ctx, tenant, started, c), false, nil
	}
	return Card{}, false, contended(agentID)
}

// Patch applies a JSON merge patch (RFC 7396) to the card: only the fields sent change.
func (s *Service) Patch(ctx context.Context, tenant tenants.ID, agentID string, patch []byte, pre Precondition) (Card, error) {
	ctx, err := s.enter(ctx, tenant)
	if err != nil {
		return Card{}, err
	}
	if err := ValidateAgentID(agentID); err != nil {
		return Card{}, fault.Errorf(fault.NotFound, "card %q: not found", agentID)
	}
	// A patch too deep is refused before the merge decodes it.
	if err := checkCardDepth(patch, s.JSONDepth()); err != nil {
		return Card{}, err
	}
	if err := s.Authz.Check(ctx, string(tenant), authz.CardObject(agentID), authz.ActCardsWrite); err != nil {
		return Card{}, err
	}
	guess := true
	for attempt := 0; attempt < maxAttempts; attempt++ {
		if !retryPause(ctx, attempt) {
			return Card{}, ctx.Err()
		}
		cur, _, guessed, err := s.base(ctx, tenant, agentID, pre, guess, false)
		guess = false
		if err != nil {
			return Card{}, err
		}
		if cur.Mirror != nil {
			if guessed {
				attempt--
				continue // decided on the database's card, not memory's
			}
			if err := s.mirrored(ctx, tenant, cur); err != nil {
				return Card{}, err
			}
		}
		// The import record is the server's and goes by keepImport, never by the patch: it is left
		// out of what the patch merges into (its signed copy nests deeper than a card may).
		base := cur
		if cur.A2A != nil && cur.A2A.Import != nil {
			a2a := *cur.A2A
			a2a.Import = nil
			base.A2A = &a2a
		}
		doc, err := base.document()
		var c Card
		if err == nil {
			c, err = applyPatch(doc, patch, agentID, s.JSONDepth())
		}
		if err != nil {
			if guessed {
				// A patch refused on a guess is decided on the database's card, as a
				// precondition is: memory may be behind it.
				attempt--
				continue
			}
			return Card{}, err
		}
		c.ID, c.Revision, c.CreatedAt, c.UpdatedAt = cur.ID, cur.Revision+1, cur.CreatedAt, s.now()
		c.Source = cur.Source
		keepImport(cur, &c)
		started := time.Now()
		err = s.Store.Replace(ctx, tenant, c, cur.Revision)
		if errors.Is(err, ErrStale) {
			// Changed since it was read: read it again and check the precondition anew. A
			// guess from memory that missed does not count as an attempt, nor wait.
			if guessed {
				attempt--
			}
			continue
		}
		if err != nil {
			return Card{}, err
		}
		return s.written(ctx, tenant, started, c), nil
	}
	return Card{}, contended(agentID)
}

// Get returns one card.
func (s *Service) Get(ctx context.Context, tenant tenants.ID, agentID string) (Card, error) {
	ctx, err := s.enter(ctx, tenant)
	if err != nil {
		return Card{}, err
	}
	if err := ValidateAgentID(agentID); err != nil {
		return Card{}, fault.Errorf(fault.NotFound, "card %q: not found", agentID)
	}
	if err := s.Authz.Check(ctx, string(tenant), authz.CardObject(agentID), authz.ActCardsRead); err != nil {
		return Card{}, err
	}
	c, err := Read(ctx, s.Store, s.Memory, tenant, agentID)
	if err != nil || s.Liveness == nil {
		return c, err
	}
	l, err := s.Liveness.Of(ctx, tenant, agentID, c.ID)
	if err != nil {
		return Card{}, err
	}
	c.Liveness = &l
	return c, nil
}

// Heartbeat records that the agent's card is alive, and returns its liveness. The agent itself
// may report, with the delegation token of a task it was sent; anyone else needs
// cards:heartbeat on the card. A heartbeat moves no revision and writes no change-feed entry.
func (s *Service) Heartbeat(ctx context.Context, tenant tenants.ID, agentID string) (Liveness, error) {
	p, err := authz.Delegator(ctx)
	if err != nil {
		return Liveness{}, err
	}
	if ctx, err = s.Gate.Enter(ctx, string(tenant)); err != nil {
		return Liveness{}, err
	}
	if err := ValidateAgentID(agentID); err != nil {
		return Liveness{}, fault.Errorf(fault.NotFound, "card %q: not found", agentID)
	}
	if !p.Delegated || p.Subject != authz.AgentSubject(agentID) {
		if err := s.Authz.Check(ctx, string(tenant), authz.CardObject(agentID), authz.ActCardsHeartbeat); err != nil {
			return Liveness{}, err
		}
	}
	if s.Liveness == nil {
		return Liveness{}, fault.New(fault.Unavailable, "this server keeps no liveness: unavailable")
	}
	c, err := s.Store.Get(ctx, tenant, agentID)
	if err != nil {
		return Liveness{}, err
	}
	return s.Liveness.Beat(ctx, tenant, agentID, c.ID)
}

// Delete removes the card; the agent's identity and grants stay.
func (s *Service) Delete(ctx context.Context, tenant tenants.ID, agentID string, pre Precondition) error {
	ctx, err := s.enter(ctx, tenant)
	if err != nil {
		return err
	}
	if err := ValidateAgentID(agentID); err != nil {
		return fault.Errorf(fault.NotFound, "card %q: not found", agentID)
	}
	if err := s.Authz.Check(ctx, string(tenant), authz.CardObject(agentID), authz.ActCardsDelete); err != nil {
		return err
	}
	for attempt := 0; attempt < maxAttempts; attempt++ {
		if !retryPause(ctx, attempt) {
			return ctx.Err()
		}
		// The card is read first: a mirrored one is refused, and the delete is of the revision
		// read, so that a card mirrored meanwhile is not removed unseen.
		cur, err := s.Store.Get(ctx, tenant, agentID)
		if err != nil {
			return err
		}
		if err := s.mirrored(ctx, tenant, cur); err != nil {
			return err
		}
		if err := pre.check(true, cur.Revision); err != nil {
			return err
		}
		err = s.Store.Delete(ctx, tenant, agentID, cur.Revision)
		if errors.Is(err, ErrStale) {
			continue // written since it was read: read it again and check the precondition anew
		}
		if err != nil {
			return err
		}
		s.removed(ctx, tenant, agentID)
		return nil
	}
	return contended(agentID)
}

// removed applies the removal of the agent's card, just committed, to the index and liveness.
func (s *Service) removed(ctx context.Context, tenant tenants.ID, agentID string) {
	s.syncIndex(ctx, tenant, agentID)
	if s.Liveness != nil {
		s.Liveness.Removed(tenant, agentID)
	}
}

// applyWritten applies cards whose writes, begun at started, just committed to the index, so the
// writer's next search sees them.
func (s *Service) applyWritten(ctx context.Context, tenant tenants.ID, started time.Time, written ...Card) {
	if s.Index != nil {
		// The write committed: apply it even if its client has gone.
		_ = s.Index.Wrote(context.WithoutCancel(ctx), tenant, started, written...)
	}
	s.committed(tenant)
}

// committed tells Committed, when set, of a write of the tenant that committed.
func (s *Service) committed(tenant tenants.ID) {
	if s.Committed != nil {
		s.Committed(tenant)
	}
}

// written applies a single card's write that just committed (applyWritten) and returns the card
// as a read of it right after would answer it: with its liveness, when the server keeps any.
func (s *Service) written(ctx context.Context, tenant tenants.ID, started time.Time, c Card) Card {
	s.applyWritten(ctx, tenant, started, c)
	return s.withLiveness(ctx, tenant, c)
}

// withLiveness returns c with its agent's liveness, as Get answers it; c as it is when the server
// keeps none, or when it cannot be read (the write it answers has committed all the same).
func (s *Service) withLiveness(ctx context.Context, tenant tenants.ID, c Card) Card {
	if s.Liveness == nil {
		return c
	}
	l, err := s.Liveness.Of(context.WithoutCancel(ctx), tenant, c.AgentID, c.ID)
	if err != nil {
		return c
	}
	c.Liveness = &l
	return c
}

// syncIndex applies a write that just committed to the index, so the writer's next search sees
// it. A failure is not the write's: the follower applies it from the change feed on its next
// round.
func (s *Service) syncIndex(ctx context.Context, tenant tenants.ID, agentIDs ...string) {
	if s.Index != nil {
		// The write committed: apply it even if its client has gone.
		_ = s.Index.Written(context.WithoutCancel(ctx), tenant, agentIDs...)
	}
	s.committed(tenant)
}

type batchReadKey struct{}

// WithBatchRead marks ctx as an index build's: its GetMany calls read bounded batches, and it
// checks ctx between them, so a store may run a batch without watching ctx (see storage).
func WithBatchRead(ctx context.Context) context.Context {
	return context.WithValue(ctx, batchReadKey{}, true)
}

// BatchRead reports whether ctx is an index build's (WithBatchRead).
func BatchRead(ctx context.Context) bool {
	v, _ := ctx.Value(batchReadKey{}).(bool)
	return v
}
