package checker

import (
	"sort"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/lockcheck/lockcheck/history"
)

// minSegment is the fewest sections handed to porcupine at once (unless the history is shorter
// or never quiet). Porcupine clones a bitset of every operation at each step of its search, so
// one call costs O(n²/64) time and memory: 1M events (375k sections) would need gigabytes.
// Checking quiet-separated segments of about this size keeps each clone at a few words.
const minSegment = 1024

// linearizableInSegments checks a register's sections in segments cut where the history is
// quiet: every section before the cut returned before any section after it was called, so every
// linearization puts the one before the other. The value at a cut is known: sections before it
// all completed with a known write outcome (a section whose write outcome is unknown never
// returns, so no cut follows it), and whatever order they are linearized in, each accepted write
// adds one. Each segment is then checked from that value on its own, which is equivalent to
// checking the whole history at once. The budget covers all segments.
func linearizableInSegments(sections []section, initial int64, ids map[string]int, budget time.Duration) string {
	ss := append([]section(nil), sections...)
	sort.SliceStable(ss, func(i, j int) bool { return ss[i].call < ss[j].call })
	deadline := time.Now().Add(budget)
	value, verdict := initial, Yes
	check := func(seg []section) bool {
		left := time.Until(deadline)
		if left <= 0 { // porcupine reads a zero timeout as "no limit"
			verdict = Unknown
			return true
		}
		switch porcupine.CheckOperationsTimeout(incrementModel(value), operations(seg, ids), left) {
		case porcupine.Illegal:
			verdict = No // whatever the other segments say
			return false
		case porcupine.Unknown:
			verdict = Unknown
		}
		return true
	}
	start, lastReturn := 0, int64(-1<<63)
	for i, s := range ss {
		if i-start >= minSegment && lastReturn < s.call {
			if !check(ss[start:i]) {
				return No
			}
			for _, done := range ss[start:i] {
				if done.Write == history.Accepted {
					value++
				}
			}
			start = i
		}
		lastReturn = max(lastReturn, s.ret)
	}
	if len(ss) > start && !check(ss[start:]) {
		return No
	}
	return verdict
}
