package nemesis_test

import (
	"slices"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
	. "github.com/lockcheck/lockcheck/nemesis"
)

func acquired(n interface{ Observe(history.Event) }, client string) {
	n.Observe(history.Event{Process: client, Type: history.Invoke, F: history.Acquire})
	n.Observe(history.Event{Process: client, Type: history.OK, F: history.Acquire})
}

// A timed fault on the holder waits until someone holds, then pauses that client, and the
// history names it.
func TestTimedFaultOnTheHolderWaitsForOne(t *testing.T) {
	c1, c2 := sleeper(t), sleeper(t)
	rec := &recorder{}
	n := newTestNemesis(map[string]Target{"client-1": c1, "client-2": c2}, rec.record)
	if err := n.Start(Schedule{Faults: []Fault{{Kind: PauseFault, Target: Holder, At: dur(0), For: dur(200 * time.Millisecond)}}}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if len(rec.all()) != 0 {
		t.Fatalf("acted with nobody holding: %+v", rec.all())
	}
	acquired(n, "client-2")
	time.Sleep(100 * time.Millisecond)
	if s := stateOf(t, c2); s != 'T' {
		t.Fatalf("the holder's state = %c, want T (stopped)", s)
	}
	if s := stateOf(t, c1); s == 'T' {
		t.Fatal("the client that does not hold was stopped")
	}
	n.Heal()
	ev := rec.all()
	if len(ev) != 2 || ev[0].Target != "client-2" || ev[0].As != Holder {
		t.Fatalf("want the pause recorded on client-2 as holder, got %+v", ev)
	}
}

// With nobody in the state before the heal, the fault is recorded as failed, naming the state.
func TestFaultOnAStateNobodyReachesFails(t *testing.T) {
	rec := &recorder{}
	n := newTestNemesis(map[string]Target{"client-1": sleeper(t)}, rec.record)
	_ = n.Start(Schedule{Faults: []Fault{{Kind: PauseFault, Target: Waiter, At: dur(0), For: dur(time.Second)}}})
	acquired(n, "client-1") // a holder, but nobody waits
	time.Sleep(50 * time.Millisecond)
	n.Heal()
	ev := rec.all()
	if len(ev) != 1 || ev[0].Type != history.Fail || ev[0].Target != Waiter || ev[0].Error == "" {
		t.Fatalf("want one failed fault naming the waiter, got %+v", ev)
	}
}

// At a program point, the occurrence-th pass by a client in the state takes the fault; passes by
// clients not in it, and passes once it was taken, are let go at once; the clients are then
// told to stop stopping there.
func TestPointFaultOnTheOvertakenPicksTheRightPass(t *testing.T) {
	c1, c2 := sleeper(t), sleeper(t)
	rec := &recorder{}
	n := newTestNemesis(map[string]Target{"client-1": c1, "client-2": c2}, rec.record)
	disarmed := make(chan string, 1)
	n.cfg.Disarm = func(point string) { disarmed <- point }
	sched := Schedule{Faults: []Fault{{Kind: PauseFault, Target: Overtaken, Point: "after-acquire", Occurrence: 1, For: dur(time.Hour)}}}
	if got := sched.EveryPass(); !slices.Equal(got, []string{"after-acquire"}) {
		t.Fatalf("EveryPass = %v", got)
	}
	if err := n.Start(sched); err != nil {
		t.Fatal(err)
	}
	release := func(c string) {
		n.Observe(history.Event{Process: c, Type: history.Invoke, F: history.Release})
		n.Observe(history.Event{Process: c, Type: history.OK, F: history.Release})
	}
	stopAt := func(c string, p sleepProc, pass int) {
		_ = p.Pause() // as a worker stops itself
		n.Stopped(c, "after-acquire", pass)
		time.Sleep(50 * time.Millisecond)
	}
	acquired(n, "client-1")
	stopAt("client-1", c1, 1) // a first hold: not overtaken
	if s := stateOf(t, c1); s == 'T' {
		t.Fatal("client-1's first hold was kept stopped")
	}
	release("client-1")
	acquired(n, "client-2")
	stopAt("client-2", c2, 1)
	release("client-2")
	acquired(n, "client-1") // client-2 held in between: overtaken
	stopAt("client-1", c1, 2)
	if s := stateOf(t, c1); s != 'T' {
		t.Fatalf("the overtaken client's state = %c, want T (paused)", s)
	}
	select {
	case p := <-disarmed:
		if p != "after-acquire" {
			t.Fatalf("disarmed %q", p)
		}
	case <-time.After(time.Second):
		t.Fatal("the clients were not told to stop stopping at after-acquire")
	}
	n.Heal()
	ev := rec.all()
	if len(ev) != 2 || ev[0].Target != "client-1" || ev[0].As != Overtaken || ev[0].Point != "after-acquire" {
		t.Fatalf("want one pause of client-1 as overtaken, got %+v", ev)
	}
	if s := stateOf(t, c2); s == 'T' {
		t.Fatal("client-2 left stopped")
	}
}

// Two faults at one point count every pass each: the one planned at the second pass of a
// hold's point takes the second pass, not the third (the pass that gave the first fault counts
// for it too).
func TestFaultsAtOnePointEachCountEveryPass(t *testing.T) {
	c1, c2, c3 := sleeper(t), sleeper(t), sleeper(t)
	rec := &recorder{}
	n := newTestNemesis(map[string]Target{"client-1": c1, "client-2": c2, "client-3": c3}, rec.record)
	sched := Schedule{Faults: []Fault{
		{Kind: PauseFault, Target: Waiter, Point: "before-write", Occurrence: 1, For: dur(100 * time.Millisecond)},
		{Kind: PauseFault, Target: Waiter, Point: "before-write", Occurrence: 2, For: dur(100 * time.Millisecond)},
	}}
	if err := n.Start(sched); err != nil {
		t.Fatal(err)
	}
	hold := func(holder string, p sleepProc, pass int) {
		acquired(n, holder)
		_ = p.Pause()
		n.Stopped(holder, "before-write", pass)
		time.Sleep(300 * time.Millisecond) // the waiter's pause comes and goes
		n.Observe(history.Event{Process: holder, Type: history.Invoke, F: history.Release})
		n.Observe(history.Event{Process: holder, Type: history.OK, F: history.Release})
	}
	n.Observe(history.Event{Process: "client-3", Type: history.Invoke, F: history.Acquire}) // waits throughout
	hold("client-1", c1, 1)
	hold("client-2", c2, 1)
	n.Heal()
	var paused []string
	for _, e := range rec.all() {
		if e.Type == history.Invoke {
			paused = append(paused, e.Target)
		}
	}
	if !slices.Equal(paused, []string{"client-3", "client-3"}) {
		t.Fatalf("paused %v, want the waiter at each of the two holds' before-write; events %+v", paused, rec.all())
	}
}
