package catalog

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestNames: every request has one well-formed name, unique on every door, says what it does
// and who may call it, and says why when a door leaves it out.
func TestNames(t *testing.T) {
	name := regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*\.[a-z][a-z0-9]*(_[a-z0-9]+)*$`)
	seen := map[string]string{}
	for _, r := range Requests {
		if !name.MatchString(r.Name) {
			t.Errorf("%q: not resource.verb in lowercase words joined by _", r.Name)
		}
		for _, door := range []string{"name " + r.Name, "tool " + r.MCPTool(), "command " + r.Command(), "method " + r.GoMethod()} {
			if other, dup := seen[door]; dup {
				t.Errorf("%s: %s is also %s's", r.Name, door, other)
			}
			seen[door] = r.Name
		}
		if r.Does == "" || r.Caller == "" || len(r.Routes) == 0 {
			t.Errorf("%s: says nothing of what it does, who calls it, or its route", r.Name)
		}
		if (r.Doors != Every) != (r.NotOn != "") {
			t.Errorf("%s: doors %04b, reason %q: a door left out needs a reason, and only then", r.Name, r.Doors, r.NotOn)
		}
	}
}

func TestDoorNames(t *testing.T) {
	r := Request{Name: "cards.register_batch"}
	if r.MCPTool() != "cards_register_batch" || r.Command() != "agentcards cards register-batch" || r.GoMethod() != "Cards.RegisterBatch" {
		t.Fatalf("%q %q %q", r.MCPTool(), r.Command(), r.GoMethod())
	}
}

// TestREADMEListsEveryRequest: the README's table of requests names each one.
func TestREADMEListsEveryRequest(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range Requests {
		if !strings.Contains(string(readme), "| `"+r.Name+"` | "+r.Does+" |") {
			t.Errorf("README: no row for %s (%q)", r.Name, r.Does)
		}
	}
}
