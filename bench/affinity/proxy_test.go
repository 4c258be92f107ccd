package main

import (
	"fmt"
	"testing"
)

func TestTenantOf(t *testing.T) {
	for path, want := range map[string]string{
		"/v1/tenants/acme/cards":                      "acme",
		"/v1/tenants/acme":                            "acme",
		"/v1/tenants/acme/cards:batch":                "acme",
		"/a2a/acme/agents":                            "acme",
		"/a2a/acme/bot/.well-known/agent-card.json":   "acme",
		"/compat/agentkit-mesh/acme/v1/discover":      "acme",
		"/callbacks/delegations/acme/0193a6c5-delegs": "acme",
		"/v1/tenants":                                 "",
		"/health":                                     "",
		"/mcp":                                        "",
	} {
		if got := TenantOf(path); got != want {
			t.Errorf("TenantOf(%q) = %q, want %q", path, got, want)
		}
	}
}

// Removing a replica moves only its own tenants, and spreads them over the others.
func TestRendezvousMovesOnlyTheStoppedReplicasTenants(t *testing.T) {
	all, err := NewProxy([]string{"http://10.0.0.1:80", "http://10.0.0.2:80", "http://10.0.0.3:80"}, true)
	if err != nil {
		t.Fatal(err)
	}
	rest, _ := NewProxy([]string{"http://10.0.0.2:80", "http://10.0.0.3:80"}, true)
	owned, movedTo := [3]int{}, [3]int{}
	for i := range 3000 {
		tenant := fmt.Sprintf("t%d", i)
		before := all.Owner(tenant)
		after := rest.Owner(tenant) + 1
		owned[before]++
		if before != 0 && after != before {
			t.Fatalf("%s moved from replica %d to %d though replica 0 stopped", tenant, before, after)
		}
		if before == 0 {
			movedTo[after]++
		}
		if second := all.order(tenant)[1]; before == 0 && second != after {
			t.Fatalf("%s went to %d, not its second choice %d", tenant, after, second)
		}
	}
	for k, n := range owned {
		if n < 900 || n > 1100 {
			t.Errorf("replica %d owns %d of 3000 tenants", k, n)
		}
	}
	if movedTo[1] < owned[0]/3 || movedTo[2] < owned[0]/3 {
		t.Errorf("replica 0's %d tenants moved unevenly: %v", owned[0], movedTo)
	}
}
