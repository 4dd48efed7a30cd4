package checker

import "github.com/lockcheck/lockcheck/history"

// interval is a span [start, end) of one client's state.
type interval struct {
	client     string
	start, end int64
	shared     bool // a read hold of a read/write lock: other readers may hold at the same time
}

// timelines are what each client believed and wanted over time, the common ground of the
// mutual-exclusion and liveness checks.
type timelines struct {
	// holds: from acquire ok until release invoke, a "lost" note, death, or the end of the run.
	holds []interval
	// wants: from an acquire invoke until an acquire ok, death, or the end of the run. A failed
	// attempt does not end it: the client retries, and the retries together are one wait (else a
	// lock that never frees would look available between two attempts).
	wants []interval
}

type clientState struct {
	holding, wanting     bool
	holdSince, wantSince int64
	holdShared           bool
}

func buildTimelines(events []history.Event, end int64) timelines {
	var tl timelines
	states := map[string]*clientState{}
	stopHold := func(c string, s *clientState, t int64) {
		if s.holding {
			tl.holds = append(tl.holds, interval{c, s.holdSince, max(t, s.holdSince), s.holdShared})
			s.holding = false
		}
	}
	stopWant := func(c string, s *clientState, t int64) {
		if s.wanting {
			tl.wants = append(tl.wants, interval{client: c, start: s.wantSince, end: max(t, s.wantSince)})
			s.wanting = false
		}
	}
	for _, e := range events {
		if c, dead := death(e); dead {
			if s := states[c]; s != nil {
				stopHold(c, s, e.Time)
				stopWant(c, s, e.Time)
			}
			continue
		}
		if !isClient(e.Process) {
			continue
		}
		c, s := e.Process, states[e.Process]
		if s == nil {
			s = &clientState{}
			states[c] = s
		}
		switch {
		case e.F == history.Acquire && e.Type == history.Invoke:
			if !s.wanting && !s.holding {
				s.wanting, s.wantSince = true, e.Time
			}
		case e.F == history.Acquire && e.Type == history.OK:
			stopWant(c, s, e.Time)
			if !s.holding {
				s.holding, s.holdSince, s.holdShared = true, e.Time, e.Role == "read"
			}
		case e.F == history.Acquire:
			// fail or info: the client does not hold the lock and will try again.
		case e.F == history.Release && e.Type == history.Invoke, e.F == history.Lost:
			stopHold(c, s, e.Time)
		default:
			// Any other step means the client is no longer waiting in acquire.
			stopWant(c, s, e.Time)
		}
	}
	for c, s := range states {
		stopHold(c, s, end)
		stopWant(c, s, end)
	}
	return tl
}
