package checker

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/history"
)

// Histories for the promise classes, in milliseconds. Every client runs a design whose rule the
// controller's note records; a lease is 400 ms unless a case says otherwise.

const lease = 400.0

// designs writes each client's design note with rule r.
func (b *builder) designs(r history.PromiseRule, clients ...string) *builder {
	for _, c := range clients {
		rule := r
		b.add(history.Event{Time: 0, Process: history.Controller, Type: history.Note, F: history.ClientDesign, Target: c,
			Design: "test", Rule: &rule})
	}
	return b
}

var leaseRule = history.PromiseRule{Words: "the lease from each acquire or renewal"}

// promised records an ok answer of f that promised the lock for length ms from its invoke (or
// from since, when since >= 0), on session.
func (b *builder) promised(p, f string, inv, ok, length, since float64, session string) *builder {
	return b.op(p, f, inv, ok, history.OK, func(e *history.Event) {
		e.Promise = ms(length)
		if length == float64(history.Forever) {
			e.Promise = history.Forever
		}
		if since >= 0 {
			e.Since = ms(since)
		}
		e.Session = session
	})
}

// leased is an acquire answered at ok that promised the lease from inv.
func (b *builder) leased(p string, inv, ok float64) *builder {
	return b.promised(p, history.Acquire, inv, ok, lease, -1, "")
}

func classes(t *testing.T, events []history.Event) MutualExclusion {
	t.Helper()
	v := Check(events, Options{})
	if !v.MutualExclusion.PromisesRecorded {
		t.Fatalf("promises not recorded")
	}
	for _, w := range v.MutualExclusion.Windows {
		t.Logf("window %v at %s: %s: %s", w.Clients, w.Offset, w.Class, w.Why)
	}
	return v.MutualExclusion
}

func wantClasses(t *testing.T, m MutualExclusion, want ...WindowClass) {
	t.Helper()
	if len(m.Windows) != len(want) {
		t.Fatalf("%d windows, want %d", len(m.Windows), len(want))
	}
	for i, w := range m.Windows {
		if w.Class != want[i] {
			t.Errorf("window %d (%v): %s, want %s (%s)", i, w.Clients, w.Class, want[i], w.Why)
		}
	}
}

// K2: the holder is frozen past its lease; the next holder is promised the lock only after the
// first one's promise ran out. The first holder outlived its promise.
func TestAHolderFrozenPastItsLeaseOutlivedItsPromise(t *testing.T) {
	h := newHistory().start(0).designs(leaseRule, "client-1", "client-2").
		leased("client-1", 10, 11).pause("client-1", 12, 1500).
		acquireFails("client-2", 20, 420, 50).leased("client-2", 450, 451).release("client-2", 600, 601).
		release("client-1", 1510, 1511).end(2000).build()
	m := classes(t, h)
	wantClasses(t, m, ClassOutlived)
	if why := m.Windows[0].Why; !strings.Contains(why, "client-1 outlived its promise: it ran out at 0.41 s") ||
		!strings.Contains(why, "pause of client-1") {
		t.Errorf("why: %q", why)
	}
	if j := Judge(Check(h, Options{})); j.Outcome != Unsafe {
		t.Errorf("outcome %s, want unsafe: outliving a lease is no broken promise", j.Outcome)
	}
}

// The holder's promise runs out in the middle of its hold without any fault (its work outlasts
// its lease): outlived, and no fault named.
func TestAHolderWhosePromiseRanOutMidHoldOutlivedIt(t *testing.T) {
	h := newHistory().start(0).designs(leaseRule, "client-1", "client-2").
		leased("client-1", 10, 11).
		leased("client-2", 500, 501).release("client-2", 600, 601).
		release("client-1", 700, 701).end(1000).build()
	m := classes(t, h)
	wantClasses(t, m, ClassOutlived)
	if !strings.Contains(m.Windows[0].Why, "no fault acted on it") {
		t.Errorf("why: %q", m.Windows[0].Why)
	}
}

