package storage_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/storage"
	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/tenants"
	"github.com/agentcards/agentcards/tenants/audit"
)

// TestTrustPending: each change of a policy marks its domain pending with a number that grows,
// in the same transaction; clearing with another number than the last leaves it, with the last
// takes it off, and every tenant's pending domains are listed.
func TestTrustPending(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) {
		t.Parallel()
		db := storagetest.Open(t, dialect)
		s := storage.NewTenantStore(db)
		newTenant(t, db, "a", "alice")
		newTenant(t, db, "b", "alice")
		ctx := asAlice("trust.put")
		keys := json.RawMessage(`{"keys":[{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo","kid":"k1"}]}`)
		_, first, err := s.PutTrustIssuer(ctx, "a", tenants.TrustIssuer{Domain: "example.com", Keys: keys})
		if err != nil {
			t.Fatal(err)
		}
		_, second, err := s.PutTrustIssuer(ctx, "a", tenants.TrustIssuer{Domain: "example.com", Keys: keys})
		if err != nil || second <= first {
			t.Fatalf("a second change numbered %d after %d: %v", second, first, err)
		}
		if _, _, err := s.PutTrustIssuer(ctx, "b", tenants.TrustIssuer{Domain: "b.example", Keys: keys}); err != nil {
			t.Fatal(err)
		}
		removed, err := s.RemoveTrustIssuer(ctx, "b", "b.example")
		if err != nil {
			t.Fatal(err)
		}
		pending, err := s.TrustPending(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := []tenants.TrustPending{{Tenant: "a", Domain: "example.com", Seq: second}, {Tenant: "b", Domain: "b.example", Seq: removed}}
		if !slices.Equal(pending, want) {
			t.Fatalf("pending %+v, want %+v", pending, want)
		}
		// The first change's pass ends after the second change: the mark stays for the second's.
		if err := s.ClearTrustPending(ctx, "a", "example.com", first); err != nil {
			t.Fatal(err)
		}
		if err := s.ClearTrustPending(ctx, "b", "b.example", removed); err != nil {
			t.Fatal(err)
		}
		if err := s.ClearTrustPending(ctx, "nope", "b.example", removed); err != nil {
			t.Errorf("clearing in no tenant: %v", err)
		}
		if pending, _ := s.TrustPending(ctx); !slices.Equal(pending, want[:1]) {
			t.Errorf("after the clears: %+v, want %+v", pending, want[:1])
		}
		if err := s.ClearTrustPending(ctx, "a", "example.com", second); err != nil {
			t.Fatal(err)
		}
		if pending, _ := s.TrustPending(ctx); len(pending) != 0 {
			t.Errorf("after the last clear: %+v", pending)
		}
	})
}

// TestTrustPolicyPutAndRemove: a put creates the issuer of a domain or replaces it, stamped with
// the time it was written; TrustPolicy reads the issuers in domain order, as stored; a remove
// takes one away, a missing issuer or tenant is not found, and the bounds refuse a new issuer
// past them. Each write leaves its audit entry, and the other tenant's policy stays as it was.
func TestTrustPolicyPutAndRemove(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) {
		t.Parallel()
		db := storagetest.Open(t, dialect)
		s := storage.NewTenantStore(db)
		newTenant(t, db, "a", "alice")
		newTenant(t, db, "b", "alice")
		ctx := asAlice("trust.put")
		before := time.Now().Add(-time.Second)
		keys := json.RawMessage(`{"keys":[{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo","kid":"k1"}]}`)
		for _, e := range []tenants.TrustIssuer{
			{Domain: "example.com", JWKSURL: "https://example.com/jwks.json"},
			{Domain: "*.example.org", Keys: keys},
			{Domain: "example.com", Keys: keys},
		} {
			got, _, err := s.PutTrustIssuer(ctx, "a", e)
			if err != nil {
				t.Fatal(err)
			}
			if got.Domain != e.Domain || got.UpdatedAt.Before(before) || got.UpdatedAt.Location() != time.UTC {
				t.Errorf("PutTrustIssuer(%s) answered %+v", e.Domain, got)
			}
		}
		if _, _, err := s.PutTrustIssuer(ctx, "b", tenants.TrustIssuer{Domain: "b.example", Keys: keys}); err != nil {
			t.Fatal(err)
		}
		policy, err := s.TrustPolicy(ctx, "a")
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range policy {
			got = append(got, fmt.Sprintf("%s url=%q keys=%v", e.Domain, e.JWKSURL, json.Valid(e.Keys) && strings.Contains(string(e.Keys), `"kid":"k1"`)))
		}
		want := []string{`*.example.org url="" keys=true`, `example.com url="" keys=true`}
		if !slices.Equal(got, want) {
			t.Errorf("policy %q, want %q", got, want)
		}
		if _, err := s.RemoveTrustIssuer(ctx, "a", "example.com"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.RemoveTrustIssuer(ctx, "a", "example.com"); fault.KindOf(err) != fault.NotFound {
			t.Errorf("removed twice: %v", err)
		}
		if _, err := s.TrustPolicy(ctx, "nope"); fault.KindOf(err) != fault.NotFound {
			t.Errorf("policy of no tenant: %v", err)
		}
		if _, _, err := s.PutTrustIssuer(ctx, "nope", tenants.TrustIssuer{Domain: "x.example", Keys: keys}); fault.KindOf(err) != fault.NotFound {
			t.Errorf("put in no tenant: %v", err)
		}
		if other, err := s.TrustPolicy(ctx, "b"); err != nil || len(other) != 1 || other[0].Domain != "b.example" {
			t.Errorf("the other tenant's policy: %+v, %v", other, err)
		}

		// Bounds: issuers, then bytes; a replacement within them still passes.
		for i := len(policy) - 1; i < tenants.MaxTrustIssuers; i++ {
			if _, _, err := s.PutTrustIssuer(ctx, "a", tenants.TrustIssuer{Domain: fmt.Sprintf("h%03d.example", i), Keys: keys}); err != nil {
				t.Fatalf("issuer %d: %v", i, err)
			}
		}
		if _, _, err := s.PutTrustIssuer(ctx, "a", tenants.TrustIssuer{Domain: "one-more.example", Keys: keys}); fault.KindOf(err) != fault.Conflict {
			t.Errorf("an issuer past the bound: %v", err)
		}
		big := json.RawMessage(`{"keys":[` + strings.Repeat(`{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"},`, 3500) + `{}]}`)
		if _, _, err := s.PutTrustIssuer(ctx, "a", tenants.TrustIssuer{Domain: "h010.example", Keys: big}); fault.KindOf(err) != fault.Conflict {
			t.Errorf("a policy past its bytes: %v", err)
		}
		if _, _, err := s.PutTrustIssuer(ctx, "a", tenants.TrustIssuer{Domain: "h010.example", JWKSURL: "https://h010.example/jwks.json"}); err != nil {
			t.Errorf("a replacement within the bounds: %v", err)
		}

		entries, err := storage.NewAuditStore(db).List(context.Background(), "a", audit.Filter{ObjectPrefix: "trust/example.com"})
		if err != nil {
			t.Fatal(err)
		}
		var details []string
		for _, e := range entries {
			details = append(details, e.Action+" "+e.Detail)
		}
		wantDetails := []string{"trust.put removed: 1 pinned keys (kid k1)", "trust.put replaced: 1 pinned keys (kid k1)", "trust.put created: keys at https://example.com/jwks.json"}
		if !slices.Equal(details, wantDetails) {
			t.Errorf("details, newest first:\n got %q\nwant %q", details, wantDetails)
		}
	})
}
