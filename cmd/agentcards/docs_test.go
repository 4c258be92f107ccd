package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDocsCLIExamples runs, as written and in order against a real server, the README's Quick
// start and then the CLI examples of docs/doors.md, as a reader runs them in the directory where
// the Quick start built ./agentcards: each command must succeed. ./agentcards runs in process;
// curl is done by net/http; the server's address, http://127.0.0.1:8080 in the docs, is the
// test server's.
func TestDocsCLIExamples(t *testing.T) {
	quick := docBlock(t, "README.md", "## Quick start\n", "```sh\n", "```\n")
	examples := docBlock(t, filepath.Join("docs", "doors.md"), "<!-- cli examples: run by cmd/agentcards TestDocsCLIExamples -->\n", "```sh\n", "```\n<!-- end of cli examples -->")
	sh := &docShell{t: t, e: newCLIEnv(t, true), vars: map[string]string{}, exported: map[string]bool{}}
	t.Chdir(t.TempDir())
	if n := sh.run("README.md", quick); n < 5 {
		t.Fatalf("README.md: only %d commands of the Quick start ran", n)
	}
	if n := sh.run("docs/doors.md", examples); n < 5 {
		t.Fatalf("docs/doors.md: only %d CLI examples ran", n)
	}
}

// docBlock is the text of file (from the module's root) after the marker, between start and end.
func docBlock(t *testing.T, file, marker, start, end string) string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "..", file))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), marker)
	_, rest, ok2 := strings.Cut(rest, start)
	block, _, ok3 := strings.Cut(rest, end)
	if !ok || !ok2 || !ok3 {
		t.Fatalf("%s: no block after %q", file, marker)
	}
	return block
}

// docShell runs the docs' shell examples: as much of sh as they use.
type docShell struct {
	t        *testing.T
	e        *cliEnv
	vars     map[string]string
	exported map[string]bool
	source   string // the file whose commands run
}

// docServer is the server's address in the docs.
const docServer = "http://127.0.0.1:8080"

// run runs the script's commands in order and returns how many ran.
func (sh *docShell) run(source, script string) int {
	sh.source = source
	ran := 0
	for i := 0; i < len(script); {
		var words []string
		words, i = sh.command(script, i)
		if len(words) == 0 {
			continue
		}
		sh.exec(words)
		ran++
	}
	return ran
}

// exec runs one command and returns its output: an assignment (exported or not), ./agentcards
// (its output to a file with > FILE), curl, or go build, which the test has no need of.
func (sh *docShell) exec(words []string) string {
	t := sh.t
	t.Helper()
	export := false
	if words[0] == "export" {
		export, words = true, words[1:]
	}
	if name, value, ok := strings.Cut(words[0], "="); ok && len(words) == 1 {
		sh.vars[name], sh.exported[name] = value, sh.exported[name] || export
		return ""
	}
	switch {
	case words[0] == "go" && len(words) > 1 && words[1] == "build":
		return ""
	case words[0] == "curl":
		return sh.curl(words[1:])
	case words[0] != "./agentcards":
		t.Fatalf("%s: %q is not a command the test knows (the Quick start built ./agentcards)", sh.source, strings.Join(words, " "))
	}
	args, out := words[1:], ""
	if n := len(args); n >= 2 && args[n-2] == ">" {
		args, out = args[:n-2], args[n-1]
	}
	if args[0] == "token" {
		// The token command signs with the server's key: the test server's configuration says it.
		args = append(args, "--config", sh.e.config)
	}
	var env []string
	for k, v := range sh.vars {
		if sh.exported[k] {
			env = append(env, k+"="+v)
		}
	}
	var stdout, stderr bytes.Buffer
	if code := cli(context.Background(), args, &stdout, &stderr, env); code != 0 {
		t.Fatalf("%s: ./agentcards %s\nexit %d\n%s%s", sh.source, strings.Join(args, " "), code, stdout.String(), stderr.String())
	}
	if out != "" {
		if err := os.WriteFile(out, stdout.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
		return ""
	}
	return stdout.String()
}

// curl sends the request of curl's arguments (-s, -i, -X, -H, -d and the URL), which must
// succeed, and returns the answer's body.
func (sh *docShell) curl(args []string) string {
	t := sh.t
	t.Helper()
	method, target, header := "", "", http.Header{}
	var body io.Reader
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "-s" || a == "-i":
		case a == "-X" && i+1 < len(args):
			i++
			method = args[i]
		case a == "-H" && i+1 < len(args):
			i++
			k, v, _ := strings.Cut(args[i], ":")
			header.Add(k, strings.TrimSpace(v))
		case a == "-d" && i+1 < len(args):
			i++
			body = strings.NewReader(args[i])
		case !strings.HasPrefix(a, "-") && target == "":
			target = a
		default:
			t.Fatalf("%s: curl %s: the test does not know %q", sh.source, strings.Join(args, " "), a)
		}
	}
	if method == "" {
		method = http.MethodGet
		if body != nil {
			method = http.MethodPost
		}
	}
	req, err := http.NewRequest(method, target, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header = header
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s: curl %s: %v", sh.source, strings.Join(args, " "), err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		t.Fatalf("%s: curl %s: %s\n%s", sh.source, strings.Join(args, " "), resp.Status, answer)
	}
	return string(answer)
}

