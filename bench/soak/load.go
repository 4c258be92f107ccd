package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentcards/agentcards/bench/cardgen"
)

// kind is what a request does.
type kind int

const (
	kindSearchQ kind = iota
	kindSearchCapability
	kindSearchTag
	kindSearchPage
	kindGet
	kindPatch
	kindPut
	kindRegister
	kindDelete
	kindHeartbeat
	kindDelegate
	kinds
)

var kindNames = [kinds]string{"search q", "search capability", "search tag", "search paged", "get",
	"patch", "put", "register", "delete", "heartbeat", "delegate"}

// mix is the share of each step out of 100: searches 50 (a paged step sends up to 5 requests),
// card GETs 20, writes of seeded cards 10, registration or deletion of a new card 5, heartbeats
// 10, sync delegations 5.
var mix = []struct {
	upTo int
	step func(l *load, c *clientState)
}{
	{30, (*load).searchText},
	{40, (*load).searchCapability},
	{45, (*load).searchTag},
	{50, (*load).searchPaged},
	{70, (*load).get},
	{77, (*load).patch},
	{80, (*load).put},
	{85, (*load).churn},
	{95, (*load).heartbeat},
	{100, (*load).delegate},
}

// maxErrors is how many failed requests are quoted, as they happen and in the report.
const maxErrors = 10

// load is the clients' work and what they measured, per interval and in total.
type load struct {
	a       *api
	tenants []*tenant
	keep    int
	words   []string

	mu sync.Mutex
	// the current interval: latencies of the requests answered as expected, failures, and
	// answers that are expected but not success (429 of the delegation rate, 409 of a write
	// that lost too many races).
	lat           []time.Duration
	errs, refused int
	// totals per kind, and the first failures.
	total     [kinds]struct{ ok, errs, refused int }
	firstErrs []string
}

// clientState is one client's: its tenant, its random source, and the new cards it registered,
// oldest first.
type clientState struct {
	w   int
	t   *tenant
	rng *rand.Rand
	// mine are the ids of the cards this client registered and has not deleted; seq numbers them.
	mine []string
	seq  int
}

func newLoad(a *api, ts []*tenant, keep int) *load {
	return &load{a: a, tenants: ts, keep: keep, words: cardgen.Words()}
}

// client sends requests, one after another, until ctx ends; a request under way then finishes.
func (l *load) client(ctx context.Context, w int) {
	c := &clientState{w: w, t: l.tenants[w%len(l.tenants)], rng: rand.New(rand.NewPCG(uint64(w), 0x50a6))}
	for ctx.Err() == nil {
		r := c.rng.IntN(100)
		for _, m := range mix {
			if r < m.upTo {
				m.step(l, c)
				break
			}
		}
	}
}

