package nemesis

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"
)

func huntPackage() Random {
	return Random{Mode: ModeHunt, Faults: []string{"pause", "partition"}, Targets: []string{Holder, Waiter, Overtaken, "n1"},
		ByKind:   map[string][]string{"pause": {Holder, Waiter, Overtaken, "n1"}, "partition": {Holder, Waiter, Overtaken}},
		Interval: dur(time.Second), MinFor: dur(500 * time.Millisecond), MaxFor: dur(1500 * time.Millisecond),
		Nodes: []string{"n1", "n2", "n3"}, Points: []string{"between-send-and-reply"}, Seed: 7, TTL: 400 * time.Millisecond}
}

// A hunt's moves: the holder now and at each point of its hold, a waiter (and, for a kind that
// silences a client, a waiter silenced through its holder's release, from as the hold begins or
// as it is about to end), the overtaken as it takes
// the lock again, any client at the design's own points, and a server only for the kinds that
// suit one.
func TestHuntMovesFollowTheTargetsAndKinds(t *testing.T) {
	r := huntPackage()
	pause, _ := Lookup("pause")
	got := r.moves(pause)
	want := []move{{state: Holder}, {state: Holder, point: "after-acquire"}, {state: Holder, point: "before-write"},
		{state: Holder, point: "after-validity-check"}, {state: Waiter}, {state: Waiter, point: HoldBegins, throughRelease: true},
		{state: Waiter, point: "before-write", throughRelease: true}, {state: Overtaken, point: "after-acquire"},
		{target: "n1"}, {state: passer, point: "between-send-and-reply"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("pause moves = %+v\nwant %+v", got, want)
	}
	partition, _ := Lookup("partition")
	if slices.Contains(r.moves(partition), move{target: "n1"}) {
		t.Fatal("a partition move aimed at a server")
	}
	clock, _ := Lookup("clock")
	if slices.Contains(r.moves(clock), move{state: Waiter, point: HoldBegins, throughRelease: true}) {
		t.Fatal("a clock step cannot silence a waiter through a release")
	}
}

// A delay silences a waiter through a release by holding back everything it sends until the heal,
// and lands a holder's check late: every lock link slowed by 0.75–1 TTL as it passes a point of
// its hold. Kinds that cannot slow a link have no late move.
func TestHuntDelaysSilenceAWaiterAndLandAHoldersCheckLate(t *testing.T) {
	r := huntPackage()
	r.Faults, r.ByKind, r.MaxLatency = []string{"delay"}, nil, dur(800*time.Millisecond)
	r.Targets = []string{Holder, Waiter}
	delay, _ := Lookup("delay")
	moves := r.moves(delay)
	for _, p := range holdPoints {
		if !slices.Contains(moves, move{state: Holder, point: p, late: true}) {
			t.Errorf("no late move at %s: %+v", p, moves)
		}
	}
	pause, _ := Lookup("pause")
	for _, m := range r.moves(pause) {
		if m.late {
			t.Fatalf("a pause landed late: %+v", m)
		}
	}
	rng := rand.New(rand.NewPCG(3, 0x68756e74))
	seen := map[string]bool{}
	for i := 0; i < 200; i++ {
		f, m, ok := r.drawMove(rng)
		if !ok {
			t.Fatal("no move drawn")
		}
		p := f.Params.(*DelayParams)
		switch {
		case m.throughRelease:
			seen["through release"] = true
			if p.Nodes != nil || p.Latency != f.For {
				t.Fatalf("a waiter held back through a release on %v by %s for %s: not every link for the whole fault", p.Nodes, p.Latency.D(), f.For.D())
			}
		case m.late:
			seen["late"] = true
			if p.Nodes != nil || p.Latency.D() < 300*time.Millisecond || p.Latency.D() >= 400*time.Millisecond {
				t.Fatalf("a late check slowed on %v by %s, want every link by 300–400ms", p.Nodes, p.Latency.D())
			}
			if f.For.D() < 400*time.Millisecond || f.For.D() >= 800*time.Millisecond {
				t.Fatalf("a late check's delay lasts %s, want 1–2 TTLs", f.For.D())
			}
		}
	}
	if !seen["late"] || !seen["through release"] {
		t.Fatalf("200 draws saw only %v", seen)
	}
}

// The same seed draws the same faults, moves and lengths; another seed does not.
func TestHuntDrawsAreSeeded(t *testing.T) {
	draws := func(seed int64) []Fault {
		r := huntPackage()
		rng := rand.New(rand.NewPCG(uint64(seed), 0x68756e74))
		var out []Fault
		for i := 0; i < 20; i++ {
			f, m, ok := r.drawMove(rng)
			if !ok {
				t.Fatal("no move drawn")
			}
			lo, hi := 500*time.Millisecond, 1500*time.Millisecond
			if m.throughRelease { // long enough for the waiter's own lease to end: 2.5–3.5 TTLs
				lo, hi = 1000*time.Millisecond, 1400*time.Millisecond
			}
			if f.For.D() < lo || f.For.D() >= hi {
				t.Fatalf("length %s outside %s..%s", f.For.D(), lo, hi)
			}
			// A waiter silenced through a release is cut from every lock node, in either mode.
			if p, ok := f.Params.(*PartitionParams); ok && m.throughRelease && p.Nodes != nil {
				t.Fatalf("a waiter cut through a release from %v only", p.Nodes)
			}
			out = append(out, f)
		}
		return out
	}
	a, b := draws(7), draws(7)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("seed 7 drew two different schedules")
	}
	if reflect.DeepEqual(a, draws(8)) {
		t.Fatal("seeds 7 and 8 drew the same schedule")
	}
	kinds, points := map[string]bool{}, map[string]bool{}
	for _, f := range a {
		kinds[f.Kind], points[f.Point] = true, true
	}
	if len(kinds) < 2 || len(points) < 3 {
		t.Fatalf("20 draws used kinds %v and points %v: not spread over the moves", kinds, points)
	}
}
