package checker

import (
	"fmt"
	"sort"
	"time"
)

// liveness measures how available the lock was: acquisitions, their latency, and the windows in
// which someone wanted the lock and nobody held it (unavailableWindows).
func (log *Log) liveness(ops []op, windows []window, b bounds, stuckAfter time.Duration) Liveness {
	var l Liveness
	var latencies []time.Duration
	lastOK := int64(-1 << 63)
	for i := range ops {
		o := &ops[i]
		if o.f != idAcquire || !o.completed() {
			continue
		}
		done := &log.recs[o.done]
		switch done.typ {
		case tOK:
			l.Acquisitions++
			latencies = append(latencies, time.Duration(done.t-log.recs[o.invoke].t))
			lastOK = max(lastOK, done.t)
		case tFail:
			l.AcquireFailures++
		case tInfo:
			l.AcquireUnknown++
		}
	}
	sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
	l.AcquireLatencyP50 = percentile(latencies, 50)
	l.AcquireLatencyP99 = percentile(latencies, 99)

	for _, w := range windows {
		if d := time.Duration(w.end - w.start); d > l.LongestUnavailable {
			l.LongestUnavailable, l.LongestUnavailableOffset = d, time.Duration(w.start-b.start)
		}
	}
	// Stuck: nobody acquired the lock at the end of the last window or after it — the window
	// ran to the end of the run, or until every waiter died.
	if n := len(windows); n > 0 {
		last := windows[n-1]
		if d := time.Duration(last.end - last.start); lastOK < last.end && d > stuckAfter {
			l.Stuck, l.StuckFor = true, d
			l.StuckUnknown = log.unknownTakers(ops, last.end)
		}
	}
	return l
}

// percentile is the nearest-rank percentile of sorted values: the smallest value with at least p%
// of the values at or below it.
func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := (p*len(sorted) + 99) / 100
	return sorted[min(max(rank, 1), len(sorted))-1]
}

// window is a span in which at least one live client wanted the lock and none held it.
type window struct{ start, end int64 }

func unavailableWindows(tl timelines, end int64) []window {
	type change struct {
		t            int64
		wants, holds int
	}
	changes := make([]change, 0, 2*(len(tl.wants)+len(tl.holds)))
	for _, w := range tl.wants {
		changes = append(changes, change{w.start, 1, 0}, change{w.end, -1, 0})
	}
	for _, h := range tl.holds {
		changes = append(changes, change{h.start, 0, 1}, change{h.end, 0, -1})
	}
	sort.Slice(changes, func(i, j int) bool { return changes[i].t < changes[j].t })
	var out []window
	wanters, holders := 0, 0
	open, since := false, int64(0)
	for i := 0; i < len(changes); {
		t := changes[i].t
		// Apply every change at this instant before judging, so a hand-over (release and the
		// next acquire at the same time) opens no window.
		for ; i < len(changes) && changes[i].t == t; i++ {
			wanters += changes[i].wants
			holders += changes[i].holds
		}
		down := wanters > 0 && holders == 0
		switch {
		case down && !open:
			open, since = true, t
		case !down && open:
			out = append(out, window{since, t})
			open = false
		}
	}
	if open {
		out = append(out, window{since, max(end, since)})
	}
	return out
}

// unknownTakers lists the clients whose last acquire before end ended unknown (info) and was not
// followed by an acquisition of theirs: the attempt may have taken the lock at any time after it
// was sent, so it may be what holds a lock nobody believes they hold.
func (l *Log) unknownTakers(ops []op, end int64) []string {
	last := map[int32]*op{}
	for i := range ops {
		o := &ops[i]
		if o.f != idAcquire || !o.completed() || l.recs[o.invoke].t >= end {
			continue
		}
		if t := l.recs[o.done].typ; t == tOK || t == tInfo {
			last[o.proc] = o
		}
	}
	var out []string
	for c, o := range last {
		if l.recs[o.done].typ == tInfo {
			out = append(out, l.str(c))
		}
	}
	sort.Slice(out, func(i, j int) bool { return LessClient(out[i], out[j]) })
	return out
}

// inconclusive says why a run proves nothing, or "": a run in which no client ever held the lock
// shows neither safety nor its absence. When every attempt ended in an error rather than a
// refusal, the lock service was never reachable; the reason says so, with the first error.
func (l *Log) inconclusive(ops []op, v Verdict) string {
	if v.Liveness.Acquisitions > 0 {
		return ""
	}
	var attempts, errs int
	var firstErr string
	for i := range ops {
		o := &ops[i]
		if o.f != idAcquire {
			continue
		}
		attempts++
		if !o.completed() {
			continue
		}
		if done := &l.recs[o.done]; done.typ == tInfo {
			errs++
			if firstErr == "" {
				firstErr = l.str(done.err)
			}
		}
	}
	switch {
	case attempts == 0:
		return "no client ever tried to acquire the lock"
	case errs > 0 && errs == attempts:
		s := fmt.Sprintf("no client ever acquired the lock: the lock service never answered (%d attempts, every one an error", attempts)
		if firstErr != "" {
			s += ", the first: " + firstErr
		}
		return s + ")"
	}
	return fmt.Sprintf("no client ever acquired the lock (%d attempts)", attempts)
}
