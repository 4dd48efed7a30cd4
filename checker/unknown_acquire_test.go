package checker

import (
	"slices"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/history"
)

// An acquire whose reply never came back (history "info") may have taken the lock. It is not a
// hold: the client never believed it held the lock, so it cannot make two holders. It is not a
// failure either: when the lock is then stuck with nobody holding it, the verdict names the
// acquire that may have taken it.
func TestAnAcquireOfUnknownOutcomeIsNeitherAHoldNorAFailure(t *testing.T) {
	// client-1 holds and releases; its next acquire times out (info) at 100 ms, and from then on
	// every attempt of both clients is refused until the end at 2 s: the lost INSERT of a
	// table lock. The resource saw one increment.
	lost := newHistory().start(0).
		hold("client-1", 1, 40).increment("client-1", 1, 20, accepted("unfenced", 0)).
		op("client-1", history.Acquire, 50, 100, history.Info, func(e *history.Event) { e.Error = "context deadline exceeded" }).
		acquireFails("client-1", 101, 2000, 50).
		acquireFails("client-2", 60, 2000, 50).
		final(2000, map[string]int64{"unfenced": 1}).end(2000).build()
	v := Check(lost, Options{})
	l := v.Liveness
	switch {
	case !v.MutualExclusion.Holds:
		t.Errorf("an acquire of unknown outcome made a hold: %+v", v.MutualExclusion)
	case l.AcquireUnknown != 1 || l.AcquireFailures == 0:
		t.Errorf("unknown, failures = %d, %d; want 1 unknown, the refused attempts as failures", l.AcquireUnknown, l.AcquireFailures)
	case !l.Stuck || !slices.Equal(l.StuckUnknown, []string{"client-1"}):
		t.Errorf("stuck %v, unknown takers %v; want stuck, with client-1's acquire named", l.Stuck, l.StuckUnknown)
	case Judge(v).Outcome != Stuck:
		t.Errorf("outcome %s, want stuck: nobody held the lock twice", Judge(v).Outcome)
	}
	if s := livenessSentence(l); !strings.Contains(s, "1 attempt of unknown outcome") || !strings.Contains(s, "of client-1 may have taken it") {
		t.Errorf("the verdict's words do not say so: %q", s)
	}
	if m := (Expect{Liveness: &LivenessExpect{UnknownAcquires: ptr(true)}}).Match(v); len(m) != 0 {
		t.Errorf("unknown_acquires: true does not match: %v", m)
	}

	// The same stuck lock with a dead holder and no unknown acquire: nobody is named, and
	// unknown_acquires: true does not match.
	dead := newHistory().start(0).
		hold("client-1", 1, 40).increment("client-1", 1, 20, accepted("unfenced", 0)).
		acquire("client-1", 50, 51).kill("client-1", 60).
		acquireFails("client-2", 60, 2000, 50).
		final(2000, map[string]int64{"unfenced": 1}).end(2000).build()
	v = Check(dead, Options{})
	if !v.Liveness.Stuck || len(v.Liveness.StuckUnknown) != 0 || v.Liveness.AcquireUnknown != 0 {
		t.Errorf("dead holder: stuck %v, unknown takers %v, unknown %d; want stuck, none, 0",
			v.Liveness.Stuck, v.Liveness.StuckUnknown, v.Liveness.AcquireUnknown)
	}
	if m := (Expect{Liveness: &LivenessExpect{UnknownAcquires: ptr(true)}}).Match(v); len(m) != 1 {
		t.Errorf("unknown_acquires: true matched a history without one: %v", m)
	}

	// An acquire of unknown outcome followed by the same client's acquisition is no suspect.
	later := newHistory().start(0).
		op("client-1", history.Acquire, 0, 50, history.Info, nil).
		hold("client-1", 100, 150).
		hold("client-2", 200, 250).
		acquire("client-2", 300, 301).kill("client-2", 310).
		acquireFails("client-1", 320, 2000, 50).end(2000).build()
	if l := Check(later, Options{}).Liveness; !l.Stuck || len(l.StuckUnknown) != 0 {
		t.Errorf("stuck %v, unknown takers %v; want stuck with no suspect (client-1 acquired after its unknown attempt)", l.Stuck, l.StuckUnknown)
	}
}
