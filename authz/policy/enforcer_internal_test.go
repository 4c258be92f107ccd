package policy

import "testing"

// TestCardBlind: only "cards/*" and patterns whose first segment is a plain name other than
// "cards" are taken to match every card alike; any other may tell cards apart (rules stored
// through the API cannot start with a glob, rules of older rows or other writers might).
func TestCardBlind(t *testing.T) {
	for pattern, want := range map[string]bool{
		"cards/*": true, "policies": true, "audit": true, "delegations/d1": true,
		"cards/a*": false, "cards/agt1": false, "cards/*/capabilities/*": false, "delegations/*": true, "cards": false,
		"*/*": false, "**": false, "c*/*": false, "{cards,x}/*": false, "cards/?": false, "card[s]/*": false, `cards\/x`: false,
	} {
		if got := cardBlind(pattern); got != want {
			t.Errorf("cardBlind(%q) = %v, want %v", pattern, got, want)
		}
	}
	for obj, want := range map[string]bool{"cards/agt1": true, "cards/a.b-c": true, "cards/": false, "cards/x/capabilities/y": false, "policies": false, "cardsx": false} {
		if got := cardObject(obj); got != want {
			t.Errorf("cardObject(%q) = %v, want %v", obj, got, want)
		}
	}
}
