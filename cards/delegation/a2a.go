package delegation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
)

// sendA2A delivers the task as an A2A SendMessage with the a2a-go client, in the binding and
// version of the interface chosen from the card: the task text is the message (the context, when
// given, a data part), and the reply message or the task's result is the outcome. The error
// return is what the endpoint's breaker counts.
func (x *Dispatcher) sendA2A(ctx context.Context, c call) (Outcome, error) {
	token, err := x.token(c)
	if err != nil {
		return Outcome{}, err
	}
	header, value, err := x.credential(ctx, c, token)
	if err != nil {
		return Outcome{}, err
	}
	client, err := x.a2aClient(ctx, c.target)
	if err != nil {
		return Outcome{}, err
	}
	defer func() { _ = client.Destroy() }()
	parts := []*a2a.Part{a2a.NewTextPart(c.req.Task)}
	if len(c.req.Context) > 0 {
		var v any
		if json.Unmarshal(c.req.Context, &v) == nil {
			parts = append(parts, a2a.NewDataPart(v))
		}
	}
	params := a2aclient.ServiceParams{"authorization": {"Bearer " + token}, "x-delegation-token": {token}}
	params[strings.ToLower(header)] = []string{value}
	ctx = a2aclient.AttachServiceParams(ctx, params)
	res, err := client.SendMessage(ctx, &a2a.SendMessageRequest{
		Message:  a2a.NewMessage(a2a.MessageRoleUser, parts...),
		Metadata: map[string]any{"delegationId": c.d.ID, "capability": c.d.Capability},
		// An async delegation does not hold the agent's connection open: it follows the task
		// up with GetTask instead.
		Config: &a2a.SendMessageConfig{ReturnImmediately: c.req.Mode == ModeAsync},
	})
	if err != nil {
		if ctx.Err() != nil || x.d.Blocked(err) {
			return Outcome{}, err // a timeout or the guard: run classifies them
		}
		if out, ok := x.tooLarge(err); ok {
			return out, nil
		}
		return Outcome{Status: StatusFailed, Error: "A2A: " + errorText([]byte(err.Error()))}, err
	}
	switch r := res.(type) {
	case *a2a.Message:
		return Outcome{Status: StatusCompleted, Result: partsResult(r.Parts)}, nil
	case *a2a.Task:
		if !r.Status.State.Terminal() {
			if c.req.Mode == ModeAsync {
				// The agent has taken the task on: the record says so, as it does for an agent
				// that answers 202, while the server follows the task up.
				// Should that write fail, the record stays running until the outcome is written.
				if err := x.d.Store.Update(ctx, c.tenant, c.d.ID, []Status{StatusRunning}, Outcome{Status: StatusAccepted, At: x.now()}); err != nil {
					x.d.Log.Warn("delegation: record the accepted A2A task", "tenant", string(c.tenant), "delegationId", c.d.ID, "err", err)
				}
			}
			if r, err = followTask(ctx, client, r); err != nil {
				if out, ok := x.tooLarge(err); ok && ctx.Err() == nil {
					return out, nil
				}
				return Outcome{}, err // ctx ended (timeout) or the agent stopped answering
			}
		}
		return taskOutcome(r), nil
	}
	return Outcome{Status: StatusFailed, Error: fmt.Sprintf("A2A: unexpected result %T", res)}, nil
}

// a2aClient returns an a2a-go client that speaks only the target's interface, in its version
// (0.3 through a2a-go's compat transports), over the guarded HTTP client. a2a-go's default
// transports are left out, so it can never fall back to another binding or version.
func (x *Dispatcher) a2aClient(ctx context.Context, t target) (*a2aclient.Client, error) {
	hc := x.a2aHTTPClient()
	var transport a2aclient.FactoryOption
	switch t.iface {
	case Interface{BindingJSONRPC, A2AVersion10}:
		transport = a2aclient.WithJSONRPCTransport(hc)
	case Interface{BindingHTTPJSON, A2AVersion10}:
		transport = a2aclient.WithRESTTransport(hc)
	case Interface{BindingJSONRPC, A2AVersion03}:
		transport = a2av0.WithJSONRPCTransport(a2av0.JSONRPCTransportConfig{Client: hc})
	case Interface{BindingHTTPJSON, A2AVersion03}:
		transport = a2av0.WithRESTTransport(a2av0.RESTTransportConfig{Client: hc})
	default:
		return nil, fmt.Errorf("no A2A client for %s %s: %w", t.iface.Binding, t.iface.Version, errLocal)
	}
	iface := &a2a.AgentInterface{URL: t.url, ProtocolBinding: a2a.TransportProtocol(t.iface.Binding),
		ProtocolVersion: a2a.ProtocolVersion(t.iface.Version), Tenant: t.tenant}
	client, err := a2aclient.NewFromEndpoints(ctx, []*a2a.AgentInterface{iface}, a2aclient.WithDefaultsDisabled(), transport)
	if err != nil {
		return nil, fmt.Errorf("build the A2A client: %w: %w", errLocal, err)
	}
	return client, nil
}

