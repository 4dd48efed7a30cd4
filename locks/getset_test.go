package locks

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/clock"
)

func getsetWithClock(t *testing.T, addr string, offset time.Duration) Lock {
	t.Helper()
	d, _ := Get("getset")
	l, err := d.New(Env{Client: "c", Nodes: []string{addr}, Key: "test:lock", TTL: 300 * time.Millisecond,
		Timeout: time.Second, Point: func(string) {}, Clock: clock.NewSkewed(offset, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

func TestGetsetTakesOverOnlyAnExpiredLockWhenClocksAgree(t *testing.T) {
	addr := redisNode(t)
	ctx := context.Background()
	a, b := getsetWithClock(t, addr, 0), getsetWithClock(t, addr, 0)
	if _, err := a.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Acquire(ctx); !errors.Is(err, ErrBusy) {
		t.Fatalf("b took a valid lock: %v", err)
	}
	time.Sleep(400 * time.Millisecond) // a's expiry value is now in the past; a never released
	if _, err := b.Acquire(ctx); err != nil {
		t.Fatalf("b could not take over an expired lock: %v", err)
	}
	// a's own clock says its lease is over, so it must not DEL b's lock.
	if err := a.Release(ctx); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("a's late release: want ErrNotHeld, got %v", err)
	}
	if err := b.Release(ctx); err != nil {
		t.Fatalf("b's release: %v", err)
	}
}

func TestGetsetClientWithAFastClockStealsAHeldLockAndTheOwnerDeletesIt(t *testing.T) {
	addr := redisNode(t)
	ctx := context.Background()
	honest := getsetWithClock(t, addr, 0)
	fast := getsetWithClock(t, addr, 2*time.Second)
	if _, err := honest.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := fast.Acquire(ctx); err != nil {
		t.Fatalf("a client 2s ahead should see the lock as expired and take it: %v", err)
	}
	// No owner identity: the honest holder, still within its lease by its own clock, deletes
	// the thief's lock on release.
	if err := honest.Release(ctx); err != nil {
		t.Fatalf("honest release: %v", err)
	}
	third := getsetWithClock(t, addr, 0)
	if _, err := third.Acquire(ctx); err != nil {
		t.Fatalf("the lock should be free after the honest holder deleted it: %v", err)
	}
}