// A renewal said yes after the lease had gone and another client had taken the lock (redsync's
// Extend before v4.0.4): the lock broke its promise.
func TestARenewalThatSaysYesAfterTheLeaseWentIsABrokenPromise(t *testing.T) {
	h := newHistory().start(0).designs(leaseRule, "client-1", "client-2").
		leased("client-1", 10, 11).pause("client-1", 12, 900).
		leased("client-2", 450, 451).
		promised("client-1", history.Check, 910, 912, lease, -1, "").
		release("client-2", 1000, 1001).release("client-1", 1010, 1011).end(1500).build()
	m := classes(t, h)
	wantClasses(t, m, ClassBroken)
	if !strings.Contains(m.Windows[0].Why, "client-1 was told at 0.91 s that it still held the lock (its check, asked at 0.91 s), "+
		"but it had lost it by 0.41 s") {
		t.Errorf("why: %q", m.Windows[0].Why)
	}
	if j := Judge(Check(h, Options{})); j.Outcome != Broken {
		t.Errorf("outcome %s, want broken", j.Outcome)
	}
	// The same yes while the next holder's lease runs: both were promised the lock at once.
	h = newHistory().start(0).designs(leaseRule, "client-1", "client-2").
		leased("client-1", 10, 11).pause("client-1", 12, 900).
		leased("client-2", 700, 701).
		promised("client-1", history.Check, 910, 912, lease, -1, "").
		release("client-2", 1000, 1001).release("client-1", 1010, 1011).end(1500).build()
	m = classes(t, h)
	wantClasses(t, m, ClassBroken)
	if !strings.Contains(m.Windows[0].Why, "both promised the lock at 0.91 s") {
		t.Errorf("why: %q", m.Windows[0].Why)
	}
}

// The same yes when the one who took the lock meanwhile has already given it back: no promise is
// live beside it, but it says client-1 held the lock all along, through client-2's hold. The
// window it covers is the lock's doing however the hand-overs fell (a flaky track-record run had
// its check land in the gap between two holds).
func TestARenewalThatSaysYesAfterTheWindowEndedBreaksThePromiseOfThatWindow(t *testing.T) {
	h := newHistory().start(0).designs(leaseRule, "client-1", "client-2").
		leased("client-1", 10, 11).pause("client-1", 12, 900).
		leased("client-2", 450, 451).release("client-2", 600, 601).
		promised("client-1", history.Check, 910, 912, lease, -1, "").
		release("client-1", 1010, 1011).end(1500).build()
	m := classes(t, h)
	wantClasses(t, m, ClassBroken)
	if !strings.Contains(m.Windows[0].Why, "client-1 was told at 0.91 s that it still held the lock (its check, asked at 0.91 s), "+
		"but it had lost it by 0.41 s: client-2 was promised the lock 0.45–0.60 s") {
		t.Errorf("why: %q", m.Windows[0].Why)
	}
}

// The same renewal answering no (the fixed release): the holder learns it lost the lock; its
// double ownership while frozen is the lease's limit.
func TestARenewalThatSaysNoLeavesOnlyTheOutlivedWindow(t *testing.T) {
	h := newHistory().start(0).designs(leaseRule, "client-1", "client-2").
		leased("client-1", 10, 11).pause("client-1", 12, 900).
		leased("client-2", 450, 451).
		op("client-1", history.Check, 910, 912, history.Fail, nil).note("client-1", history.Lost, 912.5, "").
		release("client-2", 1000, 1001).end(1500).build()
	wantClasses(t, classes(t, h), ClassOutlived)
}

// A waiter told it holds while the holder's lease still runs: broken. The table, the verdict's
// outcome and headline say so.
func TestAWaiterToldItHoldsWhileTheHoldersLeaseRunsIsABrokenPromise(t *testing.T) {
	h := newHistory().start(0).designs(leaseRule, "client-1", "client-2").
		leased("client-1", 10, 11).
		leased("client-2", 100, 101).
		release("client-1", 200, 201).release("client-2", 300, 301).end(500).build()
	wantClasses(t, classes(t, h), ClassBroken)
	v := Check(h, Options{})
	var b strings.Builder
	if err := Table(v, &b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "every window: a broken promise; e.g. at 0.10 s, client-1 and client-2 were both promised") ||
		v.Outcome != Broken || !strings.HasPrefix(v.Headline, "Broken: the lock told two clients") {
		t.Errorf("outcome %s, headline %q, table:\n%s", v.Outcome, v.Headline, b.String())
	}
}

// A hold that ends at its release leaves no promise behind: the next holder is no overlap.
func TestReleasedHoldsOverlapNothing(t *testing.T) {
	h := newHistory().start(0).designs(leaseRule, "client-1", "client-2").
		leased("client-1", 10, 11).release("client-1", 100, 101).
		leased("client-2", 100.5, 101).release("client-2", 200, 201).end(500).build()
	if m := classes(t, h); !m.Holds {
		t.Fatalf("windows: %+v", m.Windows)
	}
}

