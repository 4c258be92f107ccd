package delegation

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"
	"github.com/sony/gobreaker/v2"

	"github.com/agentcards/agentcards/authz"
	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/authz/token"
	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/tenants"
)

// Liveness says whether a card's agent is answering; cards/liveness's Tracker does.
type Liveness interface {
	Of(ctx context.Context, tenant tenants.ID, agentID, cardID string) (cards.Liveness, error)
}

// Cards is where the dispatcher finds the agent's card.
type Cards interface {
	Get(ctx context.Context, tenant tenants.ID, agentID string) (cards.Card, error)
}

// Gate admits the caller in ctx into a tenant and returns the context that carries the tenant's
// policy version: Enter for a caller of the tenant (it exists, is the caller's, is active),
// EnterPublished for an agent's callback, which carries no caller (it exists and is active).
// tenants.Service is the one gate.
type Gate interface {
	Enter(ctx context.Context, tenant string) (context.Context, error)
	EnterPublished(ctx context.Context, tenant string) (context.Context, error)
}

// Authorizer answers whether the caller in ctx may act on an object of a tenant.
type Authorizer interface {
	Check(ctx context.Context, tenant, obj, act string) error
}

// Signer signs the delegation token; token.ServiceKeys is one.
type Signer interface {
	SignJWT(claims jwt.Claims) (string, error)
}

// Doer sends HTTP requests; it must be the SSRF-guarded outbound client.
type Doer interface {
	Do(*http.Request) (*http.Response, error)
}

// Secrets returns the static secret an agent holds for an endpoint URL, or "" when it has none
// for that URL.
type Secrets interface {
	Secret(ctx context.Context, tenant tenants.ID, agentID, endpoint string) (Credential, error)
}

// Config holds the limits the server enforces, whatever the caller asks.
type Config struct {
	// MaxDepth is the longest delegation chain; a delegation made with a delegation token is one
	// deeper than the one that issued the token.
	MaxDepth int
	// DefaultTimeout applies when the caller names none; MaxTimeout caps what it names.
	DefaultTimeout, MaxTimeout time.Duration
	// MaxAsyncTimeout caps the timeout of an async delegation over HTTP instead: how long its
	// agent may take to post the result. The call itself, which the agent answers with 202,
	// still waits at most MaxTimeout.
	MaxAsyncTimeout time.Duration
	// MaxResultBytes bounds an agent's answer and a callback's body.
	MaxResultBytes int64
	// BreakerFailures consecutive failures open an endpoint's breaker for BreakerCooldown.
	BreakerFailures uint32
	BreakerCooldown time.Duration
	// RatePerSecond and RateBurst bound each tenant's delegations (per replica); 0 means no limit.
	RatePerSecond float64
	RateBurst     int
	// Issuer is the "iss" of delegation tokens; TokenTTL their lifetime beyond the timeout.
	Issuer   string
	TokenTTL time.Duration
	// RecordTaskBytes is how much of its task a delegation's record keeps (cut at a character's
	// start); 0 keeps none (delegation.recordTask off). A tenant may hide its tasks
	// (tenants.Tenant.HideDelegationTasks). Delegations refused before they are sent keep none.
	RecordTaskBytes int
	// MaxJSONDepth bounds how deeply a request's context and a callback's result nest, as
	// cards.Service.MaxJSONDepth bounds a card's free-form values; 0 is cards.DefaultMaxJSONDepth.
	MaxJSONDepth int
}

// Deps are what the dispatcher calls.
type Deps struct {
	Store   Store
	Cards   Cards
	Gate    Gate
	Authz   Authorizer
	Doer    Doer
	Signer  Signer
	Secrets Secrets // may be nil
	// Liveness, when set, is asked for the card's liveness, which the record keeps.
	Liveness Liveness
	// Observe, when set, is told each status a delegation is recorded in after its creation
	// (and a refusal's rejected), with its transport: metrics count them.
	Observe func(transport string, status Status)
	// BreakerChanged, when set, is told each change of an endpoint breaker's state.
	BreakerChanged func(from, to string)
	// Tenants gives the tenant's settings (a cached read): whether it refuses delegations to
	// offline agents.
	Tenants interface {
		Active(ctx context.Context, id tenants.ID) (tenants.Tenant, error)
	}
	// Blocked reports whether an error of Doer is the outbound guard refusing an address.
	Blocked func(error) bool
	// Log receives the causes of calls the server failed to prepare; nil means slog.Default().
	Log *slog.Logger
	// Now and NewID are injected so tests can pin them; NewID must return UUIDs in their
	// canonical lowercase form (wellFormedID). Lists order records by creation time, then by id:
	// ids that sort by time (version 7) keep the records of one instant in the order made.
	Now   func() time.Time
	NewID func() string
}

