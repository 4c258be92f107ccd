// Package galera runs a MariaDB Galera cluster of a caller's own: private mariadbd processes, each
// with its datadir in one temporary directory, listening on free loopback ports for SQL, group
// communication, incremental state transfer (IST) and full state transfer (SST, by rsync). The
// first node bootstraps the cluster, the others join it. A node can be killed and started again,
// to rejoin. Nothing of the shared MariaDB server is touched. It imports no testing package, so
// commands can use it too.
//
// It needs Debian's mariadb-server and galera-4 packages and rsync. As root, the servers run as
// the mysql user (mariadbd --user=mysql), which owns the datadirs.
package galera

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	gomysql "github.com/go-sql-driver/mysql" // also the "mysql" database/sql driver
)

// Provider is the Galera library Debian's galera-4 package installs.
const Provider = "/usr/lib/galera/libgalera_smm.so"

// programs the cluster needs besides the provider.
var programs = []string{"/usr/sbin/mariadbd", "mariadb-install-db", "rsync", "wsrep_sst_rsync"}

// Available reports why no cluster can be made here, or nil if one can.
func Available() error {
	var missing []string
	if _, err := os.Stat(Provider); err != nil {
		missing = append(missing, Provider+" (galera-4)")
	}
	for _, p := range programs {
		if _, err := exec.LookPath(p); err != nil {
			missing = append(missing, p)
		}
	}
	if os.Geteuid() == 0 {
		if _, err := user.Lookup("mysql"); err != nil {
			missing = append(missing, "a mysql user to run mariadbd as")
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("galera: missing %s", strings.Join(missing, ", "))
	}
	return nil
}

// Cluster is a running Galera cluster of private nodes.
type Cluster struct {
	dir   string
	Nodes []*Node
}

// Node is one mariadbd of the cluster.
type Node struct {
	Name string
	dir  string
	// the loopback ports: SQL, group communication (gmcast), IST and SST.
	SQLPort, groupPort, istPort, sstPort int
	// DSN connects to the node as root, to no database.
	DSN     string
	cluster *Cluster

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
}

// startTimeout bounds a node's start, state transfer included.
const startTimeout = 2 * time.Minute

// Start starts a cluster of n nodes (at least 1) and returns once every node is synced.
// extra are mariadbd options given to every node besides the package's own.
func Start(ctx context.Context, n int, extra ...string) (*Cluster, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "agentcards-galera-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{dir: dir}
	fail := func(err error) (*Cluster, error) {
		c.Stop()
		return nil, err
	}
	// The mysql user must reach the datadirs under it.
	if err := os.Chmod(dir, 0o755); err != nil {
		return fail(err)
	}
	ports, err := freePorts(4 * n)
	if err != nil {
		return fail(err)
	}
	for i := range n {
		c.Nodes = append(c.Nodes, &Node{Name: fmt.Sprintf("node%d", i+1), dir: filepath.Join(dir, fmt.Sprintf("node%d", i+1)),
			SQLPort: ports[4*i], groupPort: ports[4*i+1], istPort: ports[4*i+2], sstPort: ports[4*i+3], cluster: c})
	}
	for _, nd := range c.Nodes {
		nd.DSN = (&gomysql.Config{User: "root", Net: "tcp", Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(nd.SQLPort)),
			AllowNativePasswords: true}).FormatDSN()
		if err := nd.install(ctx, extra); err != nil {
			return fail(err)
		}
	}
	// The first node starts a new cluster; the others join it one by one, each by SST from a
	// synced node (joiners at once make the group form in several rounds, which is slower).
	for i, nd := range c.Nodes {
		if err := nd.start(ctx, i == 0, extra); err != nil {
			return fail(err)
		}
	}
	return c, nil
}