// sessionHolderAndWaiter: client-1 holds on its session, renewed every 300 ms, from 10 ms to
// 2.5 s and again from 2.505 s to 4 s; client-2, on its own session (last renewed at 100 ms),
// asked at 50 ms and waits.
func sessionHolderAndWaiter() *builder {
	session := history.PromiseRule{Words: "the session", Slack: ms(500)}
	b := newHistory().start(0).designs(session, "client-1", "client-2").
		promised("client-1", history.Acquire, 10, 11, 1000, -1, "s1")
	for t := 300.0; t < 2500; t += 300 {
		b.promised("client-1", history.Renew, t, t+1, 1000, -1, "s1")
	}
	b.release("client-1", 2500, 2501).promised("client-1", history.Acquire, 2505, 2506, 1000, -1, "s1")
	for t := 2800.0; t < 4000; t += 300 {
		b.promised("client-1", history.Renew, t, t+1, 1000, -1, "s1")
	}
	return b.promised("client-2", history.Renew, 100, 101, 1000, -1, "s2")
}

// Session locks (etcd, ZooKeeper): a session's renewals keep its holder's promise alive through
// a long hold. A waiter frozen past its session is told it holds once the holder lets go, which
// no moment of its request could make true: all along, the holder held a live promise, or the
// waiter's own lease had certainly gone (etcd #11456).
func TestAWaiterWhoseSessionWentWhileFrozenToldItHoldsIsABrokenPromise(t *testing.T) {
	b := sessionHolderAndWaiter()
	b.pause("client-2", 200, 3000).
		promised("client-2", history.Acquire, 50, 3010, 1000, -1, "s2").
		release("client-2", 3100, 3101).release("client-1", 4000, 4001).end(4500)
	m := classes(t, b.build())
	wantClasses(t, m, ClassBroken)
	if why := m.Windows[0].Why; !strings.Contains(why, "no moment of that request could have made it so") ||
		!strings.Contains(why, "client-2's own lease had certainly gone by 1.70 s") {
		t.Errorf("why: %q", why)
	}
}

// The same waiter, not frozen but unheard: everything it sent (its keep-alives) was held back
// for as long as the holder held, while what the servers sent it came through. A delay of every
// link whose latency outlasts the lease and the slack silences a client as a pause does: broken.
// Held back for less than its lease, its session may have lived: no broken promise.
func TestAWaiterWhoseKeepAlivesWereHeldBackPastItsSessionIsToldItHoldsIsABrokenPromise(t *testing.T) {
	for _, c := range []struct {
		latency float64
		broken  bool
	}{{2900, true}, {300, false}} {
		params := json.RawMessage(fmt.Sprintf(`{"latency":%d}`, ms(c.latency)))
		b := sessionHolderAndWaiter()
		b.add(history.Event{Time: ms(200), Process: history.Nemesis, Type: history.Invoke, F: history.Delay, Op: 91, Target: "client-2", Params: params}).
			add(history.Event{Time: ms(3100), Process: history.Nemesis, Type: history.OK, F: history.Delay, Op: 91, Target: "client-2"}).
			promised("client-2", history.Acquire, 50, 3010, 1000, -1, "s2").
			release("client-2", 3200, 3201).release("client-1", 4000, 4001).end(4500)
		m := classes(t, b.build())
		if len(m.Windows) == 0 {
			t.Fatalf("latency %v ms: no window", c.latency)
		}
		if got := m.Windows[0].Class == ClassBroken; got != c.broken {
			t.Errorf("latency %v ms: class %s, want broken %v (%s)", c.latency, m.Windows[0].Class, c.broken, m.Windows[0].Why)
		}
		if c.broken && !strings.Contains(m.Windows[0].Why, "client-2's own lease had certainly gone by 1.70 s (no server heard it") {
			t.Errorf("why: %q", m.Windows[0].Why)
		}
	}
}

