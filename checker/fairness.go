package checker

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Fairness says how far the lock was from first come, first served, the fair lock one of the
// source articles (the Chinese survey of lock families) asks for.
//
// A client starts waiting when it invokes an acquire: that moment is its place in line. An
// acquisition (an acquire that completed ok, at its completion time T) overtakes client d when d
// had an acquire invoked strictly before the acquisition's own invoke and still pending at T:
// not completed by T, and d not dead by T. Each acquisition counts every client it overtook, so
// a lock that hands itself to the newest of three waiters scores two overtakes for that hand-over.
// A pending acquire of a client paused by a fault still counts: it was in line. Re-entries of a
// reentrant lock are not acquisitions here. A first-come-first-served lock scores zero.
//
// The worst wait is the longest time one client wanted the lock without getting it: from the
// invoke of an acquire to the completion of that client's next successful acquire, across the
// attempts that gave up in between (a client that gave up asks again after its think time, and
// its wait goes on), or to its death or the run's end if it never got it.
//
// Unfair counts the overtakes a first-come-first-served design must answer for (Promised): an
// overtake, except where the history cannot tell that the overtaken client was in line first:
//   - its attempt may have opened a connection or session before joining the line: the client's
//     first attempt, its first after an attempt of unknown outcome, its first after a fault acted
//     on it or on a server (anything that is not a client);
//   - a fault acted on it or on a server between its invoke and the acquisition (a paused
//     waiter's session runs out, a restarted node forgets the queue), or its session lapsed
//     meanwhile: none of its renewals' promises was in force (lapses.go), so its place may have
//     gone with it;
//   - both are read holds of a read/write lock, which may be held together;
//   - it had asked longer ago than its first attempt surely keeps its place (Options.KeepsPlace):
//     its op may have given up a place in line and joined again at the back with a later
//     attempt, behind the client that got the lock. A client that gave up and asks again is a
//     new arrival either way: its new op's invoke is its place.
type Fairness struct {
	Acquisitions int `json:"acquisitions"`
	// Overtakes is the sum over every acquisition of the clients it overtook.
	Overtakes int `json:"overtakes"`
	// Overtaking counts the acquisitions that overtook at least one client.
	Overtaking int `json:"overtaking_acquisitions"`
	// MostOvertaken is the most clients one acquisition overtook.
	MostOvertaken int `json:"most_overtaken"`

	WorstWait       time.Duration `json:"worst_wait_ns"`
	WorstWaitClient string        `json:"worst_wait_client,omitempty"`
	WorstWaitOffset time.Duration `json:"worst_wait_offset_ns"` // its start, from the run's start
	// WorstWaitEnded is true when the worst wait ended with an acquisition, false when the client
	// died or the run ended first.
	WorstWaitEnded bool `json:"worst_wait_ended"`

	// Promised: the design promises first come, first served (Options.FirstComeFirstServed):
	// Unfair overtakes then count against the verdict (Judge).
	Promised bool `json:"promised,omitempty"`
	// Unfair counts the overtakes that break that promise (see above); counted for every design.
	Unfair      int       `json:"unfair_overtakes"`
	FirstUnfair *Overtake `json:"first_unfair_overtake,omitempty"`

	Clients []ClientFairness `json:"clients,omitempty"` // in client order
}

// Overtake is one acquisition that overtook a waiter, for the verdict's words.
type Overtake struct {
	Client  string        `json:"client"`      // the waiter overtaken
	Since   time.Duration `json:"since_ns"`    // its acquire's invoke, from the run's start
	By      string        `json:"by"`          // the client that got the lock
	Offset  time.Duration `json:"offset_ns"`   // when it got it
	ByAsked time.Duration `json:"by_asked_ns"` // when that client had asked
}

// acquisitionsOf is how often client acquired the lock in the run.
func (f Fairness) acquisitionsOf(client string) int {
	for _, c := range f.Clients {
		if c.Client == client {
			return c.Acquisitions
		}
	}
	return 0
}

// ClientFairness is one client's share of the figure.
type ClientFairness struct {
	Client       string `json:"client"`
	Acquisitions int    `json:"acquisitions"`
	// Overtaken counts the acquisitions of others that overtook this client.
	Overtaken int `json:"overtaken"`
	// Overtook counts the clients this client's acquisitions overtook.
	Overtook  int           `json:"overtook"`
	WorstWait time.Duration `json:"worst_wait_ns"`
	// OvertakenUnfairly counts the overtakes of this client that Fairness.Unfair counts.
	OvertakenUnfairly int `json:"overtaken_unfairly,omitempty"`
}

