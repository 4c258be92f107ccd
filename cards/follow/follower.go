package follow

import (
	"context"
	crand "crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"maps"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentcards/agentcards/authz"
	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/tenants"
)

// Change is one change of an agentcards source's feed, its signature checked: an upsert with the
// card as the source has it, or a removal with the revision removed; Cursor is the feed's cursor
// after it.
type Change struct {
	Op       string
	AgentID  string
	Revision int64
	Card     *cards.Card
	Cursor   string
}

// The ops of a Change.
const (
	OpUpsert = "upsert"
	OpRemove = "remove"
)

// ErrCursorExpired is a Remote's answer when the source's feed no longer holds the changes after
// the cursor: the follower lists the source's cards again.
var ErrCursorExpired = errors.New("the source's change feed no longer holds the changes after the cursor")

// Remote reads one agentcards source: its cards, and its change feed live. web/client's Remote
// is one.
type Remote interface {
	// List answers the feed's present cursor, taken first, after handing each card the token
	// may read to each, a page at a time (a card changed after the cursor may be listed as it is
	// after the change). An error of each stops it.
	List(ctx context.Context, each func(cards.Card) error) (cursor string, err error)
	// Watch follows the feed after cursor, live, each change's signature checked against the
	// source's keys, calling ready each time a stream opens (it has caught up then, or the
	// changes it had yet to apply come first). It yields an error and stops when the source
	// cannot be read (after trying again by itself), ErrCursorExpired when the feed no longer
	// holds the changes, or ready's error.
	Watch(ctx context.Context, cursor string, ready func() error) iter.Seq2[Change, error]
}

// Dialer returns the Remote of an agentcards source, read with token ("" for none).
type Dialer func(src Source, token string) (Remote, error)

// Listed is an A2A card an AI Catalog lists: its identifier, and where the card is (URL) or the
// card itself (Data).
type Listed struct {
	Identifier string
	URL        string
	Data       json.RawMessage
}

// CardReader reads A2A cards and AI Catalogs for polled sources; cards/a2a's Service is one.
type CardReader interface {
	// ReadCard reads the A2A card at url (or data, given inline) and maps it to the agent's
	// card, its signatures checked and weighed against the tenant's trust policy.
	ReadCard(ctx context.Context, tenant tenants.ID, agentID, url string, data json.RawMessage) (cards.Card, cards.ImportRecord, error)
	// ReadCatalog reads the AI Catalog at url and answers the A2A cards it lists, those of the
	// catalogs it nests too.
	ReadCatalog(ctx context.Context, url string) ([]Listed, error)
}

// Writer writes mirrored cards; cards.Service is one.
type Writer interface {
	Mirror(ctx context.Context, tenant tenants.ID, c cards.Card, m cards.Mirror, rec *cards.ImportRecord) (cards.Card, string, error)
	Unmirror(ctx context.Context, tenant tenants.ID, agentID, source string, revision int64) (bool, error)
	Mirrored(ctx context.Context, tenant tenants.ID, source string) (map[string]int64, error)
}

// Config tunes the follower.
type Config struct {
	// Poll is how often a replica looks for sources due (1 s).
	Poll time.Duration
	// Lease is how long a replica holds a source without renewing it (30 s); it renews at a
	// third of it.
	Lease time.Duration
	// Concurrency bounds the sources a replica syncs at once, apart from the agentcards sources
	// it follows live (4); Reads the cards of one polled source read at once (4).
	Concurrency, Reads int
	// MaxBackoff bounds the pause after failed syncs in a row (5 min).
	MaxBackoff time.Duration
}

// WithDefaults fills the zero members.
func (c Config) WithDefaults() Config {
	if c.Poll <= 0 {
		c.Poll = time.Second
	}
	if c.Lease <= 0 {
		c.Lease = 30 * time.Second
	}
	if c.Concurrency <= 0 {
		c.Concurrency = 4
	}
	if c.Reads <= 0 {
		c.Reads = 4
	}
	if c.MaxBackoff <= 0 {
		c.MaxBackoff = 5 * time.Minute
	}
	return c
}

// Backoff is the pause after the failures-th failed sync in a row: 1 s doubled each time, at
// most MaxBackoff.
func (c Config) Backoff(failures int) time.Duration {
	return min(time.Second<<min(max(failures-1, 0), 20), c.MaxBackoff)
}

