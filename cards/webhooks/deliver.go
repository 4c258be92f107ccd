package webhooks

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/search"
	"github.com/agentcards/agentcards/tenants"
	"github.com/agentcards/agentcards/web/outbound"
)

// DeliveryStore is what delivery needs of the database; storage's WebhookStore is one. Every
// write of a leased subscription names the owner, and changes nothing once another replica holds
// the lease: a replica that lost its lease cannot move the cursor back or forth.
type DeliveryStore interface {
	// Due lists the subscriptions to deliver to at now, at most limit: of active tenants, not
	// disabled, their next attempt due, their lease lapsed.
	Due(ctx context.Context, now time.Time, limit int) ([]Due, error)
	// Claim leases the subscription to owner until until, if its lease has lapsed at now, and
	// answers it as stored with its cursor; false when another replica holds it.
	Claim(ctx context.Context, tenant tenants.ID, id, owner string, now, until time.Time) (Claimed, bool, error)
	// Advance stores the cursor of owner's subscription and the entries delivered that the feed
	// may answer again (recent), and renews the lease until until; with delivered, it also clears
	// the failures (a failing subscription is active again). false when owner no longer holds
	// the lease.
	Advance(ctx context.Context, tenant tenants.ID, id, owner, cursor string, recent []int64, delivered bool, until time.Time) (bool, error)
	// Fail records a failed attempt of owner's subscription and gives up the lease.
	Fail(ctx context.Context, tenant tenants.ID, id, owner string, f Failure) error
	// Release gives up owner's lease of the subscription.
	Release(ctx context.Context, tenant tenants.ID, id, owner string) error
	// Record appends a delivery record and keeps only the newest keep of the subscription.
	Record(ctx context.Context, tenant tenants.ID, id string, d Delivery, keep int) error
}

// Due is a subscription due for delivery.
type Due struct {
	Tenant tenants.ID
	ID     string
}

// Claimed is a subscription leased for delivery: as stored, with its cursor into the feed and
// the entries delivered that the feed may answer again.
type Claimed struct {
	Tenant  tenants.ID
	Webhook Webhook
	Cursor  string
	Recent  []int64
}

// Failure is a failed attempt: when it began, when the next is due, what it said, and whether
// the subscription is disabled by it (failing for Config.DisableAfter).
type Failure struct {
	At, Next time.Time
	Error    string
	Disable  bool
}

// Doer sends a delivery: the SSRF-guarded client.
type Doer interface {
	Do(*http.Request) (*http.Response, error)
}

// The outcomes Observe is told of.
const (
	OutcomeOK     = "ok"
	OutcomeFailed = "failed"
	// OutcomeRetried is told, besides ok or failed, of an attempt made after a failure.
	OutcomeRetried = "retried"
)

// Deliverer delivers the changes of the subscriptions this replica leases, in feed order per
// subscription: a change is sent only once the one before it was answered 2xx, and the
// subscription's cursor moves past a change only then. A replica that stops (even killed)
// leaves the lease to lapse; the next replica resumes from the stored cursor, so a change whose
// answer was not recorded is sent again: delivery is at least once.
type Deliverer struct {
	// Observe, when set, is told of the outcome of each attempt (OutcomeOK, OutcomeFailed, and
	// OutcomeRetried for a retry).
	Observe func(outcome string)

	cfg    Config
	store  DeliveryStore
	feed   Feed
	doer   Doer
	signer Signer
	source func(tenants.ID) string
	now    func() time.Time
	owner  string
	wake   chan struct{}
}

// NewDeliverer returns a deliverer that reads the feed through feed and sends through doer,
// signing with signer. source is the CloudEvents source of a tenant (its URL); now is the clock
// (time.Now when nil).
func NewDeliverer(cfg Config, store DeliveryStore, feed Feed, doer Doer, signer Signer, source func(tenants.ID) string, now func() time.Time) *Deliverer {
	if now == nil {
		now = time.Now
	}
	var id [6]byte
	_, _ = crand.Read(id[:])
	return &Deliverer{cfg: cfg.WithDefaults(), store: store, feed: feed, doer: doer, signer: signer, source: source, now: now,
		owner: hex.EncodeToString(id[:]), wake: make(chan struct{}, 1)}
}

