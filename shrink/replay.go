package shrink

import (
	"fmt"
	"slices"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/scenarios"
)

// Replay is a run's applied faults as planned schedules, the start of a shrink.
type Replay struct {
	// Anchored pins each fault where the history says it mattered, rather than to a wall-clock
	// time: a fault on the holder (or at one of its hold's points) at that client's program
	// point and the occurrence of its acquisition then; a fault at a design's own point at that
	// point; a fault on a waiter on whichever client waits from that moment. Others, as Timed.
	Anchored *scenarios.Scenario
	// Timed has each fault on the process it hit, at the time it started.
	Timed *scenarios.Scenario
	// Applied counts the faults the run applied before its first violation (those are replayed);
	// Later, those after it, which cannot have caused it and are left out.
	Applied, Later int
}

// FromRun turns the faults a run applied (its history) into planned schedules on a copy of the
// run's scenario: random packages are replaced by the faults they drew. violation is the
// CLOCK_MONOTONIC start of the run's first double ownership (0: keep every fault).
func FromRun(sc *scenarios.Scenario, events []history.Event, violation int64) (Replay, error) {
	var r Replay
	events = slices.Clone(events)
	history.Sort(events)
	start := int64(0)
	planned := map[string]time.Duration{} // kind, op → the length its invoke planned
	for _, e := range events {
		if start == 0 && e.Process == history.Controller && e.F == history.Start {
			start = e.Time
		}
		if e.Process == history.Nemesis && e.Type == history.Invoke {
			planned[fmt.Sprint(e.F, e.Time, e.Target)] = time.Duration(e.Duration)
		}
	}
	if start == 0 && len(events) > 0 {
		start = events[0].Time
	}
	var anchored, timed []scenarios.Entry
	for _, hf := range history.Faults(events) {
		if violation > 0 && hf.Start > violation {
			r.Later++
			continue
		}
		k, err := nemesis.Lookup(hf.Kind)
		if err != nil {
			return r, fmt.Errorf("the history's %s fault at %s: %w", hf.Kind, time.Duration(hf.Start-start), err)
		}
		params, err := k.Replayed(hf.Params)
		if err != nil {
			return r, err
		}
		at := scenarios.Duration(max(0, time.Duration(hf.Start-start)).Round(time.Millisecond))
		f := nemesis.Fault{Kind: k.Name, Target: hf.Target, At: at, Params: params}
		if k.Instant == "" {
			d := planned[fmt.Sprint(hf.Kind, hf.Start, hf.Target)]
			if d == 0 && !hf.Open {
				d = time.Duration(hf.End - hf.Start)
			}
			f.For = scenarios.Duration(d.Round(time.Millisecond))
		}
		r.Applied++
		if k.Step {
			// A usage step is told its client at its time and taken at the next pass of its
			// point: both forms keep the two, and the anchored one aims it at the lock state the
			// client was in (the waiter), whoever that is in the replay.
			f.Point = hf.Point
			timed = append(timed, scenarios.Entry{Fault: f})
			if hf.As != "" {
				f.Target = hf.As
			}
			anchored = append(anchored, scenarios.Entry{Fault: f})
			continue
		}
		timed = append(timed, scenarios.Entry{Fault: f})
		anchored = append(anchored, scenarios.Entry{Fault: anchor(f, hf, events)})
	}
	var err error
	if r.Anchored, err = withFaults(sc, anchored); err != nil {
		return r, fmt.Errorf("the run's faults, anchored: %w", err)
	}
	if r.Timed, err = withFaults(sc, timed); err != nil {
		return r, fmt.Errorf("the run's faults, timed: %w", err)
	}
	return r, nil
}