// Fair reports whether no acquisition overtook anyone.
func (f Fairness) Fair() bool { return f.Overtakes == 0 }

// BrokenPromise reports whether a design that promises first come, first served broke it: it
// overtook waiters unfairly (see Fairness.Unfair) often enough (PromiseBroken).
func (f Fairness) BrokenPromise() bool { return f.Promised && PromiseBroken(f.Unfair, f.Acquisitions) }

// PromiseBroken says whether unfair overtakes in a run of acquisitions break a promise of first
// come, first served: at least two, and at least one per 1,000 acquisitions. One is within what
// the history cannot see: it records when a client asked, not when its request joined the line,
// and on a loaded machine a request can reach the lock a hundred milliseconds and more after it
// was sent (a lock library in a process of its own, a session reopened after a fault elsewhere);
// in the shipped matrix, on 2 cores at load 15, that gave single unfair overtakes in two cells of
// designs that are fair (etcd after a member's restart, kazoo after its holder was killed), while
// redis-fair's dropped waiters gave 4 to 64 per run.
func PromiseBroken(unfair, acquisitions int) bool {
	return unfair >= 2 && unfair*1000 >= acquisitions
}

// PerThousand is the share of acquisitions that overtook someone, per 1,000 acquisitions.
func (f Fairness) PerThousand() float64 {
	if f.Acquisitions == 0 {
		return 0
	}
	return 1000 * float64(f.Overtaking) / float64(f.Acquisitions)
}

// acquireOp is one acquire operation as the fairness figure needs it.
type acquireOp struct {
	client  string
	invoke  int64
	done    int64 // completion time; 0 when it never completed
	ok      bool
	unknown bool // it ended with its outcome unknown (info)
	shared  bool // a read acquire of a read/write lock
}

// acquireOps picks the acquire operations out of ops (in invoke order), and each client's death
// from the log.
func (l *Log) acquireOps(ops []op) ([]acquireOp, map[string]int64) {
	var acqs []acquireOp
	// A client's role (reader or writer) is its own for the whole run; the history gives it with
	// the acquisitions, so a pending acquire takes it from its client's.
	readers := map[int32]bool{}
	for _, o := range ops {
		if o.f == idAcquire && o.completed() && l.recs[o.done].role == idRead {
			readers[o.proc] = true
		}
	}
	for _, o := range ops {
		if o.f != idAcquire {
			continue
		}
		a := acquireOp{client: l.str(o.proc), invoke: l.recs[o.invoke].t, shared: readers[o.proc]}
		if o.completed() {
			done := &l.recs[o.done]
			a.done, a.ok, a.unknown = done.t, done.typ == tOK, done.typ == tInfo
		}
		acqs = append(acqs, a)
	}
	deaths := map[string]int64{}
	for i := range l.recs {
		r := &l.recs[i]
		if c, dead := l.death(r); dead {
			if _, seen := deaths[l.str(c)]; !seen {
				deaths[l.str(c)] = r.t
			}
		}
	}
	return acqs, deaths
}

