package main

import (
	"context"
	"errors"
	"hash/fnv"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"time"
)

// Proxy sends each request to one of several agentcards replicas. With affinity, a request that
// names a tenant in its path goes to the replica that tenant hashes to (rendezvous hashing), so
// that each replica loads only its tenants' indexes; any other request, and every request
// without affinity, goes to the replicas in turn. A replica that refuses connections or fails
// its health check (/ready) is skipped: its tenants go to their next choice, and only theirs.
type Proxy struct {
	replicas []*replica
	affinity bool
	turn     atomic.Uint64
	// transport carries each attempt; its dial timeout bounds a replica that does not answer.
	transport *http.Transport
	handler   *httputil.ReverseProxy
}

// replica is one replica's address and whether it is skipped.
type replica struct {
	url  *url.URL
	down atomic.Bool
}

// ReplicaHeader names, in each answer, the replica that gave it.
const ReplicaHeader = "X-Agentcards-Replica"

// NewProxy routes to the replicas at bases (http://host:port), by tenant if affinity.
func NewProxy(bases []string, affinity bool) (*Proxy, error) {
	p := &Proxy{affinity: affinity, transport: &http.Transport{
		DialContext:         (&net.Dialer{Timeout: time.Second}).DialContext,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     90 * time.Second,
	}}
	for _, b := range bases {
		u, err := url.Parse(b)
		if err != nil || u.Host == "" {
			return nil, errors.New("replica " + b + ": want http://host:port")
		}
		p.replicas = append(p.replicas, &replica{url: u})
	}
	p.handler = &httputil.ReverseProxy{
		// The host is chosen per attempt, in RoundTrip.
		Rewrite:   func(r *httputil.ProxyRequest) { r.Out.URL.Scheme, r.Out.URL.Host = "http", "replica" },
		Transport: p,
	}
	return p, nil
}

// ServeHTTP proxies one request.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) { p.handler.ServeHTTP(w, r) }

// Owner is the replica (its index) a tenant goes to while every replica is up.
func (p *Proxy) Owner(tenant string) int { return p.order(tenant)[0] }

// order lists the replicas to try for a request of tenant, best first.
func (p *Proxy) order(tenant string) []int {
	n := len(p.replicas)
	out := make([]int, n)
	if !p.affinity || tenant == "" {
		first := int(p.turn.Add(1) % uint64(n))
		for i := range out {
			out[i] = (first + i) % n
		}
		return out
	}
	// Rendezvous hashing: each replica scores the tenant, the highest score wins. Removing a
	// replica moves only the tenants it won, each to its own second choice, spread over the rest.
	scores := make([]uint64, n)
	for i, r := range p.replicas {
		out[i] = i
		h := fnv.New64a()
		h.Write([]byte(tenant))
		h.Write([]byte{0})
		h.Write([]byte(r.url.Host))
		scores[i] = mix(h.Sum64())
	}
	slices.SortFunc(out, func(a, b int) int {
		switch {
		case scores[a] > scores[b]:
			return -1
		case scores[a] < scores[b]:
			return 1
		}
		return 0
	})
	return out
}

// mix is splitmix64's finalizer: FNV's high bits alone spread short keys unevenly.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// RoundTrip sends the request to its tenant's replicas in order, skipping those marked down,
// until one answers. A replica that cannot be reached is marked down; the request goes to the
// next one if it may be sent again (a GET or HEAD, or any request that never left: its
// connection was refused).
func (p *Proxy) RoundTrip(req *http.Request) (*http.Response, error) {
	order := p.order(TenantOf(req.URL.Path))
	tried := 0
	var last error
	for pass := 0; pass < 2 && tried == 0; pass++ {
		for _, i := range order {
			r := p.replicas[i]
			if pass == 0 && r.down.Load() {
				continue // the second pass tries them all, when every replica is marked down
			}
			tried++
			out := req.Clone(req.Context())
			out.URL.Host, out.Host = r.url.Host, r.url.Host
			res, err := p.transport.RoundTrip(out)
			if err == nil {
				res.Header.Set(ReplicaHeader, r.url.Host)
				return res, nil
			}
			last = err
			if req.Context().Err() != nil {
				return nil, err
			}
			var op *net.OpError
			refused := errors.As(err, &op) && op.Op == "dial"
			if refused {
				r.down.Store(true)
			}
			if !refused && req.Method != http.MethodGet && req.Method != http.MethodHead {
				return nil, err
			}
		}
	}
	return nil, last
}

// Check marks each replica up or down by its /ready, every interval until ctx ends: a replica
// that answers anything but 200 within a second (stopping, its database unreachable, its warm-up
// under way with search.warmReady) is skipped until it answers 200 again.
func (p *Proxy) Check(ctx context.Context, interval time.Duration) {
	client := &http.Client{Transport: p.transport, Timeout: time.Second}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		for _, r := range p.replicas {
			ok := false
			if res, err := client.Get(r.url.String() + "/ready"); err == nil {
				ok = res.StatusCode == http.StatusOK
				res.Body.Close()
			}
			r.down.Store(!ok)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// TenantOf is the tenant a request's path names, or "" for a request outside any tenant
// (tenants' list and creation, /health, /ready, keys, the console) and for /mcp, whose tenant is
// in its token.
func TenantOf(path string) string {
	for _, prefix := range []string{"/v1/tenants/", "/a2a/", "/compat/agentkit-mesh/", "/callbacks/delegations/"} {
		if rest, ok := strings.CutPrefix(path, prefix); ok {
			tenant, _, _ := strings.Cut(rest, "/")
			return tenant
		}
	}
	return ""
}
