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

// A run needs proxies on its clients' links only when a fault may act on one: a partition or
// delay planned on a client or a client's lock state, or drawn by a package that aims at one.
func TestUsesClientLinksOnlyForCutsAndDelaysOfClients(t *testing.T) {
	isClient := func(t string) bool { return t == "client-1" }
	for _, c := range []struct {
		name string
		s    Schedule
		want bool
	}{
		{"no fault", Schedule{}, false},
		{"pause of a client", Schedule{Faults: []Fault{{Kind: "pause", Target: "client-1"}}}, false},
		{"partition of a server from its peers", Schedule{Faults: []Fault{{Kind: "partition", Target: "n1"}}}, false},
		{"partition of a client", Schedule{Faults: []Fault{{Kind: "partition", Target: "client-1"}}}, true},
		{"delay of the holder", Schedule{Faults: []Fault{{Kind: "delay", Target: "holder"}}}, true},
		{"random pauses and kills", Schedule{Random: &Random{Faults: []string{"pause", "kill"}, Targets: []string{"holder"}}}, false},
		{"random partitions of servers only", Schedule{Random: &Random{Faults: []string{"partition"}, Targets: []string{"n1", "n2"}}}, false},
		{"random partitions of waiters", Schedule{Random: &Random{Faults: []string{"pause", "partition"}, Targets: []string{"n1"},
			ByKind: map[string][]string{"partition": {"waiter"}}}}, true},
	} {
		if got := c.s.UsesClientLinks(isClient); got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
}
