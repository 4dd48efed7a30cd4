package checker

import (
	"sort"
	"strconv"
	"strings"

	"github.com/lockcheck/lockcheck/history"
)

// op is one client operation: its invoke and, if it ever came, its completion. Every check reads
// these rather than raw events, so that invoke/completion pairing is done once.
type op struct {
	process string
	f       string
	cs      int64
	// invoke and done point into the events being checked: copies would double the memory of a
	// large history. done is nil when the op never completed (the client died or the run ended
	// first).
	invoke, done *history.Event
}

// isClient tells client processes from the harness's own.
func isClient(process string) bool {
	switch process {
	case "", history.Nemesis, history.Resource, history.Controller:
		return false
	}
	return true
}

// clientOps pairs invokes with completions by (process, Op), in invoke order. A completion
// without an invoke cannot be placed in time and is dropped.
func clientOps(events []history.Event) []op {
	ops := make([]op, 0, len(events)/2) // about two events per op: no garbage from regrowing
	open := map[string]map[int64]int{}  // process → Op → index in ops
	for k := range events {
		e := &events[k]
		if !isClient(e.Process) {
			continue
		}
		switch e.Type {
		case history.Invoke:
			if open[e.Process] == nil {
				open[e.Process] = map[int64]int{}
			}
			open[e.Process][e.Op] = len(ops)
			ops = append(ops, op{process: e.Process, f: e.F, cs: e.CS, invoke: e})
		case history.OK, history.Fail, history.Info:
			i, found := open[e.Process][e.Op]
			if !found || ops[i].f != e.F {
				continue
			}
			delete(open[e.Process], e.Op)
			ops[i].done = e
			if ops[i].cs == 0 {
				ops[i].cs = e.CS
			}
		}
	}
	return ops
}

// bounds are the run's start and end: the controller's start/end notes, else the first and last
// events. A belief of holding the lock still open at the end is cut there.
type bounds struct{ start, end int64 }

func runBounds(events []history.Event) bounds {
	var b bounds
	if len(events) == 0 {
		return b
	}
	b.start, b.end = events[0].Time, events[len(events)-1].Time
	for _, e := range events {
		if e.Process != history.Controller || e.Type != history.Note {
			continue
		}
		switch e.F {
		case history.Start:
			b.start = e.Time
		case history.End:
			b.end = e.Time
		}
	}
	return b
}

// death reports the client an event says died: a controller's crash note or a nemesis kill.
// A kill's invoke is ignored: the process was still alive when the kill was sent.
func death(e history.Event) (string, bool) {
	if e.Target == "" || !isClient(e.Target) {
		return "", false
	}
	switch {
	case e.F == history.Crash && e.Type == history.Note:
		return e.Target, true
	case e.F == history.Kill && e.Process == history.Nemesis && (e.Type == history.Note || e.Type == history.OK):
		return e.Target, true
	}
	return "", false
}

// sortedEvents returns events in time order, copying only if the caller's slice is not sorted.
func sortedEvents(events []history.Event) []history.Event {
	if sort.SliceIsSorted(events, func(i, j int) bool { return events[i].Time < events[j].Time }) {
		return events
	}
	c := append([]history.Event(nil), events...)
	history.Sort(c)
	return c
}

// LessClient orders "client-2" before "client-10".
func LessClient(a, b string) bool {
	pa, na, oka := splitNumber(a)
	pb, nb, okb := splitNumber(b)
	if oka && okb && pa == pb && na != nb {
		return na < nb
	}
	return a < b
}

func splitNumber(s string) (string, int, bool) {
	i := strings.LastIndexByte(s, '-')
	if i < 0 {
		return s, 0, false
	}
	n, err := strconv.Atoi(s[i+1:])
	return s[:i], n, err == nil
}

// clientIDs numbers the clients from 0 in natural order, as porcupine's visualization wants.
func clientIDs(ops []op) map[string]int {
	var names []string
	seen := map[string]bool{}
	for _, o := range ops {
		if !seen[o.process] {
			seen[o.process] = true
			names = append(names, o.process)
		}
	}
	sort.Slice(names, func(i, j int) bool { return LessClient(names[i], names[j]) })
	ids := make(map[string]int, len(names))
	for i, n := range names {
		ids[n] = i
	}
	return ids
}
