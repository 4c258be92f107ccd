// Command agentcards runs the capability-card registry and its tools: serve, migrate, token, version.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/agentcards/agentcards/migrations"
	"github.com/agentcards/agentcards/storage"
	"github.com/agentcards/agentcards/tenants"
)

// stdin is what `agentcards mcp` reads its MCP client from.
var stdin io.Reader = os.Stdin

// version is set at build time with -ldflags "-X main.version=..."; otherwise the module's.
var version = ""

var usage = `agentcards: a multi-tenant registry of agent capability cards

usage:
  agentcards RESOURCE COMMAND [flags]   send a request to a server: ` + strings.Join(resources(), ", ") + `
  agentcards cards import-mesh --from mesh.db [--tenant T]
  agentcards cards watch [--tenant T] [--since CURSOR]
  agentcards serve   [--config FILE]
  agentcards migrate [--config FILE] up|status
  agentcards token   [--config FILE] --subject S [--tenant T] [--platform-admin] [--ttl 1h]
  agentcards mcp     [--server URL [--token-file F]] | [--config FILE] --subject S --tenant T
  agentcards version

--config defaults to ./config.yaml when that file exists; AGENTCARDS_* variables override it.
token needs --tenant, --platform-admin or both (a platform admin's token naming a tenant); run it
where the server runs, as with HS256 it signs with the server's <dataDir>/jwt-secret.
mcp serves the MCP tools on stdin/stdout: calling the server at --server (or AGENTCARDS_SERVER)
with the token of AGENTCARDS_TOKEN or --token-file, or, without one, the service in process on
the configured database as --subject in --tenant.
A request (agentcards cards search --protocol a2a --q review) goes to --server or
AGENTCARDS_SERVER with the token of AGENTCARDS_TOKEN or --token-file; its flags are its fields'
names (agentcards RESOURCE COMMAND -h lists them), -f FILE gives them as JSON. It prints a table
on a terminal, else JSON (--output table|json), and exits 0 when done, 1 when refused (the error
code on stderr), 2 on a usage error.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	code := cli(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Environ())
	stop()
	os.Exit(code)
}

// cli runs the command and returns its exit status, having said on stderr what went wrong.
func cli(ctx context.Context, args []string, stdout, stderr io.Writer, environ []string) int {
	err := run(ctx, args, stdout, stderr, environ)
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(stderr, "agentcards:", describe(err))
	}
	return exitCode(err)
}

// run is main without the process: testable, and every exit path returns an error. environ is
// the environment as os.Environ gives it.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, environ []string) error {
	vars := map[string]string{}
	for _, kv := range environ {
		name, val, _ := strings.Cut(kv, "=")
		if _, dup := vars[name]; !dup { // the first one wins, as with os.Getenv
			vars[name] = val
		}
	}
	getenv := func(name string) string { return vars[name] }
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return flag.ErrHelp
	}
	cmd, args := args[0], args[1:]
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", "", "config file (default ./config.yaml if present)")
	switch cmd {
	case "serve":
		if err := fs.Parse(args); err != nil {
			return err
		}
		cfg, err := loadConfig(*configPath, getenv)
		if err != nil {
			return err
		}
		return serve(ctx, cfg, unknownEnv(environ), stdout, stderr)
	case "migrate":
		if err := fs.Parse(args); err != nil {
			return err
		}
		cfg, err := loadConfig(*configPath, getenv)
		if err != nil {
			return err
		}
		return migrate(ctx, cfg, fs.Args(), stdout)
	case "token":
		subject := fs.String("subject", "", "the token's subject (sub)")
		tenant := fs.String("tenant", "", "the tenant the token acts in")
		ttl := fs.Duration("ttl", time.Hour, "how long the token is valid")
		admin := fs.Bool("platform-admin", false, "make the token a platform admin's")
		if err := fs.Parse(args); err != nil {
			return err
		}
		if *tenant != "" {
			if err := tenants.ValidateID(tenants.ID(*tenant)); err != nil {
				return fmt.Errorf("--tenant: %w", err)
			}
		}
		cfg, err := loadConfig(*configPath, getenv)
		if err != nil {
			return err
		}
		tokens, err := configTokens(cfg)
		if err != nil {
			return err
		}
		tok, err := tokens.Mint(*subject, *tenant, *ttl, *admin)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(stdout, tok)
		return err
	case "mcp":
		return runMCP(ctx, args, stdin, stdout, stderr, getenv)
	case "version":
		_, err := fmt.Fprintln(stdout, "agentcards", buildVersion())
		return err
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	if ok, err := runResource(ctx, cmd, args, stdout, stderr, getenv); ok {
		return err
	}
	fmt.Fprint(stderr, usage)
	commands := append([]string{"serve", "migrate", "token", "mcp", "version", "help"}, resources()...)
	return usagef("unknown command %q%s", cmd, didYouMean(cmd, commands))
}

func buildVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

func newLogger(cfg LogConfig, w io.Writer) *slog.Logger {
	var level slog.Level
	if err := level.UnmarshalText([]byte(cfg.Level)); err != nil {
		level = slog.LevelInfo
	}
	opts := &slog.HandlerOptions{Level: level}
	if cfg.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

func migrate(ctx context.Context, cfg Config, args []string, stdout io.Writer) error {
	if len(args) != 1 || (args[0] != "up" && args[0] != "status") {
		return errors.New("usage: agentcards migrate up|status")
	}
	// Migrations lock the database for the session: behind a pooler in transaction mode they
	// need the direct connection, when there is one.
	dsn := cfg.Database.DSN
	if cfg.Database.DirectDSN != "" {
		dsn = cfg.Database.DirectDSN
	}
	db, err := storage.Open(ctx, cfg.Database.Driver, dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	if args[0] == "up" {
		if err := db.Migrate(ctx); err != nil {
			return err
		}
	}
	states, err := migrations.Status(ctx, db.SQL(), db.Dialect())
	if err != nil {
		return err
	}
	for _, s := range states {
		applied := "pending"
		if s.Applied {
			applied = "applied " + s.AppliedAt.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(stdout, "%04d  %-40s %s\n", s.Version, s.Name, applied)
	}
	return nil
}
