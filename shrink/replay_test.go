package shrink

import (
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/scenarios"
)

// A hunt's faults become a planned schedule: a pause of the holder is pinned to that client's
// after-acquire at its acquisition then, a clock step of a waiter to whoever waits; a fault after
// the first violation is left out.
func TestFromRunPinsFaultsWhereTheyMattered(t *testing.T) {
	ms := func(n int64) int64 { return 1_000_000_000 + n*int64(time.Millisecond) }
	c2, c3, nem := history.Client(2), history.Client(3), history.Nemesis
	events := []history.Event{
		{Time: ms(0), Process: history.Controller, Type: history.Note, F: history.Start},
		{Time: ms(100), Process: c2, Type: history.Invoke, F: history.Acquire, Op: 1},
		{Time: ms(110), Process: c2, Type: history.OK, F: history.Acquire, Op: 1},
		{Time: ms(160), Process: c2, Type: history.Invoke, F: history.Release, Op: 2},
		{Time: ms(170), Process: c2, Type: history.OK, F: history.Release, Op: 2},
		{Time: ms(180), Process: c2, Type: history.Invoke, F: history.Acquire, Op: 3},
		{Time: ms(190), Process: c2, Type: history.OK, F: history.Acquire, Op: 3},
		{Time: ms(195), Process: c3, Type: history.Invoke, F: history.Acquire, Op: 1},
		{Time: ms(200), Process: nem, Type: history.Invoke, F: history.Pause, Op: 1, Target: c2, As: nemesis.Holder,
			Duration: int64(900 * time.Millisecond)},
		{Time: ms(250), Process: nem, Type: history.Invoke, F: history.Clock, Op: 2, Target: c3, As: nemesis.Waiter,
			Duration: int64(300 * time.Millisecond), Params: []byte(`{"offset":2000000000}`)},
		{Time: ms(550), Process: nem, Type: history.OK, F: history.Clock, Op: 2, Target: c3},
		{Time: ms(1100), Process: nem, Type: history.OK, F: history.Pause, Op: 1, Target: c2},
		{Time: ms(3000), Process: nem, Type: history.Invoke, F: history.Pause, Op: 3, Target: c3, As: nemesis.Holder,
			Duration: int64(time.Second)},
		{Time: ms(4000), Process: nem, Type: history.OK, F: history.Pause, Op: 3, Target: c3},
	}
	r := fromHunt(t, "set-nx-px", 4, 400*time.Millisecond, nemesis.Random{Faults: []string{"pause", "clock"}, MaxOffset: scenarios.TTLs(5)},
		events, ms(1000))
	if r.Applied != 2 || r.Later != 1 || len(r.Anchored.Nemesis) != 2 || len(r.Timed.Nemesis) != 2 {
		t.Fatalf("applied %d, later %d, anchored %d, timed %d; want 2, 1, 2, 2", r.Applied, r.Later, len(r.Anchored.Nemesis), len(r.Timed.Nemesis))
	}
	p, c := r.Anchored.Nemesis[0].Fault, r.Anchored.Nemesis[1].Fault
	if p.Kind != "pause" || p.Target != c2 || p.Point != "after-acquire" || p.Occurrence != 2 || p.For.D() != 900*time.Millisecond {
		t.Errorf("the holder's pause became %+v; want client-2 at its 2nd after-acquire for 900ms", p)
	}
	cp, _ := c.Params.(*nemesis.ClockParams)
	if c.Kind != "clock" || c.Target != nemesis.Waiter || c.At.D() != 250*time.Millisecond || cp == nil || cp.Offset.D() != 2*time.Second {
		t.Errorf("the waiter's clock step became %+v (%+v); want a waiter at 250ms, +2s", c, cp)
	}
	if tp := r.Timed.Nemesis[0].Fault; tp.Target != c2 || tp.At.D() != 200*time.Millisecond || tp.Point != "" {
		t.Errorf("timed: %+v; want client-2 at 200ms", tp)
	}
	// A fault aimed at no state is pinned by the state the history shows its target in.
	for _, c := range []struct {
		client string
		at     int64
		want   string
	}{{c2, ms(120), nemesis.Holder}, {c2, ms(165), ""}, {c2, ms(185), nemesis.Waiter}, {c3, ms(200), nemesis.Waiter}} {
		if got := stateAt(events, c.client, c.at); got != c.want {
			t.Errorf("%s at %dms: %q, want %q", c.client, (c.at-ms(0))/int64(time.Millisecond), got, c.want)
		}
	}
	words := Describe(r.Anchored)
	for _, want := range []string{"client-2 paused for 2.2 TTLs (900ms) right after its second acquisition",
		"a client waiting while another holds had its clock stepped by +2s for 0.8 TTLs (300ms) from 250ms into the run"} {
		if !strings.Contains(words, want) {
			t.Errorf("description %q lacks %q", words, want)
		}
	}
	// The planned schedule is a scenario file like any other.
	text, err := r.Anchored.YAML()
	if err != nil || !strings.Contains(string(text), "{fault: pause, target: client-2, point: after-acquire, occurrence: 2, for: 900ms}") {
		t.Errorf("as YAML (%v):\n%s", err, text)
	}
}

