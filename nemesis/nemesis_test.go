package nemesis_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
	. "github.com/lockcheck/lockcheck/nemesis"
)

func TestTimedPauseStopsTheRealProcessThenResumesIt(t *testing.T) {
	p := sleeper(t)
	rec := &recorder{}
	n := newTestNemesis(map[string]Target{"client-1": p}, rec.record)
	if err := n.Start(Schedule{Faults: []Fault{{Kind: PauseFault, Target: "client-1", At: dur(50 * time.Millisecond),
		For: dur(300 * time.Millisecond)}}}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if s := stateOf(t, p); s != 'T' {
		t.Fatalf("process state during the pause = %c, want T (stopped)", s)
	}
	time.Sleep(400 * time.Millisecond)
	if s := stateOf(t, p); s == 'T' {
		t.Fatalf("process still stopped after the pause ended")
	}
	n.Heal()
	ev := rec.all()
	if len(ev) != 2 || ev[0].Type != history.Invoke || ev[1].Type != history.OK || ev[0].F != history.Pause {
		t.Fatalf("want pause invoke then ok, got %+v", ev)
	}
	if got := time.Duration(ev[1].Time - ev[0].Time); got < 250*time.Millisecond {
		t.Fatalf("recorded pause lasted %s, want about 300ms", got)
	}
}

func TestHealEndsAPauseEarlyAndLeavesNothingStopped(t *testing.T) {
	p := sleeper(t)
	rec := &recorder{}
	n := newTestNemesis(map[string]Target{"n1": p}, rec.record)
	_ = n.Start(Schedule{Faults: []Fault{{Kind: PauseFault, Target: "n1", At: dur(0), For: dur(time.Hour)}}})
	time.Sleep(100 * time.Millisecond)
	if s := stateOf(t, p); s != 'T' {
		t.Fatalf("state = %c, want T", s)
	}
	n.Heal()
	if s := stateOf(t, p); s == 'T' {
		t.Fatal("Heal left the process stopped")
	}
	ev := rec.all()
	if len(ev) != 2 || ev[1].Error == "" {
		t.Fatalf("want the early end recorded with a reason, got %+v", ev)
	}
}

func TestPointFaultActsOnlyWhenTheClientReportsThePoint(t *testing.T) {
	p := sleeper(t)
	rec := &recorder{}
	n := newTestNemesis(map[string]Target{"client-1": p}, rec.record)
	_ = n.Start(Schedule{Faults: []Fault{{Kind: KillFault, Target: "client-1", Point: "after-acquire", Occurrence: 2}}})
	time.Sleep(50 * time.Millisecond)
	if len(rec.all()) != 0 {
		t.Fatal("a point fault fired before its point")
	}
	_ = p.Stop() // the worker stops itself at the point; emulate with the same signal
	n.Stopped("client-1", "after-acquire", 2)
	select {
	case <-p.Exited():
	case <-time.After(2 * time.Second):
		t.Fatal("kill at the point did not kill the process")
	}
	n.Heal()
	ev := rec.all()
	if len(ev) != 2 || ev[0].F != history.Kill || ev[1].Type != history.OK {
		t.Fatalf("want kill invoke then ok, got %+v", ev)
	}
}

func TestUnplannedStopIsResumedAtOnce(t *testing.T) {
	p := sleeper(t)
	n := newTestNemesis(map[string]Target{"client-1": p}, func(history.Event) {})
	_ = p.Stop()
	n.Stopped("client-1", "before-write", 7)
	time.Sleep(50 * time.Millisecond)
	if s := stateOf(t, p); s == 'T' {
		t.Fatal("a client stopped at an unplanned point was left frozen")
	}
}

func TestRandomPackageIsSeededAndStaysWithinBounds(t *testing.T) {
	run := func() []history.Event {
		targets := map[string]Target{"client-1": sleeper(t), "client-2": sleeper(t)}
		rec := &recorder{}
		n := newTestNemesis(targets, rec.record)
		_ = n.Start(Schedule{Random: &Random{Faults: []string{PauseFault}, Targets: []string{"client-1", "client-2"},
			Interval: dur(40 * time.Millisecond), MinFor: dur(10 * time.Millisecond), MaxFor: dur(30 * time.Millisecond), Seed: 42}})
		time.Sleep(400 * time.Millisecond)
		n.Heal()
		return rec.all()
	}
	a, b := run(), run()
	if len(a) < 4 {
		t.Fatalf("too few random faults: %d events", len(a))
	}
	n := min(len(a), len(b))
	for i := 0; i < n; i += 2 { // the same seed picks the same targets and lengths
		if a[i].Target != b[i].Target || a[i].Duration != b[i].Duration {
			t.Fatalf("fault %d differs between runs with one seed: %+v vs %+v", i/2, a[i], b[i])
		}
		if d := time.Duration(a[i].Duration); d < 10*time.Millisecond || d > 30*time.Millisecond {
			t.Fatalf("pause length %s outside [10ms, 30ms]", d)
		}
	}
}

func TestUnknownTargetIsRefused(t *testing.T) {
	n := newTestNemesis(map[string]Target{}, func(history.Event) {})
	if err := n.Start(Schedule{Faults: []Fault{{Kind: PauseFault, Target: "n9"}}}); err == nil {
		t.Fatal("want an error for a target that does not exist")
	}
}

// fakeClock records clock settings; the clock path is pure logic (the real one is exercised by
// scenarios/clock-jump-getset.yaml against real worker processes).
type fakeClock struct {
	mu  sync.Mutex
	set []string
}

func (f *fakeClock) Pause() error  { return nil }
func (f *fakeClock) Resume() error { return nil }
func (f *fakeClock) Kill() error   { return nil }
func (f *fakeClock) SetClock(offset time.Duration, rate float64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.set = append(f.set, offset.String()+"@"+strconv.FormatFloat(rate, 'g', -1, 64))
	return nil
}

func (f *fakeClock) settings() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return strings.Join(f.set, " ")
}

