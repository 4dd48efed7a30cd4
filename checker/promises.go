package checker

// promises.go: why two clients held the lock at once — a bug of the lock, or the limit of every
// lease.
//
// A lock promises a client that it holds: an acquisition that succeeded, a renewal (a watchdog's,
// a session's keep-alive), a reentrant acquisition or a check that asked the servers, each for
// the lease its design grants (history.Event.Promise), counted from when its request was sent
// (Since, else the invoke) and starting when the answer came. Counted so, a promise is what the
// servers of a correct lock certainly kept: its end is the earliest they could let the lease go,
// its start the latest they could have granted it. For each window of double ownership, from the
// history alone:
//
//   - The lock broke its promise if two promises of the pair overlap, or if it said yes to a
//     request that no moment could have made true: at every moment between the request's sending
//     and its answer, another client held a live promise, or the asker's own lease had certainly
//     gone (no server heard it for longer than its lease and the servers' slack: frozen, cut
//     off from every server, or everything it sent held back; nothing done to the servers
//     meanwhile). Unless a fault on the lock's own servers explains it — a clock that
//     stepped (its leases end early), a crash that lost what was not persisted or replicated:
//     weaknesses documented for such locks, named — the bug is the lock's, whatever its clients
//     suffered.
//   - Otherwise a holder outlived its promise: it acted after its last promise had run out
//     (frozen, cut off, slow), or was told it held only after its promise could have run out. No
//     lease can prevent that; fencing is for it (K2).
//
// A check that the client answers on its own (a validity computed from its clock, a session
// state its library keeps) promises nothing, and is not a yes of the lock.

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// WindowClass says why a window of double ownership happened (Overlap.Class).
type WindowClass string

const (
	// ClassOutlived: a holder acted after its last promise had run out (K2): the limit of every
	// lease, which fencing is for.
	ClassOutlived WindowClass = "outlived"
	// ClassExplained: the lock promised itself to both, and a fault on its own servers explains it
	// (a clock step, a crash that lost state): a documented weakness of such locks.
	ClassExplained WindowClass = "explained"
	// ClassBroken: the lock promised itself to both at once and no fault on its servers
	// explains it: the lock's own bug.
	ClassBroken WindowClass = "broken"
)

// WindowClasses lists the classes from the least to the most serious.
var WindowClasses = []WindowClass{ClassOutlived, ClassExplained, ClassBroken}

// classNames lists the classes, least serious first, for errors.
func classNames() string {
	names := make([]string, len(WindowClasses))
	for i, c := range WindowClasses {
		names[i] = fmt.Sprintf("%q", string(c))
	}
	return strings.Join(names, ", ")
}

// Worse reports whether a is more serious than b ("" is the least of all).
func (a WindowClass) Worse(b WindowClass) bool { return classRank(a) > classRank(b) }

func classRank(c WindowClass) int {
	for i, x := range WindowClasses {
		if x == c {
			return i + 1
		}
	}
	return 0
}

// yes is one answer by which the lock promised a client that it holds.
type yes struct {
	client  int32
	f       int32 // idAcquire, idReacquire, idCheck or idRenew
	ask, ok int64 // when its request was sent; when the answer came
	promise int64 // how long from ask it lasts; history.Forever; 0: nothing that lasts
	session int32 // string id of its lease or session, idEmpty if none
	// until, for a reacquire, is when its client set out to give that inner level back (the
	// rerelease's invoke; 0: never): an inner yes promises the lock for the inner level's hold.
	// A re-entry that took the lock afresh after the outer lease had gone gives it all back with
	// the inner release, and the outer hold lives on only on its own promises.
	until int64
}

// end is when the promise runs out, for a hold that ends at holdEnd.
func (y yes) end(holdEnd int64) int64 {
	end := y.ask + y.promise
	if y.promise == history.Forever {
		end = holdEnd
	}
	if y.until > 0 {
		end = min(end, y.until)
	}
	return end
}

// promiseCheck holds what the classification reads, built once per verdict.
type promiseCheck struct {
	l       *Log
	b       bounds
	yeses   map[int32][]yes // per client, in the order of their answers
	holds   []interval
	kept    []periods // per hold: the moments the lock had promised it (hold promises)
	claims  [][]yes   // per hold: the yeses that started or renewed it
	faults  []Fault
	clients map[string]bool
}