// job is who writes mirrored cards.
var job = authz.Principal{Subject: authz.JobPrefix + "follow", PlatformAdmin: true}

// Follower syncs the sources this replica leases: it follows each agentcards source live,
// holding its lease while its stream is open, reads each polled source every interval, and
// finishes removing the sources being removed. Any replica may take a source whose lease lapsed;
// its stored cursor says where to resume.
type Follower struct {
	Store Store
	Cards Writer
	Dial  Dialer
	Read  CardReader
	// Weigh, when set, weighs a card mirrored from an agentcards source against the tenant's
	// trust policy: rec's signed copy, its Trust set to the outcome (cards/a2a's WeighMirror).
	Weigh  func(ctx context.Context, tenant tenants.ID, c cards.Card, rec *cards.ImportRecord) error
	Tokens *Sealer
	Config Config
	// Failed, when set, is told of a sync that failed (the source records it too).
	Failed func(tenant tenants.ID, id string, err error)
	Now    func() time.Time

	once  sync.Once
	owner string
	wake  chan struct{}
	mu    sync.Mutex
	// live holds the syncs this replica runs, by tenant and source.
	live map[string]running
	work sync.WaitGroup
}

func (f *Follower) init() {
	f.once.Do(func() {
		var id [6]byte
		_, _ = crand.Read(id[:])
		f.owner = hex.EncodeToString(id[:])
		f.wake = make(chan struct{}, 1)
		f.live = map[string]running{}
		f.Config = f.Config.WithDefaults()
	})
}

func (f *Follower) now() time.Time {
	if f.Now != nil {
		return f.Now().UTC()
	}
	return time.Now().UTC()
}

