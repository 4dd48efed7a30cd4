//go:build mutants

package matrix

import (
	"context"
	"os"
	"slices"
	"testing"

	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/runner"
	"github.com/lockcheck/lockcheck/workloads"
)

// The mutants (locks/mutants.go) are designs of this binary, in the test and in the workers it is
// re-executed as, which build them by name.
func init() { locks.Mutants() }

// The none column tells redis-fair from its copies that are not first come, first served, in
// every run, on real servers: one without the head-of-queue check (a release wakes every waiter
// and whichever asks first takes the free lock) and one with Redisson's own waiter timeouts (live
// heads dropped under contention that never empties the queue). redis-fair must be safe in every
// run, each copy damaged by unfair overtakes in every run, and the --baseline-lock comparison must
// name both copies and nothing else.
func TestMutantsOfRedisFairAreToldApartInTheNoneColumn(t *testing.T) {
	copies := []string{"mutant-redis-fair-any-waiter", "mutant-redis-fair-redisson-timeouts"}
	const runs = 3
	o := Options{Locks: append([]string{"redis-fair"}, copies...), Faults: []string{"none"}, Count: runs, Parallel: 2,
		Runner: runner.Options{ResultsDir: t.TempDir(), Worker: []string{os.Args[0]}, WorkerEnv: append(os.Environ(), workloads.TestWorkerEnv)}}
	m, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	outcomes := func(lock string) []Outcome {
		c, ok := m.Cell(lock, "none")
		if !ok || len(c.Outcomes) != runs {
			t.Fatalf("%s × none: %d runs, want %d", lock, len(c.Outcomes), runs)
		}
		return c.Outcomes
	}
	for i, r := range outcomes("redis-fair") {
		if r.Status != Safe {
			t.Errorf("redis-fair run %d: %s (%s), want safe", i+1, r.Status, r.Detail)
		}
	}
	for _, lock := range copies {
		for i, r := range outcomes(lock) {
			if r.Status != Damaged || r.Unfair < 2 {
				t.Errorf("%s run %d: %s (%s; %d unfair overtakes), want damaged by unfair overtakes", lock, i+1, r.Status, r.Detail, r.Unfair)
			}
		}
	}
	var worse []string
	for _, r := range CompareLocks(m, "redis-fair") {
		worse = append(worse, r.Lock)
		t.Logf("%s × %s: %v", r.Lock, r.Fault, r.How)
	}
	if !slices.Equal(worse, copies) {
		t.Errorf("--baseline-lock redis-fair flags %v, want %v", worse, copies)
	}
}
