package app

import (
	"net/netip"
	"slices"
	"time"

	"github.com/agentcards/agentcards/cards/follow"
	"github.com/agentcards/agentcards/storage"
	"github.com/agentcards/agentcards/tenants"
	"github.com/agentcards/agentcards/web/client"
	"github.com/agentcards/agentcards/web/outbound"
)

// FollowOptions tune following other registries (cards/follow).
type FollowOptions struct {
	// Config is the follower's: how often a replica looks for sources due, the lease.
	Config follow.Config
	// Now is the clock of the sources' states (time.Now when nil).
	Now func() time.Time
}

// buildSources builds the service of the sources the tenants follow and the follower that syncs
// them. Every read of a source goes through the outbound guard; an agentcards source's stream
// has no overall timeout (the guard's client bounds the dial and the answer's headers). Tokens
// are sealed with the secret key; without one, a source with a token is refused.
func (a *App) buildSources() error {
	o := a.opts
	store := storage.NewSourceStore(o.DB)
	var tokens *follow.Sealer
	if o.SecretKey != nil {
		var err error
		if tokens, err = follow.NewSealer(o.SecretKey); err != nil {
			return err
		}
	}
	guarded := outbound.New(outbound.Config{Allow: o.Outbound.Allow, Timeout: o.Outbound.Timeout})
	streams := *guarded
	streams.Timeout = 0
	a.Follower = &follow.Follower{Store: store, Cards: a.Cards, Read: a.A2A, Weigh: a.A2A.WeighMirror, Tokens: tokens, Config: o.Follow.Config, Now: o.Follow.Now,
		Dial: func(src follow.Source, token string) (follow.Remote, error) {
			return client.NewRemote(src.URL, token, guarded, &streams)
		}}
	failed := quiet(o.Log, "a followed source failed to sync; it is tried again with backoff (its state says why)")
	a.Follower.Failed = func(t tenants.ID, id string, err error) { failed("tenant", t, "source", id, "err", err) }
	allow := o.Outbound.Allow
	a.Sources = &follow.Service{Store: store, Gate: a.Tenants, Authz: a.Enforcers, Tokens: tokens, Wake: a.Follower.Wake, Now: o.Follow.Now,
		Refused: func(host string) bool {
			ip, err := netip.ParseAddr(host)
			return err == nil && outbound.Refuses(allow, ip)
		},
		PlainHTTP: func(host string) bool {
			ip, err := netip.ParseAddr(host)
			return err == nil && slices.ContainsFunc(allow, func(p netip.Prefix) bool { return p.Contains(ip.Unmap()) })
		}}
	a.Cards.Sources = a.Sources
	return nil
}
