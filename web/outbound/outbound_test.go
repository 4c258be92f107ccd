package outbound

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

func TestGuardDeniesLoopbackUnlessAllowed(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/redirect" {
			http.Redirect(w, r, "/ok", http.StatusFound)
			return
		}
		_, _ = w.Write([]byte(strings.Repeat("x", 100)))
	}))
	defer srv.Close()
	ctx := context.Background()

	_, _, err := Get(ctx, New(Config{}), srv.URL+"/ok", 1<<10)
	if !Blocked(err) || !errors.Is(err, ErrBlocked) {
		t.Fatalf("default guard let a loopback call through: %v", err)
	}

	allowed := New(Config{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, FollowSameHostRedirects: true})
	body, res, err := Get(ctx, allowed, srv.URL+"/redirect", 1<<10)
	if err != nil || res.StatusCode != 200 || len(body) != 100 {
		t.Fatalf("allowed call: %v %v %d", err, res, len(body))
	}
	if _, _, err := Get(ctx, allowed, srv.URL+"/ok", 10); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("size limit: %v", err)
	}
	noRedirects := New(Config{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}})
	if _, res, err := Get(ctx, noRedirects, srv.URL+"/redirect", 1<<10); err != nil || res.StatusCode != http.StatusFound {
		t.Fatalf("redirect followed: %v %v", err, res)
	}
}

func TestParsePrefixes(t *testing.T) {
	got, err := ParsePrefixes([]string{"127.0.0.1", "10.0.0.0/8", "::1"})
	if err != nil || len(got) != 3 || got[0].Bits() != 32 || got[2].Bits() != 128 {
		t.Fatalf("%v %v", got, err)
	}
	if _, err := ParsePrefixes([]string{"localhost"}); err == nil {
		t.Fatal("a host name accepted as a prefix")
	}
}

// TestConnectionsKeptForConcurrentCalls: the connections of calls made at once to one host stay
// open for the next calls, also beyond the 16 concurrent calls of the delegation benchmark: a
// second wave of as many concurrent calls dials no new connection.
func TestConnectionsKeptForConcurrentCalls(t *testing.T) {
	const calls = 40
	var dialed atomic.Int64
	arrived := make(chan struct{}, calls)
	release := make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release
		_, _ = w.Write([]byte("ok"))
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			dialed.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	client := New(Config{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}})
	defer client.CloseIdleConnections()
	wave := func() {
		var wg sync.WaitGroup
		for range calls {
			wg.Go(func() {
				if _, _, err := Get(context.Background(), client, srv.URL, 1<<10); err != nil {
					t.Error(err)
				}
			})
		}
		for range calls { // all of them in flight at once, each on a connection of its own
			<-arrived
		}
		for range calls {
			release <- struct{}{}
		}
		wg.Wait()
	}
	wave()
	first := dialed.Load()
	wave()
	if again := dialed.Load() - first; first != calls || again != 0 {
		t.Fatalf("%d connections for the first %d concurrent calls and %d new ones for the next %d, want %d and 0", first, calls, again, calls, calls)
	}
}
