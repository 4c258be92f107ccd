package privatepg

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Pair is a primary and a standby that streams the primary's WAL, each listening on a free port
// of 127.0.0.1 (besides a socket in its own directory) with trust authentication, for tests of a
// failover: they stop the primary and promote the standby.
type Pair struct {
	dir              string
	Primary, Standby *Cluster
	// DSN connects to the "postgres" database of whichever of the two accepts writes: it names
	// both hosts, with target_session_attrs=read-write.
	DSN string
}

// PairOptions says how the standby follows the primary.
type PairOptions struct {
	// Sync makes the primary's commits wait until the standby has flushed them
	// (synchronous_standby_names); otherwise the standby follows asynchronously.
	Sync bool
	// Slot has the standby stream through a replication slot, which keeps on the primary the WAL
	// the standby has not received yet.
	Slot bool
	// Settings are name=value pairs given to both servers with -c.
	Settings []string
}

// slotName is the replication slot of a Pair made with PairOptions.Slot.
const slotName = "agentcards_standby"

// InitPair creates and starts a primary, copies it into a standby with pg_basebackup, starts the
// standby and returns once it streams (as the synchronous standby with o.Sync). Remove stops
// both and deletes them.
func InitPair(o PairOptions) (p *Pair, err error) {
	bin, err := find()
	if err != nil {
		return nil, err
	}
	root, err := os.MkdirTemp("", "agentcards-pgpair-")
	if err != nil {
		return nil, err
	}
	p = &Pair{dir: root}
	defer func() {
		if err != nil {
			_ = p.Remove()
			p = nil
		}
	}()
	primary := &Cluster{bin: bin, dir: filepath.Join(root, "primary"), tcp: true,
		settings: append([]string{"wal_level=replica", "max_wal_senders=4", "max_replication_slots=4"}, o.Settings...)}
	standby := &Cluster{bin: bin, dir: filepath.Join(root, "standby"), tcp: true, settings: o.Settings}
	p.Primary = primary
	for _, d := range []string{root, primary.dir, standby.dir} {
		if err := chownPostgres(d); err != nil {
			return nil, err
		}
	}
	if out, err := primary.asPostgres("initdb", "-D", primary.data(), "-A", "trust", "-U", "postgres", "--no-sync"); err != nil {
		return nil, fmt.Errorf("privatepg: initdb: %w\n%s", err, out)
	}
	if err := primary.startOnFreePort(); err != nil {
		return nil, err
	}
	backup := []string{"-h", "127.0.0.1", "-p", strconv.Itoa(primary.port), "-U", "postgres", "-D", standby.data(),
		"-R", "-X", "stream", "-c", "fast", "--no-sync"}
	if o.Slot {
		backup = append(backup, "-C", "-S", slotName)
	}
	if out, err := primary.asPostgres("pg_basebackup", backup...); err != nil {
		return nil, fmt.Errorf("privatepg: pg_basebackup: %w\n%s", err, out)
	}
	// Only now, so that the standby's copy does not have it: promoted, with no standby of its
	// own, it would wait for ever for one to acknowledge its commits.
	if o.Sync {
		if _, err := primary.psql("ALTER SYSTEM SET synchronous_standby_names = '*'"); err != nil {
			return nil, err
		}
		if _, err := primary.psql("SELECT pg_reload_conf()"); err != nil {
			return nil, err
		}
	}
	p.Standby = standby
	if err := standby.startOnFreePort(); err != nil {
		return nil, err
	}
	want := "streaming async"
	if o.Sync {
		want = "streaming sync"
	}
	if err := primary.await("SELECT state || ' ' || sync_state FROM pg_stat_replication", want, 30*time.Second); err != nil {
		return nil, fmt.Errorf("privatepg: the standby does not stream: %w", err)
	}
	p.DSN = fmt.Sprintf("postgres://postgres@127.0.0.1:%d,127.0.0.1:%d/postgres?sslmode=disable&target_session_attrs=read-write",
		primary.port, standby.port)
	return p, nil
}

// Remove stops both servers, if they run, and deletes them.
func (p *Pair) Remove() error {
	for _, c := range []*Cluster{p.Standby, p.Primary} {
		if c != nil {
			_ = c.Stop() // fails only if it was not running
		}
	}
	return os.RemoveAll(p.dir)
}

// Cut stops the standby's streaming and returns once the primary has no standby: its commits
// are then not replicated (asynchronous), or wait (synchronous), as while a network between the
// two is down.
func (p *Pair) Cut() error {
	if _, err := p.Standby.psql("ALTER SYSTEM SET primary_conninfo = ''"); err != nil {
		return err
	}
	if _, err := p.Standby.psql("SELECT pg_reload_conf()"); err != nil {
		return err
	}
	return p.Primary.await("SELECT count(*) FROM pg_stat_replication", "0", 30*time.Second)
}

// Query runs one statement on the server and returns what it printed, unaligned, without
// headers: a value per line, columns separated by "|".
func (c *Cluster) Query(statement string) (string, error) { return c.psql(statement) }

// Promote ends the standby's recovery and waits until it accepts writes.
func (c *Cluster) Promote() error {
	if err := c.pgctl("promote"); err != nil {
		return fmt.Errorf("privatepg: promote: %w", err)
	}
	return nil
}

// Port is the server's TCP port on 127.0.0.1 (of a Pair's cluster), or its socket's number.
func (c *Cluster) Port() int { return c.port }

// startOnFreePort starts the server on a free port of 127.0.0.1, on another one if the port was
// taken meanwhile (it is free when chosen, not reserved), and sets DSN.
func (c *Cluster) startOnFreePort() error {
	var err error
	for range 3 {
		if c.port, err = freePort(); err != nil {
			return err
		}
		c.DSN = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", c.port)
		if err = c.Start(); err == nil {
			return nil
		}
	}
	return err
}

// await runs query until it prints want, up to timeout.
func (c *Cluster) await(query, want string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		got, err := c.psql(query)
		if err == nil && got == want {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s printed %q, want %q (%v)", query, got, want, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// psql runs one statement on the server's socket and returns what it printed, unaligned.
func (c *Cluster) psql(statement string) (string, error) {
	out, err := c.asPostgres("psql", "-X", "-A", "-t", "-q", "-h", c.dir, "-p", strconv.Itoa(c.port),
		"-U", "postgres", "-d", "postgres", "-c", statement)
	if err != nil {
		return "", fmt.Errorf("privatepg: %s: %w\n%s", statement, err, out)
	}
	return strings.TrimSpace(string(out)), nil
}

// freePort returns a TCP port of 127.0.0.1 that nothing listens on now.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// chownPostgres creates dir if need be and gives it to the postgres user.
func chownPostgres(dir string) error {
	u, err := user.Lookup("postgres")
	if err != nil {
		return err
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if err := os.Chown(dir, uid, gid); err != nil {
		return errors.Join(fmt.Errorf("privatepg: the cluster's directory must belong to postgres"), err)
	}
	return nil
}
