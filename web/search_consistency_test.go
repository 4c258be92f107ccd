package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentcards/agentcards/bench/cardgen"
)

// TestReadYourWritesUnderLoad: on every database, with the tenant's index loaded, its follower
// applying the change feed as in a running server, and eight other writers registering and
// patching cards of the tenant all along, a client's search right after each of its writes sees
// that write: the card it registered, the text it patched in (and not the text it replaced), and
// no longer the card it deleted.
func TestReadYourWritesUnderLoad(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		e.mkTenant("acme", "alice")
		alice := e.token("alice", "acme", false)
		// The index is loaded before any write: each write must reach it before its answer.
		if a := e.search(alice, "acme", "q=probe"); a.Total != 0 {
			t.Fatalf("before any write: %+v", a)
		}
		// The follower applies every write again from the feed, racing with each write's own
		// apply; polled often, so that its rounds fall between a write and the next search.
		ctx, cancel := context.WithCancel(context.Background())
		following := make(chan struct{})
		go func() {
			defer close(following)
			e.index.Follow(ctx, 5*time.Millisecond, nil, nil)
		}()
		defer func() { cancel(); <-following }()

		load := startChurn(e, alice, 8)
		defer load.stop()

		const rounds = 20
		before := load.writes.Load()
		for r := range rounds {
			readYourWritesRound(t, e, alice, r)
		}
		during := load.writes.Load() - before
		for _, err := range load.stop() {
			if err != nil {
				t.Error(err)
			}
		}
		t.Logf("%d writes of the other writers during the %d rounds", during, rounds)
	})
}

// readYourWritesRound registers, patches and deletes the card probe-<r>, and checks that a
// search right after each write sees it. Its words are of one length, so that none is a prefix
// of another (the last word of q also matches as a prefix).
func readYourWritesRound(t *testing.T, e *env, alice string, r int) {
	ids := func(query string) []string { t.Helper(); return e.search(alice, "acme", query).ids() }
	id, created, patched := fmt.Sprintf("probe-%03d", r), fmt.Sprintf("rywc%04d", r), fmt.Sprintf("rywp%04d", r)
	card := sampleCard(id)
	card["description"] = "probe " + created
	expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, card), http.StatusCreated)
	if got := ids("q=" + created); !slices.Equal(got, []string{id}) {
		t.Fatalf("round %d: right after registering %s, q=%s finds %v", r, id, created, got)
	}
	expect(t, e.do("PATCH", "/v1/tenants/acme/cards/"+id, alice, map[string]any{"description": "probe " + patched}), http.StatusOK)
	if got := ids("q=" + patched); !slices.Equal(got, []string{id}) {
		t.Fatalf("round %d: right after patching %s, q=%s finds %v", r, id, patched, got)
	}
	if got := ids("q=" + created); len(got) != 0 {
		t.Fatalf("round %d: right after patching %s, its old text %s still finds %v", r, id, created, got)
	}
	expect(t, e.do("DELETE", "/v1/tenants/acme/cards/"+id, alice, nil), http.StatusNoContent)
	if got := ids("q=" + patched); len(got) != 0 {
		t.Fatalf("round %d: right after deleting %s, q=%s finds %v", r, id, patched, got)
	}
}

// churn is writers that register and patch cards of tenant acme in a loop until stopped,
// counting their writes; each stops at its first failure, which stop answers.
type churn struct {
	writes atomic.Int64
	errs   []error
	halt   chan struct{}
	wg     sync.WaitGroup
	halted func() // closes halt and waits for the writers, once
}

// stop stops the writers and waits for them; it answers each one's failure.
func (c *churn) stop() []error {
	c.halted()
	return c.errs
}

// startChurn starts the writers as alice and returns once each has written, or has failed
// trying.
func startChurn(e *env, alice string, writers int) *churn {
	c := &churn{errs: make([]error, writers), halt: make(chan struct{})}
	c.halted = sync.OnceFunc(func() { close(c.halt); c.wg.Wait() })
	ready := make([]chan struct{}, writers)
	for w := range writers {
		ready[w] = make(chan struct{})
		c.wg.Go(func() {
			// Ready once it has written, or has failed trying.
			isReady := sync.OnceFunc(func() { close(ready[w]) })
			defer isReady()
			for n := 0; ; n++ {
				select {
				case <-c.halt:
					return
				default:
				}
				if err := c.round(e, alice, w, n); err != nil {
					c.errs[w] = fmt.Errorf("writer %d: %w", w, err)
					return
				}
				isReady()
			}
		})
	}
	for _, r := range ready {
		<-r
	}
	return c
}

