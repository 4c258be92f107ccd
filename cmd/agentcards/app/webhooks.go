package app

import (
	"context"
	"net/netip"
	"net/url"
	"time"

	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/search"
	"github.com/agentcards/agentcards/cards/webhooks"
	"github.com/agentcards/agentcards/storage"
	"github.com/agentcards/agentcards/tenants"
	"github.com/agentcards/agentcards/web/outbound"
)

var _ webhooks.Feed = (*search.Changes)(nil)

// buildWebhooks builds the service of the tenants' webhook subscriptions and the deliverer of
// their events. Deliveries go through the guarded client, as every call to a URL users
// registered does, and follow no redirect (a 3xx is a failed delivery); they are signed with the
// service's current key, which /.well-known/jwks.json publishes. A card write committed here
// wakes the deliverer at once (a write elsewhere does through its notice, or the next poll).
func (a *App) buildWebhooks() {
	o := a.opts
	cfg := o.Webhooks.Config.WithDefaults()
	store := storage.NewWebhookStore(o.DB)
	doer := o.Webhooks.Doer
	if doer == nil {
		doer = a.timed("webhook", outbound.New(outbound.Config{Allow: o.Outbound.Allow, Timeout: cfg.Timeout}))
	}
	base := o.Web.BaseURL()
	source := func(t tenants.ID) string { return base + "/v1/tenants/" + url.PathEscape(string(t)) }
	a.Deliverer = webhooks.NewDeliverer(cfg, store, a.Changes, doer, o.Keys, source, o.Webhooks.Now)
	if m := o.Metrics; m != nil {
		a.Deliverer.Observe = m.Webhook
	}
	allow := o.Outbound.Allow
	a.Webhooks = &webhooks.Service{Store: store, Gate: a.Tenants, Authz: a.Enforcers, Feed: a.Changes, Config: cfg,
		Refused: func(ip netip.Addr) bool { return outbound.Refuses(allow, ip) }, Wake: a.Deliverer.Wake, Now: o.Webhooks.Now}
	a.Cards.Index = wakeOnWrite{next: a.Cards.Index, wake: a.Deliverer.Wake}
}

// wakeOnWrite passes the card service's committed writes on to the index (when there is one) and
// wakes the webhook deliverer.
type wakeOnWrite struct {
	next cards.Indexer
	wake func()
}

func (w wakeOnWrite) Written(ctx context.Context, tenant tenants.ID, agentIDs ...string) error {
	w.wake()
	if w.next == nil {
		return nil
	}
	return w.next.Written(ctx, tenant, agentIDs...)
}

func (w wakeOnWrite) Wrote(ctx context.Context, tenant tenants.ID, started time.Time, written ...cards.Card) error {
	w.wake()
	if w.next == nil {
		return nil
	}
	return w.next.Wrote(ctx, tenant, started, written...)
}
