package clock

import (
	"testing"
	"time"
)

// Each test compares the clock with real time read around it, so a busy machine that oversleeps
// does not make it fail; only the read-to-read gap (microseconds) is tolerated.
const slack = 5 * time.Millisecond

func within(t *testing.T, what string, got, want time.Duration) {
	t.Helper()
	if got < want-slack || got > want+slack {
		t.Fatalf("%s = %s, want %s ± %s", what, got, want, slack)
	}
}

func TestOffsetShiftsTheClock(t *testing.T) {
	c := NewSkewed(2*time.Second, 1)
	within(t, "offset", c.Now().Sub(time.Now()), 2*time.Second)
}

func TestRateStretchesElapsedTime(t *testing.T) {
	c := NewSkewed(0, 1.5)
	realA, a := time.Now(), c.Now()
	time.Sleep(100 * time.Millisecond)
	b, realB := c.Now(), time.Now()
	within(t, "elapsed at rate 1.5", b.Sub(a), realB.Sub(realA)*3/2)
}

func TestSetChangesOffsetAndRateFromNowOn(t *testing.T) {
	c := NewSkewed(time.Hour, 2)
	c.Set(-time.Second, 1)
	within(t, "offset after Set", c.Offset(), -time.Second)
	realA, a := time.Now(), c.Now()
	time.Sleep(50 * time.Millisecond)
	b, realB := c.Now(), time.Now()
	within(t, "elapsed after Set", b.Sub(a), realB.Sub(realA))
}

func TestAZeroRateMeansTrueSpeed(t *testing.T) {
	c := NewSkewed(0, 0)
	realA, a := time.Now(), c.Now()
	time.Sleep(20 * time.Millisecond)
	b, realB := c.Now(), time.Now()
	within(t, "elapsed at rate 0 (true speed)", b.Sub(a), realB.Sub(realA))
}
