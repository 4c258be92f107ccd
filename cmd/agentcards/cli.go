package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/agentcards/agentcards/web/api"
	"github.com/agentcards/agentcards/web/catalog"
	"github.com/agentcards/agentcards/web/client"
)

// usageError is a command given wrongly: its exit status is 2, as with flag.ErrHelp.
type usageError struct{ error }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// exitCode is the process's exit status for what run returned: 0 done, 2 a usage error, 1 any
// other failure (a request the service refused, a server that did not answer).
func exitCode(err error) int {
	var u usageError
	var ce *client.Error
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp), errors.As(err, &u):
		return 2
	case errors.As(err, &ce) && ce.Status == 0:
		return 2 // an input the client refused before sending it
	}
	return 1
}

// cliRequests are the catalogue's requests on the CLI door by resource and verb: cards.search
// is `agentcards cards search`, cards.register_batch `agentcards cards register-batch`.
func cliRequests() map[string]map[string]catalog.Request {
	out := map[string]map[string]catalog.Request{}
	for _, r := range catalog.Requests {
		if r.Doors&catalog.CLI == 0 {
			continue
		}
		words := strings.Fields(strings.TrimPrefix(r.Command(), "agentcards "))
		if out[words[0]] == nil {
			out[words[0]] = map[string]catalog.Request{}
		}
		out[words[0]][words[1]] = r
	}
	return out
}

// clientCommands are the verbs of the CLI beside the catalogue's, by resource: tools composed of
// requests rather than requests themselves.
var clientCommands = map[string]map[string]string{
	"cards": {
		"import-mesh": "Move an agentkit-mesh SQLite registry (its agents, and with --delegations its delegation history) into a tenant",
		"watch":       "Follow the changes of the tenant's cards live, as they commit, from a cursor or from now",
	},
}

// connection are the flags every client command takes: where the server is and who calls it.
type connection struct {
	server, tokenFile, output string
}

func (c *connection) register(fs *flag.FlagSet, getenv func(string) string) {
	fs.StringVar(&c.server, "server", getenv("AGENTCARDS_SERVER"), "the agentcards server's URL (default $AGENTCARDS_SERVER)")
	fs.StringVar(&c.tokenFile, "token-file", "", "a file holding the bearer token; without it, the token is $AGENTCARDS_TOKEN")
	fs.StringVar(&c.output, "output", "", "table or json (default: table on a terminal, else json)")
	fs.StringVar(&c.output, "o", "", "short for --output")
}

// tenantClient is client for a command that works in one tenant: tenant, or the token's.
func (c *connection) tenantClient(getenv func(string) string, tenant string) (*client.Client, error) {
	cl, err := c.client(getenv, tenant, false)
	if err != nil {
		return nil, err
	}
	if cl.Tenant() == "" {
		return nil, usagef("the token names no tenant: give --tenant")
	}
	return cl, nil
}

// client returns a client of the server, with the token, tenant and retries of the CLI. A
// request open to anyone (optional) goes without a token when none is given.
func (c *connection) client(getenv func(string) string, tenant string, optional bool) (*client.Client, error) {
	if c.server == "" {
		return nil, usagef("no server: give --server URL or set AGENTCARDS_SERVER")
	}
	tok, err := readToken(c.tokenFile, getenv)
	if err != nil && !(optional && errors.Is(err, errNoToken)) {
		return nil, usageError{err}
	}
	opts := []client.Option{client.WithToken(tok), client.WithRetry(2), client.WithUserAgent("agentcards-cli/" + buildVersion())}
	if tenant != "" {
		opts = append(opts, client.WithTenant(tenant))
	}
	cl, err := client.New(c.server, opts...)
	if err != nil {
		return nil, usageError{err}
	}
	return cl, nil
}

// format is the output format asked for: json, or table (the default on a terminal).
func (c *connection) format(stdout io.Writer) (string, error) {
	switch c.output {
	case "":
		if isTerminal(stdout) {
			return "table", nil
		}
		return "json", nil
	case "table", "json":
		return c.output, nil
	}
	return "", usagef("--output %q: want table or json", c.output)
}