// Wake asks for a round now: a source was created or removed.
func (f *Follower) Wake() {
	f.init()
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// Run runs a round every Poll, and when woken, until ctx ends; then it waits for the syncs it
// started, which give up their leases.
func (f *Follower) Run(ctx context.Context) {
	f.init()
	defer f.work.Wait()
	tick := time.NewTicker(f.Config.Poll)
	defer tick.Stop()
	for {
		f.Round(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-f.wake:
		}
	}
}

// Round claims the sources due whose lease has lapsed and starts their syncs: each agentcards
// source is followed until its stream fails, its lease is lost or ctx ends; a polled source is
// read once; a removing one has its cards removed. It returns without waiting for them; the
// syncs of polled and removing sources run Concurrency at a time.
func (f *Follower) Round(ctx context.Context) {
	f.init()
	due, err := f.Store.Due(ctx, f.now(), 100)
	if err != nil {
		f.failed("", "", fmt.Errorf("list the sources due: %w", err))
		return
	}
	for _, d := range due {
		key := string(d.Tenant) + "\x00" + d.ID
		f.mu.Lock()
		r, busy := f.live[key]
		polled := 0
		for _, v := range f.live {
			if v.polled {
				polled++
			}
		}
		f.mu.Unlock()
		if busy {
			// Due, so its lease has lapsed: the sync here stops, and a later round claims the
			// source anew.
			r.cancel()
			continue
		}
		// A polled or removing source waits for a free slot; an agentcards source is followed
		// whatever the others do.
		isPolled := d.Kind != KindAgentcards || d.State == StateRemoving
		if ctx.Err() != nil || isPolled && polled >= f.Config.Concurrency {
			continue
		}
		now := f.now()
		c, ok, err := f.Store.Claim(ctx, d.Tenant, d.ID, f.owner, now, now.Add(f.Config.Lease))
		if err != nil {
			f.failed(d.Tenant, d.ID, fmt.Errorf("claim: %w", err))
			continue
		}
		if !ok {
			continue
		}
		sctx, cancel := context.WithCancel(ctx)
		f.mu.Lock()
		f.live[key] = running{polled: c.Source.Kind != KindAgentcards || c.Source.State == StateRemoving, cancel: cancel}
		f.mu.Unlock()
		f.work.Go(func() {
			defer func() {
				cancel()
				f.mu.Lock()
				delete(f.live, key)
				f.mu.Unlock()
			}()
			f.sync(sctx, c)
		})
	}
}

// running is a sync this replica runs: whether it is of a polled or removing source (which
// Concurrency bounds), and how to stop it.
type running struct {
	polled bool
	cancel context.CancelFunc
}

// pollTimeout bounds one read of a polled source, and one removal.
const pollTimeout = 15 * time.Minute

// errLeaseLost ends a sync whose lease another replica holds now, or whose source is being
// removed: nothing is recorded of it.
var errLeaseLost = errors.New("the source's lease is no longer held")

// sync runs one claimed source's sync, holding its lease meanwhile, and gives the lease up when
// it ends: recording a failure, or due again at once (a sync that stopped, so that another
// replica, or the removal, takes it), or as the sync said (a polled source's next read).
func (f *Follower) sync(parent context.Context, c Claimed) {
	jobCtx := authz.AsJob(authz.WithPrincipal(parent, job), "follow", "sources.sync")
	var ctx context.Context
	var cancel context.CancelFunc
	if c.Source.Kind != KindAgentcards || c.Source.State == StateRemoving {
		ctx, cancel = context.WithTimeout(jobCtx, pollTimeout)
	} else {
		ctx, cancel = context.WithCancel(jobCtx)
	}
	var holding sync.WaitGroup
	holding.Go(func() { f.hold(ctx, cancel, c) })
	defer func() {
		cancel()
		holding.Wait()
	}()
	var err error
	released := false
	switch {
	case c.Source.State == StateRemoving:
		err = f.remove(ctx, c)
	case c.Source.Kind == KindAgentcards:
		err = f.follow(ctx, c)
	default:
		released, err = f.poll(ctx, c)
	}
	switch {
	case err != nil && !errors.Is(err, errLeaseLost) && parent.Err() == nil && (ctx.Err() == nil || errors.Is(ctx.Err(), context.DeadlineExceeded)):
		f.fail(parent, c, err)
	case !released:
		wctx, stop := context.WithTimeout(context.WithoutCancel(parent), 10*time.Second)
		defer stop()
		_, _ = f.Store.Progress(wctx, c.Tenant, c.Source.ID, f.owner, Progress{Release: true, Next: f.now()})
	}
}

// hold renews the lease of the source being synced every third of the lease, and cancels the
// sync (cancel) once it is lost (another replica took the source, or it is being removed), or
// when renewals have failed until a third of the lease is left: the sync stops before another
// replica may take the source.
func (f *Follower) hold(ctx context.Context, cancel context.CancelFunc, c Claimed) {
	t := time.NewTicker(f.Config.Lease / 3)
	defer t.Stop()
	until := f.now().Add(f.Config.Lease)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		next := f.now().Add(f.Config.Lease)
		p := Progress{Until: next, Removing: c.Source.State == StateRemoving}
		if c.Source.Kind == KindAgentcards {
			p.Next = f.now().Add(f.Config.Lease / 3) // followed live: next renewed then
		}
		held, err := f.Store.Progress(ctx, c.Tenant, c.Source.ID, f.owner, p)
		switch {
		case err == nil && !held:
			cancel()
			return
		case err == nil:
			until = next
		case f.now().After(until.Add(-f.Config.Lease / 3)):
			cancel()
			return
		}
	}
}

// progress writes p, renewing the lease: errLeaseLost when it is no longer held.
func (f *Follower) progress(ctx context.Context, c Claimed, p Progress) error {
	if p.Until.IsZero() && !p.Release {
		p.Until = f.now().Add(f.Config.Lease)
	}
	p.Removing = c.Source.State == StateRemoving
	held, err := f.Store.Progress(ctx, c.Tenant, c.Source.ID, f.owner, p)
	if err != nil {
		return fmt.Errorf("record the sync's progress: %w", err)
	}
	if !held {
		return errLeaseLost
	}
	return nil
}

// fail records a failed sync, with its backoff, and gives up the lease.
func (f *Follower) fail(parent context.Context, c Claimed, cause error) {
	f.failed(c.Tenant, c.Source.ID, cause)
	now := f.now()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(parent), 10*time.Second)
	defer cancel()
	backoff := f.Config.Backoff
	if c.Source.Kind != KindAgentcards && c.Source.State != StateRemoving {
		// A polled source is not read again sooner than its interval: a read that failed in
		// part has read (and fetched) everything else.
		backoff = func(n int) time.Duration { return max(f.Config.Backoff(n), c.Source.Every()) }
	}
	err := f.Store.Fail(ctx, c.Tenant, c.Source.ID, f.owner, Failure{At: now, Backoff: backoff, Error: cards.Clip(cause.Error(), 300)})
	if err != nil {
		f.failed(c.Tenant, c.Source.ID, fmt.Errorf("record the failure: %w", err))
	}
}

