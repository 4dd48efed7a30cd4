package checker

import (
	"testing"

	"github.com/lockcheck/lockcheck/history"
)

// Faults pairs each nemesis invoke with its completion by kind and op, whatever the kind; a fault
// that failed to start is left out; one never healed lasts until the run's end.
func TestFaultsPairsInvokesWithCompletions(t *testing.T) {
	nem := func(t int64, typ history.Type, f string, op int64, target string) history.Event {
		return history.Event{Time: t, Process: history.Nemesis, Type: typ, F: f, Op: op, Target: target}
	}
	events := []history.Event{
		{Time: 0, Process: history.Controller, Type: history.Note, F: history.Start},
		nem(10, history.Invoke, history.Pause, 1, "client-1"),
		nem(20, history.Invoke, "disk-full", 2, "n1"), // a kind newer than this code
		nem(25, history.Fail, history.Partition, 3, "client-2"),
		nem(30, history.OK, history.Pause, 1, "client-1"),
		nem(40, history.Invoke, history.Kill, 4, "client-3"),
		nem(40, history.OK, history.Kill, 4, "client-3"),
		nem(50, history.Invoke, history.Clock, 5, "n1"),
		nem(60, history.Info, "disk-full", 2, "n1"),
		// A clock set with no length: its ok says it stays set, until the heal resets it.
		{Time: 70, Process: history.Nemesis, Type: history.Invoke, F: history.Clock, Op: 6, Target: "n2", Offset: 10},
		{Time: 71, Process: history.Nemesis, Type: history.OK, F: history.Clock, Op: 6, Target: "n2", Offset: 10},
		{Time: 90, Process: history.Nemesis, Type: history.Note, F: history.Clock, Target: "n2", Rate: 1, Error: "reset at heal"},
		{Time: 100, Process: history.Controller, Type: history.Note, F: history.End},
	}
	got := Faults(events)
	want := []struct {
		kind       string
		start, end int64
		open       bool
	}{
		{history.Pause, 10, 30, false},
		{"disk-full", 20, 60, false},
		{history.Kill, 40, 40, false},
		{history.Clock, 50, 100, true},
		{history.Clock, 70, 90, false},
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

// Holds are the intervals the mutual-exclusion check uses: acquire ok to release invoke.
func TestHoldsAreTheCheckersIntervals(t *testing.T) {
	ev := func(t int64, p string, typ history.Type, f string, op int64) history.Event {
		return history.Event{Time: t, Process: p, Type: typ, F: f, Op: op}
	}
	events := []history.Event{
		ev(0, "client-1", history.Invoke, history.Acquire, 1),
		ev(5, "client-1", history.OK, history.Acquire, 1),
		ev(7, "client-2", history.Invoke, history.Acquire, 1),
		ev(8, "client-2", history.OK, history.Acquire, 1),
		ev(9, "client-2", history.Invoke, history.Release, 2),
		ev(20, "client-1", history.Invoke, history.Release, 2),
	}
	got := Holds(events)
	if len(got) != 2 || got[0] != (Hold{Client: "client-1", Start: 5, End: 20}) || got[1] != (Hold{Client: "client-2", Start: 8, End: 9}) {
		t.Fatalf("holds %+v", got)
	}
	if v := Check(events, Options{}); len(v.MutualExclusion.Windows) != 1 || v.MutualExclusion.Windows[0].Start != 8 {
		t.Fatalf("the check disagrees with the holds: %+v", v.MutualExclusion)
	}
}
