package history

import "testing"

// Faults pairs each nemesis invoke with its completion by kind and op, whatever the kind; a fault
// that failed to start is left out; one never healed lasts until the run's end.
func TestFaultsPairsInvokesWithCompletions(t *testing.T) {
	nem := func(t int64, typ Type, f string, op int64, target string) Event {
		return Event{Time: t, Process: Nemesis, Type: typ, F: f, Op: op, Target: target}
	}
	events := []Event{
		{Time: 0, Process: Controller, Type: Note, F: Start},
		nem(10, Invoke, Pause, 1, "client-1"),
		nem(20, Invoke, "disk-full", 2, "n1"), // a kind newer than this code
		nem(25, Fail, Partition, 3, "client-2"),
		nem(30, OK, Pause, 1, "client-1"),
		nem(40, Invoke, Kill, 4, "client-3"),
		nem(40, OK, Kill, 4, "client-3"),
		nem(50, Invoke, Clock, 5, "n1"),
		nem(60, Info, "disk-full", 2, "n1"),
		// A clock set with no length: its ok says it stays set, until the heal resets it.
		{Time: 70, Process: Nemesis, Type: Invoke, F: Clock, Op: 6, Target: "n2", Params: []byte(`{"offset":10}`)},
		{Time: 71, Process: Nemesis, Type: OK, F: Clock, Op: 6, Target: "n2", Params: []byte(`{"offset":10}`)},
		{Time: 90, Process: Nemesis, Type: Note, F: Clock, Target: "n2", Params: []byte(`{"rate":1}`), Error: "reset at heal"},
		// A clock set back after its length: its ok gives the true rate.
		nem(91, Invoke, Clock, 7, "n3"),
		{Time: 95, Process: Nemesis, Type: OK, F: Clock, Op: 7, Target: "n3", Params: []byte(`{"rate":1}`)},
		{Time: 100, Process: Controller, Type: Note, F: End},
	}
	got := Faults(events)
	want := []struct {
		kind       string
		start, end int64
		open       bool
	}{
		{Pause, 10, 30, false},
		{"disk-full", 20, 60, false},
		{Kill, 40, 40, false},
		{Clock, 50, 100, true},
		{Clock, 70, 90, false},
		{Clock, 91, 95, false},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d faults, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		if g.Kind != w.kind || g.Start != w.start || g.End != w.end || g.Open != w.open {
			t.Errorf("fault %d = %+v, want %+v", i, g, w)
		}
	}
}
