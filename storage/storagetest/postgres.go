package storagetest

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"testing"
)

// PrivatePostgres is a Postgres cluster of the test's own, listening only on a Unix socket in
// its own directory (so it can take no TCP port from anyone), that the test may stop and start
// again (the shared server is never stopped). It needs the Postgres server binaries, runuser and
// a "postgres" system user, as the machines of this project have: without them the test fails
// under CI and is skipped elsewhere, as tests without their server are.
type PrivatePostgres struct {
	t    testing.TB
	bin  string
	dir  string
	port int
	// DSN connects to the cluster's "postgres" database as the "postgres" user.
	DSN string
}

// StartPrivatePostgres creates and starts the cluster; it is stopped and removed when the test
// ends.
func StartPrivatePostgres(t testing.TB) *PrivatePostgres {
	t.Helper()
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	u, err := user.Lookup("postgres")
	_, runuser := exec.LookPath("runuser")
	if len(bins) == 0 || err != nil || runuser != nil {
		missing := fmt.Sprintf("storagetest: a private Postgres needs /usr/lib/postgresql/*/bin, runuser and a postgres user (%v, %v)", err, runuser)
		if os.Getenv("CI") != "" {
			t.Fatal(missing)
		}
		t.Skip(missing)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	dir, err := os.MkdirTemp("", "agentcards-pg-")
	if err != nil {
		t.Fatalf("storagetest: %v", err)
	}
	if err := os.Chown(dir, uid, gid); err != nil {
		t.Fatalf("storagetest: the cluster's directory must belong to postgres: %v", err)
	}
	// The port only names the socket file (.s.PGSQL.<port>) in the cluster's own directory.
	const port = 5432
	p := &PrivatePostgres{t: t, bin: filepath.Dir(bins[0]), dir: dir, port: port,
		DSN: fmt.Sprintf("postgres://postgres@/postgres?host=%s&port=%d&sslmode=disable", dir, port)}
	t.Cleanup(func() {
		_ = p.pgctl("-m", "immediate", "stop")
		_ = os.RemoveAll(dir)
	})
	if out, err := p.asPostgres("initdb", "-D", filepath.Join(dir, "data"), "-A", "trust", "-U", "postgres", "--no-sync"); err != nil {
		t.Fatalf("storagetest: initdb: %v\n%s", err, out)
	}
	p.Start()
	return p
}

// Start starts the cluster and waits until it accepts connections.
func (p *PrivatePostgres) Start() {
	p.t.Helper()
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses= -c fsync=off", p.port, p.dir)
	if err := p.pgctl("-o", opts, "-l", filepath.Join(p.dir, "log"), "start"); err != nil {
		log, _ := os.ReadFile(filepath.Join(p.dir, "log"))
		p.t.Fatalf("storagetest: start the private Postgres: %v\n%s", err, log)
	}
}

// Stop stops the cluster at once, closing every connection, as a database server that went away.
func (p *PrivatePostgres) Stop() {
	p.t.Helper()
	if err := p.pgctl("-m", "immediate", "stop"); err != nil {
		p.t.Fatalf("storagetest: stop the private Postgres: %v", err)
	}
}

func (p *PrivatePostgres) pgctl(args ...string) error {
	out, err := p.asPostgres("pg_ctl", append([]string{"-D", filepath.Join(p.dir, "data"), "-w"}, args...)...)
	if err != nil {
		return fmt.Errorf("%w: %s", err, out)
	}
	return nil
}

// asPostgres runs one of the server's programs as the postgres user, which it insists on.
func (p *PrivatePostgres) asPostgres(program string, args ...string) ([]byte, error) {
	cmd := exec.Command("runuser", append([]string{"-u", "postgres", "--", filepath.Join(p.bin, program)}, args...)...)
	return cmd.CombinedOutput()
}
