package nemesis_test

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	. "github.com/lockcheck/lockcheck/nemesis"
)

func draws(r Random, n int) []Fault {
	rng := rand.New(rand.NewPCG(uint64(r.Seed), 0x6e656d65))
	var out []Fault
	for range n {
		f, ok := r.Draw(rng)
		if !ok {
			break
		}
		out = append(out, f)
	}
	return out
}

func TestRandomDrawsSuitEachKindAndStayWithinBounds(t *testing.T) {
	r := Random{
		Faults:  []string{PauseFault, KillFault, ClockFault, CrashFault, PartitionFault, DelayFault},
		Targets: []string{"client-1", "client-2", "n1", "n2"},
		ByKind: map[string][]string{
			KillFault: {"client-1", "client-2"}, CrashFault: {"n1", "n2"},
			PartitionFault: {"client-1", "client-2"}, DelayFault: {"client-1", "client-2"},
		},
		MinFor: dur(100 * time.Millisecond), MaxFor: dur(800 * time.Millisecond),
		MaxOffset: dur(2 * time.Second), MaxLatency: dur(300 * time.Millisecond),
		Nodes: []string{"n1", "n2", "n3", "n4", "n5"}, Seed: 7,
	}
	fs := draws(r, 400)
	seen := map[string]int{}
	for _, f := range fs {
		seen[f.Kind]++
		if ts, ok := r.ByKind[f.Kind]; ok && !slices.Contains(ts, f.Target) {
			t.Fatalf("%s drawn on %s, not one of %v", f.Kind, f.Target, ts)
		}
		switch f.Kind {
		case KillFault:
			if f.For != 0 {
				t.Fatalf("a kill with a length: %+v", f)
			}
		case ClockFault:
			p := f.Params.(*ClockParams)
			if p.Offset == 0 || p.Offset.D() < -r.MaxOffset.D() || p.Offset.D() > r.MaxOffset.D() {
				t.Fatalf("clock offset %s outside ±%s (or zero)", p.Offset, r.MaxOffset)
			}
		case PartitionFault, DelayFault:
			var nodes []string
			if p, ok := f.Params.(*DelayParams); ok {
				nodes = p.Nodes
				if p.Latency <= 0 || p.Latency > r.MaxLatency {
					t.Fatalf("latency %s outside (0, %s]", p.Latency, r.MaxLatency)
				}
			} else {
				nodes = f.Params.(*PartitionParams).Nodes
			}
			if len(nodes) == 0 || len(nodes) > len(r.Nodes) {
				t.Fatalf("nodes %v: want a non-empty subset of %v", nodes, r.Nodes)
			}
			for _, n := range nodes {
				if !slices.Contains(r.Nodes, n) {
					t.Fatalf("node %s not a lock node", n)
				}
			}
		}
		if f.Kind != KillFault && (f.For < r.MinFor || f.For > r.MaxFor) {
			t.Fatalf("length %s outside [%s, %s]", f.For, r.MinFor, r.MaxFor)
		}
	}
	for _, k := range r.Faults {
		if seen[k] == 0 {
			t.Errorf("400 draws never gave a %s: %v", k, seen)
		}
	}
	// Offsets go both ways.
	ahead, behind := false, false
	for _, f := range fs {
		if p, ok := f.Params.(*ClockParams); ok {
			ahead, behind = ahead || p.Offset > 0, behind || p.Offset < 0
		}
	}
	if !ahead || !behind {
		t.Error("clock steps drawn only one way")
	}
	if !reflect.DeepEqual(fs, draws(r, 400)) {
		t.Fatal("one seed gave two different sequences")
	}
	r.Seed = 8
	if reflect.DeepEqual(fs, draws(r, 400)) {
		t.Fatal("two seeds gave the same sequence")
	}
}

// The pause-only package keeps drawing what it drew before kinds other than pause existed, so a
// seeded scenario such as random-pauses-set-nx-px replays the same schedule.
func TestRandomPauseOnlyDrawsAreUnchanged(t *testing.T) {
	r := Random{Faults: []string{PauseFault}, Targets: []string{"client-1", "client-2"}, MinFor: dur(10), MaxFor: dur(1000), Seed: 42}
	rng := rand.New(rand.NewPCG(42, 0x6e656d65))
	for _, f := range draws(r, 20) {
		kind := r.Faults[rng.IntN(1)]
		target := r.Targets[rng.IntN(2)]
		length := dur(Between(rng, r.MinFor.D(), r.MaxFor.D()))
		if f.Kind != kind || f.Target != target || f.For != length || f.Params != nil {
			t.Fatalf("draw %+v, want %s %s %s", f, kind, target, length)
		}
	}
}