// anchor moves a fault from the time it started to the program point or lock state the history
// shows it aimed at, where it can.
func anchor(f nemesis.Fault, hf history.Fault, events []history.Event) nemesis.Fault {
	client := isClient(hf.Target)
	held := count(events, hf.Target, history.OK, history.Acquire, hf.Start)
	as := hf.As
	if as == "" && hf.Point == "" && client { // a fault aimed at no state (Jepsen's style): the state the history shows
		as = stateAt(events, hf.Target, hf.Start)
	}
	switch {
	case client && as == nemesis.Waiter && nemesis.IsHoldPoint(hf.Point):
		// The longest waiter as a holder passed the point: at that pass, counted by the holds
		// begun so far (each passes every point of its hold once), whoever waits longest then.
		f.Target, f.Point, f.At = nemesis.Waiter, hf.Point, 0
		f.Occurrence = max(1, holdsWithWaiters(events, hf.Start))
	case client && held > 0 && (as == nemesis.Holder || as == nemesis.Overtaken || nemesis.IsHoldPoint(hf.Point)):
		// The client's current hold: pinned to its point (after-acquire when it was hit while
		// holding, which leaves the fault the whole of the hold), at that acquisition.
		f.Point, f.Occurrence, f.At = hf.Point, held, 0
		if f.Point == "" {
			f.Point = "after-acquire"
		}
	case client && hf.Point != "":
		// A design's own point, inside an acquire (or a release): at that attempt.
		f.Point, f.At = hf.Point, 0
		f.Occurrence = max(1, count(events, hf.Target, history.Invoke, history.Acquire, hf.Start))
	case client && as == nemesis.Waiter:
		f.Target = nemesis.Waiter // whoever waits from then on
		if n, ok := throughRelease(events, hf); ok {
			// It silenced the client that had waited longest while its holder let go: the
			// shape of a waiter silenced through a release, at that hold's end.
			f.Point, f.At, f.Occurrence = "before-write", 0, n
		}
	}
	return f
}

// throughRelease reports whether fault hf hit the client that had waited longest while another
// held, and lasted past that holder's release; n is that hold's number among the holds begun
// with a waiter behind them (the count a fault on the longest waiter at a hold's point uses).
func throughRelease(events []history.Event, hf history.Fault) (n int, ok bool) {
	if hf.Open {
		return 0, false
	}
	holder, longest := "", ""
	since := map[string]int64{} // a pending acquire's invoke, by client
	for _, e := range events {
		if e.Time > hf.Start {
			break
		}
		if !history.IsClient(e.Process) {
			continue
		}
		switch {
		case e.F == history.Acquire && e.Type == history.Invoke:
			since[e.Process] = e.Time
		case e.F == history.Acquire && e.Type == history.OK:
			delete(since, e.Process)
			holder = e.Process
		case e.F == history.Acquire:
			delete(since, e.Process)
		case e.Process == holder && (e.F == history.Release && e.Type == history.Invoke || e.F == history.Lost || e.F == history.Crash):
			holder = ""
		}
	}
	for c, t := range since {
		if longest == "" || t < since[longest] {
			longest = c
		}
	}
	if holder == "" || longest != hf.Target {
		return 0, false
	}
	for _, e := range events {
		if e.Time > hf.Start && e.Time <= hf.End && e.Process == holder && e.F == history.Release && e.Type == history.Invoke {
			return max(1, holdsWithWaiters(events, hf.Start)), true
		}
	}
	return 0, false
}

// stateAt is the lock state the history shows client in at time t: Holder from its acquire's ok
// until it invokes a release (or loses the lock, or dies), Waiter while an acquire of its is
// pending, "" otherwise.
func stateAt(events []history.Event, client string, t int64) string {
	state := ""
	for _, e := range events {
		if e.Time > t {
			break
		}
		if e.Process != client {
			continue
		}
		switch {
		case e.F == history.Acquire && e.Type == history.Invoke:
			state = nemesis.Waiter
		case e.F == history.Acquire && e.Type == history.OK:
			state = nemesis.Holder
		case e.F == history.Acquire, e.F == history.Release && e.Type == history.Invoke, e.F == history.Lost, e.F == history.Crash:
			state = ""
		}
	}
	return state
}

// holdsWithWaiters is how many holds began up to time t0 while another client waited: the passes
// of a hold's point a fault on the longest waiter counts (nemesis: a pass with nobody waiting
// does not).
func holdsWithWaiters(events []history.Event, t0 int64) int {
	n := 0
	waiting := map[string]bool{}
	for _, e := range events {
		if e.Time > t0 {
			break
		}
		if !history.IsClient(e.Process) || e.F != history.Acquire {
			continue
		}
		switch e.Type {
		case history.Invoke:
			waiting[e.Process] = true
		case history.OK:
			delete(waiting, e.Process)
			if len(waiting) > 0 {
				n++
			}
		default:
			delete(waiting, e.Process)
		}
	}
	return n
}

// count is how many events of type t and operation op the process made up to time t0.
func count(events []history.Event, process string, t history.Type, op string, t0 int64) int {
	n := 0
	for _, e := range events {
		if e.Time > t0 {
			break
		}
		if e.Process == process && e.Type == t && e.F == op {
			n++
		}
	}
	return n
}

// withFaults is a copy of sc with entries as its nemesis, checked afresh.
func withFaults(sc *scenarios.Scenario, entries []scenarios.Entry) (*scenarios.Scenario, error) {
	c := *sc
	c.Nemesis = entries
	return scenarios.New(c)
}
