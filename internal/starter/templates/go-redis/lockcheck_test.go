package mylock_test

// lockcheck_test.go: checks of our lock (mylock_test.go) by lockcheck, against a real Redis
// server it starts, under real faults, each client a process of its own. Written by lockcheck
// init: a control and every generic fault that applies to the design, each required to reach a
// verdict the gate accepts. Run folders (history, verdict, report.html) go to $LOCKCHECK_RESULTS,
// or to the test's temporary folder.

import (
	"os"
	"testing"

	"github.com/lockcheck/lockcheck/lockchecktest"
)

// Registered in every process of the test binary: lockcheck's clients are this binary.
func init() {
	lockchecktest.Register(lockchecktest.Design{Name: "my-lock", New: newMyLock, Service: lockchecktest.Redis,
		Token: "INCR", Expires: true})
}

func TestMain(m *testing.M) { lockchecktest.Main(m) }

// required are the verdicts the gate accepts, in lockcheck's order from best: safe, damaged
// (right, but rightful holders were harmed), rescued (the lock failed under the fault but fencing
// kept the data right). Not stuck, inconclusive or unsafe. Narrow it to what you require.
var required = []lockchecktest.Outcome{lockchecktest.Safe, lockchecktest.Damaged, lockchecktest.Rescued}

// control is the verdict the check with no fault must reach: a lock must be right on its own.
var control = []lockchecktest.Outcome{lockchecktest.Safe}

func TestMyLock(t *testing.T) {
	for _, c := range []struct {
		fault  string
		accept []lockchecktest.Outcome
	}{
		{"none", control},
	// COLUMNS
	} {
		t.Run(c.fault, func(t *testing.T) {
			v, err := lockchecktest.Verify(t.Context(), lockchecktest.Check{Lock: "my-lock", Scenario: c.fault, Results: results(t)})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: %s\nrun folder: %s", v.Outcome, v.Summary, v.Dir)
			for _, ok := range c.accept {
				if v.Outcome == ok {
					return
				}
			}
			t.Errorf("under %s: %s, want one of %v: %s", c.fault, v.Outcome, c.accept, v.Summary)
		})
	}
}

func results(t *testing.T) string {
	if dir := os.Getenv("LOCKCHECK_RESULTS"); dir != "" {
		return dir
	}
	return t.TempDir()
}
