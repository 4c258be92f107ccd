package storagetest

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/agentcards/agentcards/migrations"
	"github.com/agentcards/agentcards/storage"
)

// Outage is a TCP relay between the service and its database server, which a test cuts to make
// the database unreachable and mends to bring it back, on any dialect with a server, without
// stopping a server other tests share.
type Outage struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	down  bool
	conns map[net.Conn]bool
	// hung: connections are held open and nothing passes (Hang); held are the service's side
	// of them, closed when the relay is mended.
	hung bool
	held map[net.Conn]bool
	// server is the server's side of each relayed connection.
	server map[net.Conn]bool
}

// OpenWithOutage is Open for a server dialect (postgres or mysql), with the service's pool
// reaching the server through an Outage relay.
func OpenWithOutage(t testing.TB, dialect string) (*storage.DB, *Outage) {
	t.Helper()
	_, dsn := EmptyDatabase(t, dialect)
	o := &Outage{conns: map[net.Conn]bool{}, held: map[net.Conn]bool{}, server: map[net.Conn]bool{}}
	relayed, err := relayDSN(dialect, dsn, func(target string) (string, error) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", err
		}
		o.ln, o.target = ln, target
		return ln.Addr().String(), nil
	})
	if err != nil {
		t.Fatalf("storagetest: %v", err)
	}
	t.Cleanup(func() { o.close() })
	go o.serve()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	db, err := storage.Open(ctx, dialect, relayed)
	if err != nil {
		t.Fatalf("storagetest: %v", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	if err := db.Migrate(ctx); err != nil {
		t.Fatalf("storagetest: %v", err)
	}
	return db, o
}

// relayDSN rewrites dsn's server address to the one listen returns for it.
func relayDSN(dialect, dsn string, listen func(target string) (string, error)) (string, error) {
	switch dialect {
	case migrations.Postgres:
		u, err := url.Parse(dsn)
		if err != nil {
			return "", err
		}
		if u.Host, err = listen(u.Host); err != nil {
			return "", err
		}
		return u.String(), nil
	case migrations.MySQL:
		cfg, err := gomysql.ParseDSN(dsn)
		if err != nil {
			return "", err
		}
		if cfg.Addr, err = listen(cfg.Addr); err != nil {
			return "", err
		}
		return cfg.FormatDSN(), nil
	}
	return "", fmt.Errorf("%s has no server to relay to", dialect)
}

// Down cuts every relayed connection and refuses new ones, as a database that went away.
func (o *Outage) Down() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.down = true
	for c := range o.conns {
		_ = c.Close()
	}
	clear(o.conns)
	clear(o.server)
	for c := range o.held {
		_ = c.Close()
	}
	clear(o.held)
}

// Hang makes the database hang, as behind a network that drops every packet: the service's
// connections stay open and nothing reaches the server nor comes back, new ones are accepted
// and never answered. Up mends it (the held connections are then closed).
func (o *Outage) Hang() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.hung = true
	for c := range o.conns {
		if o.server[c] {
			_ = c.Close() // the relay stops; the service's side is held by relay
		}
	}
}

// Up lets connections through again.
func (o *Outage) Up() {
	o.mu.Lock()
	o.down, o.hung = false, false
	for c := range o.held {
		_ = c.Close()
	}
	clear(o.held)
	o.mu.Unlock()
}

func (o *Outage) serve() {
	for {
		c, err := o.ln.Accept()
		if err != nil {
			return
		}
		go o.relay(c)
	}
}

func (o *Outage) relay(c net.Conn) {
	o.mu.Lock()
	if o.down {
		o.mu.Unlock()
		_ = c.Close()
		return
	}
	if o.hung {
		o.held[c] = true
		o.mu.Unlock()
		return
	}
	o.mu.Unlock()
	s, err := net.DialTimeout("tcp", o.target, 10*time.Second)
	if err != nil {
		_ = c.Close()
		return
	}
	o.mu.Lock()
	if o.down || o.hung {
		if o.hung && !o.down {
			o.held[c] = true
		} else {
			_ = c.Close()
		}
		o.mu.Unlock()
		_ = s.Close()
		return
	}
	o.conns[c], o.conns[s] = true, true
	o.server[s] = true
	o.mu.Unlock()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		done <- struct{}{}
	}
	go pipe(s, c)
	go pipe(c, s)
	<-done
	_ = s.Close()
	o.mu.Lock()
	if o.hung && !o.down && o.conns[c] {
		// Hung: the service's side stays open, unanswered, until Up.
		o.held[c] = true
	} else {
		_ = c.Close()
	}
	delete(o.conns, c)
	delete(o.conns, s)
	delete(o.server, s)
	o.mu.Unlock()
	<-done
}

func (o *Outage) close() {
	_ = o.ln.Close()
	o.Down()
	o.Up()
}
