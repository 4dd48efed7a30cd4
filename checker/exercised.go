package checker

// exercised.go: did a run's faults put the lock to the test? A fault that no client felt proves
// nothing, and a safe verdict under it reads as a lock that survived it. A library that takes
// over an abandoned lease only inside one long Acquire never takes over when each attempt is
// shorter than the lease: a cut of the holder then leaves the lock with nobody, the run stays
// safe, and nothing says the cut never got to what breaks such a lock.
//
// From the history alone, a fault is exercised when:
//
//   - on a client that held the lock when it began: the lock was asked what the fault makes it
//     answer. If the holder's promise ran out while the fault still kept it from acting (a pause,
//     a cut, each until it ended; a death until the run's end), another client must have acquired
//     the lock after the fault began and before the holder gave it back (a takeover: a release
//     the fault cut off gives nothing back), or the holder must have learned it lost it (a lost
//     note, a release answered "not held").
//     If the promise outlasted the fault (a pause shorter than the lease), another client must
//     have asked for the lock while the fault lasted: the lock then had to keep it out.
//   - on a client that did not hold it: that client held or asked for the lock, or had a lock
//     operation in flight (an acquire or a release cut in two), while the fault lasted, and the
//     lock was used afterwards: by another client from the fault's start on, or by the client
//     itself once the fault was over (an acquire whose reply the fault lost may have taken the
//     lock for nobody: the lock shows it to whoever asks next).
//   - on a server: some client held the lock, asked for it or had a lock operation in flight
//     while it lasted.
//
// A run is unexercised when it had faults and none of them was exercised (a random package's
// faults land where they land: one that nothing felt is not a finding while others were felt).

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// exercise is what the judgement of one run's faults reads.
type exercise struct {
	l       *Log
	b       bounds
	tl      timelines
	ops     []op
	clients map[string]int32 // client name → string id
	attempt time.Duration    // Options.AttemptBound
}

// unexercised says why none of the run's faults was exercised; "" when one was, or when the run
// had no fault.
func (l *Log) unexercised(tl timelines, ops []op, b bounds, attempt time.Duration) string {
	faults := l.Faults()
	if len(faults) == 0 {
		// Nemesis events but no fault: each one that was planned failed to start (a fault that
		// waited for a holder until the run ended, a target that could not be acted on).
		for _, e := range l.nemesis {
			if e.Type == history.Fail {
				return fmt.Sprintf("no fault took effect: %s %s failed to start (%s)", e.F, e.Target, e.Error)
			}
		}
		return ""
	}
	x := exercise{l: l, b: b, tl: tl, ops: ops, clients: map[string]int32{}, attempt: attempt}
	for _, c := range l.Clients() {
		x.clients[c] = l.ids[c]
	}
	var why []string
	for _, f := range faults {
		reason := x.fault(f)
		if reason == "" {
			return ""
		}
		if len(why) < 3 {
			why = append(why, reason)
		}
	}
	if len(faults) > len(why) {
		why = append(why, fmt.Sprintf("and %d more fault(s), none exercised", len(faults)-len(why)))
	}
	return strings.Join(why, "; ")
}

// fault says why f was not exercised, "" when it was.
func (x *exercise) fault(f Fault) string {
	end := f.End
	if f.Open {
		end = x.b.end
	}
	what := fmt.Sprintf("%s %s (%s)", f.Kind, f.Target, x.at(f.Start))
	c, onClient := x.clients[f.Target]
	if !onClient {
		if x.anyActivity(-1, f.Start, end) {
			return ""
		}
		return fmt.Sprintf("no client held or asked for the lock while %s lasted", what)
	}
	if h, ok := x.holdAt(c, f.Start); ok {
		return x.onHolder(f, what, c, h, end)
	}
	if !x.activity(c, f.Start, end, false) {
		return fmt.Sprintf("%s neither held nor asked for the lock, nor gave it back, while %s lasted", f.Target, what)
	}
	// What the fault did to the client's acquire or release shows in what the lock does next:
	// to others meanwhile or after, or to the client itself after the fault.
	if !x.anyActivity(c, f.Start, x.b.end) && (f.Kind == history.Kill || !x.activity(c, end+1, x.b.end, true)) {
		return fmt.Sprintf("no client held or asked for the lock after %s, except %s while it lasted", what, f.Target)
	}
	return ""
}

