package checker

import (
	"fmt"
	"sort"
	"strings"
	"time"

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

// Fault is one nemesis action over time: from its invoke to its completion (the heal).
type Fault struct {
	Kind   string   // the nemesis "f": pause, kill, clock, crash-restart, partition, delay, or any newer kind
	Target string   // what it acted on
	Nodes  []string // partition, delay: the links it touched
	Point  string   // the program point it was triggered at, if any
	Start  int64    // CLOCK_MONOTONIC of the invoke
	End    int64    // of the completion; = Start for an instant action (kill)
	Open   bool     // never completed: it lasted until the end of the run
	Offset int64    // clock: offset (ns) set; delay: latency (ns)
	Rate   float64  // clock: rate set
	Error  string   // a completion that reported trouble (healing failed)
}

// Faults pairs the nemesis's invokes with their completions by op. A fault that failed to start
// never happened and is left out; one never completed runs to the end of the run. Kinds are not
// interpreted, so a new kind of fault shows up without changes here — except a clock set with no
// length, whose completion says the clock stays set: it lasts until the target's clock is set
// again or reset at heal.
func Faults(events []history.Event) []Fault {
	events = sortedEvents(events)
	end := runBounds(events).end
	var out []Fault
	open := map[string]int{}   // f + op → index in out
	skewed := map[string]int{} // target → index of the clock fault still in force
	endSkew := func(target string, t int64) {
		if i, ok := skewed[target]; ok {
			out[i].End, out[i].Open = max(t, out[i].Start), false
			delete(skewed, target)
		}
	}
	for _, e := range events {
		if e.Process != history.Nemesis {
			continue
		}
		key := fmt.Sprintf("%s/%d", e.F, e.Op)
		switch e.Type {
		case history.Invoke:
			if e.F == history.Clock {
				endSkew(e.Target, e.Time)
			}
			open[key] = len(out)
			out = append(out, Fault{Kind: e.F, Target: e.Target, Nodes: e.Nodes, Point: e.Point,
				Start: e.Time, End: end, Open: true, Offset: e.Offset, Rate: e.Rate})
		case history.OK, history.Info, history.Fail:
			i, ok := open[key]
			if !ok {
				continue // a fault that failed to start: its only record is this completion
			}
			delete(open, key)
			if e.F == history.Clock && e.Type == history.OK && (e.Offset != 0 || (e.Rate != 0 && e.Rate != 1)) {
				skewed[e.Target] = i // still set: open until reset
				continue
			}
			out[i].End, out[i].Open = max(e.Time, out[i].Start), false
			if e.Type != history.OK {
				out[i].Error = e.Error
			}
		case history.Note:
			if e.F == history.Clock {
				endSkew(e.Target, e.Time) // reset at heal
			}
		}
	}
	return out
}

// Label names a fault in a few words: "pause client-1", "partition client-2 from n4,n5".
func (f Fault) Label() string {
	s := f.Kind + " " + f.Target
	switch {
	case f.Kind == history.Clock && f.Offset != 0:
		if f.Offset > 0 {
			s += " +" + time.Duration(f.Offset).String()
		} else {
			s += " " + time.Duration(f.Offset).String()
		}
	case f.Kind == history.Delay && f.Offset != 0:
		s += " +" + Human(time.Duration(f.Offset))
	}
	if len(f.Nodes) > 0 {
		s += " ↔ " + strings.Join(f.Nodes, ",")
	}
	return s
}
