package runner

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/scenarios"
)

// A lock that rounds its lease up to whole seconds (adapters/testdata/whole_seconds_lease.py, on
// a real Redis) keeps its key 2 s when given a 400 ms TTL: the run asks the server after the first
// grant and notes it, and the verdict says that the holder's pause of three TTLs did not outlast
// that lease (nobody took the lock from it: mutual exclusion held, which says nothing of K2).
func TestARunNotesTheLeaseTheServersKept(t *testing.T) {
	program, err := filepath.Abs("../adapters/testdata/whole_seconds_lease.py")
	if err != nil {
		t.Fatal(err)
	}
	text := fmt.Sprintf(`name: whole-seconds-lease
lock: {command: [/usr/bin/python3, %s], service: redis, nodes: 1, token: INCR at acquire, expires: true}
clients: 2
ttl: 400ms
duration: 2s
seed: 1
workload: {think: 10ms, stagger: 50ms, hold: 20ms}
nemesis:
  - {fault: pause, target: client-1, point: after-acquire, for: 1200ms}
`, program)
	sc, err := scenarios.Parse(filepath.Join(t.TempDir(), "whole-seconds-lease.yaml"), []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	o, marker := byolOptions(t)
	res := runOnce(t, sc, o)
	assertNothingLeft(t, res.Dir, marker)
	v := res.Verdict
	l := v.Lease
	if l == nil || l.Kept <= 1500*time.Millisecond || l.Kept > 2*time.Second || l.Asked != 400*time.Millisecond || l.Server != "n1" ||
		!strings.HasPrefix(l.What, "key lockcheck:") || l.Silence < 1200*time.Millisecond {
		t.Fatalf("lease %+v (run folder %s)", l, res.Dir)
	}
	if !v.MutualExclusion.Holds || !strings.Contains(v.Summary, "no fault kept a client from the servers that long") {
		t.Errorf("%s (run folder %s)", v.Summary, res.Dir)
	}
}
