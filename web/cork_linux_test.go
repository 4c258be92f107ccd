package web_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/agentcards/agentcards/storage/storagetest"
)

// TestLargeAnswersLeaveInOneSegment: answers larger than net/http's 4 KiB connection buffer (a
// search page, an A2A card) are written with TCP_CORK set, so each leaves as one TCP segment on
// loopback instead of two, arrives whole, and the cork is out again afterwards (or the next
// small response on the connection would wait for the kernel's 200 ms timer). The answers stay
// well under half of a new connection's receive window (~32 KB), beyond which the kernel splits
// a segment anyway.
func TestLargeAnswersLeaveInOneSegment(t *testing.T) {
	e := newEnv(t, storagetest.Open(t, "sqlite"), 1<<20)
	e.mkTenant("acme", "alice")
	alice := e.token("alice", "acme", false)
	for i := range 12 {
		card := sampleCard(fmt.Sprintf("agent-%02d", i))
		card["description"] = strings.Repeat("reviews pull requests and summarises them; ", 100) // 4.3 KB
		expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, card), http.StatusCreated)
	}

	// One connection of our own, so that its server side can be found and asked.
	client, err := net.Dial("tcp", e.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	rd := bufio.NewReader(client)
	get := func(path string) []byte {
		t.Helper()
		fmt.Fprintf(client, "GET %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", path, alice)
		res, err := http.ReadResponse(rd, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, err := io.ReadAll(res.Body)
		if err != nil {
			t.Fatal(err)
		}
		if res.StatusCode != http.StatusOK || res.Header.Get("Content-Length") != strconv.Itoa(len(body)) {
			t.Fatalf("GET %s: %d, Content-Length %q for %d bytes", path, res.StatusCode, res.Header.Get("Content-Length"), len(body))
		}
		return body
	}
	get("/health")
	var server net.Conn
	for _, c := range e.conns.all() {
		if c.RemoteAddr().String() == client.LocalAddr().String() {
			server = c
		}
	}
	if server == nil {
		t.Fatal("the server side of the connection was not recorded")
	}

	for _, path := range []string{
		"/v1/tenants/acme/cards?limit=3",
		"/a2a/acme/agent-03/.well-known/agent-card.json",
	} {
		// The cork's own timer lets go after 200 ms: on a machine stalled for that long the
		// answer may leave in two segments, so a few attempts are allowed. Without the cork
		// every attempt takes two.
		var sent uint32
		var body []byte
		for range 3 {
			before := dataSegmentsOut(t, server)
			body = get(path)
			if sent = dataSegmentsOut(t, server) - before; sent == 1 {
				break
			}
		}
		if len(body) < 4<<10 {
			t.Fatalf("GET %s: %d bytes is too small to need the cork", path, len(body))
		}
		if sent != 1 {
			t.Fatalf("GET %s: %d bytes left in %d segments, want 1", path, len(body), sent)
		}
		if v := corkOf(t, server); v != 0 {
			t.Fatalf("GET %s: TCP_CORK is %d after the answer", path, v)
		}
	}
	// The connection goes on serving small answers.
	get("/health")
}

func sockopt(t *testing.T, c net.Conn, f func(fd int) error) {
	t.Helper()
	raw, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var ferr error
	if err := raw.Control(func(fd uintptr) { ferr = f(int(fd)) }); err != nil {
		t.Fatal(err)
	}
	if ferr != nil {
		t.Fatal(ferr)
	}
}

func corkOf(t *testing.T, c net.Conn) (v int) {
	t.Helper()
	sockopt(t, c, func(fd int) (err error) {
		v, err = syscall.GetsockoptInt(fd, syscall.IPPROTO_TCP, syscall.TCP_CORK)
		return err
	})
	return v
}

// dataSegmentsOut is the kernel's count of segments with data the socket has sent.
func dataSegmentsOut(t *testing.T, c net.Conn) (n uint32) {
	t.Helper()
	sockopt(t, c, func(fd int) error {
		info, err := unix.GetsockoptTCPInfo(fd, unix.IPPROTO_TCP, unix.TCP_INFO)
		if err == nil {
			n = info.Data_segs_out
		}
		return err
	})
	return n
}
