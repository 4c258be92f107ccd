// Package proc builds the agentcards binary and runs `serve` processes for the benchmark tools,
// so they measure the real program.
package proc

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"
)

// Build compiles ./cmd/agentcards (run from the repository root) into dir.
func Build(dir string) (string, error) {
	bin := filepath.Join(dir, "agentcards")
	build := exec.Command("go", "build", "-o", bin, "./cmd/agentcards")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		return "", fmt.Errorf("build (run from the repository root): %w", err)
	}
	return bin, nil
}

// Server is one running `agentcards serve`.
type Server struct {
	cmd *exec.Cmd
	// Base is the URL it listens on.
	Base string
	// metrics is given the base URL of its metrics listener, if it prints one.
	metrics chan string
}

var (
	listening     = regexp.MustCompile(`listening on (http://\S+)`)
	metricsListen = regexp.MustCompile(`metrics on (http://\S+)/metrics`)
)

// Env is the environment of a served binary: this process's, with the server and its metrics on
// free loopback ports (several servers may run at once) and log level warn, then extra, whose
// entries win over those before them of the same name.
func Env(extra ...string) []string {
	return append(append(os.Environ(),
		"AGENTCARDS_SERVER_ADDR=127.0.0.1:0", "AGENTCARDS_SERVER_METRICS_ADDR=127.0.0.1:0", "AGENTCARDS_LOG_LEVEL=warn"), extra...)
}

// Start runs `bin serve` in dir with env and waits until it listens.
func Start(bin, dir string, env []string) (*Server, error) {
	cmd := exec.Command(bin, "serve")
	cmd.Dir, cmd.Env, cmd.Stderr = dir, env, os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if m := listening.FindStringSubmatch(sc.Text()); m != nil {
			s := &Server{cmd: cmd, Base: m[1], metrics: make(chan string, 1)}
			go func() {
				for sc.Scan() {
					if m := metricsListen.FindStringSubmatch(sc.Text()); m != nil {
						s.metrics <- m[1]
						break
					}
				}
				_, _ = io.Copy(io.Discard, out)
			}()
			return s, nil
		}
	}
	_ = cmd.Process.Kill()
	return nil, fmt.Errorf("serve did not start")
}

// Stop sends SIGTERM and waits for the process to end.
func (s *Server) Stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	_ = s.cmd.Wait()
}

// Token mints a platform-admin token with `bin token`, with the same dir and env as the server.
func Token(bin, dir string, env []string) (string, error) {
	mint := exec.Command(bin, "token", "--subject", "bench", "--platform-admin", "--ttl", "2h")
	mint.Dir, mint.Env = dir, env
	tok, err := mint.Output()
	if err != nil {
		return "", fmt.Errorf("token: %w", err)
	}
	return strings.TrimSpace(string(tok)), nil
}

// Metrics returns the base URL of the server's metrics listener (server.metricsAddr), which it
// prints after its API's; an error if it printed none within a few seconds.
func (s *Server) Metrics() (string, error) {
	select {
	case base := <-s.metrics:
		s.metrics <- base // for the next call
		return base, nil
	case <-time.After(5 * time.Second):
		return "", fmt.Errorf("the server printed no metrics address")
	}
}

// Pid is the process id of the server, for attaching a profiler.
func (s *Server) Pid() int { return s.cmd.Process.Pid }
