package delegation

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"
)

// taskBody is the POST /task request of the agentkit-mesh contract.
type taskBody struct {
	DelegationID string          `json:"delegationId"`
	Task         string          `json:"task"`
	Context      json.RawMessage `json:"context,omitempty"`
	CallbackURL  string          `json:"callbackUrl,omitempty"`
}

// maxErrorText bounds the part of a failing agent's body kept as the error.
const maxErrorText = 1 << 10

// sendTask POSTs the task to the endpoint. The error return is what the endpoint's breaker
// counts: no answer, or a 5xx.
func (x *Dispatcher) sendTask(ctx context.Context, c call) (Outcome, error) {
	body, err := json.Marshal(taskBody{DelegationID: c.d.ID, Task: c.req.Task, Context: c.req.Context, CallbackURL: c.callbackURL})
	if err != nil {
		return Outcome{}, fmt.Errorf("encode the task: %w: %w", errLocal, err)
	}
	token, err := x.token(c)
	if err != nil {
		return Outcome{}, err
	}
	header, value, err := x.credential(ctx, c, token)
	if err != nil {
		return Outcome{}, err
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, c.target.url, bytes.NewReader(body))
	if err != nil {
		return Outcome{}, fmt.Errorf("build the request: %w: %w", errLocal, err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "application/json")
	hreq.Header.Set("Authorization", "Bearer "+token)
	hreq.Header.Set(header, value)
	hreq.Header.Set("X-Delegation-Token", token)
	res, err := x.d.Doer.Do(hreq)
	if err != nil {
		return Outcome{}, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, x.cfg.MaxResultBytes+1))
	if err != nil {
		return Outcome{}, err
	}
	tooLarge := int64(len(b)) > x.cfg.MaxResultBytes
	switch {
	case res.StatusCode == http.StatusOK && tooLarge:
		return Outcome{Status: StatusFailed, Error: fmt.Sprintf("the agent's answer is over %d bytes", x.cfg.MaxResultBytes)}, nil
	case res.StatusCode == http.StatusOK:
		return Outcome{Status: StatusCompleted, Result: resultOf(b)}, nil
	case res.StatusCode == http.StatusAccepted && c.req.Mode == ModeAsync:
		return Outcome{Status: StatusAccepted}, nil
	case res.StatusCode == http.StatusAccepted:
		return Outcome{Status: StatusFailed, Error: "the agent answered 202, but a sync delegation offers no callback"}, nil
	}
	out := Outcome{Status: StatusFailed, Error: fmt.Sprintf("the agent answered %d: %s", res.StatusCode, errorText(b))}
	if res.StatusCode >= 500 {
		return out, errAgentFault
	}
	return out, nil
}

// resultOf is the result of a 200 answer: its "result" member when it is a JSON object that has
// one, the whole JSON body otherwise, or the body as a JSON string when it is not JSON. An answer
// is an object as the contract says, most often, and is then read once: Unmarshal checks that the
// whole body is JSON before it decodes, so only a body that is not an object is looked at again.
func resultOf(b []byte) json.RawMessage {
	var obj map[string]json.RawMessage
	if json.Unmarshal(b, &obj) == nil {
		if r, ok := obj["result"]; ok {
			return r
		}
		return json.RawMessage(bytes.TrimSpace(b))
	}
	if json.Valid(b) { // JSON, but not an object
		return json.RawMessage(bytes.TrimSpace(b))
	}
	s, _ := json.Marshal(strings.ToValidUTF8(string(b), "\uFFFD"))
	return s
}

// errorText is a failing agent's body, trimmed to maxErrorText bytes of valid UTF-8.
func errorText(b []byte) string {
	if len(b) > maxErrorText {
		b = b[:maxErrorText]
		for len(b) > 0 && !utf8.Valid(b) {
			b = b[:len(b)-1]
		}
	}
	return strings.ToValidUTF8(strings.TrimSpace(string(b)), "\uFFFD")
}