// width is the width a table is fitted to: $COLUMNS when set, else the terminal's, else 0 (none).
func (c *connection) width(stdout io.Writer, getenv func(string) string) int {
	if n, err := strconv.Atoi(getenv("COLUMNS")); err == nil && n > 0 {
		return n
	}
	return terminalWidth(stdout)
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// runResource runs `agentcards RESOURCE VERB [flags]`; ok is false when resource is none.
func runResource(ctx context.Context, resource string, args []string, stdout, stderr io.Writer, getenv func(string) string) (ok bool, err error) {
	verbs, ok := cliRequests()[resource]
	if !ok {
		return false, nil
	}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		w := stderr
		if len(args) > 0 {
			w = stdout
		}
		resourceUsage(w, resource, verbs)
		if len(args) == 0 {
			return true, flag.ErrHelp
		}
		return true, nil
	}
	verb, args := args[0], args[1:]
	if resource == "cards" && verb == "import-mesh" {
		return true, runImportMesh(ctx, args, stdout, stderr, getenv)
	}
	if resource == "cards" && verb == "watch" {
		return true, runWatch(ctx, args, stdout, stderr, getenv)
	}
	r, ok := verbs[verb]
	if !ok {
		resourceUsage(stderr, resource, verbs)
		names := slices.Collect(maps.Keys(verbs))
		for v := range clientCommands[resource] {
			names = append(names, v)
		}
		slices.Sort(names)
		return true, usagef("%s has no command %q%s", resource, verb, didYouMean(verb, names))
	}
	return true, runRequest(ctx, r, args, stdout, stderr, getenv)
}

// resourceUsage lists a resource's commands.
func resourceUsage(w io.Writer, resource string, verbs map[string]catalog.Request) {
	fmt.Fprintf(w, "usage: agentcards %s COMMAND [flags]   (agentcards %s COMMAND -h lists its flags)\n\ncommands:\n", resource, resource)
	names := slices.Sorted(func(yield func(string) bool) {
		for v := range verbs {
			if !yield(v) {
				return
			}
		}
		for v := range clientCommands[resource] {
			if !yield(v) {
				return
			}
		}
	})
	for _, v := range names {
		does := clientCommands[resource][v]
		if r, ok := verbs[v]; ok {
			does = r.Does
		}
		fmt.Fprintf(w, "  %-16s %s\n", v, does)
	}
}

// runRequest runs one catalogue request: its input from -f and the flags named after its
// fields, sent through the Go client, its answer printed.
func runRequest(ctx context.Context, r catalog.Request, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	fs := flag.NewFlagSet(r.Command(), flag.ContinueOnError)
	fs.SetOutput(stderr)
	var conn connection
	conn.register(fs, getenv)
	file := fs.String("f", "", inputFileHelp(r))
	fields := client.Fields(r.In)
	var given []fieldFlag
	for _, f := range fields {
		ff := fieldFlag{field: f, given: &given}
		fs.Var(ff, f.Name, fieldHelp(f))
	}
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: %s [flags]\n\n%s. Caller: %s.\n\nflags:\n", r.Command(), r.Does, r.Caller)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil // asked for: the usage is the answer
		}
		if name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: -"); ok {
			var names []string
			fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
			if near := nearest(strings.TrimLeft(name, "-"), names); near != "" {
				err = fmt.Errorf("%w (did you mean --%s?)", err, near)
			}
		}
		return usageError{err}
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return usagef("%s takes flags only, not %q", r.Command(), fs.Arg(0))
	}
	format, err := conn.format(stdout)
	if err != nil {
		return err
	}
	in, err := buildInput(r, *file, given)
	if err != nil {
		return err
	}
	var tenant string
	if s, ok := in.Interface().(api.Scoped); ok {
		tenant = *s.TenantOf()
	}
	cl, err := conn.client(getenv, tenant, r.Access == catalog.Open || r.Access == catalog.OptionalToken)
	if err != nil {
		return err
	}
	if _, ok := in.Interface().(api.Scoped); ok && cl.Tenant() == "" {
		return usagef("the token names no tenant: give --tenant")
	}
	var view []string
	if s, ok := in.Interface().(*api.CardsSearch); ok && (format == "table" || len(s.Fields) > 0) {
		if view, err = api.SearchView(s.Fields); err != nil {
			return usageError{err}
		}
		if s.Explain && !slices.Contains(view, "explain") {
			view = append(slices.Clip(view), "explain")
		}
	}
	out := reflect.New(r.Out)
	ctx, stale := client.WatchStale(ctx)
	if err := cl.Call(ctx, r.Name, in.Interface(), out.Interface()); err != nil {
		return err
	}
	if note := stale(); note != "" {
		fmt.Fprintf(stderr, "agentcards: %s: answered from memory (%s); it may miss recent writes\n", r.Name, note)
	}
	var answer any = out.Interface()
	if view != nil {
		answer = api.Compact(*out.Interface().(*api.SearchResult), view)
	}
	return printAnswer(stdout, r, answer, format, view, conn.width(stdout, getenv))
}

