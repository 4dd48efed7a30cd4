package checker

import (
	"time"
)

// Scheduling is how late the machine woke the clients from their own waits (holds, think times,
// retry backoffs: the workers' Late notes), leaving out every wake-up whose lateness overlaps a
// fault on that client (a pause makes a client late on purpose). A lease is measured in wall
// time, so a client the machine ran late holds, waits and renews late: a verdict that hangs on
// timing means less in a run whose clients woke hundreds of milliseconds late.
type Scheduling struct {
	Worst  time.Duration `json:"worst_late_ns"` // the latest wake-up
	Client string        `json:"client"`        // whose
	Offset time.Duration `json:"offset_ns"`     // when it woke, from the run's start
	Wakes  int           `json:"late_wakes"`    // late wake-ups outside faults, all clients
}

// lateWake is one Late note: client woke at at, late by late.
type lateWake struct {
	client string
	at     int64
	late   time.Duration
}

// scheduling sums up the Late notes outside the faults on their clients; nil when none is left.
func (l *Log) scheduling(start int64) *Scheduling {
	if len(l.lates) == 0 {
		return nil
	}
	byTarget := l.faultsByTarget()
	var s Scheduling
	for _, w := range l.lates {
		if faultMeets(byTarget[l.lookup(w.client)], w.at-int64(w.late), w.at) {
			continue
		}
		s.Wakes++
		if w.late > s.Worst {
			s.Worst, s.Client, s.Offset = w.late, w.client, time.Duration(w.at-start)
		}
	}
	if s.Wakes == 0 {
		return nil
	}
	return &s
}

// faultMeets reports whether one of fs (a client's own faults) acted at some moment of [from, to];
// a fault never completed lasts to the end.
func faultMeets(fs []Fault, from, to int64) bool {
	for _, f := range fs {
		end := max(f.End, f.Start)
		if f.Open {
			end = 1<<63 - 1
		}
		if f.Start <= to && end >= from {
			return true
		}
	}
	return false
}
