package cards_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/cards"
)

type inner struct {
	URI    string `json:"uri"`
	Access string `json:"access,omitempty"`
}

type embedded struct {
	Tenant string `json:"tenant,omitempty"`
}

type outer struct {
	embedded
	AgentID   string             `json:"agentId"`
	Resources []inner            `json:"resources,omitempty"`
	Byname    map[string]inner   `json:"byName,omitempty"`
	Raw       json.RawMessage    `json:"raw,omitempty"`
	Any       map[string]any     `json:"any,omitempty"`
	Time      *cards.Deprecation `json:"deprecation,omitempty"`
	Skipped   string             `json:"-"`
}

// TestCheckNames: members are the type's by their exact names, at every depth (a list's items, a
// map's values, an embedded struct's fields); every other one is named, with the name it misses
// only in case where there is one; free JSON is not looked into; what is not JSON passes to the
// decoder.
func TestCheckNames(t *testing.T) {
	typ := reflect.TypeFor[*outer]()
	for _, c := range []struct {
		doc, want string
	}{
		{`{"tenant": "acme", "agentId": "a", "resources": [{"uri": "u", "access": "read"}], "byName": {"k": {"uri": "u"}},
			"raw": {"Anything": 1}, "any": {"X": [1]}, "deprecation": {"message": "m"}}`, ""},
		{`{"agentID": "a"}`, "agentID: unknown member (the name is agentId): invalid"},
		{`{"AGENTID": "a", "extra": 1, "Tenant": "t"}`,
			"AGENTID: unknown member (the name is agentId); Tenant: unknown member (the name is tenant); extra: unknown member: invalid"},
		{`{"agentId": "a", "resources": [{"uri": "u"}, {"URI": "v"}], "byName": {"k": {"acess": "r"}}}`,
			"byName.k.acess: unknown member; resources[1].URI: unknown member (the name is uri): invalid"},
		{`{"Skipped": "x"}`, "Skipped: unknown member: invalid"},
		{`{"deprecation": {"Message": "m"}}`, "deprecation.Message: unknown member (the name is message): invalid"},
		{`not json`, ""},
		{`[1, 2]`, ""},
	} {
		err := cards.CheckNames([]byte(c.doc), typ)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.doc, err)
		case c.want != "" && (fault.KindOf(err) != fault.Invalid || err.Error() != c.want):
			t.Errorf("%s: %v, want %q", c.doc, err, c.want)
		}
	}
	// DecodeStrict checks them first.
	var o outer
	if err := cards.DecodeStrict([]byte(`{"agentid": "a"}`), &o); err == nil || err.Error() != "agentid: unknown member (the name is agentId): invalid" {
		t.Errorf("DecodeStrict: %v", err)
	}
}
