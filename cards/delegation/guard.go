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

// breakers holds one circuit breaker per endpoint, created on first use.
type breakers struct {
	failures uint32
	cooldown time.Duration
	excluded func(error) bool

	mu sync.Mutex
	m  map[string]*gobreaker.CircuitBreaker[Outcome]
}

func (b *breakers) get(endpoint string) *gobreaker.CircuitBreaker[Outcome] {
	b.mu.Lock()
	defer b.mu.Unlock()
	if cb, ok := b.m[endpoint]; ok {
		return cb
	}
	if b.m == nil {
		b.m = map[string]*gobreaker.CircuitBreaker[Outcome]{}
	}
	failures := b.failures
	cb := gobreaker.NewCircuitBreaker[Outcome](gobreaker.Settings{
		Name: endpoint,
		// One trial call while half-open: it closes the breaker or opens it again.
		MaxRequests: 1,
		Timeout:     b.cooldown,
		ReadyToTrip: func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= failures },
		// A refusal of our own guard says nothing about the agent's health.
		IsExcluded: b.excluded,
	})
	b.m[endpoint] = cb
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
