package main

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"sync"
	"testing"
	"time"
)

// built is the binary the tests run, built once per test process (go test -count=N runs the
// tests N times, not the build) into a directory TestMain removes.
var built struct {
	once sync.Once
	dir  string
	bin  string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		_ = os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// binary builds ./cmd/agentcards on first use and returns its path. Under the race detector
// the binary is built with it too, so that the processes the tests start are checked as well.
func binary(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		built.dir, built.err = os.MkdirTemp("", "agentcards-test-")
		if built.err != nil {
			return
		}
		built.bin = filepath.Join(built.dir, "agentcards")
		args := []string{"build", "-o", built.bin}
		if raceEnabled() {
			args = append(args, "-race")
		}
		build := exec.Command("go", append(args, ".")...)
		build.Stderr = os.Stderr
		built.err = build.Run()
	})
	if built.err != nil {
		t.Fatalf("build: %v", built.err)
	}
	return built.bin
}

// raceEnabled reports whether this test binary was built with -race.
func raceEnabled() bool {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range info.Settings {
		if s.Key == "-race" {
			return s.Value == "true"
		}
	}
	return false
}

// server is one running `agentcards serve`.
type server struct {
	cmd    *exec.Cmd
	base   string // the URL it listens on
	stderr *syncBuffer
	exited chan struct{}
	// metrics receives the URL of the metrics listener (without /metrics) once it is printed;
	// never with server.metricsAddr empty.
	metrics chan string
}

var (
	listeningOn = regexp.MustCompile(`listening on (http://\S+)`)
	metricsOn   = regexp.MustCompile(`metrics on (http://\S+)/metrics`)
)

// startServer runs `bin serve` in dir with env, waits until it listens, and kills it when the
// test ends if it is still running.
func startServer(t *testing.T, bin, dir string, env []string) *server {
	t.Helper()
	s := &server{cmd: exec.Command(bin, "serve"), stderr: &syncBuffer{}, exited: make(chan struct{})}
	s.cmd.Dir, s.cmd.Env, s.cmd.Stderr = dir, env, s.stderr
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		select {
		case <-s.exited:
		default:
			_ = s.cmd.Process.Kill()
			<-s.exited
		}
	})
	found := make(chan string, 1)
	s.metrics = make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if m := listeningOn.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
			if m := metricsOn.FindStringSubmatch(sc.Text()); m != nil {
				s.metrics <- m[1]
				break
			}
		}
		_, _ = io.Copy(io.Discard, out)
		_ = s.cmd.Wait()
		close(s.exited)
	}()
	select {
	case s.base = <-found:
		return s
	case <-s.exited:
		t.Fatalf("serve exited before listening; stderr:\n%s", s.log())
	case <-time.After(2 * time.Minute):
		t.Fatalf("serve did not listen within 2 minutes; stderr:\n%s", s.log())
	}
	return nil
}

// kill ends the server with SIGKILL, as a crash or the OOM killer would: no drain, no deferred
// close, nothing flushed that the process still held.
func (s *server) kill(t *testing.T) {
	t.Helper()
	if err := s.cmd.Process.Kill(); err != nil {
		t.Fatalf("kill: %v", err)
	}
	<-s.exited
}

// log is what the server wrote to stderr so far.
func (s *server) log() string { return s.stderr.String() }

// syncBuffer is a buffer that exec writes into while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// mint runs `bin token` with args in dir and returns the token.
func mint(t *testing.T, bin, dir string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"token"}, args...)...)
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("token %v: %v: %s", args, err, stderr)
	}
	return string(bytes.TrimSpace(out))
}
