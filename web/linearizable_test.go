package web_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// cardOp is one request of a single-card history: its method, the description it writes, and
// the revision it sends as If-Match (0: none; -1: If-Match: *).
type cardOp struct {
	method  string
	desc    string
	ifMatch int64
}

// cardAnswer is what the server answered: the status, and for a card in the body its revision
// and description.
type cardAnswer struct {
	status   int
	revision int64
	desc     string
}

// oneCard is the sequential specification of a single card over HTTP, the model porcupine checks
// histories against. revision is the card's, or when it does not exist its deleted
// predecessor's: a card registered again goes on from there (an agent id's revisions never
// repeat).
type oneCard struct {
	exists   bool
	revision int64
	desc     string
}

// matches reports whether the request's If-Match holds for a card at revision rev.
func (op cardOp) matches(rev int64) bool { return op.ifMatch == -1 || op.ifMatch == rev }

// stepCard says whether a request could have been answered so in state s, and the state after.
func stepCard(s oneCard, op cardOp, a cardAnswer) (bool, oneCard) {
	written := oneCard{exists: true, revision: s.revision + 1, desc: op.desc}
	if a.status == http.StatusConflict && op.ifMatch == 0 && (op.method == "PUT" || op.method == "PATCH") {
		// An unconditional write that lost the race to other writers more times than it
		// retries gives up: it must have changed nothing.
		return true, s
	}
	switch op.method {
	case "GET":
		if !s.exists {
			return a.status == http.StatusNotFound, s
		}
		return a == cardAnswer{http.StatusOK, s.revision, s.desc}, s
	case "PUT":
		switch {
		case op.ifMatch != 0 && (!s.exists || !op.matches(s.revision)):
			return a.status == http.StatusPreconditionFailed, s
		case !s.exists:
			return a == cardAnswer{http.StatusCreated, written.revision, op.desc}, written
		}
		return a == cardAnswer{http.StatusOK, written.revision, op.desc}, written
	case "PATCH":
		switch {
		case !s.exists:
			return a.status == http.StatusNotFound, s
		case op.ifMatch != 0 && !op.matches(s.revision):
			return a.status == http.StatusPreconditionFailed, s
		}
		return a == cardAnswer{http.StatusOK, written.revision, op.desc}, written
	case "DELETE":
		switch {
		case !s.exists:
			return a.status == http.StatusNotFound, s
		case op.ifMatch != 0 && !op.matches(s.revision):
			return a.status == http.StatusPreconditionFailed, s
		}
		return a.status == http.StatusNoContent, oneCard{revision: s.revision}
	}
	return false, s
}

