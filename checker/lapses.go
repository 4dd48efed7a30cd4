package checker

// lapses.go: when a client's session had lapsed by the record. A lock that keeps a waiter's place
// on its session (an etcd lease, a ZooKeeper session) keeps it only while the session lives: a
// waiter whose keep-alives went unanswered for longer than their promise may have lost its place,
// and one whose release failed after that had lost the lock with it. Such a client is treated as
// one a fault acted on: its overtakes, waits and refusals are not held against the lock.

import "github.com/lockcheck/lockcheck/history"

// lapses are, per client whose renewals name a session, the stretches of the run after its first
// promise in which no promise of the lock's was in force: each yes lasts from its answer to its
// request's sending plus its promise. Clients without session renewals (a lock renewed only while
// held, or not at all) have none: their history cannot say when a place was kept.
func (l *Log) lapses(ops []op, end int64) map[string][]span {
	out := map[string][]span{}
	for client, ys := range l.yesAnswers(ops) {
		sessions := false
		for _, y := range ys {
			sessions = sessions || (y.f == idRenew && y.session != idEmpty)
		}
		if !sessions {
			continue
		}
		var kept []span
		for _, y := range ys {
			switch {
			case y.promise == history.Forever:
				kept = append(kept, span{y.ok, end})
			case y.promise > 0 && y.ask+y.promise > y.ok:
				kept = append(kept, span{y.ok, y.ask + y.promise})
			}
		}
		kept = merge(kept)
		var gaps []span
		for i, k := range kept {
			next := end
			if i+1 < len(kept) {
				next = kept[i+1].start
			}
			if k.end < next {
				gaps = append(gaps, span{k.end, next})
			}
		}
		if len(gaps) > 0 {
			out[l.str(client)] = gaps
		}
	}
	return out
}

// withLapses adds each client's lapses to the stretches in which something acted on it.
func (c faultCover) withLapses(lapses map[string][]span) faultCover {
	for client, gaps := range lapses {
		c.merged[client] = merge(append(gaps, c.of(client)...))
	}
	return c
}

// lapsedIn reports whether one of spans (sorted, disjoint) meets [from, to].
func lapsedIn(spans []span, from, to int64) bool {
	for _, s := range spans {
		if s.start <= to && s.end >= from {
			return true
		}
	}
	return false
}
