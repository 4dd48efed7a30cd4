package runner

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/scenarios"
	"github.com/lockcheck/lockcheck/workloads"
)

// targetScenario is a short set-nx-px run on real Redis with one fault aimed at a lock state.
func targetScenario(fault string) string {
	return `name: target
lock: set-nx-px
clients: 3
ttl: 500ms
duration: 2s
workload: {hold: 50ms, think: 10ms, stagger: 50ms}
nemesis:
  - ` + fault + "\n"
}

// runTarget runs the scenario and returns its history and the one fault's invoke.
func runTarget(t *testing.T, fault string) ([]history.Event, history.Event) {
	t.Helper()
	events, faults := runFaults(t, targetScenario(fault), testOptions(t))
	if len(faults) != 1 || faults[0].Type != history.Invoke {
		t.Fatalf("want one fault that started, got %+v", faults)
	}
	return events, faults[0]
}

// runFaults runs a scenario and returns its history and the nemesis's invokes (and failures).
func runFaults(t *testing.T, text string, o Options) ([]history.Event, []history.Event) {
	t.Helper()
	sc, err := scenarios.Parse("target.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), sc, o)
	if err != nil {
		t.Fatal(err)
	}
	events, err := history.ReadFile(filepath.Join(res.Dir, HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	history.Sort(events)
	var faults []history.Event
	for _, e := range events {
		if e.Process == history.Nemesis && e.Type != history.OK {
			faults = append(faults, e)
		}
	}
	return events, faults
}

// near is how long before a fault's invoke (stamped once the fault is in force) the state that
// chose its target may have been read.
const near = 5 * time.Millisecond

// inState says whether client was in state at the fault's start, or just before it.
func inState(events []history.Event, f history.Event) bool {
	for _, t := range []int64{f.Time, f.Time - int64(near)} {
		r := replayUntil(events, t)
		switch f.As {
		case "holder":
			if r.holds[f.Target] {
				return true
			}
		case "waiter":
			others := false
			for c := range r.holds {
				others = others || c != f.Target
			}
			if r.waits[f.Target] && others {
				return true
			}
		case "overtaken":
			if r.holds[f.Target] && r.overtaken(f.Target) {
				return true
			}
		}
	}
	return false
}

// replay is the test's own reading of the lock's state at time t, from the history.
type replay struct {
	holds     map[string]bool
	waits     map[string]bool
	acquired  []string // every acquisition, in order
	lastStart map[string]int
}

func replayUntil(events []history.Event, t int64) replay {
	r := replay{holds: map[string]bool{}, waits: map[string]bool{}, lastStart: map[string]int{}}
	for _, e := range events {
		if e.Time >= t || !strings.HasPrefix(e.Process, "client-") {
			continue
		}
		switch {
		case e.F == history.Acquire && e.Type == history.Invoke:
			r.waits[e.Process] = true
		case e.F == history.Acquire:
			delete(r.waits, e.Process)
			if e.Type == history.OK {
				r.holds[e.Process] = true
				r.acquired = append(r.acquired, e.Process)
			}
		case e.F == history.Release && e.Type == history.Invoke, e.F == history.Lost:
			delete(r.holds, e.Process)
		}
	}
	return r
}

// overtaken: its latest acquisition came after another client's, which came after its own previous one.
func (r replay) overtaken(c string) bool {
	last, prev := -1, -1
	for i, a := range r.acquired {
		if a == c {
			prev, last = last, i
		}
	}
	if prev < 0 {
		return false
	}
	for _, a := range r.acquired[prev+1 : last] {
		if a != c {
			return true
		}
	}
	return false
}

func TestFaultOnTheHolderHitsTheClientHoldingTheLock(t *testing.T) {
	events, f := runTarget(t, "{fault: pause, target: holder, at: 700ms, for: 1ttl}")
	if f.As != "holder" || !inState(events, f) {
		t.Fatalf("paused %s as %q; holders then: %v", f.Target, f.As, replayUntil(events, f.Time).holds)
	}
	if f.Duration != int64(500*time.Millisecond) {
		t.Fatalf("for: 1ttl lasted %s, want the ttl (500ms)", time.Duration(f.Duration))
	}
}

func TestFaultOnAWaiterHitsAClientWaitingWhileAnotherHolds(t *testing.T) {
	events, f := runTarget(t, "{fault: pause, target: waiter, at: 700ms, for: 200ms}")
	if r := replayUntil(events, f.Time); f.As != "waiter" || !inState(events, f) {
		t.Fatalf("paused %s as %q; waiting then: %v, holding: %v", f.Target, f.As, r.waits, r.holds)
	}
}

// At a point, the occurrence-th pass by a holder takes the fault; the clients stop stopping there
// once it is taken.
func TestFaultOnTheHolderAtAPointTakesThatPass(t *testing.T) {
	events, f := runTarget(t, "{fault: pause, target: holder, point: before-write, occurrence: 3, for: 100ms}")
	var stops []history.Event
	for _, e := range events {
		if e.Type == history.Note && e.F == workloads.Stopped && e.Point == "before-write" {
			stops = append(stops, e)
		}
	}
	if len(stops) < 3 || stops[2].Process != f.Target || f.As != "holder" || f.Point != "before-write" {
		t.Fatalf("fault on %s as %q at %q; stops at before-write: %+v", f.Target, f.As, f.Point, stops)
	}
	if !replayUntil(events, f.Time).holds[f.Target] {
		t.Fatalf("%s did not hold the lock when paused", f.Target)
	}
	// In flight when the call-off arrives: at most one more pass per client.
	if len(stops) > 3+3 {
		t.Fatalf("%d stops at before-write: the clients were not told to stop stopping", len(stops))
	}
}

// A waiter's fault at after-acquire: as the occurrence-th hold with someone waiting behind it
// begins, the client that has waited longest then; the holder passing the point goes on at once.
func TestFaultOnAWaiterAsAHoldBeginsTakesTheLongestWaiter(t *testing.T) {
	events, f := runTarget(t, "{fault: pause, target: waiter, point: after-acquire, occurrence: 2, for: 200ms}")
	if f.As != "waiter" || f.Point != "after-acquire" || !inState(events, f) {
		t.Fatalf("fault on %s as %q at %q, not a waiter then", f.Target, f.As, f.Point)
	}
	// The nemesis counts a holder's pass of the point, not its acquisition: a waiter that asked
	// between the two counts, so the hold is read from the fault backwards. The hold it began
	// is the latest acquisition before it; the target waited longest of those waiting then.
	holdAt, holder := int64(0), ""
	asked := map[string]int64{}
	for _, e := range events {
		if !strings.HasPrefix(e.Process, "client-") || e.F != history.Acquire || e.Time > f.Time {
			continue
		}
		switch e.Type {
		case history.Invoke:
			asked[e.Process] = e.Time
		case history.OK:
			delete(asked, e.Process)
			holdAt, holder = e.Time, e.Process
		default:
			delete(asked, e.Process)
		}
	}
	longest := ""
	for c, since := range asked {
		if longest == "" || since < asked[longest] {
			longest = c
		}
	}
	if holdAt == 0 || f.Target != longest || f.Target == holder {
		t.Fatalf("fault on %s; the hold it follows began at %s (%s), waiting then since: %v", f.Target,
			time.Duration(holdAt), holder, asked)
	}
	if d := time.Duration(f.Time - holdAt); d < 0 || d > 100*time.Millisecond {
		t.Fatalf("the fault started %s after the hold began", d)
	}
	// Occurrence 2: an earlier hold had a client waiting behind it at some moment.
	earlier := false
	for i, e := range events {
		if e.F != history.Acquire || e.Type != history.OK || e.Time >= holdAt || !strings.HasPrefix(e.Process, "client-") {
			continue
		}
		for _, later := range events[i:] {
			if later.Time >= holdAt || later.Process == e.Process && later.F == history.Release {
				break
			}
			r := replayUntil(events, later.Time+1)
			delete(r.waits, e.Process)
			earlier = earlier || len(r.waits) > 0
		}
	}
	if !earlier {
		t.Fatal("the fault came at the first hold with a waiter, not the second")
	}
}

func TestFaultOnTheOvertakenHitsAClientHoldingAgainAfterAnother(t *testing.T) {
	events, f := runTarget(t, "{fault: pause, target: overtaken, point: after-acquire, for: 2ttl}")
	if f.As != "overtaken" || !inState(events, f) {
		t.Fatalf("paused %s as %q; acquisitions until then: %v", f.Target, f.As, replayUntil(events, f.Time).acquired)
	}
}

// A hunt aims every fault at a client in the state it names, and on set-nx-px (a lease that a
// pause outlasts) finds a double ownership; the run stops soon after it (StopAfterOverlap).
func TestHuntAimsEachFaultAtAClientInItsState(t *testing.T) {
	text := strings.Replace(targetScenario("random: {mode: hunt, faults: [pause]}"), "duration: 2s", "duration: 20s", 1)
	o := testOptions(t)
	o.StopAfterOverlap = 300 * time.Millisecond
	events, faults := runFaults(t, text, o)
	if len(faults) == 0 {
		t.Fatal("the hunt made no fault")
	}
	for _, f := range faults {
		if f.Type != history.Invoke || f.As != "" && !inState(events, f) || f.Duration < int64(480*time.Millisecond) {
			t.Errorf("fault %+v: not aimed at a client in its state, or shorter than 1.2 TTLs", f)
		}
	}
	overlapAt := int64(0)
	for i, e := range events {
		if e.F == history.Acquire && e.Type == history.OK && len(replayUntil(events[:i+1], e.Time+1).holds) >= 2 {
			overlapAt = e.Time
			break
		}
	}
	if overlapAt == 0 {
		t.Fatal("no double ownership in 20 s of hunting on set-nx-px")
	}
	if end := events[len(events)-1].Time; time.Duration(end-overlapAt) > 10*time.Second {
		t.Fatalf("the run went on %s after the first double ownership", time.Duration(end-overlapAt))
	}
}