// buildInput builds the request's input from -f and then the flags, and refuses it where the
// service would, before anything is sent: members its fields lack or values of the wrong type in
// the caller's JSON, and then required fields left empty and values outside a field's enum or
// bounds. Every problem of a stage is named in one error, exit status 2.
func buildInput(r catalog.Request, file string, given []fieldFlag) (reflect.Value, error) {
	in := reflect.New(r.In)
	var problems []string
	if file != "" {
		p, err := readInputFile(r, file, in)
		if err != nil {
			return in, usageError{err}
		}
		problems = p
	}
	flagged := map[string]bool{}
	for _, g := range given {
		if !flagged[g.field.Name] {
			// The first value given for a field replaces what -f gave it: a list is not added to.
			flagged[g.field.Name] = true
			v := in.Elem().FieldByIndex(g.field.Index)
			v.Set(reflect.Zero(v.Type()))
		}
		problems = append(problems, g.set(in.Elem())...)
	}
	if len(problems) > 0 {
		return in, &client.Error{Request: r.Name, Code: "invalid", Message: strings.Join(problems, "; ")}
	}
	return in, client.Check(r.Name, in.Interface())
}

// inputFileHelp says what -f holds for the request.
func inputFileHelp(r catalog.Request) string {
	for _, f := range client.Fields(r.In) {
		if f.In == "body" {
			return fmt.Sprintf("a JSON file (- for stdin) holding %s; flags given override it", f.Name)
		}
	}
	return "a JSON file (- for stdin) holding the input's members; flags given override them"
}

// fieldHelp is a field flag's line of help: its doc, then what form its value takes.
func fieldHelp(f client.Field) string {
	var form string
	switch formOf(f.Type) {
	case formList:
		form = "repeat the flag or separate values by commas"
	case formJSON:
		form = "JSON, or @FILE"
		if f.Type == reflect.TypeFor[*bool]() {
			form = "true or false"
		}
	}
	help := f.Doc
	if len(f.Enum) > 0 {
		help = strings.TrimSpace(help + " (one of " + strings.Join(f.Enum, ", ") + ")")
	}
	switch {
	case f.Min != nil && f.Max != nil:
		help += fmt.Sprintf(" (%d to %d)", *f.Min, *f.Max)
	case f.Min != nil:
		help += fmt.Sprintf(" (at least %d)", *f.Min)
	case f.Max != nil:
		help += fmt.Sprintf(" (at most %d)", *f.Max)
	}
	if form != "" {
		help = strings.TrimSpace(help + " (" + form + ")")
	}
	if f.In == "header" {
		help += "; sent as If-Match"
	}
	return help
}

// flagForm is how a field's flag takes its value.
type flagForm int

