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