// install makes the node's empty datadir: mariadb-install-db with root reachable over TCP from
// loopback without a password.
func (nd *Node) install(ctx context.Context, extra []string) error {
	if err := os.MkdirAll(nd.dir, 0o755); err != nil {
		return err
	}
	args := []string{"--no-defaults", "--datadir=" + nd.data(), "--auth-root-authentication-method=normal", "--skip-test-db",
		"--innodb-log-file-size=16M"}
	if os.Geteuid() == 0 {
		args = append(args, "--user=mysql")
		if err := chownMySQL(nd.dir); err != nil {
			return err
		}
	}
	out, err := exec.CommandContext(ctx, "mariadb-install-db", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("galera: mariadb-install-db for %s: %w\n%s", nd.Name, err, out)
	}
	return nil
}

func (nd *Node) data() string { return filepath.Join(nd.dir, "data") }

// Log is the node's error log file.
func (nd *Node) Log() string { return filepath.Join(nd.dir, "error.log") }

// address lists every node's group communication address.
func (c *Cluster) address() string {
	peers := make([]string, len(c.Nodes))
	for i, nd := range c.Nodes {
		peers[i] = net.JoinHostPort("127.0.0.1", strconv.Itoa(nd.groupPort))
	}
	return "gcomm://" + strings.Join(peers, ",")
}

// args are the node's mariadbd options. The group timeouts are shortened from Galera's defaults
// (a node suspected after 5 s, declared gone after 15 s) so that the survivors of a killed node
// resume writing within a few seconds on loopback, where a peer that does not answer for 2 s
// is gone.
func (nd *Node) args(bootstrap bool, extra []string) []string {
	address := nd.cluster.address()
	if bootstrap {
		address = "gcomm://"
	}
	a := []string{"--no-defaults",
		"--datadir=" + nd.data(), "--socket=" + filepath.Join(nd.dir, "mysqld.sock"), "--pid-file=" + filepath.Join(nd.dir, "mysqld.pid"),
		"--log-error=" + nd.Log(), "--bind-address=127.0.0.1", "--port=" + strconv.Itoa(nd.SQLPort), "--skip-name-resolve",
		"--innodb-buffer-pool-size=64M", "--innodb-log-file-size=16M",
		// What Galera needs: row-based replication and InnoDB, with interleaved auto-increment locks.
		"--binlog-format=ROW", "--default-storage-engine=InnoDB", "--innodb-autoinc-lock-mode=2",
		"--wsrep-on=ON", "--wsrep-provider=" + Provider, "--wsrep-cluster-name=agentcards-test",
		"--wsrep-cluster-address=" + address, "--wsrep-node-name=" + nd.Name,
		"--wsrep-node-address=" + net.JoinHostPort("127.0.0.1", strconv.Itoa(nd.groupPort)),
		"--wsrep-sst-method=rsync", "--wsrep-sst-receive-address=" + net.JoinHostPort("127.0.0.1", strconv.Itoa(nd.sstPort)),
		"--wsrep-provider-options=" + strings.Join([]string{
			"gmcast.listen_addr=tcp://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(nd.groupPort)),
			"ist.recv_addr=" + net.JoinHostPort("127.0.0.1", strconv.Itoa(nd.istPort)),
			"gcache.size=32M",
			"evs.suspect_timeout=PT2S", "evs.inactive_timeout=PT4S", "evs.install_timeout=PT4S",
			"evs.keepalive_period=PT0.5S", "evs.inactive_check_period=PT0.5S",
		}, ";"),
	}
	if os.Geteuid() == 0 {
		a = append(a, "--user=mysql")
	}
	if bootstrap {
		a = append(a, "--wsrep-new-cluster")
	}
	return append(a, extra...)
}