func (f *Follower) failed(tenant tenants.ID, id string, err error) {
	if f.Failed != nil {
		f.Failed(tenant, id, err)
	}
}

// remove removes the cards of a source being removed, then the source.
func (f *Follower) remove(ctx context.Context, c Claimed) error {
	mine, err := f.Cards.Mirrored(ctx, c.Tenant, c.Source.ID)
	if err != nil {
		return err
	}
	for _, id := range slices.Sorted(maps.Keys(mine)) {
		if _, err := f.Cards.Unmirror(ctx, c.Tenant, id, c.Source.ID, 0); err != nil {
			return err
		}
	}
	return f.Store.Delete(ctx, c.Tenant, c.Source.ID, f.owner)
}

// mirrorState is what a sync knows of a source's cards: how many it mirrors, and the agent ids
// it lists that are not mirrored here (the tenant's own card, another source's, or a card this
// server does not take).
type mirrorState struct {
	count     int
	conflicts map[string]bool
}

func (m *mirrorState) progress(p *Progress) {
	n, list := m.count, conflictList(slices.Collect(maps.Keys(m.conflicts)))
	p.Cards, p.Conflicts = &n, &list
}

// add counts the outcome of mirroring the agent's card, for a card the sync did not know of
// (fresh) or one it knew.
func (m *mirrorState) add(agentID, outcome string, fresh bool) {
	switch outcome {
	case cards.MirrorConflict, mirrorRefused:
		m.conflicts[agentID] = true
	case mirrorRefusedRemoved:
		m.conflicts[agentID] = true
		if !fresh {
			m.count = max(m.count-1, 0)
		}
	case cards.MirrorCreated:
		delete(m.conflicts, agentID)
		m.count++
	default:
		delete(m.conflicts, agentID)
		if fresh {
			m.count++
		}
	}
}

// mirrorRefused is the outcome of mirroring a card this server does not take (invalid here):
// it is skipped, and named with the conflicts; mirrorRefusedRemoved, when the mirror of its
// last version that was taken is removed (it would say what the source no longer says).
const (
	mirrorRefused        = "refused"
	mirrorRefusedRemoved = "refused, removed"
)

// Bounds of following an agentcards source: how often its cards are listed again (which
// reconciles what the feed does not say, such as cards the token no longer reads), and the
// least time between two listings forced by the source's feed losing the cursor.
const (
	relistEvery   = 24 * time.Hour
	relistAtLeast = time.Minute
	maxCursorLen  = 1024
)

// follow syncs an agentcards source: it lists the source's cards when it has no cursor (or the
// source's feed no longer holds its changes, or a day has passed), then applies each change of
// its feed as it comes, storing the cursor after each, until the stream fails or the lease is
// lost. Each stream opened marks the source active (its last error cleared): it reads again.
func (f *Follower) follow(ctx context.Context, c Claimed) error {
	token := ""
	if c.SealedToken != "" {
		if f.Tokens == nil {
			return errors.New("this server has no secret key to open the source's token with")
		}
		var err error
		if token, err = f.Tokens.Open(c.Tenant, c.Source, c.SealedToken); err != nil {
			return err
		}
	}
	remote, err := f.Dial(c.Source, token)
	if err != nil {
		return err
	}
	// The cards are counted afresh: a write whose progress was not stored (a crash, a lease that
	// passed on) may have changed them since the count was.
	mine, err := f.Cards.Mirrored(ctx, c.Tenant, c.Source.ID)
	if err != nil {
		return err
	}
	cursor := c.Cursor
	st := mirrorState{count: len(mine), conflicts: map[string]bool{}}
	for _, id := range c.Source.Conflicts {
		st.conflicts[id] = true
	}
	listed := c.ListedAt
	for ctx.Err() == nil {
		if cursor == "" || f.now().Sub(listed) >= relistEvery {
			if cursor == "" && f.now().Sub(listed) < relistAtLeast {
				return errors.New("the source's change feed no longer holds the changes after the cursor its cards were just listed at")
			}
			if cursor, err = f.relist(ctx, c, remote, &st); err != nil {
				return err
			}
			listed = f.now()
		}
		wctx, stop := context.WithTimeout(ctx, relistEvery-f.now().Sub(listed))
		ready := func() error {
			p := Progress{Active: true, At: f.now(), Next: f.now().Add(f.Config.Lease / 3)}
			st.progress(&p)
			return f.progress(ctx, c, p)
		}
		next, err := f.watch(wctx, c, remote, cursor, &st, ready)
		daily := errors.Is(wctx.Err(), context.DeadlineExceeded)
		stop()
		cursor = next
		switch {
		case errors.Is(err, ErrCursorExpired):
			cursor = ""
		case err != nil && ctx.Err() == nil && daily:
			// A day since the cards were listed: the loop lists them again.
		case err != nil:
			return err
		}
	}
	return ctx.Err()
}

