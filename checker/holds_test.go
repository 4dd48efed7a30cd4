package checker

import (
	"testing"

	"github.com/lockcheck/lockcheck/history"
)

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
	if len(got) != 2 || got[0] != (Hold{Client: "client-1", Start: 5, End: 20, EndedBy: history.Release}) ||
		got[1] != (Hold{Client: "client-2", Start: 8, End: 9, EndedBy: history.Release}) {
		t.Fatalf("holds %+v", got)
	}
	if v := Check(events, Options{}); len(v.MutualExclusion.Windows) != 1 || v.MutualExclusion.Windows[0].Start != 8 {
		t.Fatalf("the check disagrees with the holds: %+v", v.MutualExclusion)
	}
}
