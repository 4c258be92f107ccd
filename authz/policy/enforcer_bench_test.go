package policy_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/agentcards/agentcards/authz"
	"github.com/agentcards/agentcards/authz/policy"
	"github.com/agentcards/agentcards/storage"
	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/tenants"
)

// BenchmarkEnforcePolicies measures Check as a request makes it (the policy version from the
// tenant gate, the tenant's enforcer loaded) in a tenant with 1,000 policies, against a tenant
// with 10 policies in the same run: "cold" asks a new question each time (the matcher runs over
// every policy), "warm" repeats one (the decision memo answers). It reports p50/p99 and ratios.
func BenchmarkEnforcePolicies(b *testing.B) {
	db := storagetest.Open(b, "sqlite")
	rules := storage.NewRuleStore(db)
	enforcers := policy.NewEnforcers(rules, &tenants.Service{Store: storage.NewTenantStore(db)})
	ctxFor := func(tenant string, n int) context.Context {
		now := time.Now()
		if err := storage.NewTenantStore(db).Create(context.Background(),
			tenants.Tenant{ID: tenants.ID(tenant), Name: tenant, Status: tenants.StatusActive, CreatedAt: now, UpdatedAt: now}, nil); err != nil {
			b.Fatal(err)
		}
		var rs []authz.Rule
		for i := 0; i < n; i++ {
			rs = append(rs, authz.Rule{PType: "p", Values: []string{fmt.Sprintf("user%d", i), tenant,
				fmt.Sprintf("cards/agt%d/capabilities/*", i), authz.ActDelegate, authz.Allow}})
		}
		for i := 0; i < len(rs); i += 500 {
			if _, err := rules.AddRules(context.Background(), tenant, rs[i:min(i+500, len(rs))]); err != nil {
				b.Fatal(err)
			}
		}
		v, err := rules.PolicyVersion(context.Background(), tenant)
		if err != nil {
			b.Fatal(err)
		}
		ctx := authz.WithPrincipal(context.Background(), authz.Principal{Subject: fmt.Sprintf("user%d", n/2), Tenant: tenant})
		return authz.WithPolicyVersion(ctx, tenant, v)
	}
	small, large := ctxFor("small", 10), ctxFor("large", 1000)
	measure := func(ctx context.Context, tenant string, n int, cold bool) []time.Duration {
		obj := fmt.Sprintf("cards/agt%d/capabilities/review_pr", n/2)
		lat := make([]time.Duration, b.N)
		for i := range lat {
			if cold {
				obj = fmt.Sprintf("cards/agt%d/capabilities/cap%d", n/2, i)
			}
			t0 := time.Now()
			if err := enforcers.Check(ctx, tenant, obj, authz.ActDelegate); err != nil {
				b.Fatal(err)
			}
			lat[i] = time.Since(t0)
		}
		slices.Sort(lat)
		return lat
	}
	measure(small, "small", 10, false) // load both enforcers before timing
	measure(large, "large", 1000, false)
	b.ResetTimer()
	s, l := measure(small, "small", 10, true), measure(large, "large", 1000, true)
	lw := measure(large, "large", 1000, false)
	b.StopTimer()
	pct := func(lat []time.Duration, p int) float64 { return float64(lat[max((len(lat)*p+99)/100-1, 0)]) }
	b.ReportMetric(pct(l, 50)/1e3, "cold-p50-µs-1000")
	b.ReportMetric(pct(l, 99)/1e3, "cold-p99-µs-1000")
	b.ReportMetric(pct(l, 99)/pct(s, 99), "cold-p99-ratio-1000/10")
	b.ReportMetric(pct(lw, 99)/1e3, "warm-p99-µs-1000")
	b.ReportMetric(pct(lw, 99)/pct(l, 99), "warm/cold-p99")
}