// tooLarge is the outcome of an answer over MaxResultBytes: failed, as over HTTP, and not
// counted by the breaker, since an agent that answers too much is answering.
func (x *Dispatcher) tooLarge(err error) (Outcome, bool) {
	if !errors.Is(err, errAnswerTooLarge) {
		return Outcome{}, false
	}
	return Outcome{Status: StatusFailed, Error: fmt.Sprintf("the agent's answer is over %d bytes", x.cfg.MaxResultBytes)}, true
}

// followTask asks the agent for the task until it reaches a terminal state or ctx (the
// delegation's timeout) ends, waiting a little longer between questions each time.
func followTask(ctx context.Context, client *a2aclient.Client, t *a2a.Task) (*a2a.Task, error) {
	wait := 50 * time.Millisecond
	for !t.Status.State.Terminal() && t.Status.State != a2a.TaskStateInputRequired && t.Status.State != a2a.TaskStateAuthRequired {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, 2*time.Second)
		next, err := client.GetTask(ctx, &a2a.GetTaskRequest{ID: t.ID})
		if err != nil {
			return nil, err
		}
		t = next
	}
	return t, nil
}

// taskOutcome maps an A2A task to an outcome: completed with its artifacts, or failed with its
// status message, also when the agent stops to ask for input or authorization, which a
// delegation cannot give.
func taskOutcome(t *a2a.Task) Outcome {
	var statusText string
	if t.Status.Message != nil {
		statusText = textOf(t.Status.Message.Parts)
	}
	switch t.Status.State {
	case a2a.TaskStateCompleted:
		var parts []*a2a.Part
		for _, a := range t.Artifacts {
			parts = append(parts, a.Parts...)
		}
		if len(parts) == 0 && t.Status.Message != nil {
			parts = t.Status.Message.Parts
		}
		return Outcome{Status: StatusCompleted, Result: partsResult(parts)}
	case a2a.TaskStateFailed, a2a.TaskStateRejected, a2a.TaskStateCanceled:
		return Outcome{Status: StatusFailed, Error: fmt.Sprintf("A2A task %s: %s", t.Status.State, errorText([]byte(statusText)))}
	}
	return Outcome{Status: StatusFailed, Error: fmt.Sprintf("A2A task %s stopped in state %s", t.ID, t.Status.State)}
}

// partsResult is the JSON result of message parts: a lone data part's value, else the texts.
func partsResult(parts []*a2a.Part) json.RawMessage {
	if len(parts) == 1 && parts[0].Data() != nil {
		if b, err := json.Marshal(parts[0].Data()); err == nil {
			return b
		}
	}
	b, _ := json.Marshal(textOf(parts))
	return b
}

func textOf(parts []*a2a.Part) string {
	var texts []string
	for _, p := range parts {
		if t := p.Text(); t != "" {
			texts = append(texts, t)
		}
	}
	return strings.Join(texts, "\n")
}

// a2aHTTPClient adapts the injected Doer (the guarded client) to the *http.Client a2a-go takes,
// bounding each answer to MaxResultBytes.
func (x *Dispatcher) a2aHTTPClient() *http.Client {
	return &http.Client{
		Transport:     limitedTransport{doer: x.d.Doer, limit: x.cfg.MaxResultBytes},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

type limitedTransport struct {
	doer  Doer
	limit int64
}

func (t limitedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	res, err := t.doer.Do(r)
	if err != nil {
		return nil, err
	}
	res.Body = &limitedBody{ReadCloser: res.Body, left: t.limit}
	return res, nil
}

// errAnswerTooLarge is the read error of an A2A answer over the limit; tooLarge turns it into the
// delegation's outcome, so it never reaches a client.
var errAnswerTooLarge = errors.New("the agent's answer is over the limit")

// limitedBody fails a read past the limit, so an oversized answer is an error, not a truncation.
type limitedBody struct {
	io.ReadCloser
	left int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		var probe [1]byte
		n, err := b.ReadCloser.Read(probe[:])
		if n > 0 {
			return 0, errAnswerTooLarge
		}
		return 0, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}
