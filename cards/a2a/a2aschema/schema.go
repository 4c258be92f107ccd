// Package a2aschema holds the A2A specification's JSON Schemas for the Agent Card (1.0 and
// 0.3.0, copied from the spec) and checks documents against them, reporting each problem with the
// JSON path where it was found.
package a2aschema

import (
	"bytes"
	"embed"
	"fmt"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

//go:embed a2a-v1.schema.json a2a-v0.3.0.schema.json
var files embed.FS

// Pointers to the Agent Card inside each bundle: validating against a bundle's root checks nothing.
const (
	CardV1  = "a2a-v1.schema.json#/$defs/AgentCard"
	CardV03 = "a2a-v0.3.0.schema.json#/definitions/AgentCard"
)

var (
	once     sync.Once
	compiled map[string]*jsonschema.Schema
	initErr  error
)

func load() {
	c := jsonschema.NewCompiler()
	for _, name := range []string{"a2a-v1.schema.json", "a2a-v0.3.0.schema.json"} {
		b, err := files.ReadFile(name)
		if err != nil {
			initErr = err
			return
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			initErr = fmt.Errorf("%s: %w", name, err)
			return
		}
		if err := c.AddResource(name, doc); err != nil {
			initErr = err
			return
		}
	}
	compiled = map[string]*jsonschema.Schema{}
	for _, loc := range []string{CardV1, CardV03} {
		s, err := c.Compile(loc)
		if err != nil {
			initErr = fmt.Errorf("compile %s: %w", loc, err)
			return
		}
		compiled[loc] = s
	}
}

// Validate checks the JSON document doc against the schema at loc (CardV1 or CardV03). It
// returns the problems found, each as "path: message" with a JSON Pointer path, at most max; an
// error means doc is not JSON or the schemas did not load.
func Validate(loc string, doc []byte, max int) ([]string, error) {
	once.Do(load)
	if initErr != nil {
		return nil, initErr
	}
	s, ok := compiled[loc]
	if !ok {
		return nil, fmt.Errorf("no schema %q", loc)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return nil, err
	}
	verr, ok := s.Validate(inst).(*jsonschema.ValidationError)
	if !ok || verr == nil {
		return nil, nil
	}
	var out []string
	seen := map[string]bool{}
	for _, u := range verr.BasicOutput().Errors {
		if u.Error == nil || len(out) >= max {
			continue
		}
		msg := u.Error.String()
		if strings.HasPrefix(msg, "validation failed") || strings.HasPrefix(msg, "allOf failed") {
			continue // wrappers of the leaf problems listed after them
		}
		path := u.InstanceLocation
		if path == "" {
			path = "/"
		}
		line := path + ": " + msg
		if !seen[line] {
			seen[line] = true
			out = append(out, line)
		}
	}
	if len(out) == 0 {
		// The flat list can hold only wrappers (a failure under a $ref); the tree's leaves
		// say what failed. verr.Error() would not do: it names the schema's file URL, which
		// the library resolves against the server's working directory.
		addLeaves(verr, max, &out, seen)
	}
	return out, nil
}

// english renders the library's messages, as its own Error does.
var english = message.NewPrinter(language.English)

// addLeaves appends "path: message" for each leaf problem under e, at most max in all.
func addLeaves(e *jsonschema.ValidationError, max int, out *[]string, seen map[string]bool) {
	if len(e.Causes) == 0 {
		path := ""
		for _, tok := range e.InstanceLocation {
			path += "/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(tok)
		}
		if path == "" {
			path = "/"
		}
		if line := path + ": " + e.ErrorKind.LocalizedString(english); len(*out) < max && !seen[line] {
			seen[line] = true
			*out = append(*out, line)
		}
	}
	for _, c := range e.Causes {
		addLeaves(c, max, out, seen)
	}
}