// fairness computes the figure; see Fairness for the definitions. cover says when faults acted on
// each client or on a server; keepsPlace is Options.KeepsPlace in ns (0: for good).
func fairness(acqs []acquireOp, deaths map[string]int64, cover faultCover, b bounds, keepsPlace int64) Fairness {
	var f Fairness
	acqs = append([]acquireOp(nil), acqs...)
	sort.SliceStable(acqs, func(i, j int) bool { return acqs[i].invoke < acqs[j].invoke })
	connecting := mayConnect(acqs, cover)
	perClient := map[string]*ClientFairness{}
	client := func(name string) *ClientFairness {
		c := perClient[name]
		if c == nil {
			c = &ClientFairness{Client: name}
			perClient[name] = c
		}
		return c
	}
	// Sweep through time with the acquires pending at each moment (one per client at most in
	// a real history, so each acquisition looks at a handful): a completion or death at t ends
	// pending acquires before the acquisitions completing at t are judged.
	type point struct {
		t    int64
		kind int // 0: an acquire ends (completion) or a client dies, 1: an acquisition is judged
		i    int // index into acqs, or -1 for a death
		dead string
	}
	var points []point
	for i, a := range acqs {
		client(a.client)
		if a.done != 0 {
			points = append(points, point{t: a.done, i: i})
			if a.ok {
				points = append(points, point{t: a.done, kind: 1, i: i})
			}
		}
	}
	for c, t := range deaths {
		points = append(points, point{t: t, i: -1, dead: c})
	}
	sort.SliceStable(points, func(i, j int) bool {
		if points[i].t != points[j].t {
			return points[i].t < points[j].t
		}
		return points[i].kind < points[j].kind
	})
	pending := map[int]bool{} // indexes into acqs of acquires invoked and not ended
	next := 0                 // next acquire (by invoke) to enter pending
	firstBy := -1             // the acquisition of f.FirstUnfair
	for _, p := range points {
		for ; next < len(acqs) && acqs[next].invoke < p.t; next++ {
			pending[next] = true
		}
		switch {
		case p.kind == 0 && p.i >= 0:
			delete(pending, p.i)
		case p.kind == 0:
			for i := range pending {
				if acqs[i].client == p.dead {
					delete(pending, i)
				}
			}
		default:
			a := acqs[p.i]
			f.Acquisitions++
			client(a.client).Acquisitions++
			overtook := 0
			for i := range pending {
				w := acqs[i]
				if w.client == a.client || w.invoke >= a.invoke {
					continue
				}
				overtook++
				client(w.client).Overtaken++
				rejoined := keepsPlace > 0 && a.done-w.invoke >= keepsPlace
				if connecting[i] || rejoined || (w.shared && a.shared) || cover.touched(w.client, w.invoke, a.done) {
					continue
				}
				f.Unfair++
				client(w.client).OvertakenUnfairly++
				// The first acquisition that did it; of its waiters, the one that asked first.
				if f.FirstUnfair == nil || (firstBy == p.i && w.invoke < b.start+int64(f.FirstUnfair.Since)) {
					firstBy = p.i
					f.FirstUnfair = &Overtake{Client: w.client, Since: time.Duration(w.invoke - b.start), By: a.client,
						Offset: time.Duration(a.done - b.start), ByAsked: time.Duration(a.invoke - b.start)}
				}
			}
			if overtook > 0 {
				f.Overtaking++
				f.Overtakes += overtook
				f.MostOvertaken = max(f.MostOvertaken, overtook)
				client(a.client).Overtook += overtook
			}
		}
	}
	for _, w := range waits(acqs, deaths, b.end) {
		c := client(w.client)
		c.WorstWait = max(c.WorstWait, w.length())
		if w.length() > f.WorstWait {
			f.WorstWait, f.WorstWaitClient, f.WorstWaitOffset, f.WorstWaitEnded = w.length(), w.client, time.Duration(w.start-b.start), w.ended
		}
	}
	for _, c := range perClient {
		f.Clients = append(f.Clients, *c)
	}
	sort.Slice(f.Clients, func(i, j int) bool { return LessClient(f.Clients[i].Client, f.Clients[j].Client) })
	return f
}

// mayConnect marks the attempts (indexes into acqs, sorted by invoke) that may open a connection or
// a session before they join the line: a client's first, its first after an attempt of unknown
// outcome (designs drop a connection they can no longer trust), and its first after a fault acted
// on it or on a server (a session may have ended meanwhile).
func mayConnect(acqs []acquireOp, cover faultCover) []bool {
	out := make([]bool, len(acqs))
	prev := map[string]int{}
	for i, a := range acqs {
		p, seen := prev[a.client]
		out[i] = !seen || acqs[p].unknown || cover.touched(a.client, acqs[p].invoke, a.invoke)
		prev[a.client] = i
	}
	return out
}

// clientWait is one stretch in which a client wanted the lock and did not have it.
type clientWait struct {
	client     string
	start, end int64
	ended      bool // by an acquisition
}

func (w clientWait) length() time.Duration { return time.Duration(w.end - w.start) }

// waits chains each client's acquires (sorted by invoke) into waits: one starts at the first
// acquire after an acquisition and ends at the next acquisition, the client's death or end.
func waits(sorted []acquireOp, deaths map[string]int64, end int64) []clientWait {
	var out []clientWait
	open := map[string]*clientWait{}
	var order []string
	for _, a := range sorted {
		w := open[a.client]
		if w == nil {
			w = &clientWait{client: a.client, start: a.invoke}
			open[a.client] = w
			order = append(order, a.client)
		}
		if a.ok {
			w.end, w.ended = a.done, true
			out = append(out, *w)
			delete(open, a.client)
		}
	}
	for _, c := range order {
		w := open[c]
		if w == nil {
			continue
		}
		w.end = end
		if d, dead := deaths[c]; dead && d < end {
			w.end = d
		}
		w.end = max(w.end, w.start)
		out = append(out, *w)
		delete(open, c) // a client appears in order once per open wait
	}
	return out
}