// Dispatcher delegates tasks to agents and keeps the records.
type Dispatcher struct {
	cfg      Config
	d        Deps
	breakers *breakers
	limiters limiters

	// mu guards closed and every running.Add, so no async call can start once Wait began.
	mu      sync.Mutex
	closed  bool
	running sync.WaitGroup
}

// Defaults are the limits of a server configured with none: the binary's configuration
// (delegation.*) starts from them, and WithDefaults fills a zero field with them.
var Defaults = Config{
	MaxDepth: 5, DefaultTimeout: 30 * time.Second, MaxTimeout: 2 * time.Minute, MaxAsyncTimeout: 24 * time.Hour, MaxResultBytes: 1 << 20,
	BreakerFailures: 5, BreakerCooldown: 30 * time.Second, RatePerSecond: 20, RateBurst: 40,
	Issuer: "agentcards", TokenTTL: 5 * time.Minute, RecordTaskBytes: 4096, MaxJSONDepth: cards.DefaultMaxJSONDepth,
}

// WithDefaults returns c with each zero limit set to its default. A zero rate stays zero (no
// limit), and a zero RecordTaskBytes too (no task kept); MaxTimeout is at least DefaultTimeout,
// and MaxAsyncTimeout at least MaxTimeout.
func (c Config) WithDefaults() Config {
	d := Defaults
	set := func(v *time.Duration, def time.Duration) {
		if *v <= 0 {
			*v = def
		}
	}
	if c.MaxDepth <= 0 {
		c.MaxDepth = d.MaxDepth
	}
	set(&c.DefaultTimeout, d.DefaultTimeout)
	c.MaxTimeout = max(c.MaxTimeout, c.DefaultTimeout)
	set(&c.MaxAsyncTimeout, d.MaxAsyncTimeout)
	c.MaxAsyncTimeout = max(c.MaxAsyncTimeout, c.MaxTimeout)
	if c.MaxResultBytes <= 0 {
		c.MaxResultBytes = d.MaxResultBytes
	}
	if c.BreakerFailures == 0 {
		c.BreakerFailures = d.BreakerFailures
	}
	set(&c.BreakerCooldown, d.BreakerCooldown)
	if c.Issuer == "" {
		c.Issuer = d.Issuer
	}
	set(&c.TokenTTL, d.TokenTTL)
	if c.MaxJSONDepth <= 0 {
		c.MaxJSONDepth = d.MaxJSONDepth
	}
	return c
}

// NewDispatcher returns a dispatcher; zero limits in cfg get the documented defaults.
func NewDispatcher(cfg Config, d Deps) *Dispatcher {
	cfg = cfg.WithDefaults()
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.NewID == nil {
		d.NewID = func() string { return uuid.Must(uuid.NewV7()).String() }
	}
	if d.Log == nil {
		d.Log = slog.Default()
	}
	if d.Blocked == nil {
		d.Blocked = func(error) bool { return false }
	}
	x := &Dispatcher{cfg: cfg, d: d}
	x.breakers = newBreakers(cfg.BreakerFailures, cfg.BreakerCooldown, d.Blocked, guardEntries, guardIdle)
	x.breakers.changed = d.BreakerChanged
	x.limiters = newLimiters(cfg.RatePerSecond, max(cfg.RateBurst, 1), guardEntries, guardIdle)
	return x
}

func (x *Dispatcher) now() time.Time { return x.d.Now().UTC().Truncate(time.Microsecond) }

// Issuer is the "iss" of the delegation tokens this dispatcher signs.
func (x *Dispatcher) Issuer() string { return x.cfg.Issuer }

// Leeway is the clock skew tolerated when a delegation token comes back to us.
func (x *Dispatcher) Leeway() time.Duration { return 5 * time.Second }