// onHolder judges a fault on client c, which held the lock (hold h) when the fault began.
func (x *exercise) onHolder(f Fault, what string, c int32, h interval, end int64) string {
	dead := h.endedBy == idKill || h.endedBy == idCrash
	if h.endedBy == idLost && h.end >= f.Start {
		return "" // the holder learned that it lost the lock
	}
	// The lock stays the holder's until a release of its is answered ok: a release the fault cut
	// off (no answer, or an unknown one) left it on the servers, where only a takeover frees it.
	gaveBack := x.b.end
	if h.endedBy == idRelease {
		switch at, answer := x.releaseAnswer(c, h.end); answer {
		case tFail:
			return "" // the lock told the holder it no longer held it
		case tOK:
			gaveBack = at
		}
	}
	if x.acquiredByOther(c, h.shared, f.Start, gaveBack) {
		return "" // another client took the lock over
	}
	until := min(end, gaveBack) // the fault keeps the holder from acting until it ends
	if dead {
		until = x.b.end // a dead holder never gives the lock back
	}
	promise, lease, known := x.promiseEnd(c, h, f, until)
	if !known || promise >= until {
		if dead && known && promise != math.MaxInt64 && promise >= x.b.end {
			return fmt.Sprintf("%s's promise ran until %s, after the run ended (%s): nobody could take the lock over after %s",
				f.Target, x.at(promise), x.at(x.b.end), what)
		}
		// The promise outlasted the fault: the lock had to keep other clients out meanwhile.
		if x.wantedByOther(c, f.Start, until) {
			return ""
		}
		return fmt.Sprintf("no other client asked for the lock while %s held it under %s", f.Target, what)
	}
	var why string
	span := "while the fault lasted (until " + x.at(until) + ")"
	switch {
	case dead || f.Open:
		span = "before the run ended (" + x.at(x.b.end) + ")"
	case until < end:
		span = "before it gave the lock back (" + x.at(until) + ")"
	}
	if x.wantedByOther(c, promise, until) {
		why = fmt.Sprintf("no client acquired the lock after %s's promise ran out (%s) %s, though others asked: %s never took it over",
			f.Target, x.at(promise), span, what)
		if x.attempt > 0 && lease > 0 && x.attempt <= time.Duration(lease) {
			why += fmt.Sprintf("; the attempt bound (%s) is not longer than the lease (%s), so no single acquire attempt outlasts a lease "+
				"(a lock that takes over only within one attempt never can: workload.attempt)", Human(x.attempt), Human(time.Duration(lease)))
		}
		return why
	}
	return fmt.Sprintf("no other client asked for the lock after %s's promise ran out (%s) %s: nothing tested %s",
		f.Target, x.at(promise), span, what)
}

// holdAt finds client c's hold in force at t (a hold its death ended at t counts).
func (x *exercise) holdAt(c int32, t int64) (interval, bool) {
	for _, h := range x.tl.holds {
		if h.client != c || h.start > t {
			continue
		}
		dead := h.endedBy == idKill || h.endedBy == idCrash
		if t < h.end || (dead && t <= h.end) {
			return h, true
		}
	}
	return interval{}, false
}

// releaseAnswer finds client c's release invoked at t: when and how it was answered (tOK, tFail,
// tInfo), or 0 when it never was.
func (x *exercise) releaseAnswer(c int32, t int64) (int64, uint8) {
	for _, o := range x.ops {
		if o.proc == c && o.f == idRelease && x.l.recs[o.invoke].t == t {
			if !o.completed() {
				return 0, 0
			}
			return x.l.recs[o.done].t, x.l.recs[o.done].typ
		}
	}
	return 0, 0
}

