package storagetest

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/agentcards/agentcards/storage/storagetest/galera"
)

// StartGalera starts a MariaDB Galera cluster of n nodes of the test's own (see the galera
// package) on loopback ports, stopped and removed when the test ends; the shared MariaDB server
// is never touched. Without galera-4, mariadb-server or rsync the test fails under CI and is
// skipped elsewhere.
func StartGalera(t testing.TB, n int) *galera.Cluster {
	t.Helper()
	if err := galera.Available(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("storagetest: %v; CI installs them (.ci/run)", err)
		}
		t.Skipf("storagetest: %v; install Debian's galera-4, mariadb-server and rsync packages to run this test", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := galera.Start(ctx, n)
	if err != nil {
		t.Fatalf("storagetest: %v", err)
	}
	t.Cleanup(c.Stop)
	return c
}