// round is writer w's round n: it registers a card and patches one registered before.
func (c *churn) round(e *env, alice string, w, n int) error {
	card := sampleCard(fmt.Sprintf("load%d-%05d", w, n))
	card["description"] = "background churn"
	body, _ := json.Marshal(card)
	for _, rq := range []struct {
		method, path, body string
		want               int
	}{
		{"POST", "/v1/tenants/acme/cards", string(body), http.StatusCreated},
		{"PATCH", fmt.Sprintf("/v1/tenants/acme/cards/load%d-%05d", w, n/2), fmt.Sprintf(`{"description": "churn %d"}`, n), http.StatusOK},
	} {
		status, err := send(e, rq.method, rq.path, alice, rq.body)
		if err == nil && status != rq.want {
			err = fmt.Errorf("%s %s: status %d, want %d", rq.method, rq.path, status, rq.want)
		}
		if err != nil {
			return err
		}
		c.writes.Add(1)
	}
	return nil
}

// TestWrittenCardsIndexedAsStored: a write applies the card it wrote to the loaded index without
// reading it back (Index.Wrote), so what it indexes must be what the store holds. On every
// database, cards registered, imported (every A2A sample), created and replaced with PUT,
// patched (fields changed, removed with null, added; tags, resources, visibility, status), registered
// in a batch, and deleted and registered anew are written to a tenant whose index is loaded;
// then a second server on the same database, whose index is built from the store, must answer
// each query exactly as the first (the same hits, in the same order, with the same scores and
// cards): every word of every name, every tag, protocol and capability, resources, and the
// public agents' listing.
func TestWrittenCardsIndexedAsStored(t *testing.T) {
	samples, err := filepath.Glob(filepath.Join(samplesDir, "*.json"))
	if err != nil || len(samples) != 7 {
		t.Fatalf("samples: %v %v", samples, err)
	}
	forEachDialect(t, func(t *testing.T, e *env) {
		e.mkTenant("acme", "alice")
		alice := e.token("alice", "acme", false)
		if a := e.search(alice, "acme", "q=translate"); a.Total != 0 {
			t.Fatalf("before any write: %+v", a)
		}
		writeEveryWay(t, e, alice, samples)

		// 30 registered, 7 samples imported, 1 created by PUT, 30 in the batch; one disabled.
		if all := e.search(alice, "acme", "limit=100"); all.Total != 67 {
			t.Fatalf("%d cards, want 67", all.Total)
		}
		built := newEnv(t, e.db, 1<<20)
		for _, q := range indexComparisons(t, e, alice) {
			tok := alice
			if strings.HasPrefix(q, "/a2a/") {
				tok = ""
			}
			ra, rb := e.do("GET", q, tok, nil), built.do("GET", q, tok, nil)
			expect(t, ra, http.StatusOK)
			expect(t, rb, http.StatusOK)
			if !bytes.Equal(ra.body, rb.body) {
				t.Errorf("%s: the index written to answers\n%s\nthe index built from the store answers\n%s", q, ra.body, rb.body)
			}
		}
	})
}

