package authz

import "context"

// PolicyVersion identifies the state of a tenant's rules. Epoch tells apart two tenants that had
// the same id (one deleted, the other created later: revisions restart at 0); Revision is bumped
// in the transaction of every rule change of the tenant.
type PolicyVersion struct {
	// Epoch is the tenant's creation time in Unix microseconds.
	Epoch int64
	// Revision counts the tenant's rule changes.
	Revision int64
}

// Covers reports whether rules loaded at v are fresh enough for a check that must see want.
func (v PolicyVersion) Covers(want PolicyVersion) bool {
	return v.Epoch == want.Epoch && v.Revision >= want.Revision
}

type policyVersionKey struct{}

type tenantVersion struct {
	tenant  string
	version PolicyVersion
}

// WithPolicyVersion returns a context saying that tenant's rules were at v when the request
// started. The tenant gate sets it from the tenant row it reads anyway, so a check costs no
// extra query and never uses rules older than the request.
func WithPolicyVersion(ctx context.Context, tenant string, v PolicyVersion) context.Context {
	return context.WithValue(ctx, policyVersionKey{}, tenantVersion{tenant: tenant, version: v})
}

// PolicyVersionFrom returns the version WithPolicyVersion put in ctx for tenant.
func PolicyVersionFrom(ctx context.Context, tenant string) (PolicyVersion, bool) {
	tv, ok := ctx.Value(policyVersionKey{}).(tenantVersion)
	if !ok || tv.tenant != tenant {
		return PolicyVersion{}, false
	}
	return tv.version, true
}
