package shrink

import (
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/internal/yamltime"
	"github.com/lockcheck/lockcheck/nemesis"
)

// A waiter's fault at a hold point is timed by the holder's pass, and the words say so.
func TestAWaiterAtAHoldPointIsTimedByTheHolder(t *testing.T) {
	for point, want := range map[string]string{
		"after-acquire": "the client that had waited longest paused for 2.0 TTLs (4s) as the second hold with a waiter behind it began",
		"before-write":  "the client that had waited longest paused for 2.0 TTLs (4s) as its holder passed before-write (the second such hold)",
	} {
		f := nemesis.Fault{Kind: "pause", Target: nemesis.Waiter, Point: point, Occurrence: 2, For: yamltime.Duration(4 * time.Second)}
		if got := Fault(f, 2*time.Second); !strings.Contains(got, want) {
			t.Errorf("%s: %q, want %q", point, got, want)
		}
	}
}
