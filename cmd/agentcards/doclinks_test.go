package main

import (
	"html"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// TestDocsLinks: every relative link of the project's Markdown files (the README, docs/, bench/,
// the judged sets' READMEs, ...) names a file or directory that exists, and every #anchor of one
// names a heading (or an <a id>) of the Markdown file it points into, as GitHub makes anchors of
// headings. Links inside code are not links.
func TestDocsLinks(t *testing.T) {
	root := filepath.Join("..", "..")
	anchors := map[string]map[string]bool{} // by path from root
	anchorsOf := func(path string) map[string]bool {
		if a, ok := anchors[path]; ok {
			return a
		}
		b, err := os.ReadFile(filepath.Join(root, path))
		if err != nil {
			t.Fatal(err)
		}
		anchors[path] = headingAnchors(string(b))
		return anchors[path]
	}
	links, anchored := 0, 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			// The service's own data directory, where a Quick start left one, holds no docs.
			if name := d.Name(); p != root && (strings.HasPrefix(name, ".") || name == "node_modules" || p == filepath.Join(root, "data")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".md") {
			return nil
		}
		from, _ := filepath.Rel(root, p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, target := range markdownLinks(string(b)) {
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			links++
			file, anchor, _ := strings.Cut(target, "#")
			to := from
			if file != "" {
				to = filepath.Join(filepath.Dir(from), file)
				if _, err := os.Stat(filepath.Join(root, to)); err != nil {
					t.Errorf("%s: link to %s: no such file", from, target)
					continue
				}
			}
			if anchor != "" && strings.HasSuffix(to, ".md") {
				anchored++
				if !anchorsOf(to)[anchor] {
					t.Errorf("%s: link to %s: %s has no heading with that anchor", from, target, to)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if links < 100 || anchored < 50 {
		t.Fatalf("only %d relative links found, %d with an anchor: the walk missed the docs", links, anchored)
	}
}

var (
	// linkRE finds an inline link's target, bare or in <...>, with or without a title.
	linkRE = regexp.MustCompile(`\]\(\s*(?:<([^>\n]*)>|([^)\s]+))(?:\s+(?:"[^"]*"|'[^']*'|\([^)]*\)))?\s*\)`)
	// refDefRE finds a reference link's definition: [name]: target.
	refDefRE     = regexp.MustCompile(`^ {0,3}\[[^\]]+\]:\s*<?([^\s>]+)>?`)
	inlineCodeRE = regexp.MustCompile("`[^`]*`")
	htmlAnchorRE = regexp.MustCompile(`<a (?:id|name)="([^"]+)"`)
	fenceRE      = regexp.MustCompile("^ {0,3}(```|~~~)")
	// In a heading: a link (its text is kept), an HTML tag, closing #s.
	headingLinkRE  = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
	headingTagRE   = regexp.MustCompile(`<[^>]+>`)
	closingHashRE  = regexp.MustCompile(`\s+#+\s*$`)
	emphasisMarkRE = regexp.MustCompile(`(^|\W)[*_]+|[*_]+(\W|$)`)
)

// fences tracks the fenced code blocks of a Markdown text, a line at a time.
type fences struct{ open string }

// code reports whether line is in a fenced code block or one of its fences.
func (f *fences) code(line string) bool {
	if m := fenceRE.FindStringSubmatch(line); m != nil {
		switch f.open {
		case "":
			f.open = m[1]
		case m[1]:
			f.open = ""
		}
		return true
	}
	return f.open != ""
}

// markdownLinks returns the targets of the inline links and the reference definitions of a
// Markdown text, outside fenced code blocks and code spans.
func markdownLinks(text string) []string {
	var out []string
	var f fences
	for line := range strings.Lines(text) {
		if f.code(line) {
			continue
		}
		line = inlineCodeRE.ReplaceAllString(line, "")
		for _, m := range linkRE.FindAllStringSubmatch(line, -1) {
			out = append(out, m[1]+m[2])
		}
		if m := refDefRE.FindStringSubmatch(line); m != nil {
			out = append(out, m[1])
		}
	}
	return out
}

// headingAnchors returns the anchors GitHub gives a Markdown text's ATX headings, and those of
// its <a id> tags, outside fenced code.
func headingAnchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	var f fences
	for line := range strings.Lines(text) {
		line = strings.TrimRight(line, "\r\n")
		if f.code(line) {
			continue
		}
		for _, m := range htmlAnchorRE.FindAllStringSubmatch(line, -1) {
			out[m[1]] = true
		}
		if !strings.HasPrefix(line, "#") {
			continue
		}
		base := headingSlug(strings.TrimLeft(line, "#"))
		// As github-slugger numbers repeats: the first free of base, base-1, base-2, ...
		slug := base
		for out[slug] {
			seen[base]++
			slug = base + "-" + strconv.Itoa(seen[base])
		}
		out[slug] = true
	}
	return out
}

// headingSlug is the anchor GitHub makes of a heading's text: as rendered (a link's text, no
// tags, entities decoded, no emphasis marks outside code), lowercased, every character but
// letters, digits, spaces, - and _ dropped, and spaces turned into -.
func headingSlug(heading string) string {
	heading = closingHashRE.ReplaceAllString(strings.TrimSpace(heading), "")
	heading = headingLinkRE.ReplaceAllString(heading, "$1")
	heading = html.UnescapeString(headingTagRE.ReplaceAllString(heading, ""))
	// Emphasis marks go; what a code span holds stays as it is (cost_center).
	parts := strings.Split(heading, "`")
	for i := 0; i < len(parts); i += 2 {
		parts[i] = emphasisMarkRE.ReplaceAllString(parts[i], "$1$2")
	}
	var b strings.Builder
	for _, r := range strings.ToLower(strings.Join(parts, "")) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}

// TestDocsLinksRules: the anchors and links TestDocsLinks reads are GitHub's.
func TestDocsLinksRules(t *testing.T) {
	for heading, want := range map[string]string{
		"Re-ranking by meaning (`search.encoder`)": "re-ranking-by-meaning-searchencoder",
		"A — B":                       "a--b",
		"Foo ##":                      "foo",
		"See [Doors](doors.md) now":   "see-doors-now",
		"_Emph_ and *strong* words":   "emph-and-strong-words",
		"`cost_center` of snake_case": "cost_center-of-snake_case",
		"Q &amp; A <em>here</em>":     "q--a-here",
	} {
		if got := headingSlug(heading); got != want {
			t.Errorf("headingSlug(%q) = %q, want %q", heading, got, want)
		}
	}
	anchors := headingAnchors("# Foo 1\n## Foo\n## Foo\n```\n# Not\n<a id=\"in-code\">\n```\n~~~\n# Nor\n~~~\n<a id=\"here\"></a>\n")
	for _, a := range []string{"foo-1", "foo", "foo-2", "here"} {
		if !anchors[a] {
			t.Errorf("anchor %q missing from %v", a, anchors)
		}
	}
	for _, a := range []string{"not", "in-code", "nor"} {
		if anchors[a] {
			t.Errorf("anchor %q made in code: %v", a, anchors)
		}
	}
	links := markdownLinks("[a](x.md \"t\") [b](<y z.md>) `[c](no.md)`\n[ref]: z.md#q\n~~~\n[d](code.md)\n~~~\n")
	if want := []string{"x.md", "y z.md", "z.md#q"}; !slices.Equal(links, want) {
		t.Errorf("links %q, want %q", links, want)
	}
}
