package web

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/agentcards/agentcards/authz"
	"github.com/agentcards/agentcards/authz/authztest"
	"github.com/agentcards/agentcards/bench/cardgen"
	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/search"
	"github.com/agentcards/agentcards/storage"
	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/tenants"
	"github.com/agentcards/agentcards/tenants/paging"
	"github.com/agentcards/agentcards/web/webtest"
)

// TestAppendResultMatchesEncodingJSON: a search answer written by appendResult is what
// encoding/json makes of it, for hits that carry only their card and for one that a search
// encoded once.
func TestAppendResultMatchesEncodingJSON(t *testing.T) {
	ctx := authz.WithPrincipal(context.Background(), authz.Principal{Subject: "alice", Tenant: "acme"})
	db := storagetest.Open(t, "sqlite")
	storagetest.CreateTenant(t, db, "acme", time.Now())
	store := storage.NewCardStore(db)
	gate := &tenants.Service{Store: storage.NewTenantStore(db)}
	var cs []cards.Card
	for _, doc := range cardgen.Documents(3, 3) {
		c, err := (&cards.Service{Store: store, Gate: gate, Authz: authztest.AllowAll{}}).Register(ctx, "acme", doc)
		if err != nil {
			t.Fatal(err)
		}
		cs = append(cs, c)
	}
	score := 2.0 / 3
	res := search.Result{Total: 7, NextCursor: "abc_-", Items: []search.Hit{
		{Card: cs[0]},
		{Card: cs[1], Score: &score, MatchedCapabilities: []string{`a"b`, "é"}},
	}}
	found, err := (&search.Service{Store: store, Gate: gate, Authz: authztest.AllowAll{}}).Search(ctx, "acme", search.Query{Page: paging.Page{Limit: new(1)}})
	if err != nil || len(found.Items) != 1 {
		t.Fatalf("search: %d hits, %v", len(found.Items), err)
	}
	res.Items = append(res.Items, found.Items[0])
	got, err := appendResult(nil, res)
	if err != nil {
		t.Fatal(err)
	}
	want, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	webtest.JSONEqual(t, "appendResult against encoding/json", got, want)
}
