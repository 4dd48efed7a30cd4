package nemesis

import (
	"reflect"
	"testing"
)

// What a schedule asks of servers: each planned server fault's actions, once; clients' faults
// ask nothing of a server; a random package asks for every kind on every server that suits it.
func TestServerUsesListsWhatFaultsAskOfServers(t *testing.T) {
	isClient := func(t string) bool { return t == "client-1" }
	s := Schedule{
		Faults: []Fault{
			{Kind: "pause", Target: "n1"},
			{Kind: "pause", Target: "n1"},
			{Kind: "pause", Target: "client-1"},
			{Kind: "partition", Target: "zk1"},
		},
		Random: &Random{Faults: []string{"crash", "delay"}, Targets: []string{"client-1", "n2"},
			ByKind: map[string][]string{"crash": {"n2"}, "delay": {"client-1"}}},
	}
	want := []Use{
		{Target: "n1", Act: "pause", Fault: "pause"},
		{Target: "n1", Act: "resume", Fault: "pause"},
		{Target: "n2", Act: "kill", Fault: "crash"},
		{Target: "n2", Act: "restart", Fault: "crash"},
		{Target: "zk1", Act: "cut", Fault: "partition"},
		{Target: "zk1", Act: "heal", Fault: "partition"},
	}
	if got := s.ServerUses(isClient); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
}