// command reads the command of script that starts at i, as sh would for the docs' examples:
// words at blanks, quotes kept together ('...' as it is, "..." with $NAME replaced), a
// backslash before a newline joining lines, a newline ending the command, # starting a
// comment, $NAME and $(command) replaced by the variable's value and the command's output. It
// returns the words and where the next command starts.
func (sh *docShell) command(script string, i int) ([]string, int) {
	t := sh.t
	t.Helper()
	var words []string
	var w strings.Builder
	in, quote := false, byte(0)
	for ; i < len(script); i++ {
		c := script[i]
		switch {
		case quote == '\'':
			if c == '\'' {
				quote = 0
			} else {
				w.WriteByte(c)
			}
		case c == '$':
			var value string
			value, i = sh.substitute(script, i)
			w.WriteString(value)
			in = true
		case quote == '"':
			if c == '"' {
				quote = 0
			} else {
				w.WriteByte(c)
			}
		case c == '\'' || c == '"':
			quote, in = c, true
		case c == '\\' && i+1 < len(script) && script[i+1] == '\n':
			i++
		case c == '#' && !in:
			for i+1 < len(script) && script[i+1] != '\n' {
				i++
			}
		case c == ' ' || c == '\t' || c == '\n':
			if in {
				words, in = append(words, strings.ReplaceAll(w.String(), docServer, sh.e.base)), false
				w.Reset()
			}
			if c == '\n' && len(words) > 0 {
				return words, i + 1
			}
		default:
			w.WriteByte(c)
			in = true
		}
	}
	if quote != 0 {
		t.Fatalf("%s: unclosed quote", sh.source)
	}
	if in {
		words = append(words, strings.ReplaceAll(w.String(), docServer, sh.e.base))
	}
	return words, i
}

// substitute reads $NAME or $(command) at script[i] and returns its value and the index of its
// last byte.
func (sh *docShell) substitute(script string, i int) (string, int) {
	t := sh.t
	t.Helper()
	if strings.HasPrefix(script[i:], "$(") {
		end := strings.IndexByte(script[i:], ')')
		if end < 0 {
			t.Fatalf("%s: unclosed $(", sh.source)
		}
		words, _ := sh.command(script[i+2:i+end]+"\n", 0)
		return strings.TrimRight(sh.exec(words), "\n"), i + end
	}
	j := i + 1
	for j < len(script) && (script[j] == '_' || 'A' <= script[j] && script[j] <= 'Z' || 'a' <= script[j] && script[j] <= 'z' || '0' <= script[j] && script[j] <= '9') {
		j++
	}
	name := script[i+1 : j]
	value, ok := sh.vars[name]
	if name == "" || !ok {
		t.Fatalf("%s: $%s is not set", sh.source, name)
	}
	return value, j - 1
}
