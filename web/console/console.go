// Package console is the web console for tenant admins: plain HTML, CSS and JavaScript modules,
// embedded in the binary and served at /console/. It holds no rights of its own: the page talks
// to the REST API only, with the token its user pastes (kept in the tab's sessionStorage and sent
// as a bearer header), so it can do exactly what that token can.
package console

import (
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strconv"
	"strings"
)

// Path is where the console is served; its pages are /console/#/... (the part after # never
// reaches the server).
const Path = "/console/"

//go:embed assets
var assets embed.FS

// Policy is the content security policy of every console file: scripts, styles and images from
// the console's own origin only, no inline script or style, fetches to the same origin (the
// API), no frames, no plugins, and forms that go nowhere (the scripts send what they hold).
const Policy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// file is one embedded file, ready to serve.
type file struct {
	body        []byte
	contentType string
	etag        string
}

// files are the console's files by their path under Path ("" is index.html).
var files = func() map[string]file {
	out := map[string]file{}
	err := fs.WalkDir(assets, "assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := assets.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(body)
		ct := mime.TypeByExtension(path.Ext(p))
		if path.Ext(p) == ".js" {
			ct = "text/javascript; charset=utf-8" // the same on every machine, whatever its mime.types says
		}
		out[strings.TrimPrefix(p, "assets/")] = file{body: body, contentType: ct,
			etag: `"` + base64.RawURLEncoding.EncodeToString(sum[:12]) + `"`}
		return nil
	})
	if err != nil {
		panic("console: reading the embedded files: " + err.Error())
	}
	out[""] = out["index.html"]
	return out
}()

// Names lists the console's files by their path under Path.
func Names() []string {
	var names []string
	for name := range files {
		if name != "" {
			names = append(names, name)
		}
	}
	return names
}

// Serve answers GET and HEAD of one console file, name being its path under Path, with its
// security headers; it reports false when there is no such file. Files are revalidated on
// every load (no-cache with an ETag), so a new release's console is the one users get.
func Serve(w http.ResponseWriter, r *http.Request, name string) bool {
	f, ok := files[name]
	if !ok {
		return false
	}
	h := w.Header()
	h.Set("Content-Security-Policy", Policy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cache-Control", "no-cache")
	h.Set("ETag", f.etag)
	if match := r.Header.Get("If-None-Match"); match != "" && strings.Contains(match, f.etag) {
		w.WriteHeader(http.StatusNotModified)
		return true
	}
	h.Set("Content-Type", f.contentType)
	h.Set("Content-Length", strconv.Itoa(len(f.body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(f.body)
	}
	return true
}
