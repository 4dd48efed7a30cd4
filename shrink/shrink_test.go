package shrink

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/scenarios"
	_ "github.com/lockcheck/lockcheck/services/all" // the lock services scenarios are checked against
)

// eight pauses, the i-th at i seconds (i = 1..8), each on client-3 for 2s.
func eight(t *testing.T) *scenarios.Scenario {
	t.Helper()
	s := scenarios.Scenario{Name: "eight", Lock: "set-nx-px", Clients: 4, TTL: scenarios.Duration(400 * time.Millisecond),
		Duration: scenarios.Duration(30 * time.Second)}
	for i := 1; i <= 8; i++ {
		s.Nemesis = append(s.Nemesis, scenarios.Entry{Fault: nemesis.Fault{Kind: "pause", Target: "client-3",
			At: scenarios.Duration(time.Duration(i) * time.Second), For: scenarios.Duration(2 * time.Second)}})
	}
	sc, err := scenarios.New(s)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// at lists the start times, in seconds, of a scenario's faults that start within its run.
func at(sc *scenarios.Scenario) []int {
	var out []int
	for _, e := range sc.Nemesis {
		if e.At < sc.Duration {
			out = append(out, int(e.At.D()/time.Second))
		}
	}
	return out
}

// needs is a fake lock that breaks when the faults at 2s and 5s both happen, the one at 2s
// lasting at least 1s.
func needs(sc *scenarios.Scenario) bool {
	a := at(sc)
	if !slices.Contains(a, 2) || !slices.Contains(a, 5) {
		return false
	}
	for _, e := range sc.Nemesis {
		if e.At.D() == 2*time.Second && e.For.D() < time.Second {
			return false
		}
	}
	return true
}

func TestShrinkFindsTheMinimalSet(t *testing.T) {
	res, err := Shrink(context.Background(), eight(t), func(_ context.Context, sc *scenarios.Scenario) (bool, error) {
		return needs(sc), nil
	}, Options{K: 2, MaxTrials: 200})
	if err != nil {
		t.Fatal(err)
	}
	if got := at(res.Scenario); !slices.Equal(got, []int{2, 5}) || res.Before != 8 || res.After != 2 {
		t.Fatalf("kept the faults at %v s (%d → %d), want [2 5]; steps: %v", got, res.Before, res.After, res.Steps)
	}
	for _, e := range res.Scenario.Nemesis {
		if e.Target != "client-1" {
			t.Errorf("fault at %s still on %s, want client-1", e.At, e.Target)
		}
		switch e.At.D() {
		case 2 * time.Second: // needs ≥ 1s: bisected from 2s to within an eighth
			if e.For.D() < time.Second || e.For.D() > 1250*time.Millisecond {
				t.Errorf("fault at 2s lasts %s, want 1s..1.25s", e.For)
			}
		case 5 * time.Second: // any length will do
			if e.For.D() > 250*time.Millisecond {
				t.Errorf("fault at 5s lasts %s, want ≤ 250ms", e.For)
			}
		}
	}
	// The run was shortened as far as the fault at 5s allows.
	if d := res.Scenario.Duration.D(); d <= 5*time.Second || d > 10*time.Second {
		t.Errorf("duration %s, want 5s < d ≤ 10s", d)
	}
	if res.Trials > 200 || res.Exhausted {
		t.Errorf("%d trials, exhausted %v", res.Trials, res.Exhausted)
	}
}

// A candidate that shows the violation in only one of two trials is never taken: here the fault
// at 2s alone breaks the lock every other time.
func TestShrinkRefusesAFlakyCandidate(t *testing.T) {
	calls := map[string]int{}
	flaky := func(_ context.Context, sc *scenarios.Scenario) (bool, error) {
		a := at(sc)
		if slices.Equal(a, []int{2}) {
			calls["alone"]++
			return calls["alone"]%2 == 1, nil
		}
		return needs(sc), nil
	}
	res, err := Shrink(context.Background(), eight(t), flaky, Options{K: 2, MaxTrials: 200})
	if err != nil {
		t.Fatal(err)
	}
	if got := at(res.Scenario); !slices.Equal(got, []int{2, 5}) {
		t.Fatalf("kept %v, want [2 5] (the flaky [2] must not be accepted); steps: %v", got, res.Steps)
	}
	if calls["alone"] == 0 {
		t.Fatal("the flaky candidate was never tried: the test proves nothing")
	}
}

func TestShrinkStaysWithinItsTrialBudget(t *testing.T) {
	n := 0
	res, err := Shrink(context.Background(), eight(t), func(_ context.Context, sc *scenarios.Scenario) (bool, error) {
		n++
		return needs(sc), nil
	}, Options{K: 2, MaxTrials: 9})
	if err != nil {
		t.Fatal(err)
	}
	if n > 9 || res.Trials != n || !res.Exhausted {
		t.Fatalf("%d trials run, %d counted, exhausted %v; want at most 9, exhausted", n, res.Trials, res.Exhausted)
	}
	if !needs(res.Scenario) {
		t.Fatal("the result cut short does not break the fake lock")
	}
}

func TestShrinkSaysWhenTheStartDoesNotReproduce(t *testing.T) {
	_, err := Shrink(context.Background(), eight(t), func(context.Context, *scenarios.Scenario) (bool, error) {
		return false, nil
	}, Options{})
	if err != ErrNotReproduced {
		t.Fatalf("err = %v, want ErrNotReproduced", err)
	}
}

// A find whose last fault is pinned to a late pass of a program point: in the fake, the faults
// before it decide how many passes client-3 makes, so that pass comes at the right moment only
// with all of them, or when the fault stands alone at the first pass. ddmin, which keeps each
// fault's pass number, can drop none of them; trying the last fault alone first finds it at once.
func TestShrinkTriesTheLastFaultAloneAtItsFirstPass(t *testing.T) {
	s := scenarios.Scenario{Name: "late-pass", Lock: "set-nx-px", Clients: 4, TTL: scenarios.Duration(400 * time.Millisecond),
		Duration: scenarios.Duration(20 * time.Second)}
	for i := 1; i <= 8; i++ {
		s.Nemesis = append(s.Nemesis, scenarios.Entry{Fault: nemesis.Fault{Kind: "kill", Target: "client-1",
			At: scenarios.Duration(time.Duration(i) * time.Second)}})
	}
	s.Nemesis = append(s.Nemesis, scenarios.Entry{Fault: nemesis.Fault{Kind: "pause", Target: "client-3",
		Point: "after-acquire", Occurrence: 81, For: scenarios.Duration(600 * time.Millisecond)}})
	start, err := scenarios.New(s)
	if err != nil {
		t.Fatal(err)
	}
	breaks := func(_ context.Context, sc *scenarios.Scenario) (bool, error) {
		if len(sc.Nemesis) == 0 {
			return false, nil
		}
		last := sc.Nemesis[len(sc.Nemesis)-1]
		if last.Point != "after-acquire" {
			return false, nil
		}
		return len(sc.Nemesis) == 9 || len(sc.Nemesis) == 1 && last.Occurrence == 1, nil
	}
	res, err := Shrink(context.Background(), start, breaks, Options{K: 2, MaxTrials: 60})
	if err != nil {
		t.Fatal(err)
	}
	if res.After != 1 || res.Scenario.Nemesis[0].Occurrence != 1 || res.Exhausted {
		t.Fatalf("%d → %d faults (exhausted %v), want the last fault alone at pass 1; steps: %v", res.Before, res.After, res.Exhausted, res.Steps)
	}
	if res.Trials > 30 {
		t.Errorf("%d trials, want few: the last fault alone is tried before ddmin", res.Trials)
	}
}

// A find whose whole set of faults, pinned, misses while its last fault alone breaks the lock
// every time (the faults before it moved which pass of a point came when): Shrink starts from the
// last fault alone rather than giving the pinned form up.
func TestShrinkStartsFromTheLastFaultAloneWhenTheWholeSetMisses(t *testing.T) {
	s := scenarios.Scenario{Name: "set-misses", Lock: "set-nx-px", Clients: 4, TTL: scenarios.Duration(400 * time.Millisecond),
		Duration: scenarios.Duration(3 * time.Second)}
	s.Nemesis = []scenarios.Entry{
		{Fault: nemesis.Fault{Kind: "kill", Target: "client-1", Point: "after-acquire", Occurrence: 1}},
		{Fault: nemesis.Fault{Kind: "delay", Target: "client-3", Point: "before-write", Occurrence: 4, For: scenarios.Duration(460 * time.Millisecond),
			Params: &nemesis.DelayParams{Latency: scenarios.Duration(380 * time.Millisecond)}}},
	}
	start, err := scenarios.New(s)
	if err != nil {
		t.Fatal(err)
	}
	breaks := func(_ context.Context, sc *scenarios.Scenario) (bool, error) {
		return len(sc.Nemesis) == 1 && sc.Nemesis[0].Kind == "delay" && sc.Nemesis[0].Occurrence == 1, nil
	}
	res, err := Shrink(context.Background(), start, breaks, Options{K: 2, MaxTrials: 60})
	if err != nil {
		t.Fatalf("%v (steps %v)", err, res.Steps)
	}
	if res.After != 1 || res.Scenario.Nemesis[0].Kind != "delay" {
		t.Fatalf("%d → %d faults, want the delay alone; steps: %v", res.Before, res.After, res.Steps)
	}
	// Where nothing reproduces, it still says so.
	never := func(context.Context, *scenarios.Scenario) (bool, error) { return false, nil }
	if _, err := Shrink(context.Background(), start, never, Options{K: 2}); !errors.Is(err, ErrNotReproduced) {
		t.Fatalf("nothing reproduces: %v, want ErrNotReproduced", err)
	}
}

// A find whose fault breaks the lock only when a race goes its way (one chance in four, as a
// frozen go-zookeeper waiter's reader on waking): no schedule shows it twice in a row with the
// fault once, and the fake's odds are drawn from a seeded generator, so this test is the same
// every run. Given Repetition chances in a run it shows nearly always; Shrink writes that, at
// passes spaced so that each copy is over before the next, in a run long enough for them all.
func TestShrinkGivesARacyFaultSeveralChances(t *testing.T) {
	s := scenarios.Scenario{Name: "racy", Lock: "zk", Clients: 4, TTL: scenarios.Duration(time.Second),
		Duration: scenarios.Duration(30 * time.Second),
		Workload: scenarios.Workload{Hold: scenarios.Duration(2500 * time.Millisecond), Think: scenarios.Duration(10 * time.Millisecond)}}
	s.Nemesis = []scenarios.Entry{{Fault: nemesis.Fault{Kind: "pause", Target: nemesis.Waiter, Point: "before-write", Occurrence: 3,
		For: scenarios.Duration(1450 * time.Millisecond)}}}
	start, err := scenarios.New(s)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 2))
	racy := func(_ context.Context, sc *scenarios.Scenario) (bool, error) {
		for range sc.Nemesis {
			if rng.IntN(4) == 0 {
				return true, nil
			}
		}
		return false, nil
	}
	res, err := Shrink(context.Background(), start, racy, Options{K: 2, MaxTrials: 60})
	if err != nil {
		t.Fatalf("%v (steps %v)", err, res.Steps)
	}
	if res.Repeats != Repetition || len(res.Scenario.Nemesis) != Repetition || res.After != 1 {
		t.Fatalf("repeats %d, %d entries, after %d; want the fault given %d chances", res.Repeats, len(res.Scenario.Nemesis), res.After, Repetition)
	}
	// Each copy a pass of the point two holds after the last: 1.45 s and two sessions outlast a hold.
	for i, e := range res.Scenario.Nemesis {
		if e.Occurrence != 3+2*i || e.Target != nemesis.Waiter || e.For.D() != 1450*time.Millisecond {
			t.Fatalf("copy %d is %+v, want the waiter at pass %d", i, e.Fault, 3+2*i)
		}
	}
	if d := res.Scenario.Duration.D(); d < time.Duration(3+2*Repetition)*2510*time.Millisecond {
		t.Errorf("the run lasts %s: too short for %d passes of 2.5 s holds", d, 3+2*Repetition)
	}
	if words := Describe(res.Scenario); !strings.Contains(words, "then again at every second pass, 12 times in all") {
		t.Errorf("description %q", words)
	}
	// A lock that breaks with no chance at all is still not reproduced.
	never := func(context.Context, *scenarios.Scenario) (bool, error) { return false, nil }
	if _, err := Shrink(context.Background(), start, never, Options{K: 2}); !errors.Is(err, ErrNotReproduced) {
		t.Fatalf("nothing reproduces: %v, want ErrNotReproduced", err)
	}
}
