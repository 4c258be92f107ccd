package cards

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestA2AVersion: the one reading of a protocolVersion that serving and delegation share.
func TestA2AVersion(t *testing.T) {
	for in, want := range map[string]string{
		"1.0": "1.0", "1.0.1": "1.0", "v1.0": "1.0", " 0.3.0 ": "0.3", "0.3": "0.3", "0.3.0-rc1": "0.3",
		"1.0.0.0": "1.0", "01.0": "1.0", "1.00": "1.0", "0.2.5": "0.2", "1.1": "1.1", "2.0": "2.0",
		"": "", "1": "", "+0.3": "", "1.x": "", "1.-1": "", "one.zero": "", ".3": "", "0.": "",
	} {
		got, ok := A2AVersion(in)
		if got != want || ok != (want != "") {
			t.Errorf("A2AVersion(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
}

// TestA2AInterfaces: what a card declares, for serving and delegation alike.
func TestA2AInterfaces(t *testing.T) {
	listed := `[{"url":"https://a.example/rpc","protocolBinding":"JSONRPC","protocolVersion":"0.3.0"},` +
		`{"url":"https://a.example/v1","protocolBinding":"HTTP+JSON","protocolVersion":"1.0","tenant":"t1"}]`
	for _, tc := range []struct {
		name       string
		endpoint   string
		interfaces string
		want       []A2AInterface
	}{
		{"endpoint only: one 1.0 JSON-RPC interface", "https://a.example/task", "",
			[]A2AInterface{{URL: "https://a.example/task", ProtocolBinding: "JSONRPC", ProtocolVersion: "1.0"}}},
		{"a list, as written, without the endpoint", "https://a.example/task", listed, []A2AInterface{
			{URL: "https://a.example/rpc", ProtocolBinding: "JSONRPC", ProtocolVersion: "0.3.0"},
			{URL: "https://a.example/v1", ProtocolBinding: "HTTP+JSON", ProtocolVersion: "1.0", Tenant: "t1"}}},
		{"an entry in 0.3's form is a 0.3 interface", "", `[{"url":"https://a.example/old","transport":"JSONRPC"}]`,
			[]A2AInterface{{URL: "https://a.example/old", ProtocolBinding: "JSONRPC", ProtocolVersion: "0.3"}}},
		{"an unreadable list counts as none", "https://a.example/task", `{"not":"a list"}`,
			[]A2AInterface{{URL: "https://a.example/task", ProtocolBinding: "JSONRPC", ProtocolVersion: "1.0"}}},
		{"neither: none", "", "", []A2AInterface{}},
	} {
		c := Card{Endpoint: tc.endpoint}
		if tc.interfaces != "" {
			c.A2A = &A2A{Interfaces: json.RawMessage(tc.interfaces)}
		}
		if got := c.A2AInterfaces(); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// TestA2AInterfacesChecked: an interface must name a version A2AVersion reads, so that what
// serving advertises and what delegation speaks cannot part on a version only one of them reads.
func TestA2AInterfacesChecked(t *testing.T) {
	for version, ok := range map[string]bool{"1.0": true, "0.3.0": true, "1.0.1": true, "+0.3": false, "1.x": false, "latest": false} {
		c := Card{AgentID: "agt", Name: "Agent", Endpoint: "https://a.example/task", Protocols: []string{"a2a"},
			A2A: &A2A{Interfaces: json.RawMessage(`[{"url":"https://a.example/rpc","protocolBinding":"JSONRPC","protocolVersion":"` + version + `"}]`)}}
		_, err := prepare(&c)
		if (err == nil) != ok {
			t.Errorf("protocolVersion %q: %v", version, err)
		}
	}
}
