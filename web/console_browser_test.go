package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/agentcards/agentcards/web/console"
)

// browser is a headless Chromium (Debian's chromium) driving the console of one test server.
// It records what would show in the browser's own console (exceptions, console.error, and any
// other error but failed loads, which the API's refusals are) and every request the page sends;
// when the test ends, either of them failing the console's promises fails the test, and a
// failed test leaves a screenshot.
type browser struct {
	t    *testing.T
	ctx  context.Context
	base string

	mu       sync.Mutex
	errors   []string
	requests []sentRequest
}

type sentRequest struct{ method, url, body string }

// chromium finds the browser. CI installs it (.ci/run), so there a missing one fails the test;
// elsewhere the test is skipped with the command that installs it.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("chromium is not installed (apt-get install chromium); .ci/run installs it")
	}
	t.Skip("chromium is not installed: apt-get install chromium")
	return ""
}

// patienceUI bounds each wait for the page: generous, since CI runs the tests under -race on two
// cores beside the databases.
const patienceUI = 20 * time.Second

func newBrowser(t *testing.T, e *env) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)),
		chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 1024),
	)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	b := &browser{t: t, base: e.srv.URL}
	ctx, cancelCtx := chromedp.NewContext(alloc, chromedp.WithListener(b.listen))
	b.ctx = ctx
	// The first run starts the browser, on a context without a deadline (one would end the
	// browser with it).
	if err := chromedp.Do(ctx); err != nil {
		cancelCtx()
		cancelAlloc()
		t.Fatalf("starting chromium: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			b.screenshot("failed")
		}
		b.checkRequests(e)
		b.mu.Lock()
		for _, msg := range b.errors {
			t.Errorf("the browser's console: %s", msg)
		}
		b.mu.Unlock()
		cancelCtx()
		cancelAlloc()
	})
	return b
}

// listen keeps what the browser reports: errors the page's console would show, and requests.
func (b *browser) listen(ev any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch ev := ev.(type) {
	case *runtime.EventExceptionThrown:
		d := ev.ExceptionDetails
		msg := d.Text
		if d.Exception != nil {
			msg += " " + d.Exception.Description
		}
		b.errors = append(b.errors, fmt.Sprintf("exception at %s:%d: %s", d.URL, d.LineNumber, msg))
	case *runtime.EventConsoleAPICalled:
		if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeWarning {
			var args []string
			for _, a := range ev.Args {
				args = append(args, string(a.Value)+a.Description)
			}
			b.errors = append(b.errors, fmt.Sprintf("console.%s: %s", ev.Type, strings.Join(args, " ")))
		}
	case *log.EventEntryAdded:
		// A refused request (403, 412, ...) is logged as a failed load: the console expects
		// those and shows them itself. Anything else at error level is a fault of the page (a
		// content security policy violation among them).
		if ev.Entry.Level == log.EntryLevelError && ev.Entry.Source != log.EntrySourceNetwork {
			b.errors = append(b.errors, fmt.Sprintf("%s: %s", ev.Entry.Source, ev.Entry.Text))
		}
	case *network.EventRequestWillBeSent:
		var body []byte
		for _, e := range ev.Request.PostDataEntries {
			body = append(body, e.Bytes...)
		}
		b.requests = append(b.requests, sentRequest{ev.Request.Method, ev.Request.URL, string(body)})
	}
}

// screenshot saves the page as it is into AGENTCARDS_CONSOLE_SHOTS (a temporary directory
// when unset) and logs where.
func (b *browser) screenshot(name string) {
	file := strings.NewReplacer("/", "_", " ", "_").Replace(b.t.Name()) + "-" + name + ".png"
	b.screenshotOf(file, chromedp.FullScreenshot(100))
}

// screenshotOf saves what take captures (the whole page, or what the window shows) as name.
func (b *browser) screenshotOf(name string, take chromedp.Action[[]byte]) {
	dir := os.Getenv("AGENTCARDS_CONSOLE_SHOTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "agentcards-console-shots")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.t.Logf("screenshot: %v", err)
		return
	}
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, take)
	if err != nil {
		b.t.Logf("screenshot: %v", err)
		return
	}
	file := filepath.Join(dir, name)
	if err := os.WriteFile(file, png, 0o644); err != nil {
		b.t.Logf("screenshot: %v", err)
		return
	}
	b.t.Logf("screenshot of the page: %s", file)
}

// shot saves a screenshot of the page when AGENTCARDS_CONSOLE_SHOTS names a directory (the
// pictures of docs/console.md are taken so).
func (b *browser) shot(name string) {
	if os.Getenv("AGENTCARDS_CONSOLE_SHOTS") != "" {
		b.screenshotOf(name+".png", chromedp.CaptureScreenshot())
	}
}

// do runs actions, failing the test (naming the step) on an error or after patienceUI.
func (b *browser) do(step string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, patienceUI)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.t.Fatalf("%s: %v", step, err)
	}
}