// start runs the node's mariadbd and waits until it is synced with the cluster.
func (nd *Node) start(ctx context.Context, bootstrap bool, extra []string) error {
	nd.mu.Lock()
	if nd.cmd != nil {
		nd.mu.Unlock()
		return fmt.Errorf("galera: %s runs already", nd.Name)
	}
	// mariadbd writes to its error log; what comes before it opens the log goes here.
	out, err := os.OpenFile(filepath.Join(nd.dir, "stdout.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		nd.mu.Unlock()
		return err
	}
	defer out.Close() // the child has its own copy
	cmd := exec.Command("/usr/sbin/mariadbd", nd.args(bootstrap, extra)...)
	cmd.Stdout, cmd.Stderr = out, out
	// Its own process group: a signal to the test's group does not reach it, and the SST
	// scripts it starts are killed with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		nd.mu.Unlock()
		return fmt.Errorf("galera: start %s: %w", nd.Name, err)
	}
	exited := make(chan struct{})
	nd.cmd, nd.exited = cmd, exited
	nd.mu.Unlock()
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	if err := nd.waitSynced(ctx, exited); err != nil {
		log, _ := os.ReadFile(nd.Log())
		return fmt.Errorf("galera: %s: %w\n%s", nd.Name, err, tail(log, 4000))
	}
	return nil
}

// Restart starts a node that was killed or stopped again, joining the running cluster (by IST
// when the others still hold what it missed, else SST), and waits until it is synced.
func (nd *Node) Restart(ctx context.Context, extra ...string) error {
	return nd.start(ctx, false, extra)
}

