// Package webtest holds the helpers the tests of cards, web and the agentcards binary share:
// JSON comparison, polling, HTTP requests to the API, a scripted stand-in for the API, test
// tokens and an independent check of the service's signatures. It imports none of cards, web or
// storage, so that the internal tests of those packages can use it without an import cycle.
package webtest

import (
	"testing"
	"time"
)

// pollInterval is how long Eventually waits between two tries: short enough not to slow the
// tests, long enough not to busy a server the condition asks over HTTP.
const pollInterval = 10 * time.Millisecond

// Eventually calls cond every few milliseconds until it holds and fails the test, naming what,
// if that takes longer than timeout; it is for changes that become visible asynchronously.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, timeout)
		}
		time.Sleep(pollInterval)
	}
}
