package locks

import (
	"context"
	"testing"
	"time"
)

// M3 (docs/CLAIMS.md): a overruns its TTL, b takes the lock, and a's release (a plain DEL)
// deletes b's lock; c takes it while b still believes it holds.
func TestDelNoCheckLateReleaseDeletesTheCurrentHoldersLock(t *testing.T) {
	addr := redisNode(t)
	ctx := context.Background()
	rdb := inspector(t, addr)
	ttl := 150 * time.Millisecond
	a := newLock(t, "del-no-check", "a", addr, ttl)
	b := newLock(t, "del-no-check", "b", addr, 10*time.Second)
	c := newLock(t, "del-no-check", "c", addr, 10*time.Second)

	if _, err := a.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * ttl) // a overruns its lease
	if _, err := b.Acquire(ctx); err != nil {
		t.Fatalf("b could not take the expired lock: %v", err)
	}
	if err := a.Release(ctx); err != nil {
		t.Fatalf("a's late release reports success (it deleted a key): %v", err)
	}
	if n := rdb.Exists(ctx, "test:lock").Val(); n != 0 {
		t.Fatal("a's DEL should have removed b's key")
	}
	if _, err := c.Acquire(ctx); err != nil {
		t.Fatalf("c should take the lock b still believes it holds: %v", err)
	}
}
