package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"time"

	"github.com/agentcards/agentcards/bench/cardgen"
)

// api is the server's HTTP API, called as a platform admin.
type api struct {
	client      *http.Client
	base, token string
}

// call sends one request and returns the answer's ETag; an answer other than want is an error
// that quotes the start of its body.
func (a *api) call(method, path string, body []byte, ifMatch string, want int) (string, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, a.base+path, rd)
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+a.token)
	switch {
	case method == http.MethodPatch:
		req.Header.Set("Content-Type", "application/merge-patch+json")
	case body != nil:
		req.Header.Set("Content-Type", "application/json")
	}
	if ifMatch != "" {
		req.Header.Set("If-Match", ifMatch)
	}
	res, err := a.client.Do(req)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	if res.StatusCode != want {
		msg, _ := io.ReadAll(io.LimitReader(res.Body, 300))
		return "", fmt.Errorf("%s %s: %d %s", method, path, res.StatusCode, bytes.TrimSpace(msg))
	}
	_, _ = io.Copy(io.Discard, res.Body)
	return res.Header.Get("ETag"), nil
}

func (a *api) createTenant(tenant string) error {
	body, _ := json.Marshal(map[string]string{"id": tenant, "name": tenant})
	_, err := a.call(http.MethodPost, "/v1/tenants", body, "", http.StatusCreated)
	return err
}

// deleteTenant removes the tenant with its cards and feed, and the server's index of it.
func (a *api) deleteTenant(tenant string) error {
	_, err := a.call(http.MethodDelete, "/v1/tenants/"+tenant, nil, "", http.StatusNoContent)
	return err
}

// batchSize keeps a batch of generated cards (at most ~3.5 KB each) under the default
// server.bodyLimit of 1 MiB.
const batchSize = 200

// seed registers cards in the tenant, in batches.
func (a *api) seed(tenant string, cs []card) error {
	for len(cs) > 0 {
		part := cs[:min(batchSize, len(cs))]
		cs = cs[len(part):]
		docs := make([][]byte, len(part))
		for i, c := range part {
			docs[i] = c.doc
		}
		body := append(append([]byte("["), bytes.Join(docs, []byte(","))...), ']')
		if _, err := a.call(http.MethodPost, "/v1/tenants/"+tenant+"/cards:batch", body, "", http.StatusCreated); err != nil {
			return err
		}
	}
	return nil
}

// searchPath is a free-text search for word, a page of 10.
func searchPath(tenant, word string) string {
	return "/v1/tenants/" + tenant + "/cards?limit=10&q=" + url.QueryEscape(word)
}

// load builds the tenant's search index, as its first search does.
func (a *api) load(tenant string) error {
	_, err := a.call(http.MethodGet, searchPath(tenant, "agent"), nil, "", http.StatusOK)
	return err
}

// writers runs n closed-loop clients on tenant for d, each registering a new card from deck
// (POST) and then changing its description (PATCH with If-Match on the revision it was given).
func (a *api) writers(ctx context.Context, tenant string, n int, d time.Duration, deck *deck) result {
	cardsPath := "/v1/tenants/" + tenant + "/cards"
	return closedLoop(ctx, n, d, func(_ int, k int64, r *result) {
		c := deck.card(k)
		t0 := time.Now()
		etag, err := a.call(http.MethodPost, cardsPath, c.doc, "", http.StatusCreated)
		if err != nil {
			r.fail(err.Error())
			return
		}
		r.add(kindRegister, time.Since(t0))
		patch := fmt.Appendf(nil, `{"description": "edited by writer %d"}`, k)
		t0 = time.Now()
		if _, err := a.call(http.MethodPatch, cardsPath+"/"+c.agentID, patch, etag, http.StatusOK); err != nil {
			r.fail(err.Error())
			return
		}
		r.add(kindPatch, time.Since(t0))
	})
}

// registrations runs n closed-loop clients on tenant for d, each registering new cards from
// deck: one a request (POST /cards) when batch is 1, else batch cards a request (POST
// /cards:batch). Each card registered counts once, with the latency of its request.
func (a *api) registrations(ctx context.Context, tenant string, n, batch int, d time.Duration, deck *deck) result {
	path := "/v1/tenants/" + tenant + "/cards"
	if batch > 1 {
		path += ":batch"
	}
	return closedLoop(ctx, n, d, func(_ int, k int64, r *result) {
		// Request k takes the cards numbered from (k-1)*batch: no two requests share one.
		var body []byte
		if batch == 1 {
			body = deck.card(k).doc
		} else {
			docs := make([][]byte, batch)
			for i := range docs {
				docs[i] = deck.card((k-1)*int64(batch) + int64(i)).doc
			}
			body = append(append([]byte("["), bytes.Join(docs, []byte(","))...), ']')
		}
		t0 := time.Now()
		if _, err := a.call(http.MethodPost, path, body, "", http.StatusCreated); err != nil {
			r.fail(err.Error())
			return
		}
		took := time.Since(t0)
		for range batch {
			r.add(kindRegister, took)
		}
	})
}

// mixed runs clients closed-loop clients on tenant, whose cards are seeded, for d: each request
// is with probability 0.7 a free-text search for one word of the cards' vocabulary, else a write
// of one of the seeded cards, a PATCH of its description or a PUT of its document, half each
// (without If-Match: clients may write the same card, and the server retries on the new
// revision). seed makes the choices repeatable. If write is set, writes are made by calling it
// with the card instead (a PATCH's, measured as one), and searches still go to the server.
func (a *api) mixed(ctx context.Context, tenant string, clients int, d time.Duration, seeded []card, seed uint64, write func(card) error) result {
	words := cardgen.Words()
	rngs := make([]*rand.Rand, clients)
	for w := range rngs {
		rngs[w] = rand.New(rand.NewPCG(seed, uint64(w)))
	}
	cardsPath := "/v1/tenants/" + tenant + "/cards/"
	return closedLoop(ctx, clients, d, func(w int, k int64, r *result) {
		rng := rngs[w]
		var method, path string
		var body []byte
		var k2 kind
		switch c := seeded[rng.IntN(len(seeded))]; {
		case rng.IntN(10) < 7:
			method, path, k2 = http.MethodGet, searchPath(tenant, words[rng.IntN(len(words))]), kindSearch
		case rng.IntN(2) == 0:
			method, path, k2 = http.MethodPatch, cardsPath+c.agentID, kindPatch
			body = fmt.Appendf(nil, `{"description": "edited under mixed load %d"}`, k)
		default:
			method, path, k2, body = http.MethodPut, cardsPath+c.agentID, kindPut, c.doc
		}
		if write != nil && k2 != kindSearch {
			c, k2 := seeded[rng.IntN(len(seeded))], kindPatch
			t0 := time.Now()
			if err := write(c); err != nil {
				r.fail(err.Error())
				return
			}
			r.add(k2, time.Since(t0))
			return
		}
		t0 := time.Now()
		if _, err := a.call(method, path, body, "", http.StatusOK); err != nil {
			r.fail(err.Error())
			return
		}
		r.add(k2, time.Since(t0))
	})
}
