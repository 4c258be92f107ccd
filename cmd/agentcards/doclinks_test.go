package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
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
	links := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); p != root && (strings.HasPrefix(name, ".") || name == "node_modules" || name == "data") {
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
			if anchor != "" && strings.HasSuffix(to, ".md") && !anchorsOf(to)[anchor] {
				t.Errorf("%s: link to %s: %s has no heading with that anchor", from, target, to)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if links < 100 {
		t.Fatalf("only %d relative links found: the walk missed the docs", links)
	}
}

var (
	linkRE       = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	inlineCodeRE = regexp.MustCompile("`[^`]*`")
	htmlAnchorRE = regexp.MustCompile(`<a (?:id|name)="([^"]+)"`)
)

// markdownLinks returns the targets of the inline links of a Markdown text, outside fenced code
// blocks and code spans.
func markdownLinks(text string) []string {
	var out []string
	fenced := false
	for line := range strings.Lines(text) {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		for _, m := range linkRE.FindAllStringSubmatch(inlineCodeRE.ReplaceAllString(line, ""), -1) {
			out = append(out, m[1])
		}
	}
	return out
}

// headingAnchors returns the anchors GitHub gives a Markdown text's headings (lowercased; every
// character but letters, digits, spaces, - and _ dropped; spaces turned into -; a repeated one
// numbered -1, -2, ...), and those of its <a id> tags.
func headingAnchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	fenced := false
	for line := range strings.Lines(text) {
		line = strings.TrimRight(line, "\r\n")
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		for _, m := range htmlAnchorRE.FindAllStringSubmatch(line, -1) {
			out[m[1]] = true
		}
		if fenced || !strings.HasPrefix(line, "#") {
			continue
		}
		heading := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(heading) {
			switch {
			case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteRune('-')
			}
		}
		slug := b.String()
		if n := seen[slug]; n > 0 {
			out[slug+"-"+strconv.Itoa(n)] = true
		} else {
			out[slug] = true
		}
		seen[slug]++
	}
	return out
}