func TestStrobeFlipsTheClockAndSetsItBack(t *testing.T) {
	c := &fakeClock{}
	rec := &recorder{}
	n := newTestNemesis(map[string]Target{"n1": c}, rec.record)
	_ = n.Start(
		Schedule{
			Faults: []Fault{
				{
					Kind:   StrobeFault,
					Target: "n1",
					Params: StrobeParams{Offset: signed(5 * time.Second), Period: dur(40 * time.Millisecond)},
					For:    dur(150 * time.Millisecond),
				},
			},
		},
	)
	time.Sleep(300 * time.Millisecond)
	n.Heal()
	got := c.settings()
	// 5s, then flips every 40ms (0s, 5s, 0s...), then the reset when For ends, then Heal's.
	if want := "5s@1 0s@1 5s@1 0s@1"; len(got) < len(want) || got[:len(want)] != want {
		t.Fatalf("clock settings = %q, want it to start with %q", got, want)
	}
	ev := rec.all()
	if ev[0].F != StrobeFault || string(ev[0].Params) != `{"offset":5000000000,"period":40000000}` || ev[0].Duration != int64(150*time.Millisecond) {
		t.Fatalf("first event %+v", ev[0])
	}
	var flips, oks int
	for _, e := range ev {
		switch {
		case e.F == StrobeFault && e.Type == "note":
			flips++
		case e.F == StrobeFault && e.Type == "ok":
			oks++
		}
	}
	if flips < 2 || oks != 1 {
		t.Fatalf("want the flips noted and one ok, got %d flips, %d oks: %+v", flips, oks, ev)
	}
}

func TestStrobeHealedEarlyEndsAtTrueTime(t *testing.T) {
	c := &fakeClock{}
	rec := &recorder{}
	n := newTestNemesis(map[string]Target{"n1": c}, rec.record)
	_ = n.Start(
		Schedule{Faults: []Fault{{Kind: StrobeFault, Target: "n1", Params: StrobeParams{Offset: signed(-3 * time.Second), Period: dur(time.Hour)}}}},
	)
	time.Sleep(50 * time.Millisecond)
	n.Heal()
	if got := c.settings(); got != "-3s@1 0s@1 0s@1" { // the strobe's own reset, then Heal's
		t.Fatalf("clock settings = %q", got)
	}
	ev := rec.all()
	if ev[1].F != StrobeFault || ev[1].Type != "ok" || ev[1].Error == "" {
		t.Fatalf("want an early end recorded with its reason, got %+v", ev)
	}
}

// Random partitions draw both modes; the nodes come from the same draw as before modes existed
// (the mode is drawn after them), so a seed's partitions cut the same links.
func TestRandomPartitionsDrawBothModesAfterTheirNodes(t *testing.T) {
	r := Random{Faults: []string{PartitionFault}, Targets: []string{"client-1", "client-2"}, MinFor: dur(10), MaxFor: dur(1000),
		Nodes: []string{"n1", "n2", "n3"}, Seed: 3}
	rng := rand.New(rand.NewPCG(3, 0x6e656d65))
	modes := map[string]int{}
	for _, f := range draws(r, 40) {
		_ = r.Faults[rng.IntN(1)]
		target := r.Targets[rng.IntN(2)]
		length := dur(Between(rng, r.MinFor.D(), r.MaxFor.D()))
		nodes := Subset(rng, r.Nodes)
		mode := PartitionModes[rng.IntN(len(PartitionModes))]
		p := f.Params.(*PartitionParams)
		if f.Target != target || f.For != length || !reflect.DeepEqual(p.Nodes, nodes) || p.Mode != mode {
			t.Fatalf("draw %+v %+v, want %s %s %v %s", f, p, target, length, nodes, mode)
		}
		modes[p.Mode]++
	}
	if modes[Reset] == 0 || modes[Drop] == 0 {
		t.Fatalf("40 partitions drew modes %v: want both", modes)
	}
}