// The same waiter when the holder let go while the waiter's session still lived: the lock could
// rightly have granted it then, before its session ran out; it learned it only on waking, after
// another client took the lock. The waiter was told too late (K10's shape), no broken promise.
func TestAWaiterGrantedBeforeItsSessionWentIsToldTooLate(t *testing.T) {
	session := history.PromiseRule{Words: "the session", Slack: ms(500)}
	b := newHistory().start(0).designs(session, "client-1", "client-2", "client-3").
		promised("client-1", history.Acquire, 10, 11, 1000, -1, "s1").
		promised("client-1", history.Renew, 300, 301, 1000, -1, "s1").
		promised("client-1", history.Renew, 600, 601, 1000, -1, "s1").
		release("client-1", 900, 901).
		promised("client-2", history.Renew, 100, 101, 1000, -1, "s2").pause("client-2", 200, 3000).
		promised("client-3", history.Acquire, 1750, 1800, 1000, -1, "s3")
	for t := 2000.0; t < 4000; t += 300 {
		b.promised("client-3", history.Renew, t, t+1, 1000, -1, "s3")
	}
	b.promised("client-2", history.Acquire, 50, 3010, 1000, -1, "s2").
		release("client-2", 3100, 3101).release("client-3", 4000, 4001).end(4500)
	m := classes(t, b.build())
	wantClasses(t, m, ClassOutlived)
	if !strings.Contains(m.Windows[0].Why, "client-2 was told at 3.01 s that it held the lock, after the promise") {
		t.Errorf("why: %q", m.Windows[0].Why)
	}
}

// A renewal of another session (the one a library opened after its first expired) promises
// nothing about a hold taken on the first.
func TestARenewalOfAnotherSessionDoesNotKeepAHold(t *testing.T) {
	session := history.PromiseRule{Words: "the session", Slack: ms(500)}
	h := newHistory().start(0).designs(session, "client-1", "client-2").
		promised("client-1", history.Acquire, 10, 11, 1000, -1, "old").pause("client-1", 20, 2000).
		promised("client-2", history.Acquire, 1500, 1600, 1000, -1, "s2").
		promised("client-1", history.Renew, 2010, 2011, 1000, -1, "new").
		release("client-2", 2100, 2101).release("client-1", 2200, 2201).end(2500).build()
	wantClasses(t, classes(t, h), ClassOutlived)
}

// Promises that overlap because a lock server's clock jumped (K7, K8): the fault explains it.
func TestOverlappingPromisesAfterAServerClockStepAreExplained(t *testing.T) {
	b := newHistory().start(0).designs(leaseRule, "client-1", "client-2").
		leased("client-1", 10, 11).
		add(history.Event{Time: ms(50), Process: history.Nemesis, Type: history.Invoke, F: history.Clock, Op: 1, Target: "n1",
			Weakness: WeaknessClock}).
		add(history.Event{Time: ms(60), Process: history.Nemesis, Type: history.OK, F: history.Clock, Op: 1, Target: "n1"}).
		leased("client-2", 100, 101).release("client-1", 200, 201).release("client-2", 300, 301).end(500)
	m := classes(t, b.build())
	wantClasses(t, m, ClassExplained)
	if !strings.Contains(m.Windows[0].Why, "clock of n1") {
		t.Errorf("why: %q", m.Windows[0].Why)
	}
}

// A clock fault on a client explains nothing for a lock that keeps time on its servers, and
// explains a lock that reckons expiry by its clients' clocks (the GETSET lock).
func TestAClientClockExplainsOnlyLocksThatReckonByClientClocks(t *testing.T) {
	build := func(r history.PromiseRule) []history.Event {
		return newHistory().start(0).designs(r, "client-1", "client-2").
			leased("client-1", 10, 11).
			add(history.Event{Time: ms(50), Process: history.Nemesis, Type: history.Invoke, F: history.Clock, Op: 1, Target: "client-2"}).
			leased("client-2", 100, 101).release("client-1", 200, 201).release("client-2", 300, 301).end(500).build()
	}
	wantClasses(t, classes(t, build(leaseRule)), ClassBroken)
	clients := leaseRule
	clients.ClientClocks = true
	wantClasses(t, classes(t, build(clients)), ClassExplained)
}