// acquiredByOther reports whether a client other than c acquired the lock in [from, to): a read
// hold beside a shared hold of c's is no takeover.
func (x *exercise) acquiredByOther(c int32, shared bool, from, to int64) bool {
	for _, o := range x.ops {
		if o.proc == c || o.f != idAcquire || !o.completed() {
			continue
		}
		done := &x.l.recs[o.done]
		if done.typ == tOK && done.t >= from && done.t < to && !(shared && done.role == idRead) {
			return true
		}
	}
	return false
}

// wantedByOther reports whether a client other than c asked for the lock at some moment in
// [from, to].
func (x *exercise) wantedByOther(c int32, from, to int64) bool {
	for _, w := range x.tl.wants {
		if w.client != c && w.start <= to && w.end >= from {
			return true
		}
	}
	return false
}

// activity reports whether client c held or asked for the lock, or had a lock operation in
// flight (a release), at some moment in [from, to]; begun: only what began in it.
func (x *exercise) activity(c int32, from, to int64, begun bool) bool {
	return x.active(func(p int32) bool { return p == c }, from, to, begun)
}

// anyActivity is activity of every client but not (-1: of every client).
func (x *exercise) anyActivity(not int32, from, to int64) bool {
	return x.active(func(p int32) bool { return p != not }, from, to, false)
}

func (x *exercise) active(who func(int32) bool, from, to int64, begun bool) bool {
	in := func(start, end int64) bool {
		if begun {
			return start >= from && start <= to
		}
		return start <= to && end >= from
	}
	for _, spans := range [][]interval{x.tl.holds, x.tl.wants} {
		for _, s := range spans {
			if who(s.client) && in(s.start, s.end) {
				return true
			}
		}
	}
	for _, o := range x.ops {
		switch o.f {
		case idAcquire, idRelease, idCheck, idRenew, idReacquire:
		default:
			continue
		}
		end := x.b.end
		if o.completed() {
			end = x.l.recs[o.done].t
		}
		if who(o.proc) && in(x.l.recs[o.invoke].t, end) {
			return true
		}
	}
	return false
}

// promiseEnd is when the lock's promise to client c for hold h ran out, counting the answers
// that promised it (its acquisition, renewals and checks that asked the servers) up to until,
// plus the servers' slack; lease is the last promise's length. known is false when the history
// records no promise for it (written before lockcheck recorded promises). A design whose promise
// lasts only as long as its connection loses it when f cuts its client's links.
func (x *exercise) promiseEnd(c int32, h interval, f Fault, until int64) (end, lease int64, known bool) {
	rule := x.l.rules[c]
	if rule == nil {
		return 0, 0, false
	}
	end = math.MinInt64
	for _, o := range x.ops {
		if o.proc != c || !o.completed() {
			continue
		}
		switch o.f {
		case idAcquire, idReacquire, idCheck, idRenew:
		default:
			continue
		}
		done := &x.l.recs[o.done]
		if done.typ != tOK || done.t < h.start || done.t > until {
			continue
		}
		p, ok := x.l.promised[opKey{c, done.op}]
		if !ok || p.promise == 0 {
			continue
		}
		if p.promise == history.Forever {
			return math.MaxInt64, 0, true
		}
		ask := x.l.recs[o.invoke].t
		if p.since != 0 {
			ask = p.since
		}
		if e := ask + p.promise; e > end {
			end, lease = e, p.promise
		}
	}
	if end == math.MinInt64 {
		return 0, 0, false
	}
	if rule.Connection && f.Kind == history.Partition {
		end = min(end, f.Start)
	}
	return end + rule.Slack, lease, true
}

// at is a moment as an offset from the run's start: "1.23 s".
func (x *exercise) at(t int64) string { return Seconds(time.Duration(t - x.b.start)) }
