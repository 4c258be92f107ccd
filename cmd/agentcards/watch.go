package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/agentcards/agentcards/web/api"
)

// runWatch follows the tenant's change feed live (`agentcards cards watch`): each change as it
// commits, one line each, until interrupted. The client's stream resumes by itself after a
// dropped connection or a server that drains, so the lines go on from the last change printed.
func runWatch(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	fs := flag.NewFlagSet("agentcards cards watch", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var conn connection
	conn.register(fs, getenv)
	tenant := fs.String("tenant", "", "the tenant whose cards to follow (default the token's)")
	since := fs.String("since", "", "a cursor (a nextCursor of cards changes, or a cursor this command printed): the changes after it; none: from now on")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: agentcards cards watch [--tenant T] [--since CURSOR] [flags]\n\n%s.\n"+
			"Prints a line per change (table: op, agent, revision, name; json: the change with its cursor) until\n"+
			"interrupted (Ctrl-C, exit 0); resumes by itself after a dropped connection.\n\nflags:\n", clientCommands["cards"]["watch"])
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return usageError{err}
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return usagef("watch takes no arguments")
	}
	format, err := conn.format(stdout)
	if err != nil {
		return err
	}
	cl, err := conn.tenantClient(getenv, *tenant)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(stdout)
	for ch, err := range cl.Cards.Watch(ctx, api.CardsChanges{Since: *since}) {
		if err != nil {
			return err
		}
		if format == "json" {
			if err := enc.Encode(watchedChange{CardChange: ch.CardChange, Cursor: ch.Cursor}); err != nil {
				return err
			}
			continue
		}
		name := ""
		if ch.Card != nil {
			name = ch.Card.Name
		}
		if _, err := fmt.Fprintf(stdout, "%-6s  %s  revision %d  %s\n", ch.Op, ch.AgentID, ch.Revision, name); err != nil {
			return err
		}
	}
	// Interrupted: done.
	return nil
}

// watchedChange is a change as `cards watch --output json` prints it: the member of a
// cards.changes page, and the cursor that resumes after it (--since).
type watchedChange struct {
	api.CardChange
	Cursor string `json:"cursor"`
}