// A waiter silenced through a release (the hunt's move) is pinned to the holder's pass of the
// point it was aimed at, in the hold with a waiter it came in: as the second such hold began.
// Without its point it would hit whoever waits first, at the start of the run.
func TestFromRunPinsAWaiterSilencedThroughAReleaseToItsHoldsPoint(t *testing.T) {
	ms := atMs
	c1, c2, c3, nem := history.Client(1), history.Client(2), history.Client(3), history.Nemesis
	events := append(queuedBehindClient1(), []history.Event{
		{Time: ms(4010), Process: c1, Type: history.Invoke, F: history.Release, Op: 2},
		{Time: ms(4015), Process: c1, Type: history.OK, F: history.Release, Op: 2},
		{Time: ms(4020), Process: c2, Type: history.OK, F: history.Acquire, Op: 1},
		{Time: ms(4023), Process: nem, Type: history.Invoke, F: history.Partition, Op: 1, Target: c3, As: nemesis.Waiter,
			Point: nemesis.HoldBegins, Duration: int64(4 * time.Second), Params: []byte(`{"mode":"drop"}`)},
		{Time: ms(8023), Process: nem, Type: history.OK, F: history.Partition, Op: 1, Target: c3},
	}...)
	r := fromHunt(t, "set-nx-px", 3, 2*time.Second, nemesis.Random{Faults: []string{"partition"}}, events, ms(9000))
	f := r.Anchored.Nemesis[0].Fault
	if f.Target != nemesis.Waiter || f.Point != nemesis.HoldBegins || f.Occurrence != 1 || f.At != 0 {
		t.Fatalf("the waiter's cut became %+v; want the longest waiter as the first hold with a waiter began", f)
	}
	if words := Describe(r.Anchored); !strings.Contains(words, "as the first hold with a waiter behind it began") {
		t.Errorf("description %q", words)
	}
}

// A waiter frozen at no point of a hold (the hunt's plain waiter move), which was the longest
// waiter and stayed frozen through its holder's release: pinned as a waiter silenced through a
// release, at that hold's end. A waiter frozen while nobody let go keeps its time.
func TestFromRunPinsALongestWaiterFrozenThroughAReleaseToTheHoldsEnd(t *testing.T) {
	ms := atMs
	c1, c2, c3, nem := history.Client(1), history.Client(2), history.Client(3), history.Nemesis
	events := append(queuedBehindClient1(), []history.Event{
		{Time: ms(1000), Process: nem, Type: history.Invoke, F: history.Pause, Op: 1, Target: c3, As: nemesis.Waiter,
			Duration: int64(500 * time.Millisecond)},
		{Time: ms(1500), Process: nem, Type: history.OK, F: history.Pause, Op: 1, Target: c3},
		{Time: ms(2450), Process: nem, Type: history.Invoke, F: history.Pause, Op: 2, Target: c2, As: nemesis.Waiter,
			Duration: int64(1500 * time.Millisecond)},
		{Time: ms(2510), Process: c1, Type: history.Invoke, F: history.Release, Op: 2},
		{Time: ms(2515), Process: c1, Type: history.OK, F: history.Release, Op: 2},
		{Time: ms(3950), Process: nem, Type: history.OK, F: history.Pause, Op: 2, Target: c2},
	}...)
	r := fromHunt(t, "zk", 3, time.Second, nemesis.Random{Faults: []string{"pause"}}, events, ms(5000))
	if f := r.Anchored.Nemesis[0].Fault; f.Target != nemesis.Waiter || f.Point != "" || f.At.D() != time.Second {
		t.Errorf("the pause of client-3 (not the longest waiter, nobody let go) became %+v; want a waiter at 1s", f)
	}
	if f := r.Anchored.Nemesis[1].Fault; f.Target != nemesis.Waiter || f.Point != "before-write" || f.Occurrence != 1 || f.At != 0 {
		t.Fatalf("the pause of client-2 through client-1's release became %+v; want the longest waiter at the first hold's before-write", f)
	}
}

// atMs is the CLOCK_MONOTONIC time n ms into a test history.
func atMs(n int64) int64 { return 1_000_000_000 + n*int64(time.Millisecond) }

// queuedBehindClient1 starts a test history: client-1 holds from 10 ms, client-2 waits from
// 50 ms, client-3 from 100 ms.
func queuedBehindClient1() []history.Event {
	c1, c2, c3 := history.Client(1), history.Client(2), history.Client(3)
	return []history.Event{
		{Time: atMs(0), Process: history.Controller, Type: history.Note, F: history.Start},
		{Time: atMs(0), Process: c1, Type: history.Invoke, F: history.Acquire, Op: 1},
		{Time: atMs(10), Process: c1, Type: history.OK, F: history.Acquire, Op: 1},
		{Time: atMs(50), Process: c2, Type: history.Invoke, F: history.Acquire, Op: 1},
		{Time: atMs(100), Process: c3, Type: history.Invoke, F: history.Acquire, Op: 1},
	}
}

// fromHunt replays events of a 30 s hunt run of lock (clients, ttl, the hunt package r) whose
// violation came at violation.
func fromHunt(t *testing.T, lock string, clients int, ttl time.Duration, r nemesis.Random, events []history.Event, violation int64) Replay {
	t.Helper()
	r.Mode = nemesis.ModeHunt
	sc, err := scenarios.New(scenarios.Scenario{Name: "hunt", Lock: lock, Clients: clients, TTL: scenarios.Duration(ttl),
		Duration: scenarios.Duration(30 * time.Second), Nemesis: []scenarios.Entry{{Random: &r}}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := FromRun(sc, events, violation)
	if err != nil {
		t.Fatal(err)
	}
	return res
}