// open loads a console page (a hash route, as "#/cards").
func (b *browser) open(hash string) {
	b.t.Helper()
	b.do("open "+hash, chromedp.Navigate(b.base+console.Path+hash))
	b.loaded(hash)
}

// loaded waits until the console has rendered the page of hash.
func (b *browser) loaded(hash string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, patienceUI)
	defer cancel()
	want, _ := json.Marshal(hash)
	ok, err := chromedp.Run(ctx, chromedp.Poll[bool](
		`(() => { const m = document.getElementById('main'); return m.dataset.route === `+string(want)+` && m.getAttribute('aria-busy') === 'false'; })()`,
		chromedp.WithPollingTimeout(patienceUI)))
	if err != nil || !ok {
		b.t.Fatalf("waiting for the page %q: %v (the page shows %q)", hash, err, b.textNow("#main"))
	}
	b.checkLabels(hash)
}

// checkLabels fails the test for a form control of the page that has no label.
func (b *browser) checkLabels(hash string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, patienceUI)
	defer cancel()
	unlabelled, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('input, select, textarea, button')]
		.filter((el) => !(el.labels && el.labels.length) && !el.getAttribute('aria-label') && !(el.tagName === 'BUTTON' && el.textContent.trim()))
		.map((el) => el.outerHTML.slice(0, 80))`))
	if err != nil {
		b.t.Fatalf("checking labels: %v", err)
	}
	for _, el := range unlabelled {
		b.t.Errorf("page %q: a control without a label: %s", hash, el)
	}
}

// signIn opens the console, signs in with token (and tenant, when given) and waits for the
// page it lands on (#/cards, or #/tenants for a platform admin without a tenant).
func (b *browser) signIn(token, tenant, landing string) {
	b.t.Helper()
	b.open("")
	b.submit("sign in", map[string]string{"#f-token": token, "#f-tenant": tenant}, `form.login button[type=submit]`)
	b.do("signed in", chromedp.WaitVisible(chromedp.ID("sign-out")))
	b.loaded(landing)
}

// sent are the requests the page sent to paths ending with suffix, by method.
func (b *browser) sent(method, suffix string) []sentRequest {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []sentRequest
	for _, r := range b.requests {
		if u, err := url.Parse(r.url); err == nil && r.method == method && strings.HasSuffix(u.Path, suffix) {
			out = append(out, r)
		}
	}
	return out
}

// waitText waits until the element of the CSS selector exists and its text contains want.
func (b *browser) waitText(sel, want string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, patienceUI)
	defer cancel()
	ok, err := chromedp.Run(ctx, chromedp.PollFunction[bool](
		`(sel, want) => { const el = document.querySelector(sel); return !!el && el.textContent.includes(want); }`,
		chromedp.WithPollingArgs(sel, want), chromedp.WithPollingTimeout(patienceUI)))
	if err != nil || !ok {
		b.t.Fatalf("waiting for %q in %s: %v (it holds %q)", want, sel, err, b.textNow(sel))
	}
}

// textNow is the text of the element of sel, or "" when there is none.
func (b *browser) textNow(sel string) string {
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	s, _ := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`(document.querySelector(%q) || {textContent: ""}).textContent`, sel)))
	return s
}

// evalString evaluates a JavaScript expression whose value is a string.
func (b *browser) evalString(expr string) string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, patienceUI)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr))
	if err != nil {
		b.t.Fatalf("evaluating %s: %v", expr, err)
	}
	return s
}

// evalAsync evaluates a JavaScript expression whose value is a promise of a string.
func (b *browser) evalAsync(expr string) string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, patienceUI)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		b.t.Fatalf("evaluating %s: %v", expr, err)
	}
	return s
}

// focused is the id of the element that has the focus.
func (b *browser) focused() string {
	b.t.Helper()
	return b.evalString(`document.activeElement ? document.activeElement.id : ''`)
}

// count is the number of elements of a CSS selector.
func (b *browser) count(sel string) int {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, patienceUI)
	defer cancel()
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](fmt.Sprintf(`document.querySelectorAll(%q).length`, sel)))
	if err != nil {
		b.t.Fatalf("counting %s: %v", sel, err)
	}
	return n
}

// value is the value of the form control of a CSS selector.
func (b *browser) value(sel string) string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, patienceUI)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Value(chromedp.CSS(sel)))
	if err != nil {
		b.t.Fatalf("reading %s: %v", sel, err)
	}
	return v
}

// submit fills form fields (CSS selector to value) and clicks the button.
func (b *browser) submit(step string, fields map[string]string, button string) {
	b.t.Helper()
	for _, sel := range slices.Sorted(maps.Keys(fields)) {
		b.fill(step, sel, fields[sel])
	}
	b.do(step, chromedp.Click(chromedp.CSS(button)))
}

// fill sets the value of a form control as typing would (its input and change events fire).
func (b *browser) fill(step, sel, value string) {
	b.t.Helper()
	args, _ := json.Marshal([]string{sel, value})
	ctx, cancel := context.WithTimeout(b.ctx, patienceUI)
	defer cancel()
	err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(sel)))
	var ok bool
	if err == nil {
		ok, err = chromedp.Run(ctx, chromedp.Evaluate[bool](`(([sel, v]) => { const el = document.querySelector(sel); el.value = v;
			el.dispatchEvent(new Event('input', {bubbles: true})); el.dispatchEvent(new Event('change', {bubbles: true}));
			return el.value === v; })(`+string(args)+`)`))
	}
	if err != nil || !ok {
		b.t.Fatalf("%s: setting %s: %v", step, sel, err)
	}
}

// confirmDialog answers the page's confirmation dialog.
func (b *browser) confirmDialog(ok bool) {
	b.t.Helper()
	button := "confirm-cancel"
	if ok {
		button = "confirm-ok"
	}
	b.do("answer the dialog", chromedp.WaitVisible(chromedp.ID("confirm")), chromedp.Click(chromedp.ID(button)),
		chromedp.WaitNotVisible(chromedp.ID("confirm")))
}

// checkRequests fails the test for any request the page sent that is neither a console file
// nor a route of the OpenAPI document (its method, its path, and query parameters it declares).
func (b *browser) checkRequests(e *env) {
	b.mu.Lock()
	sent := slices.Clone(b.requests)
	b.mu.Unlock()
	doc := openAPIRoutes(b.t, e)
	for _, r := range sent {
		u, err := url.Parse(r.url)
		if err != nil || u.Scheme == "data" {
			continue
		}
		if u.Host != strings.TrimPrefix(b.base, "http://") {
			b.t.Errorf("the console sent %s %s: not to its own server", r.method, r.url)
			continue
		}
		if u.Path == console.Path || (strings.HasPrefix(u.Path, console.Path) && slices.Contains(console.Names(), strings.TrimPrefix(u.Path, console.Path))) {
			if r.method != http.MethodGet || u.RawQuery != "" {
				b.t.Errorf("the console sent %s %s for one of its files", r.method, r.url)
			}
			continue
		}
		if u.Path == "/favicon.ico" {
			continue // the browser's own request, not the console's
		}
		if msg := doc.admits(r.method, u); msg != "" {
			b.t.Errorf("the console sent %s %s: %s", r.method, r.url, msg)
		}
	}
	if len(sent) == 0 {
		b.t.Error("the browser recorded no request at all")
	}
}

// apiRoutes are the OpenAPI document's operations: per path pattern, the methods and the query
// parameters each takes.
type apiRoutes []apiRoute

type apiRoute struct {
	pattern *regexp.Regexp
	path    string
	ops     map[string][]string
}

func openAPIRoutes(t *testing.T, e *env) apiRoutes {
	r := e.do("GET", "/openapi.json", "", nil)
	expect(t, r, http.StatusOK)
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	r.json(t, &doc)
	var routes apiRoutes
	param := regexp.MustCompile(`\\\{[A-Za-z]+\\\}`)
	for path, item := range doc.Paths {
		route := apiRoute{path: path, ops: map[string][]string{},
			pattern: regexp.MustCompile("^" + param.ReplaceAllString(regexp.QuoteMeta(path), `[^/]+`) + "$")}
		var shared []string
		var itemParams struct {
			Parameters []struct{ Name, In string } `json:"parameters"`
		}
		if raw, ok := item["parameters"]; ok {
			_ = json.Unmarshal([]byte(`{"parameters":`+string(raw)+`}`), &itemParams)
			for _, p := range itemParams.Parameters {
				if p.In == "query" {
					shared = append(shared, p.Name)
				}
			}
		}
		for method, raw := range item {
			if method == "parameters" {
				continue
			}
			var op struct {
				Parameters []struct{ Name, In string } `json:"parameters"`
			}
			if err := json.Unmarshal(raw, &op); err != nil {
				t.Fatalf("openapi %s %s: %v", method, path, err)
			}
			query := slices.Clone(shared)
			for _, p := range op.Parameters {
				if p.In == "query" {
					query = append(query, p.Name)
				}
			}
			route.ops[strings.ToUpper(method)] = query
		}
		routes = append(routes, route)
	}
	return routes
}

// admits says why the document has no operation for the request, or "" when it has. A path
// may match several patterns (cards/search is also cards/{agentId}): one operation that takes
// the request is enough.
func (routes apiRoutes) admits(method string, u *url.URL) string {
	why := "no path of the OpenAPI document"
	for _, r := range routes {
		if !r.pattern.MatchString(u.EscapedPath()) {
			continue
		}
		query, ok := r.ops[method]
		if !ok {
			why = fmt.Sprintf("%s has no %s in the OpenAPI document", r.path, method)
			continue
		}
		took := true
		for name := range u.Query() {
			if !slices.Contains(query, name) {
				why, took = fmt.Sprintf("%s %s takes no query parameter %q in the OpenAPI document", method, r.path, name), false
			}
		}
		if took {
			return ""
		}
	}
	return why
}
