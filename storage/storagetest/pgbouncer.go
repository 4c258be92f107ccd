package storagetest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// PgBouncer is a PgBouncer process of the test's own, in transaction pooling mode, in front of
// the Postgres server of AGENTCARDS_TEST_POSTGRES_DSN, on a free loopback port. It is stopped
// when the test ends; the server's configuration is never touched.
type PgBouncer struct {
	// DSN connects through the pooler to the schema of the direct DSN given to StartPgBouncer,
	// with pgx's default settings (named prepared statements included): callers add theirs.
	DSN string
	log *lockedBuffer
}

// StartPgBouncer starts PgBouncer in transaction mode with at most poolSize server connections,
// in front of direct, a DSN of EmptyDatabase or ServerDSN. PgBouncer 1.18 refuses a search_path
// among the startup parameters, so the schema that direct selects is set on each server
// connection as it opens (connect_query), as a deployment in a schema of its own does. Without
// the pgbouncer program the test fails under CI and is skipped elsewhere.
func StartPgBouncer(t testing.TB, direct string, poolSize int) *PgBouncer {
	t.Helper()
	bin, err := pgbouncerPath()
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("storagetest: %v; CI installs it (.ci/run)", err)
		}
		t.Skipf("storagetest: %v; install Debian's pgbouncer package to run this test", err)
	}
	cfg, err := pgx.ParseConfig(direct)
	if err != nil {
		t.Fatalf("storagetest: %v", err)
	}
	server := fmt.Sprintf("host=%s port=%d dbname=%s", cfg.Host, cfg.Port, cfg.Database)
	if schema := cfg.RuntimeParams["search_path"]; schema != "" {
		// Test schemas are lowercase identifiers (uniqueName), safe unquoted.
		server += fmt.Sprintf(" connect_query='SET search_path TO %s'", schema)
	}
	// PgBouncer refuses to run as root: as root, it runs as the postgres user (as privatepg's
	// server does), which must read its files.
	dir, err := os.MkdirTemp("", "agentcards-pgbouncer-")
	if err != nil {
		t.Fatalf("storagetest: %v", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	var runAs []string
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("storagetest: PgBouncer does not run as root, and there is no postgres user to run it as: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatalf("storagetest: %v", err)
		}
		runAs = []string{"runuser", "-u", "postgres", "--"}
	}
	// Users are only named (auth_type trust): the server authenticates them as it always does.
	users := filepath.Join(dir, "users.txt")
	if err := os.WriteFile(users, []byte(fmt.Sprintf("%q \"\"\n", cfg.User)), 0o644); err != nil {
		t.Fatalf("storagetest: %v", err)
	}
	// A free port can be taken between the probe and PgBouncer's bind: try again on another.
	for attempt := 1; ; attempt++ {
		port := freePort(t)
		ini := filepath.Join(dir, "pgbouncer.ini")
		conf := fmt.Sprintf(`[databases]
agentcards = %s
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = trust
auth_file = %s
pool_mode = transaction
default_pool_size = %d
max_client_conn = 500
`, server, port, users, poolSize)
		if err := os.WriteFile(ini, []byte(conf), 0o644); err != nil {
			t.Fatalf("storagetest: %v", err)
		}
		p := &PgBouncer{
			DSN: (&url.URL{Scheme: "postgres", User: url.User(cfg.User), Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
				Path: "/agentcards", RawQuery: "sslmode=disable"}).String(),
			log: &lockedBuffer{},
		}
		argv := append(runAs, bin, ini)
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Stdout, cmd.Stderr = p.log, p.log
		if err := cmd.Start(); err != nil {
			t.Fatalf("storagetest: start pgbouncer: %v", err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		stop := func() {
			// SIGTERM: PgBouncer exits at once, closing its connections (runuser passes it on).
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-exited:
			case <-time.After(10 * time.Second):
				_ = cmd.Process.Kill()
				<-exited
			}
		}
		err := p.waitListening(port, exited)
		if err == nil {
			t.Cleanup(stop)
			return p
		}
		stop()
		if attempt == 3 || !strings.Contains(p.log.String(), "in use") {
			t.Fatalf("storagetest: pgbouncer: %v\n%s", err, p.log)
		}
	}
}

// Log is what PgBouncer logged so far.
func (p *PgBouncer) Log() string { return p.log.String() }

// waitListening waits until PgBouncer accepts connections on port, or exits.
func (p *PgBouncer) waitListening(port int, exited <-chan error) error {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			return fmt.Errorf("exited: %v", err)
		default:
		}
		if strings.Contains(p.log.String(), "process up") {
			conn, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), time.Second)
			if err == nil {
				_ = conn.Close()
				return nil
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("not listening on port %d after 10s", port)
}

// pgbouncerPath finds the pgbouncer program, which Debian installs in /usr/sbin (not on every
// user's PATH).
func pgbouncerPath() (string, error) {
	if p, err := exec.LookPath("pgbouncer"); err == nil {
		return p, nil
	}
	if _, err := os.Stat("/usr/sbin/pgbouncer"); err == nil {
		return "/usr/sbin/pgbouncer", nil
	}
	return "", fmt.Errorf("pgbouncer is not installed")
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("storagetest: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// lockedBuffer collects a process's output while the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
