package checker

import (
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// Histories for the exercised judgement, in milliseconds: a lease of 1 s, three clients whose
// design notes record the rule, client-1 the first holder.

// withRule writes a design note with a lease rule for each client.
func (b *builder) withRule(clients ...string) *builder {
	for _, c := range clients {
		b.add(history.Event{Time: 0, Process: history.Controller, Type: history.Note, F: history.ClientDesign, Target: c,
			Design: "test", Rule: &history.PromiseRule{Words: "the lease from each acquire"}})
	}
	return b
}

// granted is an acquire invoked at inv, answered at ok, that promised the lock for length ms from
// inv (history.Forever: until released).
func (b *builder) granted(p string, inv, ok float64, length int64) *builder {
	return b.op(p, history.Acquire, inv, ok, history.OK, func(e *history.Event) {
		e.Promise = length
		if length != history.Forever {
			e.Promise = ms(float64(length))
		}
	})
}

// fault records a nemesis fault of kind on target from..to.
func (b *builder) fault(kind, target string, from, to float64) *builder {
	b.add(history.Event{Time: ms(from), Process: history.Nemesis, Type: history.Invoke, F: kind, Op: 90, Target: target})
	return b.add(history.Event{Time: ms(to), Process: history.Nemesis, Type: history.OK, F: kind, Op: 90, Target: target})
}

// cutHolder: client-1 takes a 1 s lease at 100 ms and is cut off from 200 ms to 3 s; the others
// ask in vain every 100 ms until then. takeover, when > 0, is when client-2 gets the lock during
// the cut. After the cut client-1 releases, and the others take turns.
func cutHolder(takeover float64) *builder {
	b := newHistory().start(0).withRule("client-1", "client-2", "client-3").
		granted("client-1", 99, 100, 1000).
		fault(history.Partition, "client-1", 200, 3000)
	if takeover > 0 {
		b.acquireFails("client-2", 150, takeover-1, 100).granted("client-2", takeover-1, takeover, 1000).release("client-2", takeover+50, takeover+51)
		b.acquireFails("client-3", 150, takeover+60, 100).granted("client-3", takeover+60, takeover+61, 1000).release("client-3", takeover+100, takeover+101)
	} else {
		b.acquireFails("client-2", 150, 3050, 100).acquireFails("client-3", 160, 3060, 100)
		b.release("client-1", 3010, 3011).
			granted("client-2", 3050, 3051, 1000).release("client-2", 3100, 3101).
			granted("client-3", 3110, 3111, 1000).release("client-3", 3150, 3151)
	}
	return b.end(4000)
}

// A holder cut off past its lease from clients that never take the lock over is a fault the run
// did not exercise (a lock that takes over only within one long attempt, each attempt shorter than
// the lease); the same cut with a takeover is exercised.
func TestCutHolderNobodyTookOverIsUnexercised(t *testing.T) {
	v := Check(cutHolder(0).build(), Options{AttemptBound: time.Second})
	for _, want := range []string{"no client acquired the lock after client-1's promise ran out (1.10 s) while the fault lasted (until 3.00 s)",
		"the attempt bound (1s) is not longer than the lease (1s)"} {
		if !strings.Contains(v.Unexercised, want) {
			t.Errorf("unexercised = %q, lacks %q", v.Unexercised, want)
		}
	}
	if v.Outcome != Safe {
		t.Errorf("outcome %s: the run is safe, and only Unexercised says it proves nothing of the cut", v.Outcome)
	}
	var table strings.Builder
	Table(v, &table)
	if !strings.HasPrefix(table.String(), "FAULT NOT EXERCISED") {
		t.Errorf("the table does not open with the unexercised fault:\n%s", table.String())
	}
	// With attempts longer than the lease, the hint about the attempt bound is left out.
	if v := Check(cutHolder(0).build(), Options{AttemptBound: 4 * time.Second}); v.Unexercised == "" || strings.Contains(v.Unexercised, "attempt bound") {
		t.Errorf("attempts of 4 s: unexercised = %q, want the reason without the attempt bound", v.Unexercised)
	}
	if v := Check(cutHolder(1500).build(), Options{AttemptBound: time.Second}); v.Unexercised != "" {
		t.Errorf("client-2 took the lock over during the cut: unexercised = %q", v.Unexercised)
	}
}

// A pause shorter than the lease asks the lock to keep the others out while it lasts: exercised
// when another client asked meanwhile, not when nobody did.
func TestShortPauseNeedsSomeoneAsking(t *testing.T) {
	asked := newHistory().start(0).withRule("client-1", "client-2").
		granted("client-1", 99, 100, 1000).pause("client-1", 200, 500).release("client-1", 600, 601).
		acquireFails("client-2", 300, 620, 100).granted("client-2", 620, 621, 1000).release("client-2", 700, 701).end(1000)
	if v := Check(asked.build(), Options{}); v.Unexercised != "" {
		t.Errorf("client-2 asked during the pause: unexercised = %q", v.Unexercised)
	}
	alone := newHistory().start(0).withRule("client-1", "client-2").
		granted("client-1", 99, 100, 1000).pause("client-1", 200, 500).release("client-1", 600, 601).
		granted("client-2", 620, 621, 1000).release("client-2", 700, 701).end(1000)
	v := Check(alone.build(), Options{})
	if !strings.Contains(v.Unexercised, "no other client asked for the lock while client-1 held it under pause client-1") {
		t.Errorf("nobody asked during the pause: unexercised = %q", v.Unexercised)
	}
}

// A holder that learns it lost the lock has met its fault, whoever took the lock.
func TestHolderThatLearnedItLostIsExercised(t *testing.T) {
	b := newHistory().start(0).withRule("client-1", "client-2").
		granted("client-1", 99, 100, 1000).fault(history.Partition, "client-1", 200, 3000).
		note("client-1", history.Lost, 1200, "").end(4000)
	if v := Check(b.build(), Options{}); v.Unexercised != "" {
		t.Errorf("client-1 learned it lost the lock: unexercised = %q", v.Unexercised)
	}
}

// A holder killed under a lock that never expires is exercised when others asked afterwards (the
// lock stays stuck: that is the finding); one killed under a lease that outlasts the run is not:
// nobody could have taken the lock over.
func TestKilledHolder(t *testing.T) {
	stuck := newHistory().start(0).withRule("client-1", "client-2").
		granted("client-1", 99, 100, history.Forever).fault(history.Kill, "client-1", 200, 200.1).
		note(history.Controller, history.Crash, 200.1, "client-1").
		acquireFails("client-2", 300, 3000, 100).end(3000)
	if v := Check(stuck.build(), Options{}); v.Unexercised != "" {
		t.Errorf("the others asked after the kill: unexercised = %q", v.Unexercised)
	}
	late := newHistory().start(0).withRule("client-1", "client-2").
		granted("client-1", 2799, 2800, 1000).fault(history.Kill, "client-1", 2900, 2900.1).
		note(history.Controller, history.Crash, 2900.1, "client-1").
		acquireFails("client-2", 2850, 3000, 50).end(3000)
	if v := Check(late.build(), Options{}); !strings.Contains(v.Unexercised, "after the run ended (3.00 s): nobody could take the lock over") {
		t.Errorf("the lease outlasted the run: unexercised = %q", v.Unexercised)
	}
}

// A fault on a server is exercised when a client held or asked for the lock meanwhile; a run
// without faults has nothing to exercise.
func TestServerFaultNeedsTheLockInUse(t *testing.T) {
	idle := newHistory().start(0).withRule("client-1").
		granted("client-1", 99, 100, 1000).release("client-1", 150, 151).
		fault("crash", "n1", 300, 600).end(1000)
	if v := Check(idle.build(), Options{}); !strings.Contains(v.Unexercised, "no client held or asked for the lock while crash n1 (0.30 s) lasted") {
		t.Errorf("nobody used the lock during the crash: unexercised = %q", v.Unexercised)
	}
	busy := newHistory().start(0).withRule("client-1").
		granted("client-1", 99, 100, 1000).release("client-1", 400, 401).
		fault("crash", "n1", 300, 600).end(1000)
	if v := Check(busy.build(), Options{}); v.Unexercised != "" {
		t.Errorf("client-1 held during the crash: unexercised = %q", v.Unexercised)
	}
	none := newHistory().start(0).withRule("client-1").granted("client-1", 99, 100, 1000).release("client-1", 400, 401).end(1000)
	if v := Check(none.build(), Options{}); v.Unexercised != "" || !v.FaultFree {
		t.Errorf("no fault: unexercised = %q, fault free %v", v.Unexercised, v.FaultFree)
	}
}

// expect: {exercised: true} fails a run whose fault was not exercised and one without faults;
// exercised: false asks for the opposite.
func TestExpectExercised(t *testing.T) {
	yes, no := true, false
	unexercised := Check(cutHolder(0).build(), Options{})
	exercised := Check(cutHolder(1500).build(), Options{})
	faultFree := Check(newHistory().start(0).hold("client-1", 10, 100).end(200).build(), Options{})
	for _, c := range []struct {
		name string
		want *bool
		v    Verdict
		miss string
	}{
		{"true, unexercised", &yes, unexercised, "not exercised: no client acquired"},
		{"true, exercised", &yes, exercised, ""},
		{"false, unexercised", &no, unexercised, ""},
		{"false, exercised", &no, exercised, "a fault was exercised"},
		{"true, no fault", &yes, faultFree, "the run had no fault"},
	} {
		var got string
		for _, m := range (Expect{Exercised: c.want}).Match(c.v) {
			if m.Field == "exercised" {
				got = m.Got
			}
		}
		if (c.miss == "") != (got == "") || !strings.Contains(got, c.miss) {
			t.Errorf("%s: mismatch %q, want %q", c.name, got, c.miss)
		}
	}
}

// A client paused inside its release (a program point between two of its commands) did not hold
// the lock by then, but its release is in flight: exercised when another client held or asked
// for the lock meanwhile.
func TestPauseInsideARelease(t *testing.T) {
	release := func(other bool) []history.Event {
		b := newHistory().start(0).withRule("client-1", "client-2").
			granted("client-1", 99, 100, 1000).release("client-1", 200, 810).pause("client-1", 210, 800)
		if other {
			b.acquireFails("client-2", 150, 300, 50).granted("client-2", 300, 301, 1000).release("client-2", 500, 501)
		}
		return b.end(1000).build()
	}
	if v := Check(release(true), Options{}); v.Unexercised != "" {
		t.Errorf("client-2 took the lock during the paused release: unexercised = %q", v.Unexercised)
	}
	if v := Check(release(false), Options{}); !strings.Contains(v.Unexercised, "no client held or asked for the lock after pause client-1 (0.21 s), except client-1 while it lasted") {
		t.Errorf("nobody else used the lock: unexercised = %q", v.Unexercised)
	}
}

// An acquire whose reply a fault held back may take the lock for nobody: that shows to whoever asks
// next, the faulted client included, after the fault.
func TestDelayedAcquireShowsAfterTheFault(t *testing.T) {
	b := newHistory().start(0).withRule("client-1").
		op("client-1", history.Acquire, 100, 900, history.Info, nil).fault(history.Delay, "client-1", 110, 1500)
	if v := Check(b.end(2000).build(), Options{}); !strings.Contains(v.Unexercised, "no client held or asked for the lock after delay client-1") {
		t.Errorf("nobody asked after the delay: unexercised = %q", v.Unexercised)
	}
	b.acquireFails("client-1", 1600, 2000, 100)
	if v := Check(b.end(2000).build(), Options{}); v.Unexercised != "" {
		t.Errorf("client-1 asked again after the delay: unexercised = %q", v.Unexercised)
	}
}

// A fault that never started (it waited for a holder until the run ended) exercised nothing.
func TestFaultThatNeverStarted(t *testing.T) {
	b := newHistory().start(0).withRule("client-1").granted("client-1", 99, 100, 1000).release("client-1", 150, 151).
		add(history.Event{Time: ms(1000), Process: history.Nemesis, Type: history.Fail, F: history.Pause, Op: 1, Target: "waiter",
			Error: "nobody was a waiter before the run ended"}).end(1000)
	v := Check(b.build(), Options{})
	if v.FaultFree || v.Unexercised != "no fault took effect: pause waiter failed to start (nobody was a waiter before the run ended)" {
		t.Errorf("fault free %v, unexercised %q", v.FaultFree, v.Unexercised)
	}
}