func TestClockFaultSetsTheClockAndHealResetsIt(t *testing.T) {
	c := &fakeClock{}
	rec := &recorder{}
	n := newTestNemesis(map[string]Target{"client-1": c}, rec.record)
	_ = n.Start(
		Schedule{
			Faults: []Fault{
				{
					Kind:   ClockFault,
					Target: "client-1",
					At:     dur(10 * time.Millisecond),
					Params: ClockParams{Offset: signed(2 * time.Second), Rate: 1.1},
				},
			},
		},
	)
	time.Sleep(100 * time.Millisecond)
	n.Heal()
	if got := c.settings(); got != "2s@1.1 0s@1" {
		t.Fatalf("clock settings = %q, want the fault then the reset", got)
	}
	ev := rec.all()
	if len(ev) != 3 || ev[0].F != history.Clock || string(ev[0].Params) != `{"offset":2000000000,"rate":1.1}` || ev[2].Error != "reset at heal" ||
		string(ev[2].Params) != `{"rate":1}` {
		t.Fatalf("recorded: %+v", ev)
	}
}

func TestClockFaultWithALengthSetsTheClockBack(t *testing.T) {
	c := &fakeClock{}
	n := newTestNemesis(map[string]Target{"client-1": c}, func(history.Event) {})
	_ = n.Start(
		Schedule{
			Faults: []Fault{
				{Kind: ClockFault, Target: "client-1", Params: &ClockParams{Offset: signed(-time.Second)}, For: dur(30 * time.Millisecond)},
			},
		},
	)
	time.Sleep(150 * time.Millisecond)
	if got := c.settings(); got != "-1s@0 0s@1" {
		t.Fatalf("clock settings = %q", got)
	}
	n.Heal()
}

func TestClockFaultOnATargetWithoutAClockFails(t *testing.T) {
	rec := &recorder{}
	n := newTestNemesis(map[string]Target{"n1": sleeper(t)}, rec.record)
	_ = n.Start(Schedule{Faults: []Fault{{Kind: ClockFault, Target: "n1", Params: ClockParams{Offset: signed(time.Second)}}}})
	time.Sleep(50 * time.Millisecond)
	n.Heal()
	if ev := rec.all(); len(ev) != 1 || ev[0].Type != history.Fail {
		t.Fatalf("want one failed clock fault, got %+v", ev)
	}
}

