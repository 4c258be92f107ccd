package delegation

import (
	"errors"
	"sync"
	"time"

	"github.com/sony/gobreaker/v2"
	"golang.org/x/time/rate"
)

// errAgentFault marks an answer that counts against the endpoint's breaker (a 5xx).
var errAgentFault = errors.New("agent error")

// errNotCounted marks a failed call that says nothing about the agent's health, so its breaker
// ignores it: a timeout shorter than the server's default that the caller chose.
var errNotCounted = errors.New("not the agent's fault")

// errLocal marks a failure of the server itself while preparing a call (a secret that will not
// open, a signing error, a store error): the agent was never asked, so its breaker ignores it and
// the delegation is recorded as rejected, with the cause in the server's log only.
var errLocal = errors.New("local failure")

// breakers holds one circuit breaker per tenant and endpoint, created on first use: one tenant's
// calls can never open the breaker another tenant's calls go through.
type breakers struct {
	failures uint32
	cooldown time.Duration
	excluded func(error) bool

	mu sync.Mutex
	m  map[string]*gobreaker.CircuitBreaker[Outcome]
}

func (b *breakers) get(tenant, endpoint string) *gobreaker.CircuitBreaker[Outcome] {
	key := tenant + " " + endpoint // a tenant id has no space
	b.mu.Lock()
	defer b.mu.Unlock()
	if cb, ok := b.m[key]; ok {
		return cb
	}
	if b.m == nil {
		b.m = map[string]*gobreaker.CircuitBreaker[Outcome]{}
	}
	failures := b.failures
	cb := gobreaker.NewCircuitBreaker[Outcome](gobreaker.Settings{
		Name: key,
		// One trial call while half-open: it closes the breaker or opens it again.
		MaxRequests: 1,
		Timeout:     b.cooldown,
		ReadyToTrip: func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= failures },
		// A refusal of our own guard says nothing about the agent's health, nor does a failure
		// marked errNotCounted or errLocal.
		IsExcluded: func(err error) bool {
			return errors.Is(err, errNotCounted) || errors.Is(err, errLocal) || b.excluded(err)
		},
	})
	b.m[key] = cb
	return cb
}

// limiters holds one token bucket per tenant. The limit is per replica.
type limiters struct {
	perSecond float64
	burst     int

	mu sync.Mutex
	m  map[string]*rate.Limiter
}

func (l *limiters) allow(tenant string, now time.Time) bool {
	if l.perSecond <= 0 {
		return true
	}
	l.mu.Lock()
	lim, ok := l.m[tenant]
	if !ok {
		if l.m == nil {
			l.m = map[string]*rate.Limiter{}
		}
		lim = rate.NewLimiter(rate.Limit(l.perSecond), l.burst)
		l.m[tenant] = lim
	}
	l.mu.Unlock()
	return lim.AllowN(now, 1)
}
