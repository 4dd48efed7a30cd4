package checker

import (
	"slices"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/lockcheck/lockcheck/history"
)

// minSegment is the fewest sections handed to porcupine at once (unless the history is shorter
// or never quiet). Porcupine clones a bitset of every operation at each step of its search, so
// one call costs O(n²/64) time and memory: 1M events (375k sections) would need gigabytes.
// Checking quiet-separated segments of about this size keeps each clone at a few words.
const minSegment = 1024

// piece is the part of a register's history that a check could not linearize (or ran out of
// time on), kept for Log.Visualize.
type piece struct {
	sections   []section
	init       []regState
	ids        map[int32]int
	start, end int64 // first call, last return
}

// segmentResult is the verdict on one register and the piece to draw.
type segmentResult struct {
	verdict string
	piece   *piece
}

// linearizableInSegments checks a register's sections in segments cut where the history is
// quiet: every section before the cut returned before any section after it was called, so every
// linearization puts the one before the other. Each segment is checked from the states the
// earlier ones can end in, which is equivalent to checking the whole history at once. Without
// writes of unknown outcome that is one state, known without asking porcupine (each accepted
// write adds one); with them, porcupine is asked which of the few possible end states a segment
// can reach (endStates). The budget covers all segments.
func linearizableInSegments(sections []section, initial int64, ids map[int32]int, budget time.Duration) segmentResult {
	ss := slices.Clone(sections)
	slices.SortStableFunc(ss, func(a, b section) int { return cmpInt(a.call, b.call) })
	deadline := time.Now().Add(budget)
	states := []regState{{v: initial}}
	res := segmentResult{verdict: Yes}
	check := func(seg []section) bool {
		switch porcupineCheck(states, seg, ids, nil, deadline) {
		case porcupine.Illegal:
			res = segmentResult{verdict: No, piece: newPiece(seg, states, ids)}
			return false
		case porcupine.Unknown:
			if res.verdict == Yes {
				res = segmentResult{verdict: Unknown, piece: newPiece(seg, states, ids)}
			}
		}
		states = endStates(seg, states, ids, deadline)
		return true
	}
	start, lastReturn := 0, int64(-1<<63)
	for i, s := range ss {
		if i-start >= minSegment && lastReturn < s.call {
			if !check(ss[start:i]) {
				return res
			}
			start = i
		}
		lastReturn = max(lastReturn, s.ret)
	}
	if len(ss) > start {
		check(ss[start:])
	}
	return res
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func newPiece(seg []section, init []regState, ids map[int32]int) *piece {
	p := &piece{sections: seg, init: slices.Clone(init), ids: ids, start: seg[0].call, end: seg[0].ret}
	for _, s := range seg {
		p.end = max(p.end, s.ret)
	}
	return p
}

// porcupineCheck runs porcupine on seg from states, with extra operations appended, within what
// is left of the budget.
func porcupineCheck(states []regState, seg []section, ids map[int32]int, extra []porcupine.Operation, deadline time.Time) porcupine.CheckResult {
	left := time.Until(deadline)
	if left <= 0 { // porcupine reads a zero timeout as "no limit"
		return porcupine.Unknown
	}
	ops := append(operations(seg, ids, nil), extra...)
	return porcupine.CheckOperationsTimeout(incrementModel(states), ops, left)
}

// endStates are the states a segment, started in states, can end in; checked linearizable before.
//
// Without a pending write, a write of unknown outcome or a choice of start states, it is one
// state: each accepted write added one. Otherwise let m be the highest value the segment shows
// (a value read, or one more than a value read and then accepted). Values only grow, so the
// register ends at m or above; and the only write that can take it past m is a pending one that
// read m, which takes it to m+1 and no further (whatever read m+1 would have shown it). So it
// ends in (m, pending), (m, settled) or (m+1, settled): porcupine, asked with a last operation
// that checks the state, says which. When it runs out of time all three are kept: more start
// states than are reachable can only make a later segment look linearizable when it is not, so
// such a run's verdict stays Unknown unless a later segment is illegal from all of them.
func endStates(seg []section, states []regState, ids map[int32]int, deadline time.Time) []regState {
	simple := len(states) == 1 && !states[0].pending
	var accepted, m int64
	m = -1 << 63
	for _, s := range seg {
		switch s.Write {
		case history.Accepted:
			accepted++
			m = max(m, s.Read+1)
		case history.Unknown:
			simple = false
			m = max(m, s.Read)
		default:
			m = max(m, s.Read)
		}
	}
	if simple {
		return []regState{{v: states[0].v + accepted}}
	}
	last := seg[0].ret
	for _, s := range seg {
		last = max(last, s.ret)
	}
	probeID := len(ids) // a client of its own, after everyone
	reaches := func(want regState) (bool, bool) {
		end := porcupine.Operation{ClientId: probeID, Input: probe{want}, Call: last + 1, Return: last + 2}
		switch porcupineCheck(states, seg, ids, []porcupine.Operation{end}, deadline) {
		case porcupine.Ok:
			return true, true
		case porcupine.Illegal:
			return false, true
		}
		return true, false // unknown: keep it
	}
	var out []regState
	pendingAtM, _ := reaches(regState{v: m, pending: true})
	if pendingAtM {
		// A pending write may land at the very end too: (m+1, settled) follows.
		out = append(out, regState{v: m, pending: true}, regState{v: m + 1})
	} else if ok, _ := reaches(regState{v: m + 1}); ok {
		out = append(out, regState{v: m + 1})
	}
	if ok, _ := reaches(regState{v: m}); ok {
		out = append(out, regState{v: m})
	}
	if len(out) == 0 {
		// Cannot happen for a segment found linearizable; keep every candidate rather than none,
		// which would call the next segment illegal without cause.
		out = []regState{{v: m, pending: true}, {v: m + 1}, {v: m}}
	}
	return out
}