// A client may reach its program point before the timed part of the schedule starts: a planned
// point fault must still be carried out then, not skipped.
func TestPointFaultPlannedBeforeStartIsHonouredEvenIfReachedBeforeStart(t *testing.T) {
	p := sleeper(t)
	rec := &recorder{}
	s := Schedule{Faults: []Fault{{Kind: PauseFault, Target: "client-1", Point: "after-acquire", Occurrence: 1, For: dur(200 * time.Millisecond)}}}
	n := New(Config{Schedule: s, Record: rec.record}) // planned as it is made, before any client exists
	n.AddTarget("client-1", p)
	_ = p.Stop()
	n.Stopped("client-1", "after-acquire", 1) // before Start
	time.Sleep(100 * time.Millisecond)
	if st := stateOf(t, p); st != 'T' {
		t.Fatalf("the planned pause was skipped: state %c", st)
	}
	if err := n.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	n.Heal()
	if ev := rec.all(); len(ev) != 2 || ev[0].F != history.Pause {
		t.Fatalf("want one pause recorded, got %+v", ev)
	}
}

// restartable is a real process that can be "restarted" by starting a new sleep.
type restartable struct {
	t        *testing.T
	mu       sync.Mutex
	p        sleepProc
	restarts int
}

func (r *restartable) cur() sleepProc { r.mu.Lock(); defer r.mu.Unlock(); return r.p }
func (r *restartable) Pause() error   { return r.cur().Stop() }
func (r *restartable) Resume() error  { return r.cur().Cont() }
func (r *restartable) Kill() error    { return r.cur().Kill() }
func (r *restartable) Restart(context.Context) error {
	p := sleeper(r.t)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.p, r.restarts = p, r.restarts+1
	return nil
}

func TestCrashKillsTheServerAndRestartsItAfterItsDowntime(t *testing.T) {
	r := &restartable{t: t, p: sleeper(t)}
	first := r.cur()
	rec := &recorder{}
	n := newTestNemesis(map[string]Target{"n1": r}, rec.record)
	_ = n.Start(Schedule{Faults: []Fault{{Kind: CrashFault, Target: "n1", At: dur(10 * time.Millisecond), For: dur(200 * time.Millisecond)}}})
	select {
	case <-first.Exited():
	case <-time.After(2 * time.Second):
		t.Fatal("crash did not kill the process")
	}
	time.Sleep(50 * time.Millisecond)
	r.mu.Lock()
	early := r.restarts
	r.mu.Unlock()
	if early != 0 {
		t.Fatal("restarted before its downtime was over")
	}
	time.Sleep(300 * time.Millisecond)
	n.Heal()
	ev := rec.all()
	if r.restarts != 1 || len(ev) != 2 || ev[0].F != history.Crash || ev[1].Type != history.OK {
		t.Fatalf("restarts=%d events=%+v", r.restarts, ev)
	}
	if down := time.Duration(ev[1].Time - ev[0].Time); down < 200*time.Millisecond {
		t.Fatalf("down for %s, want at least 200ms", down)
	}
}

type fakeNetwork struct {
	mu  sync.Mutex
	log []string
}

func (f *fakeNetwork) Cut(client string, nodes []string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log = append(f.log, "cut "+client+" "+strings.Join(nodes, ","))
	return nil
}

func (f *fakeNetwork) Drop(client string, nodes []string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log = append(f.log, "drop "+client+" "+strings.Join(nodes, ","))
	return nil
}

func (f *fakeNetwork) Heal(client string, nodes []string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log = append(f.log, "heal "+client+" "+strings.Join(nodes, ","))
	return nil
}

func (f *fakeNetwork) Delay(client string, nodes []string, latency, jitter time.Duration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log = append(f.log, "delay "+client+" "+strings.Join(nodes, ",")+" "+latency.String())
	return nil
}

func (f *fakeNetwork) String() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return strings.Join(f.log, "; ")
}