// classifyWindows gives each window of m its class and evidence. It does nothing when the history
// records no promise rule (written before lockcheck recorded promises).
func (l *Log) classifyWindows(m *MutualExclusion, holds []interval, ops []op, b bounds) {
	if len(l.rules) == 0 || len(m.Windows) == 0 {
		m.PromisesRecorded = len(l.rules) > 0
		return
	}
	m.PromisesRecorded = true
	pc := &promiseCheck{l: l, b: b, yeses: l.yesAnswers(ops), holds: holds, faults: l.Faults(), clients: map[string]bool{}}
	for _, c := range l.Clients() {
		pc.clients[c] = true
	}
	pc.kept = make([]periods, len(holds))
	pc.claims = make([][]yes, len(holds))
	for i, h := range holds {
		pc.kept[i], pc.claims[i] = pc.holdPromises(h)
	}
	for i := range m.Windows {
		w := &m.Windows[i]
		w.Class, w.Why = pc.classify(*w)
		switch w.Class {
		case ClassBroken:
			m.Broken++
		case ClassExplained:
			m.Explained++
		case ClassOutlived:
			m.Outlived++
		}
	}
}

// yesAnswers are every client's promises, from the completed acquires, reacquires, renewals and
// server-asked checks.
func (l *Log) yesAnswers(ops []op) map[int32][]yes {
	out := map[int32][]yes{}
	rereleases := l.invokesOf(ops, l.lookup(history.Rerelease))
	for _, o := range ops {
		if !o.completed() || l.recs[o.done].typ != tOK {
			continue
		}
		switch o.f {
		case idAcquire, idReacquire, idCheck, idRenew:
		default:
			continue
		}
		inv, done := &l.recs[o.invoke], &l.recs[o.done]
		p := l.promised[opKey{o.proc, done.op}]
		if o.f == idCheck && p.promise == 0 {
			continue // answered by the client itself: no promise of the lock's
		}
		y := yes{client: o.proc, f: o.f, ask: inv.t, ok: done.t, promise: p.promise, session: p.session}
		if p.since != 0 {
			y.ask = p.since
		}
		if o.f == idReacquire {
			y.until = after(rereleases[o.proc], done.t)
		}
		out[o.proc] = append(out[o.proc], y)
	}
	for _, ys := range out {
		sort.SliceStable(ys, func(i, j int) bool { return ys[i].ok < ys[j].ok })
	}
	return out
}

// invokesOf are the times each client invoked op f, in order (none when the log has no such op).
func (l *Log) invokesOf(ops []op, f int32) map[int32][]int64 {
	out := map[int32][]int64{}
	if f == idEmpty {
		return out
	}
	for _, o := range ops {
		if o.f == f {
			out[o.proc] = append(out[o.proc], l.recs[o.invoke].t)
		}
	}
	for _, ts := range out {
		slices.Sort(ts)
	}
	return out
}

// after is the first of the sorted times ts later than t (0: none).
func after(ts []int64, t int64) int64 {
	i, _ := slices.BinarySearch(ts, t+1)
	if i < len(ts) {
		return ts[i]
	}
	return 0
}

// holdPromises are the moments of hold h in which the lock had promised it to its client, and the
// yeses that started or renewed it: its acquisition, and the reacquisitions, renewals and checks
// of its own session during it; a renewal of its session from before it (a session's keep-alive
// while its client waited) counts for the moments it covers. A design whose promise lasts only
// as long as its connection (a database session) loses it when its client's links are cut.
func (pc *promiseCheck) holdPromises(h interval) (periods, []yes) {
	ys := pc.yeses[h.client]
	session := idEmpty
	for _, y := range ys {
		if y.f == idAcquire && y.ok == h.start {
			session = y.session
			break
		}
	}
	end := h.end
	if r := pc.l.rules[h.client]; r != nil && r.Connection {
		for _, f := range pc.faults {
			if f.Kind == history.Partition && f.Target == pc.l.str(h.client) && f.Start >= h.start && f.Start < end {
				end = f.Start
			}
		}
	}
	var kept []period
	var claims []yes
	for _, y := range ys {
		if y.ok > h.end {
			break
		}
		same := session == idEmpty || y.session == idEmpty || y.session == session
		before := y.ok < h.start
		switch {
		case !same:
			continue
		case before && !(y.f == idRenew && session != idEmpty && y.session == session):
			continue
		case !before && (y.f != idAcquire || y.ok == h.start):
			claims = append(claims, y)
		}
		if y.promise != 0 {
			kept = append(kept, period{max(y.ok, h.start), min(y.end(h.end), end)})
		}
	}
	return union(kept...), claims
}

