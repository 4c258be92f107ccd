package main

import (
	"log/slog"

	"github.com/agentcards/agentcards/authz"
	"github.com/agentcards/agentcards/cards/delegation"
	"github.com/agentcards/agentcards/storage"
	"github.com/agentcards/agentcards/web/outbound"
)

// newDispatcher wires delegations: the SSRF-guarded client (its own timeout is the longest a
// delegation may take; each call's context carries the shorter one), the stores and the keys.
func newDispatcher(cfg Config, db *storage.DB, enforcers *authz.Enforcers, keys *authz.ServiceKeys,
	secrets *delegation.EndpointSecrets, log *slog.Logger) (*delegation.Dispatcher, error) {
	allow, err := outbound.ParsePrefixes(cfg.Outbound.Allow)
	if err != nil {
		return nil, err
	}
	d := cfg.Delegation
	dcfg := delegation.Config{
		MaxDepth: d.MaxDepth, DefaultTimeout: d.DefaultTimeout, MaxTimeout: d.MaxTimeout,
		MaxResultBytes: d.MaxResultBytes, BreakerFailures: d.BreakerFailures, BreakerCooldown: d.BreakerCooldown,
		RatePerSecond: d.RatePerSecond, RateBurst: d.RateBurst,
	}
	deps := delegation.Deps{
		Store: storage.NewDelegationStore(db), Cards: storage.NewCardStore(db), Authz: enforcers,
		Doer: outbound.New(outbound.Config{Allow: allow, Timeout: d.MaxTimeout}), Signer: keys,
		Blocked: outbound.Blocked, Log: log,
	}
	if secrets != nil { // a nil *EndpointSecrets in the interface would not compare nil
		deps.Secrets = secrets
	}
	return delegation.NewDispatcher(dcfg, deps), nil
}

// endpointSecrets is the store of static endpoint secrets, or nil when no key is configured.
func endpointSecrets(cfg Config, db *storage.DB, enforcers *authz.Enforcers) (*delegation.EndpointSecrets, error) {
	key, err := cfg.Delegation.secretKey()
	if err != nil || key == nil {
		return nil, err
	}
	return delegation.NewEndpointSecrets(key, storage.NewSecretStore(db), storage.NewCardStore(db), enforcers, nil)
}
