package app

import (
	"context"

	"github.com/agentcards/agentcards/cards/delegation"
	"github.com/agentcards/agentcards/cards/liveness"
	"github.com/agentcards/agentcards/storage"
	"github.com/agentcards/agentcards/tenants"
	"github.com/agentcards/agentcards/web/outbound"
)

// buildSecrets builds the sealed store of static endpoint secrets, when there is a key to seal
// them with; without one, the secret routes are left out.
func (a *App) buildSecrets(cardStore *storage.CardStore) error {
	if a.opts.SecretKey == nil {
		return nil
	}
	secrets, err := delegation.NewEndpointSecrets(a.opts.SecretKey, storage.NewSecretStore(a.opts.DB), cardStore, a.Tenants, a.Enforcers, nil)
	if err != nil {
		return err
	}
	a.Secrets = secrets
	return nil
}

// probeSecrets gives probes the endpoint secret a card holds, in the header a delegation sends
// it in.
type probeSecrets struct{ secrets delegation.Secrets }

var _ liveness.Secrets = probeSecrets{}

// Credential returns the header and value of the secret the card holds for endpoint; both empty
// when it holds none for that URL.
func (p probeSecrets) Credential(ctx context.Context, tenant tenants.ID, agentID, endpoint string) (header, value string, err error) {
	cred, err := p.secrets.Secret(ctx, tenant, agentID, endpoint)
	if err != nil {
		return "", "", err
	}
	header, value = cred.HeaderField()
	return header, value, nil
}

// delegationDeps gathers what the dispatcher works with: its store, the gate and the enforcers,
// the guarded client it calls agents with, the service keys that sign its tokens, the tracker
// of the liveness each record keeps, and the endpoint secrets when there are any.
func (a *App) delegationDeps(cardStore *storage.CardStore) delegation.Deps {
	o := a.opts
	deps := delegation.Deps{
		Store: storage.NewDelegationStore(o.DB), Cards: cardStore, Gate: a.Tenants, Authz: a.Enforcers,
		// The guarded client's own timeout is the longest a delegation may take; each call's
		// context carries the shorter one.
		Doer:   a.timed("delegation", outbound.New(outbound.Config{Allow: o.Outbound.Allow, Timeout: o.Delegation.WithDefaults().MaxTimeout})),
		Signer: o.Keys, Blocked: outbound.Blocked, Log: o.Log, Liveness: a.Liveness, Tenants: a.Tenants,
	}
	if a.Secrets != nil {
		deps.Secrets = a.Secrets.Opener()
	}
	return deps
}

// buildDispatcher builds the delegation dispatcher on deps. Its JSON depth bound is
// Delegation.MaxJSONDepth, or the server's (MaxJSONDepth) when that is 0.
func (a *App) buildDispatcher(deps delegation.Deps) {
	dcfg := a.opts.Delegation
	if dcfg.MaxJSONDepth == 0 {
		dcfg.MaxJSONDepth = a.opts.MaxJSONDepth
	}
	a.Dispatcher = delegation.NewDispatcher(dcfg, deps)
}