// waitSynced polls the node until it is synced with the cluster and ready, or exited is closed.
func (nd *Node) waitSynced(ctx context.Context, exited <-chan struct{}) error {
	db, err := sql.Open("mysql", nd.DSN)
	if err != nil {
		return err
	}
	defer db.Close()
	var last error
	for {
		state, err := Status(ctx, db, "wsrep_local_state_comment")
		if err == nil {
			var ready string
			if ready, err = Status(ctx, db, "wsrep_ready"); err == nil && state == "Synced" && ready == "ON" {
				return nil
			}
			if err == nil {
				err = fmt.Errorf("state %s, ready %s", state, ready)
			}
		}
		last = err
		select {
		case <-exited:
			return fmt.Errorf("mariadbd exited (last: %v)", last)
		case <-ctx.Done():
			return fmt.Errorf("not synced: %w (last: %v)", ctx.Err(), last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Exec runs statements on the first node, then waits until every node has applied them: Galera
// replicates a DDL statement to the other nodes in total order, but the first node answers
// without waiting for them, so a client of another node could still miss a new database or table.
func (c *Cluster) Exec(ctx context.Context, stmts ...string) error {
	first, err := sql.Open("mysql", c.Nodes[0].DSN)
	if err != nil {
		return err
	}
	defer first.Close()
	for _, q := range stmts {
		if _, err := first.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("galera: %s: %w", q, err)
		}
	}
	return c.Applied(ctx)
}

// Applied returns once every node that runs has applied every transaction the first node has
// committed: it waits until each node's last committed sequence number (wsrep_last_committed) is
// at least the first node's.
func (c *Cluster) Applied(ctx context.Context) error {
	seqno := func(db *sql.DB) (int64, error) {
		v, err := Status(ctx, db, "wsrep_last_committed")
		if err != nil {
			return 0, err
		}
		return strconv.ParseInt(v, 10, 64)
	}
	first, err := sql.Open("mysql", c.Nodes[0].DSN)
	if err != nil {
		return err
	}
	want, err := seqno(first)
	_ = first.Close()
	if err != nil {
		return fmt.Errorf("galera: %s: %w", c.Nodes[0].Name, err)
	}
	for _, nd := range c.Nodes[1:] {
		if !nd.running() {
			continue
		}
		db, err := sql.Open("mysql", nd.DSN)
		if err != nil {
			return err
		}
		defer db.Close()
		for {
			got, err := seqno(db)
			if err == nil && got >= want {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("galera: %s has not applied up to %d: %w (last: %d, %v)", nd.Name, want, ctx.Err(), got, err)
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	return nil
}

// running reports whether the node's mariadbd is started and not stopped or killed.
func (nd *Node) running() bool {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	return nd.cmd != nil
}

// Status reads one of the server's status variables (SHOW STATUS), such as wsrep_cluster_size.
func Status(ctx context.Context, db *sql.DB, name string) (string, error) {
	var v string
	// SHOW STATUS takes no placeholder in a prepared statement; the table does.
	err := db.QueryRowContext(ctx, "SELECT variable_value FROM information_schema.global_status WHERE variable_name = UPPER(?)", name).Scan(&v)
	if err != nil {
		return "", fmt.Errorf("status %s: %w", name, err)
	}
	return v, nil
}

// Kill ends the node's mariadbd with SIGKILL, as a crash would, and waits for it to exit.
func (nd *Node) Kill() error { return nd.signal(syscall.SIGKILL, 10*time.Second) }

// stop ends the node's mariadbd with SIGTERM (a clean shutdown), or SIGKILL if it takes long.
func (nd *Node) stop() {
	if err := nd.signal(syscall.SIGTERM, 30*time.Second); err != nil {
		_ = nd.signal(syscall.SIGKILL, 10*time.Second)
	}
}

// signal sends sig to the node's process group and waits up to wait for mariadbd to exit.
func (nd *Node) signal(sig syscall.Signal, wait time.Duration) error {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	if nd.cmd == nil {
		return nil
	}
	// The group is the one Setpgid made for this mariadbd, of this process's own starting.
	_ = syscall.Kill(-nd.cmd.Process.Pid, sig)
	select {
	case <-nd.exited:
		nd.cmd = nil
		return nil
	case <-time.After(wait):
		return fmt.Errorf("galera: %s did not exit within %s of %s", nd.Name, wait, sig)
	}
}

// Stop stops every node and removes the cluster's directory.
func (c *Cluster) Stop() {
	var wg sync.WaitGroup
	for _, nd := range c.Nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nd.stop()
		}()
	}
	wg.Wait()
	_ = os.RemoveAll(c.dir)
}

// Logs returns the end of every node's error log, for a failing test to show.
func (c *Cluster) Logs(max int) string {
	var b strings.Builder
	for _, nd := range c.Nodes {
		log, _ := os.ReadFile(nd.Log())
		fmt.Fprintf(&b, "--- %s (%s)\n%s\n", nd.Name, nd.Log(), tail(log, max))
	}
	return b.String()
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// chownMySQL gives dir to the mysql user, which the servers run as.
func chownMySQL(dir string) error {
	u, err := user.Lookup("mysql")
	if err != nil {
		return err
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return os.Chown(dir, uid, gid)
}

// freePorts returns n distinct loopback TCP ports that were free a moment ago, all held open
// until each is known, so that none is returned twice. They are taken outside the range the
// kernel picks the local ports of outgoing connections from (ip_local_port_range): a node that
// is killed and started again must find its ports free, and under load a client connection can
// otherwise take a dead node's port as its own (seen: the group port of a restarted node "in
// use" by then).
func freePorts(n int) ([]int, error) {
	lo, hi := 10000, 32767 // below Linux's default ephemeral range, 32768-60999
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			first, err1 := strconv.Atoi(f[0])
			last, err2 := strconv.Atoi(f[1])
			switch {
			case err1 != nil || err2 != nil:
			case first-1 >= 10000+n*10:
				hi = first - 1
			case last+1 <= 65535-n*10:
				lo, hi = last+1, 65535
			}
		}
	}
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for try := 0; len(ports) < n; try++ {
		if try == 1000 {
			return nil, fmt.Errorf("galera: no %d free ports in %d-%d", n, lo, hi)
		}
		port := lo + rand.IntN(hi-lo+1)
		l, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue // taken
		}
		ls = append(ls, l)
		ports = append(ports, port)
	}
	return ports, nil
}
