// Package outbound is the HTTP client for every call the service makes to a URL that a user
// registered (agent endpoints, A2A card URLs, jku key sets). It refuses private, loopback and
// link-local destinations by checking the resolved IP in the dialer, so DNS rebinding and
// redirects cannot sneak past it, and it bounds time and size.
package outbound

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"time"

	"code.dny.dev/ssrf"
)

// ErrBlocked is returned (wrapped) when the destination's address is not allowed.
var ErrBlocked = ssrf.ErrProhibitedIP

// ErrRedirect is returned (wrapped) when a redirect is refused: to another host, or too many.
var ErrRedirect = errors.New("redirect refused")

// ErrTooLarge is returned by ReadBody when a response body is over the limit.
var ErrTooLarge = errors.New("response body is too large")

// Config says where calls may go and how long they may take.
type Config struct {
	// Allow lists prefixes that are reachable although the guard would deny them, e.g.
	// 127.0.0.0/8 for local development and tests. Empty means only public addresses.
	Allow []netip.Prefix
	// Timeout bounds a whole exchange; 10 s when zero.
	Timeout time.Duration
	// FollowSameHostRedirects allows up to 3 redirects that stay on the same host; otherwise no
	// redirect is followed at all.
	FollowSameHostRedirects bool
}

// ParsePrefixes reads CIDR prefixes or single addresses ("127.0.0.1" is 127.0.0.1/32).
func ParsePrefixes(items []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range items {
		if p, err := netip.ParsePrefix(s); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, fmt.Errorf("%q is neither an address nor a CIDR prefix", s)
		}
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

// DefaultTimeout bounds a fetch when Config names no timeout; the binary's outbound.timeout
// starts from it.
const DefaultTimeout = 10 * time.Second

// maxIdleConns bounds the connections kept open between calls, in all and to one host.
const maxIdleConns = 100

// New returns a client that enforces cfg. Each call gets a fresh guard decision at dial time.
func New(cfg Config) *http.Client {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	guard := newGuard(cfg.Allow)
	dialer := &net.Dialer{Timeout: cfg.Timeout, KeepAlive: 30 * time.Second, Control: guard.Safe}
	transport := &http.Transport{
		// No proxy from the environment: a proxy would dial on our behalf and void the guard.
		Proxy:             nil,
		DialContext:       dialer.DialContext,
		ForceAttemptHTTP2: true,
		MaxIdleConns:      maxIdleConns,
		// One agent may take all of them: the delegations in flight to one endpoint at once each
		// hold a connection, and those beyond the idle limit were closed after their call and
		// dialed again for the next (with 32 callers, one call in ten; for an https endpoint,
		// a TLS handshake each time).
		MaxIdleConnsPerHost:   maxIdleConns,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   cfg.Timeout,
		ResponseHeaderTimeout: cfg.Timeout,
	}
	client := &http.Client{Transport: transport, Timeout: cfg.Timeout}
	client.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if !cfg.FollowSameHostRedirects {
			return http.ErrUseLastResponse
		}
		if len(via) >= 3 {
			return fmt.Errorf("more than 3 redirects: %w", ErrRedirect)
		}
		if req.URL.Host != via[0].URL.Host {
			return fmt.Errorf("to another host (%s): %w", req.URL.Host, ErrRedirect)
		}
		return nil
	}
	return client
}

// newGuard is the guard of every client New makes: it refuses private, loopback and other
// special addresses but those in allow, on any port.
func newGuard(allow []netip.Prefix) *ssrf.Guardian {
	var v4, v6 []netip.Prefix
	for _, p := range allow {
		if p.Addr().Is4() {
			v4 = append(v4, p)
		} else {
			v6 = append(v6, p)
		}
	}
	return ssrf.New(ssrf.WithAnyPort(), ssrf.WithAllowedV4Prefixes(v4...), ssrf.WithAllowedV6Prefixes(v6...))
}

// Refuses reports whether a client New makes with allow would refuse to connect to addr: a URL
// whose host is that literal address can be refused when it is given, rather than on every call.
func Refuses(allow []netip.Prefix, addr netip.Addr) bool {
	return newGuard(allow).SafeAddr(addr.Unmap()) != nil
}

// ReadBody reads at most limit bytes of a response body, failing with ErrTooLarge beyond.
func ReadBody(r io.Reader, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("over %d bytes: %w", limit, ErrTooLarge)
	}
	return b, nil
}

// Blocked reports whether err came from the guard refusing an address.
func Blocked(err error) bool {
	return errors.Is(err, ssrf.ErrProhibitedIP) || errors.Is(err, ssrf.ErrProhibitedNetwork) || errors.Is(err, ssrf.ErrProhibitedPort)
}

// Doer is what domain code needs of an HTTP client; *http.Client satisfies it.
type Doer interface {
	Do(*http.Request) (*http.Response, error)
}

var _ Doer = (*http.Client)(nil)

// Get is a convenience for a bounded GET: it returns the body of a 2xx answer.
func Get(ctx context.Context, c Doer, url string, limit int64) ([]byte, *http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, nil, err
	}
	res, err := c.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer res.Body.Close()
	body, err := ReadBody(res.Body, limit)
	return body, res, err
}
