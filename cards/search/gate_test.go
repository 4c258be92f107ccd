package search

import (
	"context"

	"github.com/agentcards/agentcards/authz"
)

// admitAll is a gate that lets every caller into every tenant: the tests of this package are
// about answers; the gates are tested where the composition root builds them.
type admitAll struct{}

func (admitAll) Enter(ctx context.Context, _ string) (context.Context, error) { return ctx, nil }

func (admitAll) EnterPublished(ctx context.Context, _ string) (context.Context, error) {
	return ctx, nil
}

// caller is the context of a caller of tenant "t".
var caller = authz.WithPrincipal(context.Background(), authz.Principal{Subject: "alice", Tenant: "t"})
