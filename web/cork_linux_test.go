package web_test

import (
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/agentcards/agentcards/storage/storagetest"
)

// TestLargeAnswersUncorked: search answers larger than net/http's buffer are written with
// TCP_CORK set, so they leave as one segment. The answer must arrive whole, and the cork must be
// out again afterwards, or the next small response on the connection would wait for the kernel's
// 200 ms timer.
func TestLargeAnswersUncorked(t *testing.T) {
	e := newEnv(t, storagetest.Open(t, "sqlite"), 1<<20)
	e.mkTenant("acme", "alice")
	alice := e.token("alice", "acme", false)
	for i := range 12 {
		card := sampleCard(fmt.Sprintf("agent-%02d", i))
		card["description"] = strings.Repeat("reviews pull requests and summarises them; ", 20)
		expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, card), http.StatusCreated)
	}
	r := e.do("GET", "/v1/tenants/acme/cards?limit=10", alice, nil)
	expect(t, r, http.StatusOK)
	if len(r.body) < 8<<10 {
		t.Fatalf("answer of %d bytes is too small to be corked", len(r.body))
	}
	if got := r.header.Get("Content-Length"); got != strconv.Itoa(len(r.body)) {
		t.Fatalf("Content-Length %q for a body of %d bytes", got, len(r.body))
	}
	var page struct {
		Total int              `json:"total"`
		Items []map[string]any `json:"items"`
	}
	r.json(t, &page)
	if page.Total != 12 || len(page.Items) != 10 {
		t.Fatalf("total %d, %d items", page.Total, len(page.Items))
	}
	conns := e.conns.all()
	if len(conns) == 0 {
		t.Fatal("no connection recorded")
	}
	for _, c := range conns {
		if v := corkOf(t, c); v != 0 {
			t.Fatalf("TCP_CORK is %d on %s after the answer", v, c.RemoteAddr())
		}
	}
	// The same connection carries the next (small) response.
	expect(t, e.do("GET", "/v1/tenants/acme/cards/agent-00", alice, nil), http.StatusOK)
}

func corkOf(t *testing.T, c net.Conn) int {
	t.Helper()
	raw, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	v, serr := -1, error(nil)
	if err := raw.Control(func(fd uintptr) {
		v, serr = syscall.GetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_CORK)
	}); err != nil {
		t.Fatal(err)
	}
	if serr != nil {
		// A connection the client has closed has no socket left to ask.
		if serr == syscall.EBADF {
			return 0
		}
		t.Fatal(serr)
	}
	return v
}
