package proc

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"
)

// FreePort returns a loopback address nobody listens on (at the moment it is asked), for a
// server's metrics listener.
func FreePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := ln.Addr().String()
	return addr, ln.Close()
}

// Profile writes to path the CPU profile of a server started with server.pprof whose metrics
// listen on metricsAddr, taken over d.
func Profile(metricsAddr string, d time.Duration, path string) error {
	return Fetch(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", metricsAddr, max(1, int(d.Seconds()))), path, d+time.Minute)
}

// Fetch writes the body of a 200 answer to GET url into path.
func Fetch(url, path string, timeout time.Duration) error {
	client := &http.Client{Timeout: timeout}
	resp, err := client.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	return os.WriteFile(path, body, 0o644)
}
