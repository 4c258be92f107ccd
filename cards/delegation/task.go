package delegation

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/cards"
)

// target is where a call goes.
type target struct {
	url string
}

// targetOf finds the URL a transport reaches the card's agent at. For http it is the card's
// endpoint (the POST /task URL); for a2a, the first JSON-RPC interface in the card's
// a2a.interfaces, or the endpoint when the card lists no interface (JSON-RPC is A2A's default).
func targetOf(card cards.Card, transport string) (target, error) {
	raw := card.Endpoint
	if transport == TransportA2A {
		if !slices.Contains(card.Protocols, "a2a") {
			return target{}, fault.Errorf(fault.Invalid, "card %q does not speak a2a: invalid", card.AgentID)
		}
		var err error
		if raw, err = a2aURL(card); err != nil {
			return target{}, err
		}
	}
	if raw == "" {
		return target{}, fault.Errorf(fault.Invalid, "card %q has no endpoint: invalid", card.AgentID)
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return target{}, fault.Errorf(fault.Invalid, "card %q: endpoint %q is not an http(s) URL: invalid", card.AgentID, raw)
	}
	return target{url: raw}, nil
}

// a2aInterface is an A2A interface as spec 1.0 (protocolBinding) or 0.3 (transport) writes it.
type a2aInterface struct {
	URL             string `json:"url"`
	ProtocolBinding string `json:"protocolBinding"`
	Transport       string `json:"transport"`
}

func a2aURL(card cards.Card) (string, error) {
	if card.A2A == nil || len(card.A2A.Interfaces) == 0 || string(card.A2A.Interfaces) == "null" {
		return card.Endpoint, nil
	}
	var list []a2aInterface
	if err := json.Unmarshal(card.A2A.Interfaces, &list); err != nil {
		return "", fault.Errorf(fault.Invalid, "card %q: a2a.interfaces: invalid", card.AgentID)
	}
	for _, i := range list {
		if strings.EqualFold(i.ProtocolBinding, "JSONRPC") || strings.EqualFold(i.Transport, "JSONRPC") {
			return i.URL, nil
		}
	}
	return "", fault.Errorf(fault.Invalid, "card %q has no JSON-RPC A2A interface: invalid", card.AgentID)
}

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
	auth, err := x.authorization(ctx, c, token)
	if err != nil {
		return Outcome{}, err
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, c.target.url, bytes.NewReader(body))
	if err != nil {
		return Outcome{}, fmt.Errorf("build the request: %w: %w", errLocal, err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "application/json")
	hreq.Header.Set("Authorization", auth)
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