func TestPartitionCutsThenHealsAndAnOpenEndedOneHealsAtHeal(t *testing.T) {
	net := &fakeNetwork{}
	rec := &recorder{}
	n := newTestNemesis(map[string]Target{"client-1": sleeper(t), "client-2": sleeper(t)}, rec.record)
	n.cfg.Network = net
	_ = n.Start(Schedule{Faults: []Fault{
		{Kind: PartitionFault, Target: "client-1", Params: PartitionParams{Nodes: []string{"n4", "n5"}}, At: dur(0), For: dur(50 * time.Millisecond)},
		{Kind: PartitionFault, Target: "client-2", At: dur(0)}, // until healed
	}})
	time.Sleep(150 * time.Millisecond)
	got := net.String()
	if !strings.Contains(got, "cut client-1 n4,n5") || !strings.Contains(got, "heal client-1 n4,n5") || strings.Contains(got, "heal client-2") {
		t.Fatalf("before heal: %s", got)
	}
	n.Heal()
	if !strings.Contains(net.String(), "heal client-2 ") {
		t.Fatalf("Heal left client-2 cut off: %s", net.String())
	}
	if ev := rec.all(); len(ev) != 4 || ev[0].F != history.Partition {
		t.Fatalf("recorded: %+v", ev)
	}
}

func TestPartitionAtAProgramPointLetsTheClientGoOn(t *testing.T) {
	p := sleeper(t)
	n := newTestNemesis(map[string]Target{"client-1": p}, func(history.Event) {})
	n.cfg.Network = &fakeNetwork{}
	_ = n.Start(Schedule{Faults: []Fault{{Kind: PartitionFault, Target: "client-1", Point: "after-acquire", Occurrence: 1, For: dur(time.Second)}}})
	_ = p.Stop()
	n.Stopped("client-1", "after-acquire", 1)
	time.Sleep(100 * time.Millisecond)
	if s := stateOf(t, p); s == 'T' {
		t.Fatal("the client stayed frozen after a partition at its program point")
	}
	n.Heal()
}

// A fault on a server started by a client's pass of a point (by:): nothing before that pass (not
// at another pass, nor at another client's), the server's clock stepped at it, and the client,
// stopped at its point, goes on at once.
func TestAClientsPassStartsAFaultOnAServer(t *testing.T) {
	client, server := sleeper(t), &fakeClock{}
	n := newTestNemesis(map[string]Target{"client-1": client, "client-2": sleeper(t), "n1": server}, func(history.Event) {})
	_ = n.Start(Schedule{Faults: []Fault{{Kind: ClockFault, Target: "n1", By: "client-1", Point: "after-acquire", Occurrence: 2,
		Params: ClockParams{Offset: signed(5 * time.Second)}}}})
	n.Stopped("client-1", "after-acquire", 1)
	n.Stopped("client-2", "after-acquire", 2)
	time.Sleep(50 * time.Millisecond)
	if got := server.settings(); got != "" {
		t.Fatalf("the server's clock was set before client-1's second pass: %q", got)
	}
	_ = client.Stop()
	n.Stopped("client-1", "after-acquire", 2)
	time.Sleep(100 * time.Millisecond)
	if got := server.settings(); got != "5s@0" {
		t.Errorf("the server's clock at client-1's second pass: %q, want 5s@0", got)
	}
	if s := stateOf(t, client); s == 'T' {
		t.Error("client-1 stayed frozen at the pass that stepped the server's clock")
	}
	n.Heal()
}

// A partition's mode picks the network's action: drop drops, reset (and no mode) cuts; the history
// records the mode of each, the default too.
func TestPartitionModeDropsOrCutsAndIsRecorded(t *testing.T) {
	net := &fakeNetwork{}
	rec := &recorder{}
	n := newTestNemesis(map[string]Target{"client-1": sleeper(t), "client-2": sleeper(t)}, rec.record)
	n.cfg.Network = net
	_ = n.Start(Schedule{Faults: []Fault{
		{Kind: PartitionFault, Target: "client-1", Params: &PartitionParams{Nodes: []string{"n1"}, Mode: Drop}, At: dur(0), For: dur(30 * time.Millisecond)},
		{Kind: PartitionFault, Target: "client-2", At: dur(0), For: dur(30 * time.Millisecond)},
	}})
	time.Sleep(150 * time.Millisecond)
	n.Heal()
	got := net.String()
	if !strings.Contains(got, "drop client-1 n1") || !strings.Contains(got, "cut client-2 ") || strings.Contains(got, "cut client-1") {
		t.Fatalf("network saw: %s", got)
	}
	modes := map[string]string{}
	for _, e := range rec.all() {
		if e.Type == history.Invoke {
			var p PartitionParams
			if err := json.Unmarshal(e.Params, &p); err != nil {
				t.Fatalf("params %s: %v", e.Params, err)
			}
			modes[e.Target] = p.Mode
		}
	}
	if modes["client-1"] != Drop || modes["client-2"] != Reset {
		t.Fatalf("recorded modes %v; want client-1 drop, client-2 reset", modes)
	}
}