// Wake asks for a round now: a change was written, here or (by its notice) on another replica.
func (d *Deliverer) Wake() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// Run delivers a round every poll interval, and when woken, until ctx ends; errors are given to
// failed.
func (d *Deliverer) Run(ctx context.Context, failed func(error)) {
	tick := time.NewTicker(d.cfg.PollInterval)
	defer tick.Stop()
	for {
		if _, err := d.Round(ctx); err != nil && ctx.Err() == nil && failed != nil {
			failed(err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-d.wake:
		}
	}
}

// dueLimit bounds the subscriptions one round considers; perRound the pages of the feed one
// subscription is given in a round, so that one with a long backlog lets the round end;
// pageSize the entries of a page; maxRecent the entries delivered a subscription remembers.
const (
	dueLimit  = 1000
	perRound  = 10
	pageSize  = 100
	maxRecent = 10000
)

// Round claims the subscriptions due whose lease has lapsed, delivers to them (Concurrency at
// once, each in order) until each has caught up, failed or sent perRound changes, and returns
// how many events it delivered. The error is the first that kept a subscription from going on.
func (d *Deliverer) Round(ctx context.Context) (int, error) {
	due, err := d.store.Due(ctx, d.now(), dueLimit)
	if err != nil {
		return 0, fmt.Errorf("webhooks: list due: %w", err)
	}
	sem := make(chan struct{}, d.cfg.Concurrency)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	delivered := 0
	for _, s := range due {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return delivered, ctx.Err()
		}
		wg.Go(func() {
			defer func() { <-sem }()
			n, err := d.serve(ctx, s)
			mu.Lock()
			defer mu.Unlock()
			delivered += n
			if err != nil && first == nil {
				first = err
			}
		})
	}
	wg.Wait()
	return delivered, first
}

// serve claims one subscription and, if it got it, delivers its changes in order.
func (d *Deliverer) serve(ctx context.Context, s Due) (int, error) {
	now := d.now()
	c, ok, err := d.store.Claim(ctx, s.Tenant, s.ID, d.owner, now, now.Add(d.cfg.Lease))
	if err != nil || !ok {
		if err != nil {
			err = fmt.Errorf("webhooks: claim %s of %q: %w", s.ID, s.Tenant, err)
		}
		return 0, err
	}
	n, err := d.drain(ctx, c)
	if err != nil {
		// Given up with the lease held: let another round (here or elsewhere) try at once.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.cfg.Timeout)
		defer cancel()
		_ = d.store.Release(rctx, c.Tenant, c.Webhook.ID, d.owner)
		return n, fmt.Errorf("webhooks: %s of %q: %w", c.Webhook.ID, c.Tenant, err)
	}
	return n, nil
}

// drain delivers the claimed subscription's changes in feed order, a page at a time. The stored
// cursor moves past a page once each of its changes was delivered (or does not match the
// filter); until then, each change delivered is kept in recent, so that reading the page again
// (after a failure, or on another replica) sends none twice. recent also keeps what the feed may
// answer again in its next pass (the entries above the horizon of its pass, on Postgres and
// MySQL), and forgets the rest as the cursor moves. It returns after catching up (giving the
// lease up), after a failed delivery (recorded, with its backoff), when the lease was lost, or
// after perRound pages.
func (d *Deliverer) drain(ctx context.Context, c Claimed) (int, error) {
	w, cursor := c.Webhook, c.Cursor
	filter := Filter{Types: w.Types, AgentIDs: w.AgentIDs}
	recent := map[int64]bool{}
	for _, seq := range c.Recent {
		recent[seq] = true
	}
	delivered := 0
	for range perRound {
		if ctx.Err() != nil {
			return delivered, ctx.Err()
		}
		page, err := d.feed.Follow(ctx, c.Tenant, cursor, pageSize)
		if fault.KindOf(err) == fault.CursorExpired {
			// Disabled past the feed's retention: its changes are gone. Resume from the present,
			// and say so in the records.
			if page, err = d.feed.Follow(ctx, c.Tenant, "", 1); err == nil {
				clear(recent)
				d.record(ctx, c, Delivery{Error: "the change feed no longer holds the changes since the last delivery: resumed from the present", At: d.now()})
			}
		}
		if err != nil {
			return delivered, err
		}
		for _, ch := range page.Changes {
			if recent[ch.Seq] || !filter.Matches(TypeOf(ch), ch.AgentID) {
				continue
			}
			if err := d.deliver(ctx, c, w, ch); err != nil {
				if ctx.Err() != nil {
					return delivered, ctx.Err() // stopping: nothing to hold against the subscriber
				}
				return delivered, d.fail(ctx, c, w, err)
			}
			recent[ch.Seq] = true
			delivered++
			w.Failures, w.FailingSince = 0, nil
			// The cursor stays at the page's start; what of the page went out is in recent.
			held, err := d.store.Advance(ctx, c.Tenant, w.ID, d.owner, cursor, seqs(recent), true, d.now().Add(d.cfg.Lease))
			if err != nil || !held {
				return delivered, err
			}
		}
		before := len(recent)
		for seq := range recent {
			if seq <= page.Horizon {
				delete(recent, seq) // never answered again once the cursor is past this page
			}
		}
		if page.NextCursor != cursor || len(recent) != before {
			held, err := d.store.Advance(ctx, c.Tenant, w.ID, d.owner, page.NextCursor, seqs(recent), false, d.now().Add(d.cfg.Lease))
			if err != nil || !held {
				return delivered, err
			}
			cursor = page.NextCursor
		}
		if !page.More {
			return delivered, d.store.Release(ctx, c.Tenant, w.ID, d.owner)
		}
	}
	return delivered, d.store.Release(ctx, c.Tenant, w.ID, d.owner)
}