// contradiction is the evidence that the lock promised itself to two clients at once.
type contradiction struct {
	why string
	// since is when the evidence begins: the earliest start of the holds or of the promises the
	// later grant contradicts.
	since int64
	// grant is when the later of the two contradicting grants was answered: a fault that began
	// after it cannot have caused it.
	grant int64
	// timed: a promise the later grant contradicts runs out by time (a lease, a session), which
	// a clock can end early; one kept until released is ended only by losing state.
	timed bool
}

// classify gives one window its class and the evidence in words.
func (pc *promiseCheck) classify(w Overlap) (WindowClass, string) {
	ws, we := w.Start, w.Start+int64(w.Length)
	a, b := pc.l.ids[w.Clients[0]], pc.l.ids[w.Clients[1]]
	ha, hb := pc.holdsIn(a, ws, we), pc.holdsIn(b, ws, we)
	from := we
	for _, i := range append(append([]int(nil), ha...), hb...) {
		from = min(from, pc.holds[i].start)
	}
	c := pc.bothPromised(ha, hb, ws, we)
	if c.why == "" {
		c = pc.impossibleYes(append(append([]int(nil), ha...), hb...), we)
		// A fault explains the yes if it came while the promises the yes contradicts were in
		// force, however long before this window they began.
		from = min(from, c.since)
	}
	if c.why == "" {
		return ClassOutlived, pc.outlived(ha, hb, ws, we)
	}
	if f, weakness := pc.explanation(a, b, from, c.grant, c.timed); f != nil {
		return ClassExplained, c.why + "; " + pc.faultWords(*f) + " explains it: " + weakness
	}
	return ClassBroken, c.why + ", and no fault on the lock's servers explains it"
}

// holdsIn are the indexes of client c's holds that overlap [from, to).
func (pc *promiseCheck) holdsIn(c int32, from, to int64) []int {
	var out []int
	for i, h := range pc.holds {
		if h.client == c && h.start < to && h.end > from {
			out = append(out, i)
		}
	}
	return out
}

// bothPromised says how two holds of the pair were promised the lock at the same moment within
// [from, to); no why when they were not.
func (pc *promiseCheck) bothPromised(ha, hb []int, from, to int64) contradiction {
	window := periods{{from, to}}
	for _, i := range ha {
		for _, j := range hb {
			if pc.holds[i].shared && pc.holds[j].shared {
				continue
			}
			both := pc.kept[i].intersect(pc.kept[j]).intersect(window)
			if len(both) == 0 {
				continue
			}
			t := both[0].from
			yi, yj := pc.promiseAt(i, t), pc.promiseAt(j, t)
			c := contradiction{since: from, grant: t, timed: true}
			if yi != nil && yj != nil {
				// The later yes broke the earlier one's promise.
				later, earlier := yi, yj
				if yj.ok > yi.ok {
					later, earlier = yj, yi
				}
				c.grant, c.timed = later.ok, earlier.promise != history.Forever
			}
			c.why = fmt.Sprintf("%s and %s were both promised the lock at %s (%s; %s)", pc.name(pc.holds[i].client),
				pc.name(pc.holds[j].client), pc.at(t), pc.promiseWords(i, t), pc.promiseWords(j, t))
			return c
		}
	}
	return contradiction{}
}

// promiseAt is the latest yes of hold i's client that promised it the lock at t, or nil.
func (pc *promiseCheck) promiseAt(i int, t int64) *yes {
	h := pc.holds[i]
	var best *yes
	for k, y := range pc.yeses[h.client] {
		if y.promise != 0 && y.ok <= t && y.end(h.end) > t && (best == nil || y.ok > best.ok) {
			best = &pc.yeses[h.client][k]
		}
	}
	return best
}

// promiseWords says which yes of hold i promised it the lock at t.
func (pc *promiseCheck) promiseWords(i int, t int64) string {
	h := pc.holds[i]
	best := pc.promiseAt(i, t)
	if best == nil {
		return pc.name(h.client) + "'s hold"
	}
	until := "until it gave the lock back"
	if best.promise != history.Forever {
		until = "until " + pc.at(best.end(h.end))
	}
	return fmt.Sprintf("%s's %s answered at %s, promised %s", pc.name(h.client), pc.l.str(best.f), pc.at(best.ok), until)
}