// TestSingleCardLinearizable: concurrent clients PUT, PATCH and DELETE (each with and without
// If-Match) and GET one card over HTTP; porcupine checks that the history of what each request was
// answered is linearizable against the sequential specification of a card (stepCard): every
// request took effect at one instant between its call and its answer, and saw exactly the
// writes before that instant. Run on every database, the index loaded and not.
func TestSingleCardLinearizable(t *testing.T) {
	const clients, perClient = 6, 40
	forEachDialectAndIndex(t, func(t *testing.T, e *env) {
		e.mkTenant("acme", "alice")
		alice := e.token("alice", "acme", false)
		if e.index != nil {
			expect(t, e.do("GET", "/v1/tenants/acme/cards?q=reviewer", alice, nil), http.StatusOK)
		}
		path := e.srv.URL + "/v1/tenants/acme/cards/lin"
		start := time.Now()
		var mu sync.Mutex
		var history []porcupine.Operation
		var wg sync.WaitGroup
		for c := range clients {
			wg.Go(func() {
				client := &http.Client{Timeout: 30 * time.Second}
				defer client.CloseIdleConnections()
				rng := rand.New(rand.NewPCG(uint64(c), 7))
				seen := int64(0) // the last revision this client was answered
				for i := range perClient {
					op := cardOp{desc: fmt.Sprintf("c%d-%d", c, i)}
					switch k := rng.IntN(20); {
					case k < 6:
						op.method = "GET"
					case k < 9:
						op.method = "PUT"
					case k < 10:
						op.method, op.ifMatch = "PUT", max(seen, 1)
					case k < 13:
						op.method = "PATCH"
					case k < 17:
						op.method, op.ifMatch = "PATCH", max(seen, 1)
					case k < 19:
						op.method = "DELETE"
					default:
						op.method, op.ifMatch = "DELETE", max(seen, 1)
					}
					if op.ifMatch != 0 && rng.IntN(3) == 0 {
						op.ifMatch = -1 // If-Match: *, which any revision of an existing card meets
					}
					call := time.Since(start).Nanoseconds()
					a, err := cardRequest(client, path, alice, op)
					ret := time.Since(start).Nanoseconds()
					if err != nil {
						t.Error(err)
						return
					}
					if a.revision != 0 {
						seen = a.revision
					}
					mu.Lock()
					history = append(history, porcupine.Operation{ClientId: c, Input: op, Call: call, Output: a, Return: ret})
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if t.Failed() {
			return
		}
		model := porcupine.Model{
			Init: func() any { return oneCard{} },
			Step: func(state, input, output any) (bool, any) {
				return stepCard(state.(oneCard), input.(cardOp), output.(cardAnswer))
			},
			DescribeOperation: func(input, output any) string {
				return fmt.Sprintf("%+v -> %+v", input, output)
			},
		}
		res, info := porcupine.CheckOperationsVerbose(model, history, time.Minute)
		switch res {
		case porcupine.Ok:
		case porcupine.Unknown:
			t.Fatalf("the check of %d operations did not finish in a minute", len(history))
		default:
			t.Errorf("the history of %d operations on one card is not linearizable", len(history))
			// The longest order the checker found: the request after its last is one that no
			// state of the card explains.
			var longest []porcupine.Operation
			for _, part := range info.PartialLinearizationsOperations() {
				for _, lin := range part {
					if len(lin) > len(longest) {
						longest = lin
					}
				}
			}
			for _, op := range longest {
				t.Logf("  %d: %s", op.ClientId, model.DescribeOperation(op.Input, op.Output))
			}
		}
		counts := map[int]int{}
		for _, op := range history {
			counts[op.Output.(cardAnswer).status]++
		}
		t.Logf("%d operations, answers by status %v", len(history), counts)
	})
}

// cardRequest sends op to the card at url and reads its answer.
func cardRequest(client *http.Client, url, token string, op cardOp) (cardAnswer, error) {
	var body io.Reader
	switch op.method {
	case "PUT":
		c := sampleCard("lin")
		c["description"] = op.desc
		b, _ := json.Marshal(c)
		body = bytes.NewReader(b)
	case "PATCH":
		b, _ := json.Marshal(map[string]string{"description": op.desc})
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequest(op.method, url, body)
	if err != nil {
		return cardAnswer{}, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	switch op.method {
	case "PUT":
		req.Header.Set("Content-Type", "application/json")
	case "PATCH":
		req.Header.Set("Content-Type", "application/merge-patch+json")
	}
	switch {
	case op.ifMatch == -1:
		req.Header.Set("If-Match", "*")
	case op.ifMatch != 0:
		req.Header.Set("If-Match", strconv.Quote(strconv.FormatInt(op.ifMatch, 10)))
	}
	res, err := client.Do(req)
	if err != nil {
		return cardAnswer{}, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return cardAnswer{}, err
	}
	a := cardAnswer{status: res.StatusCode}
	switch res.StatusCode {
	case http.StatusOK, http.StatusCreated:
		if op.method == "DELETE" {
			break
		}
		var c struct {
			Revision    int64  `json:"revision"`
			Description string `json:"description"`
		}
		if err := json.Unmarshal(b, &c); err != nil {
			return cardAnswer{}, fmt.Errorf("%s: %s: %w", op.method, b, err)
		}
		a.revision, a.desc = c.Revision, c.Description
	case http.StatusNoContent, http.StatusNotFound, http.StatusPreconditionFailed, http.StatusConflict:
	default:
		return cardAnswer{}, fmt.Errorf("%s %+v: status %d: %s", op.method, op, res.StatusCode, b)
	}
	return a, nil
}
