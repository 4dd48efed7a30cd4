package locks

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-redsync/redsync/v4"
)

func TestRedsyncExcludesOthersAndReportsItsValidity(t *testing.T) {
	c := n5Cluster(t, "a", "b")
	ctx := n5Ctx(t)
	ttl := 10 * time.Second
	a := n5Lock(t, c, "redsync", "a", ttl, nil)
	b := n5Lock(t, c, "redsync", "b", ttl, nil)
	before := time.Now()
	if _, err := a.Acquire(ctx); err != nil {
		t.Fatalf("a acquire: %v", err)
	}
	after := time.Now()
	// redsync's drift is expiry × 0.01, without the docs' + 2 ms.
	hold := ttl - ttl/100
	if until := a.(Expiring).ValidUntil(); until.Before(before.Add(hold)) || until.After(after.Add(hold)) {
		t.Fatalf("ValidUntil %v after the call's start, want %v", until.Sub(before), hold)
	}
	if got := n5Keys(t, c); got != "11111" {
		t.Fatalf("keys: %s, want 11111", got)
	}
	if _, err := b.Acquire(ctx); !errors.Is(err, ErrBusy) {
		t.Fatalf("b while a holds: want ErrBusy, got %v", err)
	}
	if err := a.Release(ctx); err != nil {
		t.Fatalf("a release: %v", err)
	}
	if !a.(Expiring).ValidUntil().IsZero() {
		t.Fatal("ValidUntil must be zero once released")
	}
	if _, err := b.Acquire(ctx); err != nil {
		t.Fatalf("b after release: %v", err)
	}
	if err := a.Release(ctx); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("a's release of b's lock: want ErrNotHeld, got %v", err)
	}
	if got := n5Keys(t, c); got != "11111" {
		t.Fatalf("a's late release touched b's keys: %s", got)
	}
}

func TestRedsyncToleratesTwoOfFiveNodesDownButNotThree(t *testing.T) {
	c := n5Cluster(t, "a", "b")
	ctx := n5Ctx(t)
	ttl := 2 * time.Second // the whole SET round is bounded by 5% of it: 100 ms
	n5Kill(t, c, 0)
	n5Stop(t, c, 1)
	a := n5Lock(t, c, "redsync", "a", ttl, nil)
	if _, err := a.Acquire(ctx); err != nil {
		t.Fatalf("3 of 5 up: %v", err)
	}
	// UnlockContext has no per-node timeout: it waits for the frozen node until ctx ends.
	rctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if err := a.Release(rctx); err != nil {
		t.Fatalf("release with 3 of 5 up: %v", err)
	}
	n5Cut(t, c, "b", 2)
	b := n5Lock(t, c, "redsync", "b", ttl, nil)
	_, err := b.Acquire(ctx)
	if err == nil || errors.Is(err, ErrBusy) {
		t.Fatalf("2 of 5 reachable: want an unknown-outcome error, got %v", err)
	}
	var re *redsync.RedisError
	if !errors.As(err, &re) {
		t.Fatalf("want redsync's per-node RedisError inside, got %v", err)
	}
	if got := n5Keys(t, c); got != "??000" {
		t.Fatalf("redsync gives back what it took on failure: keys %s, want ??000", got)
	}
}

func TestRedsyncIsBusyOnlyWhenAMajorityRefuses(t *testing.T) {
	c := n5Cluster(t, "a")
	ctx := n5Ctx(t)
	a := n5Lock(t, c, "redsync", "a", 10*time.Second, nil)
	for i := range 3 {
		n5SetForeign(t, c, i, 10*time.Second)
	}
	if _, err := a.Acquire(ctx); !errors.Is(err, ErrBusy) {
		t.Fatalf("3 of 5 taken (redsync's ErrTaken): want ErrBusy, got %v", err)
	}
	n5Cut(t, c, "a", 2) // 2 refusals, 1 unreachable, 2 OK
	_, err := a.Acquire(ctx)
	if err == nil || errors.Is(err, ErrBusy) {
		t.Fatalf("2 refusals + 1 unknown: want an unknown-outcome error, got %v", err)
	}
	if got := n5Keys(t, c); got != "11100" {
		t.Fatalf("keys %s, want 11100", got)
	}
}

// The characteristic failure, as with redlock: a holder stalled past the TTL after checking
// Until() loses the lock to another client and learns it only on release.
func TestRedsyncHolderStalledPastTheTTLLosesItWithoutBeingTold(t *testing.T) {
	c := n5Cluster(t, "a", "b")
	ctx := n5Ctx(t)
	// redsync bounds its whole SET round by 5% of the expiry: 1 s leaves 50 ms, enough on a busy
	// machine (a 100-200 ms expiry leaves 5-10 ms and flakes).
	a := n5Lock(t, c, "redsync", "a", time.Second, nil)
	b := n5Lock(t, c, "redsync", "b", 10*time.Second, nil)
	if _, err := a.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	if !time.Now().Before(a.(Expiring).ValidUntil()) {
		t.Fatal("a's validity check passes right after acquiring")
	}
	time.Sleep(1100 * time.Millisecond)
	if _, err := b.Acquire(ctx); err != nil {
		t.Fatalf("b must get the expired lock: %v", err)
	}
	if err := a.Release(ctx); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("a's release (redsync ErrNodeTaken on every node): want ErrNotHeld, got %v", err)
	}
}

func TestRedsyncReleaseOfAnExpiredLockIsNotHeld(t *testing.T) {
	c := n5Cluster(t, "a")
	ctx := n5Ctx(t)
	a := n5Lock(t, c, "redsync", "a", time.Second, nil) // see above: 50 ms for the SET round
	if _, err := a.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond)
	err := a.Release(ctx)
	if !errors.Is(err, ErrNotHeld) {
		t.Fatalf("release after expiry (redsync ErrLockAlreadyExpired): want ErrNotHeld, got %v", err)
	}
	refused, unknown := redsyncCount(errors.Join(redsync.ErrLockAlreadyExpired, &redsync.ErrNodeTaken{Node: 1},
		errors.Join(&redsync.RedisError{Node: 2, Err: context.DeadlineExceeded})))
	if refused != 2 || unknown != 1 {
		t.Fatalf("redsyncCount: refused=%d unknown=%d, want 2 and 1", refused, unknown)
	}
}
