package history

import (
	"encoding/json"
	"fmt"
	"sort"
)

// Fault is one nemesis action over time, from its invoke to its completion (the heal), as a
// history records it.
type Fault struct {
	Kind   string // the nemesis's "f": pause, kill, clock, crash, partition, delay, strobe, or any newer kind
	Target string // what it acted on
	As     string // the lock state Target was chosen by (holder, waiter, overtaken), if any
	Point  string // the program point it was triggered at, if any
	Start  int64  // CLOCK_MONOTONIC of the invoke
	End    int64  // of the completion; = Start for an instant action (kill)
	Open   bool   // never completed: it lasted until the end of the run
	// Params are the kind's own parameters as its invoke recorded them (Event.Params), for the
	// kind to describe the fault (package nemesis: Label).
	Params json.RawMessage
	Error  string // a completion that reported trouble (healing failed)
	// Weakness is the documented weakness of lock services the fault exercised on a lock
	// server, as its invoke recorded it (Event.Weakness); "" when it exercised none.
	Weakness string
}

// Faults pairs the nemesis's invokes with their completions by kind and op. A fault that failed
// to start never happened and is left out; one never completed runs to the end of the run. Kinds
// are not interpreted, so a new kind of fault shows up without changes here — except a clock set
// with no length, whose completion says the clock stays set (ClockSetOff): it lasts until the
// target's clock is set again or reset at heal.
func Faults(events []Event) []Fault {
	events = sortedByTime(events)
	end := runEnd(events)
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
		if e.Process != Nemesis {
			continue
		}
		key := fmt.Sprintf("%s/%d", e.F, e.Op)
		switch e.Type {
		case Invoke:
			if e.F == Clock {
				endSkew(e.Target, e.Time)
			}
			open[key] = len(out)
			out = append(out, Fault{Kind: e.F, Target: e.Target, As: e.As, Point: e.Point,
				Start: e.Time, End: end, Open: true, Params: e.Params, Weakness: e.Weakness})
		case OK, Info, Fail:
			i, ok := open[key]
			if !ok {
				continue // a fault that failed to start: its only record is this completion
			}
			delete(open, key)
			if e.F == Clock && e.Type == OK && ClockSetOff(e.Params) {
				skewed[e.Target] = i // still set: open until reset
				continue
			}
			out[i].End, out[i].Open = max(e.Time, out[i].Start), false
			if e.Type != OK {
				out[i].Error = e.Error
			}
		case Note:
			if e.F == Clock {
				endSkew(e.Target, e.Time) // reset at heal
			}
		}
	}
	return out
}

// ClockSetOff reads a clock's parameters (a clock fault's completion, a client's design note):
// an offset, or a rate other than true speed, say the clock was left so (package nemesis's clock kind writes them with these
// names and units: nanoseconds, a factor).
func ClockSetOff(params json.RawMessage) bool {
	var c struct {
		Offset int64   `json:"offset"`
		Rate   float64 `json:"rate"`
	}
	if len(params) == 0 || json.Unmarshal(params, &c) != nil {
		return false
	}
	return c.Offset != 0 || (c.Rate != 0 && c.Rate != 1)
}

func sortedByTime(events []Event) []Event {
	if sort.SliceIsSorted(events, func(i, j int) bool { return events[i].Time < events[j].Time }) {
		return events
	}
	c := append([]Event(nil), events...)
	Sort(c)
	return c
}

// runEnd is the end note's time, or the last event's.
func runEnd(events []Event) int64 {
	if len(events) == 0 {
		return 0
	}
	end := events[len(events)-1].Time
	for _, e := range events {
		if e.Process == Controller && e.Type == Note && e.F == End {
			end = e.Time
		}
	}
	return end
}