// Wait refuses new async delegations (ErrClosed) and blocks until every one in flight has its
// outcome or gave up; call it on shutdown after the server stopped taking requests.
func (x *Dispatcher) Wait() {
	x.mu.Lock()
	x.closed = true
	x.mu.Unlock()
	x.running.Wait()
}

// start reserves a place for one async call, unless Wait has begun.
func (x *Dispatcher) start() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return fault.New(fault.Unavailable, "the server is shutting down")
	}
	x.running.Add(1)
	return nil
}

// enter admits the caller in ctx, who may be an agent with a delegation token, into tenant.
func (x *Dispatcher) enter(ctx context.Context, tenant tenants.ID) (context.Context, authz.Principal, error) {
	p, err := authz.Delegator(ctx)
	if err != nil {
		return ctx, p, err
	}
	ctx, err = x.d.Gate.Enter(ctx, string(tenant))
	return ctx, p, err
}

// CallbackURL builds the URL an agent posts an async result to, from the delegation's id and
// its single-use token.
type CallbackURL func(id, token string) string

// Delegate checks the request against the card, the policy and the server's limits, records it,
// and sends it (at once for sync; in the background for async, answering with the pending record).
func (x *Dispatcher) Delegate(ctx context.Context, tenant tenants.ID, req Request, callback CallbackURL) (Delegation, error) {
	return x.delegate(ctx, tenant, req, callback, false)
}

// DelegateSent is Delegate, except that an async delegation answers once the agent has answered
// the call (accepted, or failed), as agentkit-mesh's control plane does; its result still comes
// by callback.
func (x *Dispatcher) DelegateSent(ctx context.Context, tenant tenants.ID, req Request, callback CallbackURL) (Delegation, error) {
	return x.delegate(ctx, tenant, req, callback, true)
}

func (x *Dispatcher) delegate(ctx context.Context, tenant tenants.ID, req Request, callback CallbackURL, waitSent bool) (Delegation, error) {
	ctx, c, rejected, err := x.check(ctx, tenant, req)
	if err != nil {
		return rejected, err
	}
	if err := x.record(ctx, &c, callback); err != nil {
		return Delegation{}, err
	}
	// The call outlives neither its own timeout nor the server, but does outlive the request:
	// a caller that goes away must not leave the record running forever.
	bg := context.WithoutCancel(ctx)
	if c.req.Mode == ModeAsync {
		if waitSent {
			defer x.running.Done()
			return x.run(bg, c)
		}
		go func() {
			defer x.running.Done()
			_, _ = x.run(bg, c)
		}()
		return c.d, nil
	}
	return x.run(bg, c)
}

// record sets the call's timeout, its record's deadline and the task the record keeps, and
// stores the record: running for sync; pending for async, which first takes its place among the
// calls Wait waits for (given back if the record cannot be stored) and the single-use token of
// its callback URL, of which the record keeps only the hash.
func (x *Dispatcher) record(ctx context.Context, c *call, callback CallbackURL) error {
	c.timeout = x.callTimeout(c.req.TimeoutMS, x.cfg.MaxTimeout)
	window := c.timeout
	if c.req.Mode == ModeAsync && c.req.Transport == TransportHTTP {
		// The result comes by callback, whenever the agent is done: the timeout bounds that,
		// and the call waits for the agent's 202 at most MaxTimeout of it.
		window = x.callTimeout(c.req.TimeoutMS, x.cfg.MaxAsyncTimeout)
	}
	c.d.Deadline = c.d.CreatedAt.Add(window)
	c.d.Task, c.d.TaskTruncated = x.recordedTask(ctx, c.tenant, c.req.Task)
	hash := ""
	if c.req.Mode == ModeAsync {
		if err := x.start(); err != nil {
			return err
		}
		token := newToken()
		sum := sha256.Sum256([]byte(token))
		hash = hex.EncodeToString(sum[:])
		c.callbackURL = callback(c.d.ID, token)
		c.d.Status = StatusPending
	} else {
		c.d.Status = StatusRunning
	}
	if err := x.d.Store.Create(ctx, c.tenant, c.d, hash); err != nil {
		if c.req.Mode == ModeAsync {
			x.running.Done()
		}
		return err
	}
	return nil
}