// request sends one request and counts it: an answer with status want (that check, when given,
// accepts) is a success; one of the statuses tolerated an expected refusal; anything else, or no
// answer, a failure. It returns the body (when keep is set) and whether it succeeded.
func (l *load) request(k kind, method, path, token string, body []byte, keep bool, check func([]byte) error, want int, tolerated ...int) ([]byte, bool) {
	t0 := time.Now()
	status, got, err := l.a.call(method, path, token, body, keep || check != nil)
	took := time.Since(t0)
	if err == nil && status == want && check != nil {
		if cerr := check(got); cerr != nil {
			err = fmt.Errorf("%s %s: %d but %w", method, path, status, cerr)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case err != nil:
		l.failLocked(k, err.Error())
	case status == want:
		l.lat = append(l.lat, took)
		l.total[k].ok++
		return got, true
	case slices.Contains(tolerated, status):
		l.refused++
		l.total[k].refused++
	default:
		l.failLocked(k, fmt.Sprintf("%s %s: %d %s", method, path, status, snippet(got)))
	}
	return nil, false
}

func (l *load) failLocked(k kind, msg string) {
	l.errs++
	l.total[k].errs++
	if len(l.firstErrs) < maxErrors {
		msg = time.Now().Format("15:04:05 ") + msg
		l.firstErrs = append(l.firstErrs, msg)
		progress("error: %s", msg)
	}
}

// interval is what the clients measured since the last call.
type interval struct {
	lat           []time.Duration // sorted
	errs, refused int
}

func (l *load) take() interval {
	l.mu.Lock()
	iv := interval{lat: l.lat, errs: l.errs, refused: l.refused}
	l.lat, l.errs, l.refused = make([]time.Duration, 0, len(iv.lat)), 0, 0
	l.mu.Unlock()
	slices.Sort(iv.lat)
	return iv
}

func cardsPath(t *tenant) string { return "/v1/tenants/" + t.id + "/cards" }

// query is one to three words of the cards' vocabulary; the last one is cut to a prefix of 3+
// characters now and then, as people type.
func (l *load) query(rng *rand.Rand) string {
	ws := make([]string, 1+rng.IntN(3))
	for i := range ws {
		ws[i] = l.words[rng.IntN(len(l.words))]
	}
	if last := ws[len(ws)-1]; len(last) > 4 && rng.IntN(4) == 0 {
		ws[len(ws)-1] = last[:3+rng.IntN(len(last)-3)]
	}
	return strings.Join(ws, " ")
}

func (l *load) searchText(c *clientState) {
	v := url.Values{"q": {l.query(c.rng)}, "limit": {"10"}}
	l.request(kindSearchQ, http.MethodGet, cardsPath(c.t)+"?"+v.Encode(), c.t.orchestrator, nil, false, nil, http.StatusOK)
}

func (l *load) searchCapability(c *clientState) {
	v := url.Values{"capability": {pick(c.rng, c.t.capabilities)}, "limit": {"20"}}
	if c.rng.IntN(3) == 0 {
		v.Set("protocol", pick(c.rng, []string{"a2a", "mcp", "http", "grpc", "websocket"}))
	}
	l.request(kindSearchCapability, http.MethodGet, cardsPath(c.t)+"?"+v.Encode(), c.t.orchestrator, nil, false, nil, http.StatusOK)
}

func (l *load) searchTag(c *clientState) {
	v := url.Values{"tag": {pick(c.rng, c.t.tags)}, "limit": {"20"}}
	switch c.rng.IntN(3) {
	case 0:
		v.Set("online", "true")
	case 1:
		v.Add("tag", pick(c.rng, c.t.tags))
	}
	l.request(kindSearchTag, http.MethodGet, cardsPath(c.t)+"?"+v.Encode(), c.t.orchestrator, nil, false, nil, http.StatusOK)
}

// searchPaged reads up to five pages of 20 of a one-word search (most words match many cards),
// each page with the cursor of the one before.
func (l *load) searchPaged(c *clientState) {
	v := url.Values{"q": {l.words[c.rng.IntN(len(l.words))]}, "limit": {"20"}}
	if c.rng.IntN(2) == 0 {
		v = url.Values{"tag": {pick(c.rng, c.t.tags)}, "limit": {"20"}}
	}
	pages := 2 + c.rng.IntN(4)
	for range pages {
		got, ok := l.request(kindSearchPage, http.MethodGet, cardsPath(c.t)+"?"+v.Encode(), c.t.orchestrator, nil, true, nil, http.StatusOK)
		if !ok {
			return
		}
		var page struct {
			NextCursor string `json:"nextCursor"`
		}
		if err := json.Unmarshal(got, &page); err != nil {
			l.mu.Lock()
			l.failLocked(kindSearchPage, "search page: "+err.Error())
			l.mu.Unlock()
			return
		}
		if page.NextCursor == "" {
			return
		}
		v.Set("cursor", page.NextCursor)
	}
}

func (l *load) get(c *clientState) {
	cd := pick(c.rng, c.t.cards)
	l.request(kindGet, http.MethodGet, cardsPath(c.t)+"/"+cd.agentID, c.t.orchestrator, nil, false, nil, http.StatusOK)
}

// patch changes a seeded card's description, without If-Match (the server retries a lost race;
// 409 after too many is an expected answer).
func (l *load) patch(c *clientState) {
	cd := pick(c.rng, c.t.cards)
	c.seq++
	body := fmt.Appendf(nil, `{"description": "edited by soak client %d, step %d"}`, c.w, c.seq)
	l.request(kindPatch, http.MethodPatch, cardsPath(c.t)+"/"+cd.agentID, c.t.editor, body, false, nil, http.StatusOK, http.StatusConflict)
}

// put replaces a seeded card with its original document.
func (l *load) put(c *clientState) {
	cd := pick(c.rng, c.t.cards)
	l.request(kindPut, http.MethodPut, cardsPath(c.t)+"/"+cd.agentID, c.t.editor, cd.doc, false, nil, http.StatusOK, http.StatusConflict)
}

// churn registers a new card, or, once the client holds l.keep of them, deletes its oldest, so
// that the tenant's card count stays bounded while ids keep changing.
func (l *load) churn(c *clientState) {
	if len(c.mine) >= l.keep {
		id := c.mine[0]
		if _, ok := l.request(kindDelete, http.MethodDelete, cardsPath(c.t)+"/"+id, c.t.editor, nil, false, nil, http.StatusNoContent); ok {
			c.mine = c.mine[1:]
		}
		return
	}
	c.seq++
	id := fmt.Sprintf("soak-c%d-%d", c.w, c.seq)
	if _, ok := l.request(kindRegister, http.MethodPost, cardsPath(c.t), c.t.editor, c.t.newCard(id, c.seq), false, nil, http.StatusCreated); ok {
		c.mine = append(c.mine, id)
	}
}

func (l *load) heartbeat(c *clientState) {
	cd := pick(c.rng, c.t.cards)
	l.request(kindHeartbeat, http.MethodPost, cardsPath(c.t)+"/"+cd.agentID+"/heartbeat", c.t.editor, nil, false, nil, http.StatusOK)
}

// delegate sends a sync delegation to a seeded card (its endpoint is the loopback agent), which
// must come back completed; 429 (the tenant's delegation rate) is an expected refusal.
func (l *load) delegate(c *clientState) {
	cd := pick(c.rng, c.t.cards)
	c.seq++
	body, _ := json.Marshal(map[string]any{"agentId": cd.agentID, "capability": cd.capability, "mode": "sync",
		"task": fmt.Sprintf("soak task %d of client %d", c.seq, c.w), "context": map[string]any{"client": c.w}})
	l.request(kindDelegate, http.MethodPost, "/v1/tenants/"+c.t.id+"/delegations", c.t.orchestrator, body, false, completed, http.StatusOK, http.StatusTooManyRequests)
}

// completed checks that a delegation record's status is completed.
func completed(body []byte) error {
	var d struct {
		Status string `json:"status"`
		Error  string `json:"error"`
	}
	if err := json.Unmarshal(body, &d); err != nil {
		return fmt.Errorf("the record does not decode: %w", err)
	}
	if d.Status != "completed" {
		return fmt.Errorf("status %q (%s)", d.Status, d.Error)
	}
	return nil
}

func pick[T any](rng *rand.Rand, from []T) T { return from[rng.IntN(len(from))] }