// impossibleYes says how a yes that began or renewed one of the holds could not have been true at
// any moment of its request (no why when none), since when the evidence runs (the earliest start
// of the hold or of another client's promise that barred the yes), when that yes was answered and
// whether what barred it runs out by time: a hold that a broken promise began or renewed is the
// lock's doing in every window it takes part in. The lock cannot have granted a client the lock
// at a moment when another client held a live promise, or when the asker's own lease had
// certainly gone; and a renewal or a check says the client held the lock all along since its hold
// began, which no moment after such a one can be true of (a lease, once gone, does not come back).
// A grant counts up to the window's end to; a renewal or a check wherever it came in the hold,
// since what it says covers the window.
//
// A yes that is false on its own is named first: only when none is, a grant is taken for false
// because every moment it could have come at would have made a later yes to another client false
// (that later yes may be the false one; the words say so).
func (pc *promiseCheck) impossibleYes(holds []int, to int64) contradiction {
	for _, alone := range []bool{true, false} {
		for _, i := range holds {
			for _, y := range pc.claims[i] {
				if c := pc.falseYes(i, y, to, alone); c.why != "" {
					return c
				}
			}
		}
	}
	return contradiction{}
}

// falseYes is the evidence that yes y of hold i cannot have been true, or none. alone leaves
// out the grants whose only fault is a later yes to another client (consistentGrants).
func (pc *promiseCheck) falseYes(i int, y yes, to int64, alone bool) contradiction {
	h := pc.holds[i]
	continues := y.f == idRenew || y.f == idCheck
	// A renewal or a check answered after the window still speaks for it: it says the client
	// held the lock all along since its hold began, the window included.
	if y.ok > to && !continues {
		return contradiction{}
	}
	gone := pc.certainlyGone(h.client, y.session)
	barred := union(append(append([]period(nil), pc.othersKept(i)...), gone...)...)
	asked := periods{{y.ask, y.ok + 1}}
	if continues {
		asked = periods{{h.start, y.ok + 1}}
	}
	left := asked.minus(barred)
	if !continues && !alone {
		left = pc.consistentGrants(i, y, left)
	}
	if !continues && len(left) > 0 || continues && len(left) > 0 && left[0].from == h.start && left[0].to > y.ask {
		return contradiction{}
	}
	c := contradiction{since: h.start, grant: y.ok, timed: len(gone.intersect(asked)) > 0}
	for j, o := range pc.holds {
		if o.client == h.client || (o.shared && h.shared) || len(pc.kept[j].intersect(asked)) == 0 {
			continue
		}
		for _, p := range pc.kept[j] {
			if len(periods{p}.intersect(asked)) > 0 {
				c.since = min(c.since, p.from)
			}
		}
		for _, other := range pc.claims[j] {
			c.timed = c.timed || other.promise > 0
		}
	}
	first := y.ask
	if b := barred.intersect(asked); len(b) > 0 && continues {
		first = b[0].from
	}
	s := fmt.Sprintf("%s was told at %s that it held the lock (its %s, asked at %s), but no moment of that request "+
		"could have made it so: ", pc.name(h.client), pc.at(y.ok), pc.l.str(y.f), pc.at(y.ask))
	if continues {
		s = fmt.Sprintf("%s was told at %s that it still held the lock (its %s, asked at %s), but it had lost it by %s: ",
			pc.name(h.client), pc.at(y.ok), pc.l.str(y.f), pc.at(y.ask), pc.at(first))
	}
	parts := pc.promisedTo(i, asked)
	if g := gone.intersect(asked); len(g) > 0 {
		parts = append(parts, fmt.Sprintf("%s's own lease had certainly gone by %s (no server heard it for longer than its lease "+
			"and the servers' slack: frozen, cut off from every server, or everything it sent held back)", pc.name(h.client), pc.at(g[0].from)))
	}
	if gaps := asked.minus(barred); !continues && len(gaps) > 0 {
		parts = append(parts, fmt.Sprintf("a grant in the hand-overs between (%s) would have made the next client's yes "+
			"the broken one, %s's session being alive then", pc.periodWords(gaps), pc.name(h.client)))
	}
	c.why = s + strings.Join(parts, "; ")
	return c
}

