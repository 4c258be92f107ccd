package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentcards/agentcards/authz/token"
	"github.com/agentcards/agentcards/tenants"
	"github.com/agentcards/agentcards/web/client"
	"github.com/agentcards/agentcards/web/mcp"
)

// mcpOptions are the flags of `agentcards mcp`.
type mcpOptions struct {
	server, tokenFile, subject, tenant, configPath string
	ttl                                            time.Duration
}

// mcpUsage is the command line of `agentcards mcp`.
const mcpUsage = "agentcards mcp [--toolsets LIST] ([--server URL [--token-file F]] | [--subject S --tenant T [--config FILE] [--ttl D]])"

// runMCP serves the MCP door on stdin and stdout for a local MCP client (Claude Desktop and the
// like). With a server (--server or AGENTCARDS_SERVER) each tool call goes there through the Go
// client, with the token of AGENTCARDS_TOKEN or --token-file. Without one, the service runs in
// this process on the configured database, acting as --subject in --tenant: the single-machine
// setup, where the token is minted here with the server's own key. Logs go to stderr: stdout is
// the MCP channel.
func runMCP(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) error {
	fs := flag.NewFlagSet("mcp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: %s\n\nServes the MCP tools on stdin and stdout.\n\nflags:\n", mcpUsage)
		fs.PrintDefaults()
	}
	var o mcpOptions
	fs.StringVar(&o.configPath, "config", "", "config file of the in-process service (default ./config.yaml if present)")
	fs.StringVar(&o.server, "server", getenv("AGENTCARDS_SERVER"), "the agentcards server to call (default $AGENTCARDS_SERVER); none runs the service in process")
	fs.StringVar(&o.tokenFile, "token-file", "", "with --server: a file holding the bearer token; without it, the token is $AGENTCARDS_TOKEN")
	fs.StringVar(&o.subject, "subject", "", "in process: the subject the tools act as")
	fs.StringVar(&o.tenant, "tenant", "", "in process: the tenant they act in")
	fs.DurationVar(&o.ttl, "ttl", 24*time.Hour, "in process: how long the minted token is valid; the session mints another when it expires")
	toolsets := fs.String("toolsets", "", "the toolsets served, comma-separated: "+strings.Join(mcp.Toolsets, ", ")+" or all "+
		"(default "+strings.Join(mcp.DefaultToolsets, ",")+"; in process, the config's mcp.toolsets)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fmt.Fprintln(stderr, "usage:", mcpUsage)
		return flag.ErrHelp
	}
	opts := mcp.Options{Version: buildVersion()}
	if *toolsets != "" {
		opts.Toolsets = strings.Split(*toolsets, ",")
		if err := mcp.CheckToolsets(opts.Toolsets); err != nil {
			return usageError{err}
		}
	}
	var clientFor mcp.ClientFor
	if o.server != "" {
		// A token that is not one fails here, at start, naming the token: the tools would
		// otherwise each fail for want of the tenant the token was to name.
		tok, err := readToken(o.tokenFile, getenv)
		if err != nil {
			return usageError{err}
		}
		c, err := client.New(o.server, client.WithToken(tok), client.WithRetry(2), client.WithUserAgent("agentcards-mcp/"+buildVersion()))
		if err != nil {
			return err
		}
		clientFor = func(context.Context, *sdk.CallToolRequest) (*client.Client, error) { return c, nil }
	} else {
		if o.subject == "" || o.tenant == "" {
			fmt.Fprintln(stderr, "agentcards mcp: without --server, --subject and --tenant say who the tools act as")
			return flag.ErrHelp
		}
		if err := tenants.ValidateID(tenants.ID(o.tenant)); err != nil {
			return fmt.Errorf("--tenant: %w", err)
		}
		cfg, err := loadConfig(o.configPath, getenv)
		if err != nil {
			return err
		}
		if *toolsets == "" {
			opts.Toolsets = cfg.MCP.Toolsets
		}
		log := newLogger(cfg.Log, stderr)
		a, db, err := buildApp(ctx, cfg, log, "", nil)
		if err != nil {
			return err
		}
		defer db.Close()
		a.Start(ctx)
		defer a.Close()
		tokens, err := configTokens(cfg)
		if err != nil {
			return err
		}
		mint := &minter{tokens: tokens, subject: o.subject, tenant: o.tenant, ttl: o.ttl}
		clientFor = func(context.Context, *sdk.CallToolRequest) (*client.Client, error) {
			tok, err := mint.token()
			if err != nil {
				return nil, err
			}
			return client.New("http://in-process", client.WithHandler(a.Handler), client.WithToken(tok))
		}
	}
	server, err := mcp.NewServer(clientFor, opts)
	if err != nil {
		return err
	}
	err = server.Run(ctx, &sdk.IOTransport{Reader: io.NopCloser(stdin), Writer: nopWriteCloser{stdout}})
	if errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// minter mints the in-process session's token, again shortly before it expires.
type minter struct {
	mu              sync.Mutex
	tokens          *token.Tokens
	subject, tenant string
	ttl             time.Duration
	tok             string
	expires         time.Time
}

func (m *minter) token() (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.tok != "" && time.Until(m.expires) > m.ttl/10 {
		return m.tok, nil
	}
	tok, err := m.tokens.Mint(m.subject, m.tenant, m.ttl, false)
	if err != nil {
		return "", err
	}
	m.tok, m.expires = tok, time.Now().Add(m.ttl)
	return tok, nil
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