// writeEveryWay writes cards to tenant acme as alice in every way a write applies a card to the
// index: 30 generated cards registered, the A2A samples imported (public), PUT creating one
// card and replacing another, patches, a batch of 30 more, and a card deleted and registered
// anew with other content.
func writeEveryWay(t *testing.T, e *env, alice string, samples []string) {
	docs := cardgen.Documents(11, 60)
	for _, d := range docs[:30] {
		expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, json.RawMessage(d)), http.StatusCreated)
	}
	for i, f := range samples {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		body := map[string]any{"agentId": fmt.Sprintf("sample-%d", i), "card": json.RawMessage(raw), "visibility": "public"}
		expect(t, e.do("POST", "/v1/tenants/acme/cards/import", alice, body), http.StatusCreated)
	}
	// PUT creates one card and replaces another with other content.
	fresh := cardgen.Make(12, 1)
	fresh.AgentID = "put-new"
	expect(t, e.do("PUT", "/v1/tenants/acme/cards/put-new", alice, fresh), http.StatusCreated)
	other := cardgen.Make(12, 2)
	other.AgentID = cardgen.Make(11, 3).AgentID
	expect(t, e.do("PUT", "/v1/tenants/acme/cards/"+other.AgentID, alice, other), http.StatusOK)
	// Patches: a field changed, one removed, a capability list replaced, twice in a row.
	a0, a1 := cardgen.Make(11, 0).AgentID, cardgen.Make(11, 1).AgentID
	for _, p := range []struct{ agent, patch string }{
		{a0, `{"name":"Zanzibar Ledger Reconciler","description":"reconciles ledgers overnight"}`},
		{a0, `{"tags":null}`},
		{a1, `{"capabilities":[{"name":"translate_text","description":"translates documents between languages"}]}`},
		{a1, `{"description":"translation desk for contracts"}`},
		{a1, `{"tags":["legal","zebra-tag"],"resources":[{"uri":"repo://acme/contracts","access":"read"}]}`},
		{a0, `{"visibility":"public"}`},
		{a1, `{"status":"deprecated","deprecation":{"message":"use another desk"}}`},
		{a0, `{"status":"disabled"}`},
	} {
		expect(t, e.do("PATCH", "/v1/tenants/acme/cards/"+p.agent, alice, json.RawMessage(p.patch)), http.StatusOK)
	}
	// A batch, then a card deleted and registered anew with other content.
	batch := append([]byte("["), bytes.Join(docs[30:], []byte(","))...)
	batch = append(batch, ']')
	expect(t, e.do("POST", "/v1/tenants/acme/cards:batch", alice, json.RawMessage(batch)), http.StatusCreated)
	a5 := cardgen.Make(11, 5)
	expect(t, e.do("DELETE", "/v1/tenants/acme/cards/"+a5.AgentID, alice, nil), http.StatusNoContent)
	again := cardgen.Make(13, 5)
	again.AgentID = a5.AgentID
	expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, again), http.StatusCreated)
}

// indexComparisons are the paths TestWrittenCardsIndexedAsStored asks both servers: the public
// agents (read without a token), and searches for every word of every card's name, every tag,
// protocol and capability the listing of tenant acme shows, a few words of the corpus, the
// filters, and all.
func indexComparisons(t *testing.T, e *env, alice string) []string {
	queries := []string{"status=disabled", "status=deprecated&limit=100", "status=active&status=deprecated&status=disabled&limit=100",
		"status=disabled&q=zanzibar", "verified=true", "verified=false&limit=100", "limit=100", "q=translate", "q=zanzibar", "q=ledgers", "q=contracts", "q=currency",
		"q=weather", "q=agent&limit=100", "resource=repo://acme/contracts", "resource=repo://acme/other"}
	var listing struct {
		Items []struct {
			Card struct {
				Name         string
				Tags         []string
				Protocols    []string
				Capabilities []struct {
					Name string
					Tags []string
				}
			}
		}
	}
	if err := json.Unmarshal(e.do("GET", "/v1/tenants/acme/cards?limit=100", alice, nil).body, &listing); err != nil {
		t.Fatal(err)
	}
	add := func(param string, values ...string) {
		for _, v := range values {
			queries = append(queries, param+"="+url.QueryEscape(v)+"&limit=100")
		}
	}
	for _, h := range listing.Items {
		add("q", strings.Fields(h.Card.Name)...)
		add("tag", h.Card.Tags...)
		add("protocol", h.Card.Protocols...)
		for _, c := range h.Card.Capabilities {
			add("capability", c.Name)
			add("tag", c.Tags...)
		}
	}
	paths := []string{"/a2a/acme/agents?limit=100"}
	for _, q := range slices.Compact(slices.Sorted(slices.Values(queries))) {
		paths = append(paths, "/v1/tenants/acme/cards?"+q)
	}
	return paths
}