// A database session lock promises until it is given back, as long as its connection lives: a
// cut of the holder's links ends the promise (its session is gone), so the next holder's
// overlap is the cut holder outliving it; without the cut it is a broken promise.
func TestADatabaseSessionPromiseEndsWithItsConnection(t *testing.T) {
	rule := history.PromiseRule{Words: "until released, while its connection lives", Connection: true}
	build := func(cut bool) []history.Event {
		b := newHistory().start(0).designs(rule, "client-1", "client-2").
			promised("client-1", history.Acquire, 10, 11, float64(history.Forever), -1, "")
		if cut {
			b.add(history.Event{Time: ms(100), Process: history.Nemesis, Type: history.Invoke, F: history.Partition, Op: 1, Target: "client-1"}).
				add(history.Event{Time: ms(400), Process: history.Nemesis, Type: history.OK, F: history.Partition, Op: 1, Target: "client-1"})
		}
		return b.promised("client-2", history.Acquire, 150, 200, float64(history.Forever), -1, "").
			release("client-1", 500, 501).release("client-2", 600, 601).end(800).build()
	}
	wantClasses(t, classes(t, build(true)), ClassOutlived)
	wantClasses(t, classes(t, build(false)), ClassBroken)
}

// Readers of a read/write lock may be promised it together; a writer with a reader may not.
func TestReadersMayBePromisedTogetherButNotWithAWriter(t *testing.T) {
	read := func(e *history.Event) { e.Promise, e.Role = ms(lease), history.Read }
	h := newHistory().start(0).designs(leaseRule, "client-1", "client-2", "client-3").
		op("client-1", history.Acquire, 10, 11, history.OK, read).
		op("client-2", history.Acquire, 20, 21, history.OK, read).
		leased("client-3", 30, 31).
		release("client-1", 100, 101).release("client-2", 100, 101).release("client-3", 100, 101).end(300).build()
	m := classes(t, h)
	wantClasses(t, m, ClassBroken, ClassBroken)
	for _, w := range m.Windows {
		if w.Clients[1] != "client-3" {
			t.Errorf("window between %v: readers must not conflict", w.Clients)
		}
	}
}

// A check the client answers itself (a validity computed from its own clock) is no yes of the
// lock: its answer after the lease ran out does not make the overlap a broken promise.
func TestAChecksOwnAnswerPromisesNothing(t *testing.T) {
	h := newHistory().start(0).designs(leaseRule, "client-1", "client-2").
		leased("client-1", 10, 11).pause("client-1", 12, 900).
		leased("client-2", 450, 451).
		op("client-1", history.Check, 910, 911, history.OK, nil).
		release("client-2", 1000, 1001).release("client-1", 1010, 1011).end(1500).build()
	wantClasses(t, classes(t, h), ClassOutlived)
}

// A history written before lockcheck recorded promises classifies nothing and judges as before.
func TestAHistoryWithoutPromisesIsNotClassified(t *testing.T) {
	h := newHistory().start(0).acquire("client-1", 10, 11).acquire("client-2", 100, 101).
		release("client-1", 200, 201).release("client-2", 300, 301).end(500).build()
	v := Check(h, Options{})
	if v.MutualExclusion.PromisesRecorded || v.MutualExclusion.Windows[0].Class != "" {
		t.Fatalf("classified without promises: %+v", v.MutualExclusion)
	}
	if j := Judge(v); j.Outcome != Unsafe {
		t.Errorf("outcome %s, want unsafe", j.Outcome)
	}
}

func TestPeriodsAlgebra(t *testing.T) {
	a := union(period{0, 10}, period{20, 30}, period{5, 12}, period{40, 40})
	if want := (periods{{0, 12}, {20, 30}}); !equalPeriods(a, want) {
		t.Fatalf("union: %v", a)
	}
	if got := a.intersect(periods{{10, 25}}); !equalPeriods(got, periods{{10, 12}, {20, 25}}) {
		t.Errorf("intersect: %v", got)
	}
	if got := a.minus(periods{{2, 4}, {11, 21}, {29, 50}}); !equalPeriods(got, periods{{0, 2}, {4, 11}, {21, 29}}) {
		t.Errorf("minus: %v", got)
	}
	if !a.covers(0) || a.covers(12) || !a.covers(29) || a.covers(15) {
		t.Errorf("covers")
	}
}

