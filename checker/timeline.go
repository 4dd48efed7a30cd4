package checker

import (
	"sort"

	"github.com/lockcheck/lockcheck/history"
)

// interval is a span [start, end) of one client's state.
type interval struct {
	client     int32 // string id
	start, end int64
	shared     bool  // a read hold of a read/write lock: other readers may hold at the same time
	endedBy    int32 // holds: string id of what ended it (release, lost, crash, kill); 0 = the run's end
}

// timelines are what each client believed and wanted over time, the common ground of the
// mutual-exclusion and liveness checks.
type timelines struct {
	// holds: from acquire ok until release invoke, a "lost" note, death, or the end of the run.
	holds []interval
	// wants: from an acquire invoke until an acquire ok, death, giving up, or the end of the run.
	// A failed attempt followed by another attempt does not end it: the client retries, and the
	// retries together are one wait (else a lock that never frees would look available between
	// two attempts). A failed attempt after which the client did something else, or nothing
	// more, ends it where it failed: a client that gave up no longer wants the lock.
	wants []interval
}

type clientState struct {
	holding, wanting     bool
	holdSince, wantSince int64
	holdShared           bool
	gaveUp               bool  // the last acquire failed; the wait goes on only if another follows
	gaveUpAt             int64 // when it failed
}

func (l *Log) buildTimelines(end int64) timelines {
	var tl timelines
	states := map[int32]*clientState{}
	stopHold := func(c int32, s *clientState, t int64, by int32) {
		if s.holding {
			tl.holds = append(tl.holds, interval{c, s.holdSince, max(t, s.holdSince), s.holdShared, by})
			s.holding = false
		}
	}
	stopWant := func(c int32, s *clientState, t int64) {
		if s.wanting {
			if s.gaveUp {
				t = s.gaveUpAt
			}
			tl.wants = append(tl.wants, interval{client: c, start: s.wantSince, end: max(t, s.wantSince)})
			s.wanting, s.gaveUp = false, false
		}
	}
	for k := range l.recs {
		r := &l.recs[k]
		if c, dead := l.death(r); dead {
			if s := states[c]; s != nil {
				stopHold(c, s, r.t, r.f)
				stopWant(c, s, r.t)
			}
			continue
		}
		if !l.isClient(r.proc) {
			continue
		}
		c, s := r.proc, states[r.proc]
		if s == nil {
			s = &clientState{}
			states[c] = s
		}
		switch {
		case r.f == idAcquire && r.typ == tInvoke:
			if !s.wanting && !s.holding {
				s.wanting, s.wantSince = true, r.t
			}
			s.gaveUp = false // trying again: the wait goes on
		case r.f == idAcquire && r.typ == tOK:
			s.gaveUp = false
			stopWant(c, s, r.t)
			if !s.holding {
				s.holding, s.holdSince, s.holdShared = true, r.t, r.role == idRead
			}
		case r.f == idAcquire && (r.typ == tFail || r.typ == tInfo):
			// The client does not hold the lock; whether it still wants it depends on what it
			// does next.
			if s.wanting && !s.gaveUp {
				s.gaveUp, s.gaveUpAt = true, r.t
			}
		case r.f == idAcquire:
		case r.f == idRelease && r.typ == tInvoke, r.f == idLost:
			stopHold(c, s, r.t, r.f)
			stopWant(c, s, r.t) // a step other than acquiring: not waiting either
		case r.f == idRenew, r.f == idCheck:
			// A renewal runs on its own (a session's heartbeat goes on while its client waits),
			// and a check is asked while holding: neither starts or ends a hold or a wait.
		default:
			// Any other step means the client is no longer waiting in acquire.
			stopWant(c, s, r.t)
		}
	}
	procs := make([]int32, 0, len(states))
	for c := range states {
		procs = append(procs, c)
	}
	sort.Slice(procs, func(i, j int) bool { return procs[i] < procs[j] })
	for _, c := range procs {
		stopHold(c, states[c], end, idEmpty)
		stopWant(c, states[c], end)
	}
	return tl
}

// Hold is one span in which a client believed it held the lock, exactly as the mutual-exclusion
// check sees it (reports draw these, so they must not recompute them their own way).
type Hold struct {
	Client     string
	Start, End int64 // CLOCK_MONOTONIC; End is the release invoke, a "lost" note, death or the run's end
	Shared     bool  // a read hold of a read/write lock
	// EndedBy says what ended it: history.Release (its release), history.Lost (the client
	// noticed it lost the lock), history.Crash or history.Kill (its death), or "" (the run's end).
	EndedBy string
}

// Holds returns every client's believed holds, ordered by start.
func (l *Log) Holds() []Hold {
	tl := l.buildTimelines(l.bounds().end)
	out := make([]Hold, len(tl.holds))
	for i, h := range tl.holds {
		out[i] = Hold{Client: l.str(h.client), Start: h.start, End: h.end, Shared: h.shared, EndedBy: l.str(h.endedBy)}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Start < out[j].Start })
	return out
}

// Holds returns every client's believed holds in events, ordered by start.
func Holds(events []history.Event) []Hold { return FromEvents(events).Holds() }