// consistentGrants keeps the moments of free that a grant to hold i's client by yes y could
// have come at without breaking a promise to another client: a client granted at g holds while
// its session lives, as far as its renewals show from g on, until it lets go, so another client
// told it holds in that stretch would have been told falsely. A moment whose stretch holds such a yes is no way
// out: a promise was broken either way. The latest moment of each stretch of free is tried (the
// later the grant, the fewer yeses after it).
func (pc *promiseCheck) consistentGrants(i int, y yes, free periods) periods {
	h := pc.holds[i]
	var alive []period // the client's session, as its renewals show it
	for _, r := range pc.yeses[h.client] {
		if r.promise > 0 && (y.session == idEmpty || r.session == y.session) {
			alive = append(alive, period{r.ok, r.end(h.end)})
		}
	}
	session := union(alive...)
	var out periods
	for _, p := range free {
		g := p.to - 1
		until := g
		for _, s := range session {
			if s.from <= g && g < s.to {
				until = min(s.to, h.end) // it holds until it lets go
			}
		}
		if y.until > 0 {
			until = min(until, y.until) // an inner level, until it is given back
		}
		if !pc.otherYesIn(i, g, until) {
			out = append(out, p)
		}
	}
	return out
}

// otherYesIn reports whether a client other than hold i's was told it holds the lock, on a hold
// that excludes hold i's, by a request sent and answered within (from, to): granted in it.
func (pc *promiseCheck) otherYesIn(i int, from, to int64) bool {
	h := pc.holds[i]
	for j, o := range pc.holds {
		if o.client == h.client || (o.shared && h.shared) {
			continue
		}
		for _, c := range pc.claims[j] {
			if c.ask > from && c.ok < to { // asked after from: it was granted then, not earlier
				return true
			}
		}
	}
	return false
}

// othersKept are the moments in which a client other than hold i's held a promise for a hold
// that excludes it.
func (pc *promiseCheck) othersKept(i int) periods {
	h := pc.holds[i]
	var all []period
	for j, o := range pc.holds {
		if o.client == h.client || (o.shared && h.shared) {
			continue
		}
		all = append(all, pc.kept[j]...)
	}
	return union(all...)
}

// promisedTo says which other clients the lock had promised itself to during within, excluding
// hold i's client, and when: "client-1 was promised the lock 0.04–4.02 s".
func (pc *promiseCheck) promisedTo(i int, within periods) []string {
	h := pc.holds[i]
	byClient := map[int32][]period{}
	var order []int32
	for j, o := range pc.holds {
		if o.client == h.client || (o.shared && h.shared) {
			continue
		}
		// The whole promise that covered the request, not only its part within: when it began
		// and ended is what a reader checks against the faults.
		var in []period
		for _, p := range pc.kept[j] {
			if len(periods{p}.intersect(within)) > 0 {
				in = append(in, p)
			}
		}
		if len(in) == 0 {
			continue
		}
		if _, seen := byClient[o.client]; !seen {
			order = append(order, o.client)
		}
		byClient[o.client] = append(byClient[o.client], in...)
	}
	var out []string
	for _, c := range order {
		out = append(out, fmt.Sprintf("%s was promised the lock %s", pc.name(c), pc.periodWords(union(byClient[c]...))))
	}
	return out
}

// periodWords says a set of moments as offsets: "0.04–4.02 s and 4.03–4.71 s".
func (pc *promiseCheck) periodWords(ps periods) string {
	var parts []string
	for _, p := range ps {
		parts = append(parts, fmt.Sprintf("%.2f–%s", time.Duration(p.from-pc.b.start).Seconds(), pc.at(p.to)))
	}
	return strings.Join(parts, " and ")
}

// certainlyGone are the moments in which client c certainly held nothing the servers keep for a
// lease of length lease: the servers heard nothing new from it (it was frozen, cut from every
// server, or everything it sent was held back) for longer than the lease and the servers' slack,
// so whatever it held was gone from that lease (and slack) after it went silent until it could be
// heard again. A session it had before is gone for good: a yes on that session, however late,
// cannot be a grant made after it died. Silence counts only when nothing was done to the servers
// meanwhile (a new leader extends every lease) and no other delay held back what the client had
// sent before it.
func (pc *promiseCheck) certainlyGone(c int32, session int32) periods {
	rule, lease := pc.l.rules[c], pc.leaseOf(c, session)
	if lease <= 0 || rule == nil {
		return nil
	}
	name := pc.name(c)
	var gone []period
	for i, f := range pc.faults {
		heard, ok := silence(f)
		if f.Target != name || !ok {
			continue
		}
		quiet := true
		for j, g := range pc.faults {
			touchesServer := !pc.clients[g.Target] && g.Start <= heard && g.End >= f.Start
			delayedSends := j != i && g.Kind == history.Delay && g.Target == name && g.Start <= f.Start && g.End >= f.Start
			if touchesServer || delayedSends {
				quiet = false
			}
		}
		if from := f.Start + lease + rule.Slack; quiet && heard > from {
			to := heard + 1
			if pc.hadSession(c, session, f.Start) {
				to = forever
			}
			gone = append(gone, period{from, to})
		}
	}
	return union(gone...)
}