// fairnessSentence says the figure in words, for Sentences.
func fairnessSentence(f Fairness) string {
	if f.Acquisitions == 0 {
		return ""
	}
	var s string
	if f.Fair() {
		s = "Fairness: no acquisition overtook a client that had been waiting longer (first come, first served)"
	} else {
		s = fmt.Sprintf("Fairness: %d of %d acquisitions (%.0f per 1,000) overtook a client that had been waiting longer, %s in all (at most %d at once)",
			f.Overtaking, f.Acquisitions, f.PerThousand(), plural(f.Overtakes, "overtake"), f.MostOvertaken)
	}
	if f.WorstWait > 0 {
		s += fmt.Sprintf("; the longest wait was %s's, %s from %s", f.WorstWaitClient, Human(f.WorstWait), Seconds(f.WorstWaitOffset))
		if !f.WorstWaitEnded {
			s += ", " + Unserved(f.acquisitionsOf(f.WorstWaitClient))
		}
	}
	s += "."
	if f.Promised {
		s += " " + promiseSentence(f)
	}
	return s
}

// promiseSentence says whether a design that promises first come, first served kept it.
func promiseSentence(f Fairness) string {
	excused := f.Overtakes - f.Unfair
	if !f.BrokenPromise() {
		s := "The design promises first come, first served, and kept it"
		var why []string
		if excused > 0 {
			why = append(why, fmt.Sprintf("%s of attempts that may still have been connecting, that a fault touched, that may have "+
				"joined the line again, or of a read hold by another", plural(excused, "overtake")))
		}
		if f.Unfair > 0 {
			why = append(why, fmt.Sprintf("%s, which the history alone cannot tell from a request that reached the lock late",
				plural(f.Unfair, "unfair overtake")))
		}
		if len(why) > 0 {
			s += " (" + strings.Join(why, "; ") + ")"
		}
		return s + "."
	}
	s := fmt.Sprintf("The design promises first come, first served, and broke it %s", plural(f.Unfair, "time"))
	if o := f.FirstUnfair; o != nil {
		s += fmt.Sprintf(": the first, %s (asked at %s) got the lock at %s before %s, which had asked at %s",
			o.By, Seconds(o.ByAsked), Seconds(o.Offset), o.Client, Seconds(o.Since))
	}
	return s + "."
}

// fairnessWords is the figure in a few words, for the one-line summary.
func fairnessWords(f Fairness) string {
	if f.Acquisitions == 0 {
		return ""
	}
	if f.Fair() {
		return "first come, first served, worst wait " + Human(f.WorstWait)
	}
	s := plural(f.Overtakes, "overtake")
	if f.Promised {
		s += fmt.Sprintf(" (%d unfair)", f.Unfair)
	}
	return fmt.Sprintf("%s, worst wait %s", s, Human(f.WorstWait))
}

// fairnessCells are the table's fairness row: overtakes, overtaking acquisitions, worst wait.
func fairnessCells(f Fairness) (overtakes, overtaking, worst string) {
	overtakes = strconv.Itoa(f.Overtakes)
	overtaking = fmt.Sprintf("%d of %d", f.Overtaking, f.Acquisitions)
	worst = Human(f.WorstWait)
	if f.WorstWaitClient != "" {
		worst += " (" + f.WorstWaitClient + " at " + Seconds(f.WorstWaitOffset)
		if !f.WorstWaitEnded {
			worst += ", " + Unserved(f.acquisitionsOf(f.WorstWaitClient))
		}
		worst += ")"
	}
	return overtakes, overtaking, worst
}

// overlapEpisodes counts the times double ownership began: the maximal stretches in which at
// least two clients believed they held the lock (a three-way race is one episode of three pair
// windows).
func overlapEpisodes(m MutualExclusion) int {
	type span struct{ start, end int64 }
	spans := make([]span, len(m.Windows))
	for i, w := range m.Windows {
		spans[i] = span{w.Start, w.Start + int64(w.Length)}
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].start < spans[j].start })
	n, end := 0, int64(0)
	for i, s := range spans {
		if i == 0 || s.start > end {
			n++
			end = s.end
			continue
		}
		end = max(end, s.end)
	}
	return n
}

// overlapRateSentence says how often double ownership began, per 1,000 acquisitions: how often
// a lock that races (get-then-set) lets a second client in.
func overlapRateSentence(v Verdict) string {
	n, acq := overlapEpisodes(v.MutualExclusion), v.Liveness.Acquisitions
	if n == 0 || acq == 0 {
		return ""
	}
	return fmt.Sprintf("Double ownership began %s in %s: %.1f per 1,000 acquisitions.",
		plural(n, "time"), plural(acq, "acquisition"), 1000*float64(n)/float64(acq))
}
