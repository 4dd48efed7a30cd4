package checker

// lapses.go: when a client's session had lapsed by the record. A lock that keeps a waiter's place
// on its session (an etcd lease, a ZooKeeper session) keeps it only while the session lives: a
// waiter whose keep-alives went unanswered for longer than their promise may have lost its place,
// and one whose release failed after that had lost the lock with it. Such a client is treated as
// one a fault acted on: its overtakes, waits and refusals are not held against the lock.

import (
	"slices"

	"github.com/lockcheck/lockcheck/history"
)

// lapses are, per client whose renewals name a session, the stretches of the run after its first
// promise in which no promise of the lock's was in force: each yes lasts from its answer to its
// request's sending plus its promise. Clients without session renewals (a lock renewed only while
// held, or not at all) have none: their history cannot say when a place was kept.
func (l *Log) lapses(ops []op, end int64) map[string]periods {
	out := map[string]periods{}
	for client, ys := range l.yesAnswers(ops) {
		if !slices.ContainsFunc(ys, func(y yes) bool { return y.f == idRenew && y.session != idEmpty }) {
			continue
		}
		var kept []period
		for _, y := range ys {
			switch {
			case y.promise == history.Forever:
				kept = append(kept, period{y.ok, end})
			case y.promise > 0:
				kept = append(kept, period{y.ok, y.ask + y.promise})
			}
		}
		in := union(kept...)
		if len(in) == 0 {
			continue
		}
		if gaps := (periods{{in[0].from, end}}).minus(in); len(gaps) > 0 {
			out[l.str(client)] = gaps
		}
	}
	return out
}

// withLapses adds each client's lapses to the stretches in which something acted on it.
func (c faultCover) withLapses(lapses map[string]periods) faultCover {
	for client, gaps := range lapses {
		ss := append([]span(nil), c.of(client)...)
		for _, g := range gaps {
			ss = append(ss, span{g.from, g.to})
		}
		c.merged[client] = merge(ss)
	}
	return c
}

// lapsedIn reports whether a lapse meets [from, to].
func lapsedIn(gaps periods, from, to int64) bool {
	return len(gaps.intersect(periods{{from, to + 1}})) > 0
}
