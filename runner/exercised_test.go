package runner

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/scenarios"
)

// A lock whose waiter takes over an abandoned lease only inside one long acquire
// (adapters/testdata/takeover_in_one_attempt.py, on a real Redis) never takes over with the
// default attempt bound (1 s) and a 1 s lease: its holder frozen for 3 s is a fault the run did
// not exercise, the run is otherwise safe, and the verdict says why (the attempt bound among the
// reasons), so expect.exercised fails it. With attempts of 3 TTLs a waiter takes over and the
// same pause breaks mutual exclusion.
func TestTakeoverOnlyWithinOneAttempt(t *testing.T) {
	if testing.Short() {
		t.Skip("real Redis")
	}
	program, err := filepath.Abs("../adapters/testdata/takeover_in_one_attempt.py")
	if err != nil {
		t.Fatal(err)
	}
	scenario := func(attempt string) *scenarios.Scenario {
		text := fmt.Sprintf(`name: takeover-in-one-attempt
lock: {command: [/usr/bin/python3, %s], service: redis, nodes: 1, token: INCR at acquire}
clients: 3
ttl: 1s
duration: 6s
seed: 1
workload: {think: 10ms, stagger: 50ms, hold: 20ms%s}
nemesis:
  - {fault: pause, target: client-1, point: after-acquire, for: 3s}
expect:
  exercised: true
`, program, attempt)
		sc, err := scenarios.Parse(filepath.Join(t.TempDir(), "takeover-in-one-attempt.yaml"), []byte(text))
		if err != nil {
			t.Fatal(err)
		}
		return sc
	}
	o, marker := byolOptions(t)
	res := runOnce(t, scenario(""), o)
	assertNothingLeft(t, res.Dir, marker)
	v := res.Verdict
	if !v.MutualExclusion.Holds {
		t.Fatalf("nobody should take over within 1 s attempts: %s (run folder %s)", v.Summary, res.Dir)
	}
	for _, want := range []string{"no client acquired the lock after client-1's promise ran out", "pause client-1",
		"the attempt bound (1s) is not longer than the lease (1s)"} {
		if !strings.Contains(v.Unexercised, want) {
			t.Errorf("unexercised = %q, lacks %q (run folder %s)", v.Unexercised, want, res.Dir)
		}
	}
	if res.Matches || len(res.Mismatches) == 0 || res.Mismatches[0].Field != "exercised" {
		t.Errorf("expect.exercised passed an unexercised run: %v", res.Mismatches)
	}

	o, marker = byolOptions(t)
	res = runOnce(t, scenario(", attempt: 3ttl"), o)
	assertNothingLeft(t, res.Dir, marker)
	if v := res.Verdict; v.Unexercised != "" || v.MutualExclusion.Holds || !res.Matches {
		t.Errorf("attempts of 3 TTLs: unexercised %q, mutual exclusion holds %v, mismatches %v: %s (run folder %s)",
			v.Unexercised, v.MutualExclusion.Holds, res.Mismatches, v.Summary, res.Dir)
	}
}
