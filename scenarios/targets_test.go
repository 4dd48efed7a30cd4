package scenarios

import (
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/nemesis"
)

// Targets that follow the lock's state, and durations in TTLs, as scenario files write them.
func TestStateTargetsAndTTLDurationsLoad(t *testing.T) {
	s, err := Parse("x.yaml", []byte("workload: {hold: 0.1ttl}\n"+withNemesis("set-nx-px", 1,
		"  - {fault: pause, target: holder, at: 1s, for: 4ttl}\n"+
			"  - {fault: pause, target: overtaken, point: after-acquire, for: 1.5ttl}\n"+
			"  - {fault: partition, target: waiter, at: 2s, for: 0.5ttl}\n"+
			"  - random: {faults: [pause], targets: [holder, waiter], interval: 1ttl, min_for: 0.5ttl, max_for: 3ttl}\n"+
			"  - {fault: delay, target: client-1, at: 1s, for: 2ttl, latency: 0.75ttl, jitter: 0.01ttl}\n")))
	if err != nil {
		t.Fatal(err)
	}
	// ttl: 1s in withNemesis
	for i, want := range []time.Duration{4 * time.Second, 1500 * time.Millisecond, 500 * time.Millisecond} {
		if got := s.Nemesis[i].For.D(); got != want {
			t.Errorf("nemesis[%d].for = %s, want %s", i, got, want)
		}
	}
	if s.Workload.Hold.D() != 100*time.Millisecond {
		t.Errorf("workload.hold = %s, want 0.1 of the 1s ttl", s.Workload.Hold.D())
	}
	r := s.Nemesis[3].Random
	if r.Interval.D() != time.Second || r.MinFor.D() != 500*time.Millisecond || r.MaxFor.D() != 3*time.Second {
		t.Errorf("random package not resolved: %+v", r)
	}
	// A kind's own durations too.
	if p := s.Nemesis[4].Params.(*nemesis.DelayParams); p.Latency.D() != 750*time.Millisecond || p.Jitter.D() != 10*time.Millisecond {
		t.Errorf("the delay's own durations not resolved: %+v", p)
	}
	if got := s.Schedule().EveryPass(); len(got) != 1 || got[0] != "after-acquire" {
		t.Errorf("EveryPass = %v, want [after-acquire]", got)
	}
}

// A waiter at any point of the hold: the client that has waited longest as a holder passes it.
func TestWaiterAtAHoldPointLoads(t *testing.T) {
	for _, point := range []string{"after-acquire", "before-write", "after-validity-check"} {
		if _, err := Parse("x.yaml", []byte(withNemesis("set-nx-px", 1,
			"  - {fault: pause, target: waiter, point: "+point+", for: 3ttl}\n"))); err != nil {
			t.Errorf("waiter at %s: %v", point, err)
		}
	}
}

func TestStateTargetsAndTTLDurationsRefused(t *testing.T) {
	cases := []struct {
		name, src string
		want      []string
	}{
		{"a state is no server", withNemesis("set-nx-px", 1, "  - {fault: crash, target: holder, at: 1s, for: 1s}\n"),
			[]string{"nemesis[0].target:"}},
		{"the list of targets names the states", withNemesis("set-nx-px", 1, "  - {fault: pause, target: holdr, at: 1s, for: 1s}\n"),
			[]string{"nemesis[0].target:", "holder, waiter, overtaken"}},
		{"in TTLs without a ttl", strings.Replace(withNemesis("setnx-del", 1, "  - {fault: pause, target: holder, at: 1s, for: "+
			"2ttl}\n"), "ttl: 1s\n", "", 1),
			[]string{"x.yaml:7: nemesis[0].for:", "2ttl is relative to the ttl, but this scenario sets none"}},
		{"the ttl in TTLs", strings.Replace(withNemesis("set-nx-px", 1, "  - {fault: pause, target: holder, at: 1s, for: "+
			"2ttl}\n"), "ttl: 1s", "ttl: 2ttl", 1),
			[]string{"x.yaml:5: ttl:"}},
		{"a bad multiple", withNemesis("set-nx-px", 1, "  - {fault: pause, target: holder, at: 1s, for: fourttl}\n"),
			[]string{"x.yaml:8:", "not a multiple of the ttl"}},
		{"servers' settings in TTLs", strings.Replace(withNemesis("zk", 1, "  - {fault: pause, target: holder, at: 1s, for: "+
			"2ttl}\n"), "duration: 5s", "duration: 5s\nserver: {tick_time: 1ttl}", 1),
			[]string{"server.tick_time:", "time units"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("x.yaml", []byte(c.src))
			if err == nil {
				t.Fatal("loaded")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestHuntPackageDefaults(t *testing.T) {
	s, err := Parse("x.yaml", []byte(withNemesis("set-nx-px", 1, "  - random: {mode: hunt, faults: [pause]}\n")))
	if err != nil {
		t.Fatal(err)
	}
	r := s.Schedule().Random
	// ttl: 1s in withNemesis
	if r.Mode != "hunt" || strings.Join(r.Targets, ",") != "holder,waiter,overtaken" || r.Interval.D() != 2*time.Second ||
		r.MinFor.D() != 1200*time.Millisecond || r.MaxFor.D() != 3*time.Second || r.TTL != time.Second {
		t.Fatalf("hunt defaults not applied: %+v", r)
	}
	if _, err := Parse("x.yaml", []byte(withNemesis("redlock", 5, "  - random: {mode: hunt, faults: [pause, crash], targets: [holder, "+
		"n1]}\n"))); err != nil {
		t.Fatalf("a hunt with a server target: %v", err)
	}
	_, err = Parse("x.yaml", []byte(withNemesis("set-nx-px", 1, "  - random: {mode: hunting, faults: [pause]}\n")))
	if err == nil || !strings.Contains(err.Error(), "x.yaml:8: nemesis[0].random.mode:") || !strings.Contains(err.Error(), "random, hunt") {
		t.Fatalf("unknown mode: err = %v", err)
	}
}