// seqs lists the set's entries in order, at most maxRecent of them (the newest): past that, an
// entry forgotten may be delivered twice, which at-least-once delivery allows.
func seqs(set map[int64]bool) []int64 {
	out := slices.Sorted(maps.Keys(set))
	if len(out) > maxRecent {
		out = out[len(out)-maxRecent:]
	}
	return out
}

// errAnswered is a delivery answered with a status other than 2xx.
type errAnswered struct{ status int }

func (e errAnswered) Error() string { return fmt.Sprintf("answered %d", e.status) }

// maxAnswer is as much of an answer as a delivery reads (and drops).
const maxAnswer = 64 << 10

// deliver sends one change to the subscriber and records the attempt; nil only for a 2xx answer.
func (d *Deliverer) deliver(ctx context.Context, c Claimed, w Webhook, ch search.FeedChange) error {
	start := d.now()
	ev := NewEvent(d.source(c.Tenant), ch, start)
	body, sig, err := Encode(ev, d.signer)
	if err != nil {
		return err
	}
	rec := Delivery{EventID: ev.ID, Type: ev.Type, AgentID: ch.AgentID, At: start}
	began := time.Now()
	status, err := d.post(ctx, w.URL, body, sig)
	if err != nil && ctx.Err() != nil {
		return err // stopping: the attempt says nothing of the subscriber, and is not recorded
	}
	rec.LatencyMs, rec.Status = time.Since(began).Milliseconds(), status
	switch {
	case err != nil && outbound.Blocked(err):
		err = errors.New("the URL resolves to an address this server does not send to")
	case err != nil && errors.Is(err, context.DeadlineExceeded):
		err = fmt.Errorf("no answer within %s", d.cfg.Timeout)
	}
	if err != nil {
		rec.Error = cards.Clip(err.Error(), 300)
	}
	rec.OK = err == nil
	d.record(ctx, c, rec)
	d.observe(rec.OK, w.Failures > 0)
	return err
}

// post sends body to url within the timeout, and answers the status.
func (d *Deliverer) post(parent context.Context, url string, body []byte, sig string) (int, error) {
	ctx, cancel := context.WithTimeout(parent, d.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", ContentType)
	req.Header.Set(SignatureHeader, sig)
	req.Header.Set("User-Agent", "agentcards-webhooks")
	res, err := d.doer.Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, maxAnswer))
	if res.StatusCode/100 != 2 {
		return res.StatusCode, errAnswered{res.StatusCode}
	}
	return res.StatusCode, nil
}

// fail records a failed delivery on the subscription: its next attempt after the backoff of its
// failures in a row, and disabled once it has failed for DisableAfter. It returns nil: the
// failure is the subscriber's, recorded, not the round's.
func (d *Deliverer) fail(ctx context.Context, c Claimed, w Webhook, cause error) error {
	now := d.now()
	since := now
	if w.FailingSince != nil {
		since = *w.FailingSince
	}
	f := Failure{At: now, Next: now.Add(d.cfg.Backoff(w.Failures + 1)), Error: cards.Clip(cause.Error(), 300),
		Disable: now.Sub(since) >= d.cfg.DisableAfter}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.cfg.Timeout)
	defer cancel()
	return d.store.Fail(wctx, c.Tenant, w.ID, d.owner, f)
}

// record keeps a delivery record; one that cannot be written is not the delivery's failure.
func (d *Deliverer) record(ctx context.Context, c Claimed, rec Delivery) {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.cfg.Timeout)
	defer cancel()
	_ = d.store.Record(wctx, c.Tenant, c.Webhook.ID, rec, d.cfg.KeepDeliveries)
}

func (d *Deliverer) observe(ok, retry bool) {
	if d.Observe == nil {
		return
	}
	if ok {
		d.Observe(OutcomeOK)
	} else {
		d.Observe(OutcomeFailed)
	}
	if retry {
		d.Observe(OutcomeRetried)
	}
}