const (
	formText   flagForm = iota // a string, or a pointer to one
	formBool                   // a bool: the flag alone is true
	formNumber                 // an integer
	formList                   // a list of strings: the flag repeated, or values separated by commas
	formJSON                   // anything else (objects, lists of them, raw JSON, *bool): JSON or @FILE
)

func formOf(t reflect.Type) flagForm {
	switch {
	case t == reflect.TypeFor[json.RawMessage]():
		return formJSON
	case t.Kind() == reflect.String, t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.String:
		return formText
	case t.Kind() == reflect.Bool:
		return formBool
	case t.Kind() == reflect.Int, t.Kind() == reflect.Int64:
		return formNumber
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.String:
		return formList
	}
	return formJSON
}

// fieldFlag is a flag named after an input field. Its values are kept in the order given and
// applied after -f, so that a flag overrides the file wherever it stands.
type fieldFlag struct {
	field client.Field
	given *[]fieldFlag
	value string
}

func (f fieldFlag) String() string { return "" }

func (f fieldFlag) Set(s string) error {
	if err := f.check(s); err != nil {
		return err
	}
	f.value = s
	*f.given = append(*f.given, f)
	return nil
}

// IsBoolFlag lets a bool field's flag stand alone (--allowInvalidSignature).
func (f fieldFlag) IsBoolFlag() bool { return formOf(f.field.Type) == formBool }

// check refuses a value its field cannot take, while the flags are parsed.
func (f fieldFlag) check(s string) error {
	switch formOf(f.field.Type) {
	case formBool:
		_, err := strconv.ParseBool(s)
		return err
	case formNumber:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return errors.New("want an integer")
		}
		if p := f.field.OutOfBounds(n); p != "" {
			return errors.New(p)
		}
	}
	return nil
}

// set applies the flag's value to its field of the input, and returns the problems of a JSON
// value.
func (f fieldFlag) set(in reflect.Value) []string {
	v := in.FieldByIndex(f.field.Index)
	switch formOf(f.field.Type) {
	case formJSON:
		data, at := []byte(f.value), "--"+f.field.Name
		if file, ok := strings.CutPrefix(f.value, "@"); ok {
			var err error
			if data, err = os.ReadFile(file); err != nil {
				return []string{at + ": " + err.Error()}
			}
			at += " @" + file
		}
		return decodeValue(data, v, at)
	case formText:
		if v.Kind() == reflect.Pointer {
			s := f.value
			v.Set(reflect.ValueOf(&s))
		} else {
			v.SetString(f.value)
		}
	case formBool:
		b, _ := strconv.ParseBool(f.value)
		v.SetBool(b)
	case formNumber:
		n, _ := strconv.ParseInt(f.value, 10, 64)
		v.SetInt(n)
	case formList:
		for part := range strings.SplitSeq(f.value, ",") {
			if part = strings.TrimSpace(part); part != "" {
				v.Set(reflect.Append(v, reflect.ValueOf(part)))
			}
		}
	}
	return nil
}

// resources are the resources of the CLI's requests, in the catalogue's order.
func resources() []string {
	var out []string
	for _, r := range catalog.Requests {
		res, _, _ := strings.Cut(r.Name, ".")
		if r.Doors&catalog.CLI != 0 && !slices.Contains(out, res) {
			out = append(out, res)
		}
	}
	return out
}

// describe is the line an error prints on stderr: a refusal with its request, code and status.
func describe(err error) string {
	var ce *client.Error
	if errors.As(err, &ce) && ce.Status == 0 {
		return fmt.Sprintf("%s: %s: %s", ce.Request, ce.Code, ce.Message)
	}
	if errors.As(err, &ce) {
		s := fmt.Sprintf("%s refused: %s: %s (HTTP %d", ce.Request, ce.Code, ce.Message, ce.Status)
		if ce.RequestID != "" {
			s += ", request " + ce.RequestID
		}
		return s + ")"
	}
	return err.Error()
}