// watch applies the changes of the source's feed after cursor as they come, storing the cursor
// after each, and answers the cursor it got to and why it stopped.
func (f *Follower) watch(ctx context.Context, c Claimed, remote Remote, cursor string, st *mirrorState, ready func() error) (string, error) {
	for ch, err := range remote.Watch(ctx, cursor, ready) {
		if err != nil {
			return cursor, err
		}
		if len(ch.Cursor) > maxCursorLen {
			return cursor, fmt.Errorf("the source's feed gave a cursor of %d bytes, over %d", len(ch.Cursor), maxCursorLen)
		}
		if err := f.apply(ctx, c, ch, st); err != nil {
			return cursor, err
		}
		cursor = ch.Cursor
		p := Progress{Cursor: &cursor, Synced: true, At: f.now()}
		st.progress(&p)
		if err := f.progress(ctx, c, p); err != nil {
			return cursor, err
		}
	}
	return cursor, ctx.Err()
}

// relist lists the source's cards, mirrors each, removes the mirrored cards it no longer lists,
// and stores the feed's cursor taken before the list.
func (f *Follower) relist(ctx context.Context, c Claimed, remote Remote, st *mirrorState) (string, error) {
	mine, err := f.Cards.Mirrored(ctx, c.Tenant, c.Source.ID)
	if err != nil {
		return "", err
	}
	clear(st.conflicts)
	st.count = 0
	seen := map[string]bool{}
	cursor, err := remote.List(ctx, func(card cards.Card) error {
		if seen[card.AgentID] {
			return nil // a page that repeats a card: it counts once
		}
		seen[card.AgentID] = true
		out, err := f.mirror(ctx, c, card, cards.Mirror{Revision: card.Revision}, nil)
		if err != nil {
			return err
		}
		st.add(card.AgentID, out, true)
		return nil
	})
	if err != nil {
		return "", err
	}
	if len(cursor) > maxCursorLen {
		return "", fmt.Errorf("the source's feed gave a cursor of %d bytes, over %d", len(cursor), maxCursorLen)
	}
	for _, id := range slices.Sorted(maps.Keys(mine)) {
		if !seen[id] {
			if _, err := f.Cards.Unmirror(ctx, c.Tenant, id, c.Source.ID, 0); err != nil {
				return "", err
			}
		}
	}
	now := f.now()
	p := Progress{Cursor: &cursor, Synced: true, At: now, ListedAt: &now}
	st.progress(&p)
	if err := f.progress(ctx, c, p); err != nil {
		return "", err
	}
	return cursor, nil
}

// apply applies one change of an agentcards source.
func (f *Follower) apply(ctx context.Context, c Claimed, ch Change, st *mirrorState) error {
	switch ch.Op {
	case OpUpsert:
		if ch.Card == nil {
			return fmt.Errorf("the upsert of %q carries no card", ch.AgentID)
		}
		card := *ch.Card
		card.AgentID = ch.AgentID
		out, err := f.mirror(ctx, c, card, cards.Mirror{Revision: ch.Card.Revision}, nil)
		if err != nil {
			return err
		}
		st.add(ch.AgentID, out, false)
	case OpRemove:
		removed, err := f.Cards.Unmirror(ctx, c.Tenant, ch.AgentID, c.Source.ID, ch.Revision)
		if err != nil {
			return err
		}
		if removed {
			st.count = max(st.count-1, 0)
		}
		delete(st.conflicts, ch.AgentID)
	default:
		return fmt.Errorf("a change of %q has op %q", ch.AgentID, ch.Op)
	}
	return nil
}

