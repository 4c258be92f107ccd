package authz

import (
	"errors"
	"testing"
)

func TestValidateObject(t *testing.T) {
	good := []string{"policies", "trust", "sources", "cards/agt1", "cards/*", "cards/*/capabilities/review_pr", "cards/a.b-c/capabilities/*", "delegations/*", "delegations/0190-ab"}
	for _, o := range good {
		if err := ValidateObject(o, true); err != nil {
			t.Errorf("%q refused: %v", o, err)
		}
	}
	bad := []string{"", "cards", "cards/", "cards//capabilities/x", "cards/x/capabilities/", "cards/x/skills/y", "cards/**",
		"cards/a*", "cards/[ab]", "cards/{a,b}", "cards/a?", `cards/a\b`, "cards/!a", "cards/a b", "policies/x",
		"delegations", "secrets/x", "sources/src_1", "cards/x/capabilities/y/z"}
	for _, o := range bad {
		if err := ValidateObject(o, true); !errors.Is(err, ErrInvalid) {
			t.Errorf("%q accepted", o)
		}
	}
	if err := ValidateObject("cards/*", false); !errors.Is(err, ErrInvalid) {
		t.Error("a wildcard accepted where a concrete object is required")
	}
}
