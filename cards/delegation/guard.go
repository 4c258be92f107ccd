package delegation

import (
	"errors"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
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

// Per-endpoint and per-tenant state is kept for the keys used recently, at most guardEntries of
// them, the least recently used going first, and started afresh after guardIdle without use:
// endpoints are URLs that users register, so a map of every one ever called would grow without
// bound. Starting afresh loses nothing that matters (a breaker's cooldown is far shorter, and an
// idle tenant's bucket would be full again anyway).
const (
	guardEntries = 10_000
	guardIdle    = time.Hour
)

// recent keeps a value per key, at most size of them, the least recently used going first; a
// value unused for idle is built anew on its next use. Time is the dispatcher's clock.
type recent[V any] struct {
	mu    sync.Mutex
	lru   *lru.Cache[string, stamped[V]]
	idle  time.Duration
	build func() V
}

type stamped[V any] struct {
	v    V
	used time.Time
}

func newRecent[V any](size int, idle time.Duration, build func() V) *recent[V] {
	c, err := lru.New[string, stamped[V]](size)
	if err != nil {
		panic(err) // only for a size below 1, which no caller passes
	}
	return &recent[V]{lru: c, idle: idle, build: build}
}

// get returns the key's value at now, built on first use, after it was evicted, or after it was
// idle too long.
func (r *recent[V]) get(key string, now time.Time) V {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.lru.Get(key)
	if !ok || now.Sub(e.used) > r.idle {
		e.v = r.build()
	}
	e.used = now
	r.lru.Add(key, e)
	return e.v
}

// breakers holds one circuit breaker per tenant and endpoint, created on first use: one tenant's
// calls can never open the breaker another tenant's calls go through.
type breakers struct {
	recent *recent[*gobreaker.CircuitBreaker[Outcome]]
	// changed, when set, is told each change of a breaker's state.
	changed func(from, to string)
}

func newBreakers(failures uint32, cooldown time.Duration, excluded func(error) bool, size int, idle time.Duration) *breakers {
	b := &breakers{}
	b.recent = newRecent(size, idle, func() *gobreaker.CircuitBreaker[Outcome] {
		return gobreaker.NewCircuitBreaker[Outcome](gobreaker.Settings{
			// One trial call while half-open: it closes the breaker or opens it again.
			MaxRequests: 1,
			Timeout:     cooldown,
			ReadyToTrip: func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= failures },
			// A refusal of our own guard says nothing about the agent's health, nor does a
			// failure marked errNotCounted or errLocal.
			IsExcluded: func(err error) bool {
				return errors.Is(err, errNotCounted) || errors.Is(err, errLocal) || excluded(err)
			},
			OnStateChange: func(_ string, from, to gobreaker.State) {
				if b.changed != nil {
					b.changed(from.String(), to.String())
				}
			},
		})
	})
	return b
}

func (b *breakers) get(tenant, endpoint string, now time.Time) *gobreaker.CircuitBreaker[Outcome] {
	return b.recent.get(tenant+" "+endpoint, now) // a tenant id has no space
}

// limiters holds one token bucket per tenant. The limit is per replica.
type limiters struct {
	perSecond float64
	recent    *recent[*rate.Limiter]
}

func newLimiters(perSecond float64, burst, size int, idle time.Duration) limiters {
	return limiters{perSecond: perSecond, recent: newRecent(size, idle, func() *rate.Limiter {
		return rate.NewLimiter(rate.Limit(perSecond), burst)
	})}
}

func (l limiters) allow(tenant string, now time.Time) bool {
	if l.perSecond <= 0 {
		return true
	}
	return l.recent.get(tenant, now).AllowN(now, 1)
}
