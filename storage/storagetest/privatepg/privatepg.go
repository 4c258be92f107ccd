// Package privatepg runs a Postgres cluster of a caller's own: initdb in a new directory, a server
// listening only on a Unix socket in that directory (so it takes no TCP port from anyone), stopped
// and removed at the end. Tests start one to stop a database server without touching the shared
// one, and the soak starts one to run against a server with default settings, as in production.
// It imports no testing package, so commands can use it too.
//
// It needs the Postgres server binaries (/usr/lib/postgresql/*/bin), runuser and a "postgres"
// system user, as the machines of this project have: the server refuses to run as root.
package privatepg

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
)

// socketPort only names the socket file (.s.PGSQL.<port>) in the directory of a cluster that
// listens on no TCP port.
const socketPort = 5432

// Cluster is one private Postgres cluster.
type Cluster struct {
	bin, dir string
	// port is the server's port: its socket file's name, and its TCP port on 127.0.0.1 if tcp.
	port int
	tcp  bool
	// settings are the server's -c settings besides the socket's.
	settings []string
	// DSN connects to the cluster's "postgres" database as the "postgres" user.
	DSN string
}

// Available reports why no private cluster can be made here, or nil if one can.
func Available() error {
	_, err := find()
	return err
}

// find returns the directory of the server's binaries and the postgres user.
func find() (string, error) {
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	_, lookErr := user.Lookup("postgres")
	_, runErr := exec.LookPath("runuser")
	if len(bins) == 0 || lookErr != nil || runErr != nil {
		return "", fmt.Errorf("privatepg: a private Postgres needs /usr/lib/postgresql/*/bin, runuser and a postgres user (binaries found: %d; %v; %v)",
			len(bins), lookErr, runErr)
	}
	return filepath.Dir(bins[0]), nil
}

// Init creates a cluster in a new temporary directory that belongs to the postgres user; Start
// starts it. settings are name=value pairs given to the server with -c (none: the defaults of a
// fresh initdb).
func Init(settings ...string) (*Cluster, error) {
	bin, err := find()
	if err != nil {
		return nil, err
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, err
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	dir, err := os.MkdirTemp("", "agentcards-pg-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{bin: bin, dir: dir, port: socketPort, settings: settings,
		DSN: fmt.Sprintf("postgres://postgres@/postgres?host=%s&port=%d&sslmode=disable", dir, socketPort)}
	if err := os.Chown(dir, uid, gid); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("privatepg: the cluster's directory must belong to postgres: %w", err)
	}
	if out, err := c.asPostgres("initdb", "-D", c.data(), "-A", "trust", "-U", "postgres", "--no-sync"); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("privatepg: initdb: %w\n%s", err, out)
	}
	return c, nil
}

// Start starts the server and waits until it accepts connections.
func (c *Cluster) Start() error {
	listen := ""
	if c.tcp {
		listen = "127.0.0.1"
	}
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=%s", c.port, c.dir, listen)
	for _, s := range c.settings {
		opts += " -c " + s
	}
	if err := c.pgctl("-o", opts, "-l", c.Log(), "start"); err != nil {
		log, _ := os.ReadFile(c.Log())
		return fmt.Errorf("privatepg: start: %w\n%s", err, log)
	}
	return nil
}

// Stop stops the server at once, closing every connection, as a database server that went away.
func (c *Cluster) Stop() error {
	if err := c.pgctl("-m", "immediate", "stop"); err != nil {
		return fmt.Errorf("privatepg: stop: %w", err)
	}
	return nil
}

// Remove stops the server, if it runs, and deletes the cluster.
func (c *Cluster) Remove() error {
	_ = c.Stop() // fails only if it was not running
	return os.RemoveAll(c.dir)
}

// Log is the server's log file.
func (c *Cluster) Log() string { return filepath.Join(c.dir, "log") }

func (c *Cluster) data() string { return filepath.Join(c.dir, "data") }

func (c *Cluster) pgctl(args ...string) error {
	out, err := c.asPostgres("pg_ctl", append([]string{"-D", c.data(), "-w"}, args...)...)
	if err != nil {
		return fmt.Errorf("%w: %s", err, out)
	}
	return nil
}

// asPostgres runs one of the server's programs as the postgres user, which it insists on.
func (c *Cluster) asPostgres(program string, args ...string) ([]byte, error) {
	cmd := exec.Command("runuser", append([]string{"-u", "postgres", "--", filepath.Join(c.bin, program)}, args...)...)
	return cmd.CombinedOutput()
}
