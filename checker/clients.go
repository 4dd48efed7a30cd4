package checker

import (
	"math"
	"sort"
	"time"
)

// Per-client liveness: the lock may serve the clients as a whole and still leave one of them out
// (a client whose library believes it still holds a lock it lost, a waiter whose wake-up never
// comes). And it may hand the lock out now and then and still refuse its askers most of the time.

// ClientLiveness is one client's share of the lock's service.
type ClientLiveness struct {
	Client       string `json:"client"`
	Acquisitions int    `json:"acquisitions"`
	// PassedOver is the longest stretch in which the client asked for the lock in vain while
	// other clients got it.
	PassedOver Stretch `json:"passed_over"`
	// Starved is the longest stretch that makes the client starved: longer than
	// Liveness.StarvedAfter, and other clients got the lock at least Liveness.StarvedBy times in
	// it; nil when none does.
	Starved *Stretch `json:"starved,omitempty"`
}

// Stretch is a time in which a client asked for the lock in vain while other clients got it: from
// the start of one of its waits (Fairness: from an acquire's invoke to its next acquisition,
// across attempts that gave up) to the last acquisition of another client before the wait ended.
// Time in which a fault acted on the client or on a server is left out (it may cost a client its
// place: a paused waiter's session runs out, a restarted node forgets the queue): a stretch
// starts again after such a fault.
type Stretch struct {
	Length time.Duration `json:"length_ns"`
	Offset time.Duration `json:"offset_ns"` // its start, from the run's start
	By     int           `json:"by"`        // acquisitions of other clients in it
	// Served: the wait ended with an acquisition of the client's own (false: it died, or the run
	// ended, first).
	Served bool `json:"served"`
}

// StarvedClients lists the starved clients, in client order.
func (l Liveness) StarvedClients() []string {
	var out []string
	for _, c := range l.Clients {
		if c.Starved != nil {
			out = append(out, c.Client)
		}
	}
	return out
}

// LongestPassedOver is the client passed over longest (zero when none was).
func (l Liveness) LongestPassedOver() ClientLiveness {
	var worst ClientLiveness
	for _, c := range l.Clients {
		if c.PassedOver.Length > worst.PassedOver.Length {
			worst = c
		}
	}
	return worst
}

// Starving reports whether the lock failed to serve: a starved client, or askers refused for more
// than the limit's share of the run.
func (l Liveness) Starving() bool { return len(l.StarvedClients()) > 0 || l.BarelyServed }

// luckStreak is how many hand-overs in a row one of n asking clients loses by chance, in at most
// one run in a thousand with h hand-overs, if each client is as likely as any other to win each
// one: the smallest k with h·n·((n−1)/n)^k ≤ 1/1000 (a union bound over the clients and the
// hand-overs a losing streak may start at). A lock that polls loses a client many races in a row
// now and then; a client passed over more often than this was not unlucky.
func luckStreak(n, h int) int {
	if n < 2 || h < 1 {
		return 1
	}
	lose := float64(n-1) / float64(n)
	return max(1, int(math.Ceil(math.Log(float64(h)*float64(n)*1000)/-math.Log(lose))))
}

// span is a stretch of time [start, end].
type span struct{ start, end int64 }

// faultCover says when the nemesis acted on each client or on a server (anything that is not a
// client: lock nodes, the resource, a leader): per client, the stretches in which a fault acted
// on it or on a server, merged and sorted, so that a question about one moment is a binary search
// (a soak run asks it for every wait and every overtake).
type faultCover struct {
	merged  map[string][]span // by client
	servers []span            // for a client no fault acted on
}

func (l *Log) faultCover() faultCover {
	byClient := map[string][]span{}
	var servers []span
	for id, fs := range l.faultsByTarget() {
		for _, f := range fs {
			s := span{f.Start, max(f.End, f.Start)}
			if id == idEmpty {
				servers = append(servers, s)
			} else {
				byClient[l.str(id)] = append(byClient[l.str(id)], s)
			}
		}
	}
	c := faultCover{merged: map[string][]span{}, servers: merge(servers)}
	for client, ss := range byClient {
		c.merged[client] = merge(append(ss, servers...))
	}
	return c
}

// merge sorts spans and joins those that overlap or touch.
func merge(ss []span) []span {
	ss = append([]span(nil), ss...)
	sort.Slice(ss, func(i, j int) bool { return ss[i].start < ss[j].start })
	var out []span
	for _, s := range ss {
		if n := len(out); n > 0 && s.start <= out[n-1].end {
			out[n-1].end = max(out[n-1].end, s.end)
			continue
		}
		out = append(out, s)
	}
	return out
}

