package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/agentcards/agentcards/authz/token"
	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/follow"
	"github.com/agentcards/agentcards/web/api"
)

// keysAgain is how long a Remote waits before it reads the source's keys again for a signature
// they do not verify: a key rotated in at the source is found at once, and a forged signature
// does not make it read them on every page.
const keysAgain = 10 * time.Second

// Remote reads a tenant of another agentcards service for a follower (cards/follow.Remote): its
// cards through the search, and its change feed live, each page and event's signature checked
// against the service's JWKS (/.well-known/jwks.json) and bound to the tenant.
type Remote struct {
	// c reads pages and keys, streams the feed's live stream.
	c, streams *Client
	tenant     string

	mu      sync.Mutex
	keys    jose.JSONWebKeySet
	readAt  time.Time
	hasKeys bool
}

var _ follow.Remote = (*Remote)(nil)

// maxListPages bounds the search pages one listing of a source reads (100 cards each).
const maxListPages = 20000

// NewRemote returns the Remote of the tenant at tenantURL (https://host/v1/tenants/{id}), read
// with tok: its pages and keys through pages (whose Timeout bounds each), its live stream through
// streams (which must have no overall Timeout: a stream lasts).
func NewRemote(tenantURL, tok string, pages, streams *http.Client) (*Remote, error) {
	u, err := url.Parse(tenantURL)
	if err != nil {
		return nil, fmt.Errorf("the source %q is not a URL", tenantURL)
	}
	tenant, ok := follow.TenantOfURL(u)
	if !ok {
		return nil, fmt.Errorf("the source %q is not a tenant's URL (.../v1/tenants/{id})", tenantURL)
	}
	base := *u
	base.Path = strings.TrimSuffix(strings.TrimSuffix(u.Path, "/"), "/v1/tenants/"+tenant)
	base.RawPath = ""
	c, err := New(base.String(), WithToken(tok), WithTenant(tenant), WithHTTPClient(pages), WithUserAgent("agentcards-follow"), WithRetry(2))
	if err != nil {
		return nil, err
	}
	s, err := New(base.String(), WithToken(tok), WithTenant(tenant), WithHTTPClient(streams), WithUserAgent("agentcards-follow"), WithRetry(2))
	if err != nil {
		return nil, err
	}
	return &Remote{c: c, streams: s, tenant: tenant}, nil
}

// List answers the feed's present cursor, taken first, after handing each card of the tenant
// the token may read, of every status, to each, a page of the search at a time.
func (r *Remote) List(ctx context.Context, each func(cards.Card) error) (string, error) {
	sctx, kept := KeepSignature(ctx)
	present, err := r.c.Cards.Changes(sctx, api.CardsChanges{})
	if err != nil {
		return "", err
	}
	if err := r.check(ctx, kept.Signature, kept.Body); err != nil {
		return "", fmt.Errorf("cards.changes: %w", err)
	}
	in := api.CardsSearch{Limit: 100, Status: []string{string(cards.StatusActive), string(cards.StatusDeprecated), string(cards.StatusDisabled)}}
	for range maxListPages {
		page, err := r.c.Cards.Search(sctx, in)
		if err != nil {
			return "", err
		}
		if err := r.check(ctx, kept.Signature, kept.Body); err != nil {
			return "", fmt.Errorf("cards.search: %w", err)
		}
		for _, h := range page.Items {
			if err := each(h.Card); err != nil {
				return "", err
			}
		}
		if page.NextCursor == "" {
			return present.NextCursor, nil
		}
		if page.NextCursor == in.Cursor {
			return "", errors.New("cards.search: the source answered the same page again")
		}
		in.Cursor = page.NextCursor
	}
	return "", fmt.Errorf("cards.search: the source lists more than %d pages", maxListPages)
}

// Watch follows the tenant's change feed after cursor (Cards.Watch), checking each event's
// signature, and calling ready as each stream opens. A cursor the feed no longer holds is
// follow.ErrCursorExpired.
func (r *Remote) Watch(ctx context.Context, cursor string, ready func() error) iter.Seq2[follow.Change, error] {
	return func(yield func(follow.Change, error) bool) {
		wctx := OnReady(ctx, func(string) error { return ready() })
		for ch, err := range r.streams.Cards.Watch(wctx, api.CardsChanges{Since: cursor}) {
			if err != nil {
				var e *Error
				if errors.As(err, &e) && e.Code == "cursor_expired" {
					err = follow.ErrCursorExpired
				}
				yield(follow.Change{}, err)
				return
			}
			if err := r.check(ctx, ch.Signature, ch.Data); err != nil {
				yield(follow.Change{}, fmt.Errorf("a change of %q: %w", ch.AgentID, err))
				return
			}
			if !yield(follow.Change{Op: ch.Op, AgentID: ch.AgentID, Revision: ch.Revision, Card: ch.Card, Cursor: ch.Cursor}, nil) {
				return
			}
		}
	}
}

// check verifies sig, the service's signature of body, with its keys (read again once, at most
// every keysAgain, when they do not verify it), and that it names the tenant followed.
func (r *Remote) check(ctx context.Context, sig string, body []byte) error {
	if sig == "" {
		return errors.New("the answer is not signed (the source's service has no signing keys)")
	}
	keys, err := r.keySet(ctx)
	if err != nil {
		return err
	}
	h, err := token.VerifyDetached(keys, sig, body)
	if err != nil {
		if keys, again := r.keySetAgain(ctx); again {
			h, err = token.VerifyDetached(keys, sig, body)
		}
	}
	if err != nil {
		return fmt.Errorf("the signature does not verify with the source's keys: %w", err)
	}
	if t, _ := h.ExtraHeaders["tenant"].(string); t != r.tenant {
		return fmt.Errorf("the signature is of tenant %q, not of %q", t, r.tenant)
	}
	return nil
}

// keySet answers the source's keys, reading them when it has none.
func (r *Remote) keySet(ctx context.Context) (jose.JSONWebKeySet, error) {
	r.mu.Lock()
	has, keys := r.hasKeys, r.keys
	r.mu.Unlock()
	if has {
		return keys, nil
	}
	return r.read(ctx)
}

// keySetAgain reads the keys again unless they were read less than keysAgain ago.
func (r *Remote) keySetAgain(ctx context.Context) (jose.JSONWebKeySet, bool) {
	r.mu.Lock()
	recent := time.Since(r.readAt) < keysAgain
	r.mu.Unlock()
	if recent {
		return jose.JSONWebKeySet{}, false
	}
	keys, err := r.read(ctx)
	return keys, err == nil
}

// read reads the service's JWKS.
func (r *Remote) read(ctx context.Context) (jose.JSONWebKeySet, error) {
	r.mu.Lock()
	r.readAt = time.Now()
	r.mu.Unlock()
	got, err := r.c.Keys.List(ctx, api.KeysList{})
	if err != nil {
		return jose.JSONWebKeySet{}, fmt.Errorf("read the source's keys: %w", err)
	}
	raw, err := json.Marshal(got)
	if err != nil {
		return jose.JSONWebKeySet{}, err
	}
	var keys jose.JSONWebKeySet
	if err := json.Unmarshal(raw, &keys); err != nil {
		return jose.JSONWebKeySet{}, fmt.Errorf("the source's keys are not a JWKS: %w", err)
	}
	r.mu.Lock()
	r.keys, r.hasKeys = keys, true
	r.mu.Unlock()
	return keys, nil
}