// callTimeout is the caller's timeoutMs, capped at most, or DefaultTimeout when it names none.
func (x *Dispatcher) callTimeout(ms int64, most time.Duration) time.Duration {
	if ms <= 0 {
		return x.cfg.DefaultTimeout
	}
	// Capped in milliseconds, before the conversion: a timeoutMs above ~292 years would
	// overflow a Duration into a negative one, a deadline in the past.
	if ms < most.Milliseconds() {
		return time.Duration(ms) * time.Millisecond
	}
	return most
}

// recordedTask is what of task the record keeps, and whether it was cut.
func (x *Dispatcher) recordedTask(ctx context.Context, tenant tenants.ID, task string) (string, bool) {
	n := x.cfg.RecordTaskBytes
	if n <= 0 {
		return "", false
	}
	if x.d.Tenants != nil {
		// The row the gate read a moment ago (cached, unless server.tenantCacheTtl is 0 or it
		// expired since); a tenant that cannot be read keeps no task.
		if t, err := x.d.Tenants.Active(ctx, tenant); err != nil || t.HideDelegationTasks {
			return "", false
		}
	}
	// Postgres text holds no NUL, which a JSON task may carry (\u0000): the record shows the
	// replacement character instead (the agent is sent the task as it came).
	task = strings.ReplaceAll(task, "\x00", "\uFFFD")
	if len(task) <= n {
		return task, false
	}
	for n > 0 && !utf8.RuneStart(task[n]) {
		n--
	}
	return task[:n], true
}

// reject records a delegation the server refused to send, and returns the refusal. Its record
// keeps no task: a caller may not fill the tenant's records with text it was not allowed to send.
func (x *Dispatcher) reject(ctx context.Context, tenant tenants.ID, d Delegation, cause error) (Delegation, error) {
	d.Status, d.Error = StatusRejected, cause.Error()
	x.observe(d.Transport, d.Status)
	// The same refusal again (a caller retrying what it may not do) counts into its record,
	// so refusals cannot fill the table at the tenant's rate.
	if same, ok, err := x.d.Store.RepeatRejected(ctx, tenant, d, d.UpdatedAt.Add(-RepeatWindow)); err != nil {
		return Delegation{}, err
	} else if ok {
		return same, cause
	}
	if err := x.d.Store.Create(ctx, tenant, d, ""); err != nil {
		return Delegation{}, err
	}
	return d, cause
}

// RepeatWindow is how long after its last try a rejected record takes the same refusal again.
const RepeatWindow = time.Hour

// observe tells Observe, when set, of a status recorded.
func (x *Dispatcher) observe(transport string, s Status) {
	if x.d.Observe != nil {
		x.d.Observe(transport, s)
	}
}

func newToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return base64.RawURLEncoding.EncodeToString(b)
}

// call is one delegation on its way to the agent.
type call struct {
	tenant      tenants.ID
	d           Delegation
	req         Request
	target      target
	timeout     time.Duration
	callbackURL string
}