// leaseOf is how long a yes on client c's session lasts, the longest its yeses promised (0 when
// none did; Forever when one lasts until released): an acquisition that renews nothing by itself
// promises nothing, yet lives on its lease.
func (pc *promiseCheck) leaseOf(c, session int32) int64 {
	var lease int64
	for _, y := range pc.yeses[c] {
		if session != idEmpty && y.session != session {
			continue
		}
		if y.promise == history.Forever {
			return history.Forever
		}
		lease = max(lease, y.promise)
	}
	return lease
}

// silence reports until when fault f kept the servers from hearing anything its target sent
// from f's start: a pause, or a cut of every one of its links, until the heal; a delay of every
// link until the heal or, if sooner, its latency after the start (what was sent from the start
// arrives no earlier). ok is false for a fault that leaves some server in earshot.
func silence(f Fault) (heard int64, ok bool) {
	var p struct {
		Nodes   []string `json:"nodes"`
		Latency int64    `json:"latency"`
		Offset  int64    `json:"offset"` // where older histories kept a delay's latency
	}
	every := len(f.Params) == 0 || json.Unmarshal(f.Params, &p) == nil && len(p.Nodes) == 0
	switch {
	case f.Kind == history.Pause:
		return f.End, true
	case f.Kind == history.Partition && every:
		return f.End, true
	case f.Kind == history.Delay && every && max(p.Latency, p.Offset) > 0:
		return min(f.End, f.Start+max(p.Latency, p.Offset)), true
	}
	return 0, false
}

// forever is a moment after every run.
const forever = int64(1) << 62

// hadSession reports whether client c's session was alive before t: a renewal of it was asked, or
// a yes on it answered, before t (an acquisition asked earlier may have opened its session later).
func (pc *promiseCheck) hadSession(c, session int32, t int64) bool {
	if session == idEmpty {
		return false
	}
	for _, y := range pc.yeses[c] {
		if y.session == session && (y.f == idRenew && y.ask < t || y.ok < t) {
			return true
		}
	}
	return false
}

// explanation finds a fault on the lock's servers that exercised a weakness between from and
// the later of the two contradicting grants, answered at grant (or, for a design whose expiry
// follows its clients' clocks, a clock fault on a client), and names the weakness. A fault can
// explain only a grant it came before, and a clock only a promise that runs out by time (timed):
// a lock kept until it is released outlives any clock.
func (pc *promiseCheck) explanation(a, b int32, from, grant int64, timed bool) (*Fault, string) {
	clientClocks := false
	for _, c := range []int32{a, b} {
		if r := pc.l.rules[c]; r != nil && r.ClientClocks {
			clientClocks = true
		}
	}
	const byClientClocks = "the design reckons expiry by its clients' clocks"
	for i, f := range pc.faults {
		if f.Start > grant || f.End < from {
			continue
		}
		if w := pc.weaknessOf(f); w != "" && (timed || w != WeaknessClock) {
			return &pc.faults[i], weaknessWords(w)
		}
		if timed && clientClocks && pc.clients[f.Target] && (f.Kind == history.Clock || f.Kind == history.Strobe) {
			return &pc.faults[i], byClientClocks
		}
	}
	if timed && clientClocks && len(pc.l.skewed) > 0 {
		// A clock the scenario set from the start: a fault of the whole run.
		return &Fault{Kind: history.Clock, Target: pc.l.skewed[0], Start: pc.b.start, End: pc.b.end}, byClientClocks
	}
	return nil, ""
}

// weaknessOf is the weakness of a lock service that a fault on one of its servers exercised
// (WeaknessClock, WeaknessCrash or the fault's own words), or "" for a fault on a client.
func (pc *promiseCheck) weaknessOf(f Fault) string {
	if pc.clients[f.Target] {
		return ""
	}
	if f.Weakness != "" {
		return f.Weakness
	}
	switch f.Kind { // histories written before faults recorded their weakness
	case history.Clock, history.Strobe:
		return WeaknessClock
	case history.Crash:
		return WeaknessCrash
	}
	return ""
}