func equalPeriods(a, b periods) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// A gate on the class: promises kept passes the limit of every lease and fails a broken promise;
// double_ownership names the most serious class the windows must show.
func TestExpectGatesOnTheClassOfDoubleOwnership(t *testing.T) {
	outlived := newHistory().start(0).designs(leaseRule, "client-1", "client-2").
		leased("client-1", 10, 11).pause("client-1", 12, 1500).
		leased("client-2", 450, 451).release("client-2", 600, 601).
		release("client-1", 1510, 1511).end(2000).build()
	brokenH := newHistory().start(0).designs(leaseRule, "client-1", "client-2").
		leased("client-1", 10, 11).leased("client-2", 100, 101).
		release("client-1", 200, 201).release("client-2", 300, 301).end(500).build()
	unrecorded := newHistory().start(0).acquire("client-1", 10, 11).acquire("client-2", 100, 101).
		release("client-1", 200, 201).release("client-2", 300, 301).end(500).build()
	cases := []struct {
		name    string
		expect  Expect
		history []history.Event
		miss    string // the mismatched field, "" for a pass
	}{
		{"kept passes K2", Expect{Promises: kept}, outlived, ""},
		{"kept fails a broken promise", Expect{Promises: kept}, brokenH, "promises"},
		{"broken finds it", Expect{Promises: broken}, brokenH, ""},
		{"broken misses K2", Expect{Promises: broken}, outlived, "promises"},
		{"the worst class", Expect{DoubleOwnership: "outlived"}, outlived, ""},
		{"a worse class than wanted", Expect{DoubleOwnership: "outlived"}, brokenH, "double_ownership"},
		{"a lesser class than wanted", Expect{DoubleOwnership: "broken"}, outlived, "double_ownership"},
		{"no promises recorded meets neither", Expect{Promises: kept}, unrecorded, "promises"},
	}
	for _, c := range cases {
		if err := c.expect.Validate(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got := c.expect.Match(Check(c.history, Options{}))
		switch {
		case c.miss == "" && len(got) > 0:
			t.Errorf("%s: mismatches %v", c.name, got)
		case c.miss != "" && (len(got) != 1 || got[0].Field != c.miss):
			t.Errorf("%s: mismatches %v, want one on %s", c.name, got, c.miss)
		}
	}
	for _, bad := range []Expect{{Promises: "intact"}, {DoubleOwnership: "k2"}, {DoubleOwnership: "broken", Promises: kept},
		{DoubleOwnership: "outlived", MutualExclusion: holds}} {
		if bad.Validate() == nil {
			t.Errorf("%+v: accepted", bad)
		}
	}
}

// The same waiter, awake again before the holder lets go: its session died while it was frozen,
// and a session does not come back, so a yes on it when the holder lets go is a broken promise
// (etcd #11456 when the waiter wakes first).
func TestAYesOnASessionThatDiedWhileFrozenIsABrokenPromiseHoweverLate(t *testing.T) {
	session := history.PromiseRule{Words: "the session", Slack: ms(500)}
	b := newHistory().start(0).designs(session, "client-1", "client-2").
		promised("client-1", history.Acquire, 10, 11, 1000, -1, "s1")
	for t := 300.0; t < 3000; t += 300 {
		b.promised("client-1", history.Renew, t, t+1, 1000, -1, "s1")
	}
	b.release("client-1", 2500, 2501).
		promised("client-2", history.Renew, 100, 101, 1000, -1, "s2").pause("client-2", 200, 2000).
		op("client-2", history.Renew, 2001, 2002, history.Fail, func(e *history.Event) { e.Session = "s2" }).
		promised("client-2", history.Acquire, 50, 2502, 1000, -1, "s2").
		promised("client-1", history.Acquire, 2503, 2504, 1000, -1, "s1").
		release("client-2", 2600, 2601).release("client-1", 2700, 2701).end(3000)
	wantClasses(t, classes(t, b.build()), ClassBroken)
}

// The waiter, queued through several hand-overs before it froze: the lock was free for an instant
// at each, while the waiter's session lived. A grant to it then would have made the next holder's
// yes the broken one, its session living on; after it froze past its lease, nothing could make its
// late yes true. Broken, whichever way (the hunt's find on etcd's 3.4.3 client).
func TestAWaiterPassedOverAtHandOversThenFrozenIsABrokenPromise(t *testing.T) {
	session := history.PromiseRule{Words: "the session", Slack: ms(500)}
	renewEvery := func(b *builder, c, s string, from, to float64) {
		for t := from; t < to; t += 300 {
			b.promised(c, history.Renew, t, t+1, 1000, -1, s)
		}
	}
	b := newHistory().start(0).designs(session, "client-1", "client-2", "client-3").
		promised("client-1", history.Acquire, 10, 11, 0, -1, "s1").release("client-1", 1000, 1001).
		promised("client-2", history.Acquire, 20, 1010, 0, -1, "s2").release("client-2", 2000, 2001).
		promised("client-1", history.Acquire, 1002, 2010, 0, -1, "s1").release("client-1", 5000, 5001)
	renewEvery(b, "client-1", "s1", 0, 5000)
	renewEvery(b, "client-2", "s2", 0, 5000)
	renewEvery(b, "client-3", "s3", 0, 2100) // client-3 waits from 30, renewing, and freezes at 2100
	b.pause("client-3", 2100, 4500).
		promised("client-3", history.Acquire, 30, 4510, 0, -1, "s3").release("client-3", 4600, 4601).end(5500)
	wantClasses(t, classes(t, b.build()), ClassBroken)
}

// A server crash between client-3's grant and client-2's explains client-2's impossible yes in
// every window client-2's hold takes part in, a later one beside client-1 included: the evidence
// runs from client-3's promise, before client-2's hold began.
func TestAServerFaultExplainsAnImpossibleYesInItsLaterWindowsToo(t *testing.T) {
	b := newHistory().start(0).designs(leaseRule, "client-1", "client-2", "client-3").
		leased("client-3", 10, 11).
		add(history.Event{Time: ms(50), Process: history.Nemesis, Type: history.Invoke, F: history.Crash, Op: 1, Target: "n1",
			Weakness: WeaknessCrash}).
		add(history.Event{Time: ms(60), Process: history.Nemesis, Type: history.OK, F: history.Crash, Op: 1, Target: "n1"}).
		leased("client-2", 100, 101).release("client-3", 200, 201).
		leased("client-1", 600, 601).release("client-1", 700, 701).release("client-2", 900, 901).end(1000)
	m := classes(t, b.build())
	wantClasses(t, m, ClassExplained, ClassExplained)
}

// A reentrant holder frozen past its lease takes the lock again on waking, when nobody holds it
// (the lock grants it afresh), and gives that inner level back: the inner release frees the
// lock, and the next holder is granted it rightly. The inner yes promised the lock only until
// the inner level went: the outer hold outlived its promise (redisson × reenter-after-pause).
func TestAnInnerYesPromisesTheLockOnlyUntilItsInnerRelease(t *testing.T) {
	h := newHistory().start(0).designs(leaseRule, "client-1", "client-2").
		leased("client-1", 10, 11).pause("client-1", 12, 1000).
		leased("client-2", 450, 451).release("client-2", 600, 601).
		promised("client-1", history.Reacquire, 1001, 1002, lease, -1, "").
		op("client-1", history.Rerelease, 1003, 1004, history.OK, nil).
		leased("client-2", 1100, 1101).release("client-2", 1200, 1201).
		release("client-1", 1300, 1301).end(2000).build()
	wantClasses(t, classes(t, h), ClassOutlived, ClassOutlived)

	// Without the inner release, the inner yes still holds when client-2 is granted the lock:
	// the lock promised it to both.
	h = newHistory().start(0).designs(leaseRule, "client-1", "client-2").
		leased("client-1", 10, 11).pause("client-1", 12, 1000).
		leased("client-2", 450, 451).release("client-2", 600, 601).
		promised("client-1", history.Reacquire, 1001, 1002, lease, -1, "").
		leased("client-2", 1100, 1101).release("client-2", 1200, 1201).
		op("client-1", history.Rerelease, 1250, 1251, history.OK, nil).
		release("client-1", 1300, 1301).end(2000).build()
	wantClasses(t, classes(t, h), ClassOutlived, ClassBroken)
}

// A waiter of a session lock frozen past its session and then told it holds, beside a holder
// whose session lived throughout: the waiter's yes is the one that could not be true, and the
// evidence names it, not the holder's rightful grant (which only a later yes to the waiter makes
// look doubtful).
func TestTheEvidenceNamesTheWaiterWhoseSessionDied(t *testing.T) {
	session := history.PromiseRule{Words: "while its session lives", Slack: ms(500)}
	b := newHistory().start(0).designs(session, "client-1", "client-2").
		promised("client-1", history.Acquire, 10, 11, 1000, -1, "s1")
	for t := 300.0; t < 4000; t += 300 {
		b.promised("client-1", history.Renew, t, t+1, 1000, -1, "s1")
	}
	b.promised("client-2", history.Renew, 100, 101, 1000, -1, "s2").pause("client-2", 200, 3000).
		promised("client-2", history.Acquire, 50, 3010, 1000, -1, "s2").
		release("client-2", 3100, 3101).release("client-1", 4000, 4001).end(4500)
	m := classes(t, b.build())
	wantClasses(t, m, ClassBroken)
	why := m.Windows[0].Why
	if !strings.HasPrefix(why, "client-2 was told at 3.01 s that it held the lock") || !strings.Contains(why, "client-2's own lease had certainly gone") {
		t.Errorf("the evidence should name client-2's yes and its dead session: %s", why)
	}
}

// A fault on a lock server explains a window only if it began before the later of the two
// contradicting grants and can end the promise that grant broke: a clock step before the grant
// explains a lease's overlap; the same step after both grants, inside the window or after it,
// explains nothing; a clock step cannot end a lock kept until it is released, a crash can.
func TestAServerFaultExplainsOnlyAGrantItCameBefore(t *testing.T) {
	build := func(length, at float64, kind, weakness string) []history.Event {
		return newHistory().start(0).designs(leaseRule, "client-1", "client-2").
			promised("client-1", history.Acquire, 10, 11, length, -1, "").
			add(history.Event{Time: ms(at), Process: history.Nemesis, Type: history.Invoke, F: kind, Op: 1, Target: "n1",
				Weakness: weakness}).
			add(history.Event{Time: ms(at + 10), Process: history.Nemesis, Type: history.OK, F: kind, Op: 1, Target: "n1"}).
			promised("client-2", history.Acquire, 100, 101, length, -1, "").
			release("client-1", 300, 301).release("client-2", 400, 401).end(800).build()
	}
	for _, c := range []struct {
		name       string
		length, at float64
		kind, weak string
		want       WindowClass
	}{
		{"a clock step before the later grant", lease, 50, history.Clock, WeaknessClock, ClassExplained},
		{"a clock step inside the window, after both grants", lease, 150, history.Clock, WeaknessClock, ClassBroken},
		{"a clock step after the window", lease, 500, history.Clock, WeaknessClock, ClassBroken},
		{"a clock step before the grant, on a lock kept until released", float64(history.Forever), 50, history.Clock, WeaknessClock, ClassBroken},
		{"a crash before the grant, on a lock kept until released", float64(history.Forever), 50, history.Crash, WeaknessCrash, ClassExplained},
		{"a crash after both grants", float64(history.Forever), 150, history.Crash, WeaknessCrash, ClassBroken},
	} {
		t.Run(c.name, func(t *testing.T) {
			wantClasses(t, classes(t, build(c.length, c.at, c.kind, c.weak)), c.want)
		})
	}
}

// A release retried after an error (usage release-retry): client-1's first release is left
// unknown, its lease runs out, client-2 is granted the lock, and the retry answers success — a
// lock whose release checks no owner removed client-2's key, and client-3 is granted the lock
// while client-2's lease still runs: client-2's promise was broken, by the lock. A retried
// release is no promise of its own. With a lock that checks the owner, the retry is refused and
// nobody is granted the lock over client-2: no window.
func TestARetriedReleaseThatRemovesAnotherHoldBreaksItsPromise(t *testing.T) {
	build := func(retryRemoves bool) []history.Event {
		b := newHistory().start(0).designs(leaseRule, "client-1", "client-2", "client-3").
			leased("client-1", 10, 11).
			op("client-1", history.Release, 100, 350, history.Info, func(e *history.Event) { e.Error = "i/o timeout" }).
			leased("client-2", 450, 451)
		if retryRemoves {
			return b.release("client-1", 500, 501).leased("client-3", 600, 601).release("client-3", 700, 701).
				releaseFails("client-2", 800, 801).end(1200).build()
		}
		return b.releaseFails("client-1", 500, 501).release("client-2", 800, 801).
			leased("client-3", 850, 851).release("client-3", 900, 901).end(1200).build()
	}
	m := classes(t, build(true))
	wantClasses(t, m, ClassBroken)
	if why := m.Windows[0].Why; !strings.Contains(why, "client-2 and client-3 were both promised the lock") {
		t.Errorf("why: %s", why)
	}
	if m := Check(build(false), Options{}).MutualExclusion; !m.Holds {
		t.Errorf("a refused retry leaves no window: %+v", m.Windows)
	}
}