// run sends the call through the endpoint's breaker and records the outcome. It returns the
// record, and an error when the server refused to send (breaker open, address blocked).
func (x *Dispatcher) run(ctx context.Context, c call) (Delegation, error) {
	from := []Status{StatusRunning}
	if c.req.Mode == ModeAsync {
		// An A2A task still working when the agent answered is recorded accepted meanwhile.
		from = append(from, StatusAccepted)
	}
	if c.d.Status == StatusPending {
		if err := x.d.Store.Update(ctx, c.tenant, c.d.ID, []Status{StatusPending}, Outcome{Status: StatusRunning, At: x.now()}); err != nil {
			return c.d, err
		}
	}
	start := time.Now()
	callCtx, cancel := context.WithTimeout(ctx, c.timeout)
	out, err := x.breakers.get(string(c.tenant), c.target.url, x.d.Now()).Execute(func() (Outcome, error) {
		out, err := x.send(callCtx, c)
		if err != nil && callCtx.Err() != nil && c.timeout < x.cfg.DefaultTimeout {
			// The caller chose to wait less than the server would: its timeout must not let it
			// open the breaker on an agent that is merely slower than that.
			err = fmt.Errorf("%w: %w", errNotCounted, err)
		}
		return out, err
	})
	// Read before cancel, after which Err is never nil.
	timedOut := callCtx.Err() != nil
	cancel()
	var refusal error
	switch {
	case errors.Is(err, gobreaker.ErrOpenState) || errors.Is(err, gobreaker.ErrTooManyRequests):
		refusal = fault.New(fault.AgentUnavailable, "the endpoint's circuit breaker is open: agent unavailable")
		out = Outcome{Status: StatusRejected, Error: refusal.Error()}
	case err != nil && x.d.Blocked(err):
		refusal = fault.Errorf(fault.EndpointBlocked, "agent %q: endpoint address not allowed", c.d.AgentID)
		out = Outcome{Status: StatusRejected, Error: refusal.Error()}
	case err != nil && out.Status == "" && timedOut:
		// The call's deadline ended before an answer, wherever it was spent (also in our own
		// preparation, such as reading the endpoint secret): the caller waited long enough.
		out = Outcome{Status: StatusTimeout, Error: fmt.Sprintf("no answer within %s", c.timeout)}
	case errors.Is(err, errLocal):
		// Our own failure: the cause goes to the log; the record and the answer say nothing of it.
		x.d.Log.Error("delegation not sent", "tenant", string(c.tenant), "delegationId", c.d.ID, "err", err)
		refusal = fmt.Errorf("delegation %q: %w", c.d.ID, err)
		out = Outcome{Status: StatusRejected, Error: "the server could not prepare the call (internal error)"}
	case err != nil && out.Status == "":
		out = Outcome{Status: StatusFailed, Error: "the agent could not be reached"}
	}
	out.LatencyMS, out.At = time.Since(start).Milliseconds(), x.now()
	out = out.storable()
	err = x.d.Store.Update(ctx, c.tenant, c.d.ID, from, out)
	if errors.Is(err, ErrConflict) {
		// A callback recorded the outcome first: that one stands.
		d, err := x.d.Store.Get(ctx, c.tenant, c.d.ID)
		if err != nil {
			return c.d, err
		}
		return d, refusal
	}
	if err != nil {
		return c.d, err
	}
	x.observe(c.d.Transport, out.Status)
	d := c.d
	d.Status, d.Result, d.Error, d.LatencyMS, d.UpdatedAt = out.Status, out.Result, out.Error, out.LatencyMS, out.At
	return d, refusal
}

// send delivers the call with its transport.
func (x *Dispatcher) send(ctx context.Context, c call) (Outcome, error) {
	if c.req.Transport == TransportA2A {
		return x.sendA2A(ctx, c)
	}
	return x.sendTask(ctx, c)
}

// token signs the delegation token for the call; a failure is errLocal.
func (x *Dispatcher) token(c call) (string, error) {
	now := x.d.Now()
	tok, err := x.d.Signer.SignJWT(token.DelegationClaims{
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer: x.cfg.Issuer, Subject: c.d.AgentID, Audience: jwt.ClaimStrings{c.target.url},
			IssuedAt: jwt.NewNumericDate(now), NotBefore: jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(c.d.Deadline.Add(x.cfg.TokenTTL)), ID: c.d.ID,
		},
		Tenant: string(c.tenant), Caller: c.d.Caller, Capability: c.d.Capability,
		DelegationID: c.d.ID, Depth: c.d.Depth,
	})
	if err != nil {
		return "", fmt.Errorf("sign the delegation token: %w: %w", errLocal, err)
	}
	return tok, nil
}

// credential returns the header that carries a call's credential and its value: the static secret
// the card holds for the URL called, in Authorization as a bearer token or in the header it was
// set for, else the delegation token as the bearer. A call also sends Authorization with the
// delegation token whenever the secret goes in another header. A secret that cannot be read is
// errLocal (run records it as a timeout instead when the call's deadline ended meanwhile).
func (x *Dispatcher) credential(ctx context.Context, c call, token string) (header, value string, err error) {
	if x.d.Secrets != nil {
		cred, err := x.d.Secrets.Secret(ctx, c.tenant, c.d.AgentID, c.target.url)
		if err != nil {
			return "", "", fmt.Errorf("endpoint secret: %w: %w", errLocal, err)
		}
		if name, value := cred.HeaderField(); value != "" {
			return name, value, nil
		}
	}
	return "Authorization", "Bearer " + token, nil
}
