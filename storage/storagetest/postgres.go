package storagetest

import (
	"os"
	"testing"

	"github.com/agentcards/agentcards/storage/storagetest/privatepg"
)

// PrivatePostgres is a Postgres cluster of the test's own (see privatepg), that the test may stop
// and start again (the shared server is never stopped). Without what privatepg needs the test
// fails under CI and is skipped elsewhere, as tests without their server are.
type PrivatePostgres struct {
	t testing.TB
	c *privatepg.Cluster
	// DSN connects to the cluster's "postgres" database as the "postgres" user.
	DSN string
}

// StartPrivatePostgres creates and starts the cluster; it is stopped and removed when the test
// ends. It runs without fsync: a test's data need not survive a crash of the machine.
func StartPrivatePostgres(t testing.TB) *PrivatePostgres {
	t.Helper()
	if err := privatepg.Available(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	c, err := privatepg.Init("fsync=off")
	if err != nil {
		t.Fatalf("storagetest: %v", err)
	}
	t.Cleanup(func() { _ = c.Remove() })
	p := &PrivatePostgres{t: t, c: c, DSN: c.DSN}
	p.Start()
	return p
}

// Start starts the cluster and waits until it accepts connections.
func (p *PrivatePostgres) Start() {
	p.t.Helper()
	if err := p.c.Start(); err != nil {
		p.t.Fatalf("storagetest: %v", err)
	}
}

// Stop stops the cluster at once, closing every connection, as a database server that went away.
func (p *PrivatePostgres) Stop() {
	p.t.Helper()
	if err := p.c.Stop(); err != nil {
		p.t.Fatalf("storagetest: %v", err)
	}
}

// StartPrivatePair creates and starts a primary and its streaming standby (see privatepg.Pair),
// stopped and removed when the test ends; p.DSN names both. Without what privatepg needs the
// test fails under CI and is skipped elsewhere.
func StartPrivatePair(t testing.TB, o privatepg.PairOptions) *privatepg.Pair {
	t.Helper()
	if err := privatepg.Available(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	p, err := privatepg.InitPair(o)
	if err != nil {
		t.Fatalf("storagetest: %v", err)
	}
	t.Cleanup(func() { _ = p.Remove() })
	return p
}