// weaknessWords says a weakness for the evidence.
func weaknessWords(w string) string {
	switch w {
	case WeaknessClock:
		return "a server's clock moved, so the leases it keeps ended early (K7, K8)"
	case WeaknessCrash:
		return "a server crashed and came back without what it had not persisted or replicated (K9, A10, failover)"
	}
	return w
}

// Weaknesses of lock services that a fault on a server can exercise (history.Event.Weakness).
const (
	WeaknessClock = "clock" // the server's clock moved: leases it keeps end early or late
	WeaknessCrash = "crash" // the server lost what it had not persisted or replicated
)

// outlived says which holder of the window acted without a live promise, since when, and what
// was done to it meanwhile.
func (pc *promiseCheck) outlived(ha, hb []int, from, to int64) string {
	first, second := ha, hb
	if len(ha) > 0 && len(hb) > 0 && pc.holds[hb[0]].start < pc.holds[ha[0]].start {
		first, second = hb, ha
	}
	if len(first) == 0 || len(second) == 0 {
		return "a holder outlived its promise"
	}
	i, j := first[0], second[0]
	if !pc.kept[i].covers(from) {
		return pc.outlivedBy(i, pc.holds[j].client, from, to)
	}
	h := pc.holds[j]
	for _, y := range pc.claims[j] {
		if y.f == idAcquire {
			return fmt.Sprintf("%s was told at %s that it held the lock, after the promise of its request (sent at %s) could have "+
				"run out: the answer came too late to rely on%s", pc.name(h.client), pc.at(y.ok), pc.at(y.ask),
				pc.faultsOn(h.client, y.ask, y.ok))
		}
	}
	return pc.outlivedBy(j, pc.holds[i].client, from, to)
}

// outlivedBy says when hold i's last promise before t ran out (when other was told it held the
// lock) and what the holder went through until to.
func (pc *promiseCheck) outlivedBy(i int, other int32, t, to int64) string {
	h := pc.holds[i]
	last := int64(0)
	for _, s := range pc.kept[i] {
		if s.to <= t {
			last = s.to
		}
	}
	if last == 0 {
		return fmt.Sprintf("%s held on with no live promise of the lock's (its request was answered after the lease it asked "+
			"for could have run out)%s", pc.name(h.client), pc.faultsOn(h.client, h.start, to))
	}
	return fmt.Sprintf("%s outlived its promise: it ran out at %s, %s before %s was told it held the lock%s",
		pc.name(h.client), pc.at(last), Human(time.Duration(t-last)), pc.name(other), pc.faultsOn(h.client, h.start, to))
}

// faultsOn lists what was done to client c between from and to, or else to the servers (which
// can keep a client from renewing): " (pause of client-1 0.21–1.71 s)".
func (pc *promiseCheck) faultsOn(c int32, from, to int64) string {
	var own, servers []string
	name := pc.name(c)
	for _, f := range pc.faults {
		if f.Start > to || f.End < from {
			continue
		}
		switch {
		case f.Target == name:
			own = append(own, pc.faultWords(f))
		case !pc.clients[f.Target]:
			servers = append(servers, pc.faultWords(f))
		}
	}
	switch {
	case len(own) > 0:
		return " (" + strings.Join(own, ", ") + ")"
	case len(servers) > 0:
		return " (no fault acted on it; on the servers: " + strings.Join(servers, ", ") + ")"
	}
	return " (no fault acted on it: its work outlasted its lease)"
}

// faultWords names a fault and its period: "pause of client-1 0.21–1.71 s".
func (pc *promiseCheck) faultWords(f Fault) string {
	if f.End == f.Start {
		return fmt.Sprintf("%s of %s at %s", f.Kind, f.Target, pc.at(f.Start))
	}
	return fmt.Sprintf("%s of %s %.2f–%s", f.Kind, f.Target, time.Duration(f.Start-pc.b.start).Seconds(), pc.at(f.End))
}

func (pc *promiseCheck) name(c int32) string { return pc.l.str(c) }

// at is a moment as an offset from the run's start: "1.23 s".
func (pc *promiseCheck) at(t int64) string { return Seconds(time.Duration(t - pc.b.start)) }