// mirror writes one card of the source as its mirror here. A card this server does not take (a
// validation refuses it) is skipped: mirrorRefused. An agentcards source's import record is
// kept as a record of what the source found: its signature check is the source's, so it says
// unverified here, and its trust, the source tenant's policy, is replaced by this tenant's,
// weighed on the signed copy (Weigh).
func (f *Follower) mirror(ctx context.Context, c Claimed, card cards.Card, m cards.Mirror, rec *cards.ImportRecord) (string, error) {
	m.Source, m.Kind, m.SyncedAt = c.Source.ID, c.Source.Kind, f.now()
	if m.URL == "" {
		m.URL = c.Source.URL
	}
	if card.A2A != nil && card.A2A.Import != nil && rec == nil {
		r := *card.A2A.Import
		if r.Signature.Status != cards.SignatureUnverified {
			r.Signature = cards.SignatureCheck{Status: cards.SignatureUnverified,
				Reason: "mirrored: the source found its signature " + r.Signature.Status + "; it was not checked here"}
		}
		r.Trust = nil
		if f.Weigh != nil {
			if err := f.Weigh(ctx, c.Tenant, card, &r); err != nil {
				return "", fmt.Errorf("card %q: weigh it against the trust policy: %w", card.AgentID, err)
			}
		}
		rec = &r
	}
	_, out, err := f.Cards.Mirror(ctx, c.Tenant, card, m, rec)
	switch fault.KindOf(err) {
	case fault.Invalid, fault.Malformed, fault.TooLarge:
		f.failed(c.Tenant, c.Source.ID, fmt.Errorf("card %q is not mirrored: %w", card.AgentID, err))
		removed, uerr := f.Cards.Unmirror(ctx, c.Tenant, card.AgentID, c.Source.ID, 0)
		if uerr != nil {
			return "", fmt.Errorf("card %q: %w", card.AgentID, uerr)
		}
		if removed {
			return mirrorRefusedRemoved, nil
		}
		return mirrorRefused, nil
	}
	if err != nil {
		return "", fmt.Errorf("card %q: %w", card.AgentID, err)
	}
	return out, nil
}

// target is one card of a polled source: the agent id it is mirrored as, and where it is read.
type target struct {
	agentID, url, cardURL string
	data                  json.RawMessage
}

// poll reads a polled source once: every card it lists, mirrored; the mirrored cards it no
// longer lists, removed. A card that cannot be read keeps its last good mirror, and the sync
// counts as failed (LastError names it); a list that cannot be read changes nothing. It reports
// whether it gave the lease up (a read that ended well, due again after the interval).
func (f *Follower) poll(ctx context.Context, c Claimed) (bool, error) {
	var targets []target
	switch c.Source.Kind {
	case KindAICatalog:
		listed, err := f.Read.ReadCatalog(ctx, c.Source.URL)
		if err != nil {
			return false, err
		}
		targets = catalogTargets(listed)
	case KindA2AURLs:
		targets = urlTargets(c.Source.URLs)
	default:
		return false, fmt.Errorf("a source of kind %q cannot be read", c.Source.Kind)
	}
	mine, err := f.Cards.Mirrored(ctx, c.Tenant, c.Source.ID)
	if err != nil {
		return false, err
	}
	st := mirrorState{conflicts: map[string]bool{}}
	var mu sync.Mutex
	var failed []string
	var firstErr error
	sem := make(chan struct{}, f.Config.Reads)
	var wg sync.WaitGroup
	for _, t := range targets {
		if ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			card, rec, err := f.Read.ReadCard(ctx, c.Tenant, t.agentID, t.url, t.data)
			out := ""
			if err == nil {
				m := cards.Mirror{URL: c.Source.URL, CardURL: t.cardURL}
				if c.Source.Kind == KindA2AURLs {
					m = cards.Mirror{URL: t.url}
				}
				out, err = f.mirror(ctx, c, card, m, &rec)
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if _, had := mine[t.agentID]; had {
					st.count++ // its last good mirror stays
				}
				failed = append(failed, t.agentID)
				if firstErr == nil {
					firstErr = fmt.Errorf("%s: %w", t.url, err)
				}
				return
			}
			st.add(t.agentID, out, true)
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		return false, ctx.Err()
	}
	listed := map[string]bool{}
	for _, t := range targets {
		listed[t.agentID] = true
	}
	for _, id := range slices.Sorted(maps.Keys(mine)) {
		if !listed[id] {
			if _, err := f.Cards.Unmirror(ctx, c.Tenant, id, c.Source.ID, 0); err != nil {
				return false, err
			}
		}
	}
	now := f.now()
	p := Progress{Synced: firstErr == nil, At: now}
	st.progress(&p)
	if firstErr != nil {
		if err := f.progress(ctx, c, p); err != nil {
			return false, err
		}
		return false, fmt.Errorf("%d of %d cards could not be read (their last good copies stay); %s: %w", len(failed), len(targets), strings.Join(first(failed, 5), ", "), firstErr)
	}
	p.Release, p.Next = true, now.Add(c.Source.Every())
	if err := f.progress(ctx, c, p); err != nil {
		return false, err
	}
	return true, nil
}

