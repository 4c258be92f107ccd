package storage_test

import (
	"fmt"
	"testing"

	"github.com/agentcards/agentcards/cards/delegation"
	"github.com/agentcards/agentcards/storage"
	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/tenants"
)

// TestGetSecrets: the sealed secrets of those of the agents asked for that have one, of the
// tenant asked for only, across more ids than one query takes.
func TestGetSecrets(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) {
		db := storagetest.Open(t, dialect)
		ctx := asAlice("secrets.set")
		newTenant(t, db, "a", "alice")
		newTenant(t, db, "b", "alice")
		secrets := storage.NewSecretStore(db)
		for _, s := range []struct{ tenant, agentID string }{{"a", "x"}, {"a", "y"}, {"b", "z"}} {
			sealed := delegation.SealedSecret{Endpoint: "https://" + s.agentID + ".example/task", Sealed: "sealed-" + s.agentID}
			if err := secrets.PutSecret(ctx, tenants.ID(s.tenant), s.agentID, sealed, fixed); err != nil {
				t.Fatal(err)
			}
		}
		ids := []string{"z", "y", "nobody"}
		for i := range 1200 {
			ids = append(ids, fmt.Sprintf("filler-%d", i))
		}
		ids = append(ids, "x")
		got, err := secrets.GetSecrets(ctx, "a", ids)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || got["x"] != (delegation.SealedSecret{Endpoint: "https://x.example/task", Sealed: "sealed-x"}) ||
			got["y"].Sealed != "sealed-y" {
			t.Fatalf("got %+v", got)
		}
		if got, err := secrets.GetSecrets(ctx, "a", nil); err != nil || len(got) != 0 {
			t.Fatalf("no ids: %v, %v", got, err)
		}
	})
}
