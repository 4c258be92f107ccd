package app

import (
	"net/netip"
	"net/url"

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
// wakes the deliverer at once, through the card service's Committed as it wakes the live
// streams (a write elsewhere does through its notice, or the next poll).
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
	wakeStreams := a.Cards.Committed
	a.Cards.Committed = func(t tenants.ID) {
		if wakeStreams != nil {
			wakeStreams(t)
		}
		a.Deliverer.Wake()
	}
}