func (c faultCover) of(client string) []span {
	if ss, ok := c.merged[client]; ok {
		return ss
	}
	return c.servers
}

// touched reports whether a fault acted on client, or on a server, at some moment of [from, to].
func (c faultCover) touched(client string, from, to int64) bool {
	ss := c.of(client)
	i := sort.Search(len(ss), func(i int) bool { return ss[i].end >= from })
	return i < len(ss) && ss[i].start <= to
}

// free cuts [from, to] into the stretches no fault on client or on a server covers, in order.
func (c faultCover) free(client string, from, to int64) []span {
	ss := c.of(client)
	var out []span
	at := from
	for i := sort.Search(len(ss), func(i int) bool { return ss[i].end >= from }); i < len(ss) && ss[i].start <= to; i++ {
		if ss[i].start > at {
			out = append(out, span{at, ss[i].start})
		}
		at = max(at, ss[i].end)
	}
	if at < to {
		out = append(out, span{at, to})
	}
	return out
}

// acquisition is one successful acquire: who, and when it completed.
type acquisition struct {
	client string
	t      int64
}

// clientLiveness computes each client's ClientLiveness, and the number of acquisitions by others
// a stretch must hold for its client to be starved (luckStreak). acqs are sorted by invoke.
func clientLiveness(acqs []acquireOp, deaths map[string]int64, cover faultCover, b bounds, starvedAfter time.Duration) ([]ClientLiveness, int) {
	var got []acquisition
	per := map[string]*ClientLiveness{}
	for _, a := range acqs {
		c := per[a.client]
		if c == nil {
			c = &ClientLiveness{Client: a.client}
			per[a.client] = c
		}
		if a.ok {
			c.Acquisitions++
			got = append(got, acquisition{a.client, a.done})
		}
	}
	sort.Slice(got, func(i, j int) bool { return got[i].t < got[j].t })
	starvedBy := luckStreak(len(per), len(got))
	for _, w := range waits(acqs, deaths, b.end) {
		c := per[w.client]
		for _, s := range cover.free(w.client, w.start, w.end) {
			// Acquisitions of others in (s.start, s.end]: from the first after s.start.
			i := sort.Search(len(got), func(i int) bool { return got[i].t > s.start })
			last, by := int64(0), 0
			for ; i < len(got) && got[i].t <= s.end; i++ {
				if got[i].client != w.client {
					last, by = got[i].t, by+1
				}
			}
			if by == 0 {
				continue
			}
			st := Stretch{Length: time.Duration(last - s.start), Offset: time.Duration(s.start - b.start), By: by, Served: w.ended}
			if st.Length > c.PassedOver.Length {
				c.PassedOver = st
			}
			if st.Length > starvedAfter && by >= starvedBy && (c.Starved == nil || st.Length > c.Starved.Length) {
				c.Starved = &st
			}
		}
	}
	out := make([]ClientLiveness, 0, len(per))
	for _, c := range per {
		out = append(out, *c)
	}
	sort.Slice(out, func(i, j int) bool { return LessClient(out[i].Client, out[j].Client) })
	return out, starvedBy
}

// refusedWindow is the shortest stretch of a free lock with someone asking that counts as a
// refusal: anything shorter may be a hand-over (the release, the waiter told, its request) or a
// client's first connection. Without a fault, the shipped scenarios' longest such stretch was
// 329 ms (a Curator client's first session, on 2 cores at load 15); a hand-over takes 1-200 ms.
const refusedWindow = 500 * time.Millisecond

// refused measures the time in which someone asked for the lock and nobody held it, in stretches
// longer than refusedWindow, from the first acquire to the end of the run, leaving out the time a
// fault acted on a server (a lock service that refuses while it has lost its quorum or its node
// is down is doing its job). It returns that time and its share of the time measured.
func refused(windows []window, acqs []acquireOp, cover faultCover, b bounds) (time.Duration, float64) {
	if len(acqs) == 0 {
		return 0, 0
	}
	from := acqs[0].invoke // acqs are sorted by invoke
	measured := cover.free("", from, b.end)
	var total, busy int64
	for _, m := range measured {
		total += m.end - m.start
		for _, w := range windows {
			if time.Duration(w.end-w.start) <= refusedWindow {
				continue
			}
			if s, e := max(w.start, m.start), min(w.end, m.end); e > s {
				busy += e - s
			}
		}
	}
	if total <= 0 {
		return 0, 0
	}
	return time.Duration(busy), float64(busy) / float64(total)
}