func first(ids []string, n int) []string {
	slices.Sort(ids)
	return ids[:min(n, len(ids))]
}

// urlTargets names the cards of an a2a-urls source: each URL's agent id is made of its host and
// path (AgentIDFor).
func urlTargets(urls []string) []target {
	out := make([]target, 0, len(urls))
	for _, u := range urls {
		out = append(out, target{url: u, agentID: AgentIDFor("", u)})
	}
	return unique(out)
}

// catalogTargets names the cards an AI Catalog lists.
func catalogTargets(listed []Listed) []target {
	out := make([]target, 0, len(listed))
	for _, l := range listed {
		out = append(out, target{url: l.URL, cardURL: l.URL, data: l.Data, agentID: AgentIDFor(l.Identifier, l.URL)})
	}
	return unique(out)
}

// unique gives each target an agent id of its own, whatever the order of the list: of the
// targets that would share an id, the one first by URL and data keeps it, and each other takes
// it with '-' and hex digits of a digest of its URL and data, as many as make it unique.
func unique(ts []target) []target {
	slices.SortStableFunc(ts, func(a, b target) int {
		if c := strings.Compare(a.url, b.url); c != 0 {
			return c
		}
		return strings.Compare(string(a.data), string(b.data))
	})
	taken := map[string]bool{}
	for _, t := range ts {
		taken[t.agentID] = false
	}
	var out []target
	for _, t := range ts {
		if !taken[t.agentID] {
			taken[t.agentID] = true
			out = append(out, t)
			continue
		}
		sum := sha256.Sum256([]byte(t.url + "\x00" + string(t.data)))
		digest := hex.EncodeToString(sum[:])
		for n := 8; ; n += 2 {
			id := t.agentID[:min(len(t.agentID), 127-n)] + "-" + digest[:n]
			if _, ok := taken[id]; !ok || n >= len(digest) {
				t.agentID = id
				break
			}
		}
		taken[t.agentID] = true
		out = append(out, t)
	}
	return out
}

// AgentIDFor is the agent id a listed card is mirrored as: the last segment of its identifier
// (after the last ':' or '/') when that is an agent id, as a catalog of agentcards names its
// cards (urn:agentcards:{tenant}:{agentId}); else its URL's host and path, the well-known
// name of a card removed, with every run of other characters as one '-'.
func AgentIDFor(identifier, rawURL string) string {
	if i := strings.LastIndexAny(identifier, ":/"); i >= 0 && i < len(identifier)-1 {
		if id := identifier[i+1:]; cards.ValidateAgentID(id) == nil {
			return id
		}
	}
	s := rawURL
	if u, err := url.Parse(rawURL); err == nil && u.Host != "" {
		p := u.EscapedPath()
		for _, known := range []string{"/.well-known/agent-card.json", "/.well-known/agent.json"} {
			p = strings.TrimSuffix(p, known)
		}
		s = u.Hostname() + "/" + strings.TrimSuffix(p, ".json")
	}
	var b strings.Builder
	dash := false
	for _, r := range s {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_'
		if ok {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	id := strings.Trim(b.String(), "-.")
	if len(id) > 128 {
		sum := sha256.Sum256([]byte(rawURL))
		id = strings.TrimRight(id[:119], "-.") + "-" + hex.EncodeToString(sum[:4])
	}
	if cards.ValidateAgentID(id) != nil {
		sum := sha256.Sum256([]byte(rawURL))
		id = "card-" + hex.EncodeToString(sum[:8])
	}
	return id
}
