package checker

import (
	"sort"

	"github.com/lockcheck/lockcheck/history"
)

// Hold is one span in which a client believed it held the lock, exactly as the mutual-exclusion
// check sees it (reports draw these, so they must not recompute them their own way).
type Hold struct {
	Client     string
	Start, End int64 // CLOCK_MONOTONIC; End is the release invoke, a "lost" note, death or the run's end
	Shared     bool  // a read hold of a read/write lock
}

// Holds returns every client's believed holds, ordered by start.
func Holds(events []history.Event) []Hold {
	events = sortedEvents(events)
	tl := buildTimelines(events, runBounds(events).end)
	out := make([]Hold, len(tl.holds))
	for i, h := range tl.holds {
		out[i] = Hold{Client: h.client, Start: h.start, End: h.end, Shared: h.shared}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Start < out[j].Start })
	return out
}

// Fault is one nemesis action over time (history.Fault).
type Fault = history.Fault

// Faults pairs the nemesis's invokes with their completions (history.Faults).
func Faults(events []history.Event) []Fault { return history.Faults(events) }
