package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/agentcards/agentcards/bench/cardgen"
)

// client calls one running server as a platform admin.
type client struct {
	http        *http.Client
	base, token string
}

func newClient(base, token string) *client {
	// A transport of its own: no connection outlives the process it went to.
	return &client{http: &http.Client{Timeout: 10 * time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 16}}, base: base, token: token}
}

// close drops the idle connections.
func (c *client) close() { c.http.CloseIdleConnections() }

// do sends one request and returns the status and body; an answer other than want is an error
// quoting the start of the body.
func (c *client) do(ctx context.Context, method, path string, body []byte, want int) ([]byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, err
	}
	if res.StatusCode != want {
		return nil, &statusError{method: method, path: path, status: res.StatusCode, body: string(b[:min(len(b), 300)])}
	}
	return b, nil
}

// statusError is an answer with another status than expected.
type statusError struct {
	method, path string
	status       int
	body         string
}

func (e *statusError) Error() string {
	return fmt.Sprintf("%s %s: %d %s", e.method, e.path, e.status, bytes.TrimSpace([]byte(e.body)))
}

func (c *client) createTenant(ctx context.Context, tenant string) error {
	body, _ := json.Marshal(map[string]string{"id": tenant, "name": tenant})
	_, err := c.do(ctx, http.MethodPost, "/v1/tenants", body, http.StatusCreated)
	return err
}

// batchSize is the cards of one registration request, as bench/writeload's seed sends them
// (generated cards stay under the default server.bodyLimit of 1 MiB).
const batchSize = 200

// seed registers n generated cards in the tenant, batchSize a request, from clients concurrent
// clients.
func (c *client) seed(ctx context.Context, tenant string, n, clients int, seed uint64) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan int)
	go func() {
		defer close(next)
		for from := 0; from < n; from += batchSize {
			select {
			case next <- from:
			case <-ctx.Done():
				return
			}
		}
	}()
	var wg sync.WaitGroup
	errs := make([]error, clients)
	for w := range clients {
		wg.Go(func() {
			for from := range next {
				var body bytes.Buffer
				body.WriteByte('[')
				for i := from; i < min(from+batchSize, n); i++ {
					if i > from {
						body.WriteByte(',')
					}
					doc, err := json.Marshal(cardgen.Make(seed, i))
					if err != nil {
						errs[w] = err
						cancel()
						return
					}
					body.Write(doc)
				}
				body.WriteByte(']')
				if _, err := c.do(ctx, http.MethodPost, "/v1/tenants/"+tenant+"/cards:batch", body.Bytes(), http.StatusCreated); err != nil {
					errs[w] = err
					cancel()
					return
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// search runs the free-text search for word, a page of 10, and returns the total it reports.
func (c *client) search(ctx context.Context, tenant, word string) (int, error) {
	b, err := c.do(ctx, http.MethodGet, "/v1/tenants/"+tenant+"/cards?limit=10&q="+url.QueryEscape(word), nil, http.StatusOK)
	if err != nil {
		return 0, err
	}
	var page struct {
		Total int `json:"total"`
	}
	if err := json.Unmarshal(b, &page); err != nil {
		return 0, fmt.Errorf("search answer: %w", err)
	}
	return page.Total, nil
}

// pollEvery is how often /health and /ready are asked while waiting for them.
const pollEvery = 2 * time.Millisecond

// awaitHealth asks GET /health until it answers 200.
func (c *client) awaitHealth(ctx context.Context) error {
	deadline := time.Now().Add(time.Minute)
	for {
		_, err := c.do(ctx, http.MethodGet, "/health", nil, http.StatusOK)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("the server did not answer /health: %w", err)
		}
		time.Sleep(pollEvery)
	}
}

// awaitReady asks GET /ready until it answers 200, and returns how many 503s it answered first.
func (c *client) awaitReady(ctx context.Context) (int, error) {
	deadline := time.Now().Add(10 * time.Minute)
	unready := 0
	for {
		_, err := c.do(ctx, http.MethodGet, "/ready", nil, http.StatusOK)
		if err == nil {
			return unready, nil
		}
		var se *statusError
		if !errors.As(err, &se) || se.status != http.StatusServiceUnavailable || time.Now().After(deadline) || ctx.Err() != nil {
			return unready, fmt.Errorf("waiting for /ready: %w", err)
		}
		unready++
		time.Sleep(pollEvery)
	}
}