// A delay until next-read holds everything back (its latency is its whole length) and heals as
// soon as another client completes a read, not at its own target's read; with no such read it
// heals when its length is up.
func TestADelayUntilTheNextReadHealsAtAnotherClientsRead(t *testing.T) {
	for _, otherReads := range []bool{true, false} {
		net := &fakeNetwork{}
		rec := &recorder{}
		n := newTestNemesis(map[string]Target{"client-1": sleeper(t), "client-2": sleeper(t)}, rec.record)
		n.cfg.Network = net
		const length = 600 * time.Millisecond
		_ = n.Start(Schedule{Faults: []Fault{{Kind: history.Delay, Target: "client-1",
			Params: DelayParams{Nodes: []string{"resource"}, Until: UntilNextRead}, For: dur(length)}}})
		eventually(t, time.Second, "delay in force", func() bool { return strings.Contains(net.String(), "delay client-1") })
		start := time.Now()
		n.Observe(history.Event{Process: "client-1", Type: history.OK, F: history.Read}) // its own read: no end
		time.Sleep(100 * time.Millisecond)
		if strings.Contains(net.String(), "heal") {
			t.Fatalf("healed at the target's own read: %s", net)
		}
		if otherReads {
			n.Observe(history.Event{Process: "client-2", Type: history.OK, F: history.Read})
		}
		eventually(t, 2*time.Second, "healed", func() bool { return strings.Contains(net.String(), "heal client-1 resource") })
		took := time.Since(start)
		if !strings.Contains(net.String(), "delay client-1 resource "+length.String()) {
			t.Errorf("held back by other than the whole length: %s", net)
		}
		if otherReads && took > length/2 {
			t.Errorf("healed %s after another client's read", took)
		}
		if !otherReads && took < length*3/4 {
			t.Errorf("healed after %s with no other client's read, before its length", took)
		}
		n.Heal()
	}
}

// slowCut is a network whose cut takes effect at once but returns later, as a proxy closing a
// client's connections does while the server already hands the lock on.
type slowCut struct {
	fakeNetwork
	effect int64 // when the cut took effect
}

func (s *slowCut) Cut(client string, nodes []string) error {
	s.mu.Lock()
	s.effect = history.Now()
	s.mu.Unlock()
	time.Sleep(30 * time.Millisecond)
	return s.fakeNetwork.Cut(client, nodes)
}

// A fault's invoke is timed before its act, not when the act returned: what the act set off (a
// waiter granted the cut holder's lock) must not come before the fault in the history.
func TestAFaultsInvokeIsTimedBeforeItsEffects(t *testing.T) {
	net := &slowCut{}
	rec := &recorder{}
	n := newTestNemesis(map[string]Target{"client-1": sleeper(t)}, rec.record)
	n.cfg.Network = net
	_ = n.Start(Schedule{Faults: []Fault{{Kind: PartitionFault, Target: "client-1", At: dur(0), For: dur(10 * time.Millisecond)}}})
	time.Sleep(100 * time.Millisecond)
	n.Heal()
	ev := rec.all()
	if len(ev) == 0 || ev[0].Type != history.Invoke {
		t.Fatalf("recorded: %+v", ev)
	}
	net.mu.Lock()
	defer net.mu.Unlock()
	if net.effect == 0 || ev[0].Time > net.effect {
		t.Errorf("the partition's invoke at %d, after its effect at %d", ev[0].Time, net.effect)
	}
}
