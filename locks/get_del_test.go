package locks

import (
	"context"
	"errors"
	"testing"
	"time"
)

// M4 (docs/CLAIMS.md): a stalls after its GET saw its own value; meanwhile its key expires and b
// takes the lock; a's DEL then deletes b's key, and c takes the lock while b still holds it.
func TestGetDelLateDelDeletesTheNextHoldersLock(t *testing.T) {
	addr := redisNode(t)
	ctx := context.Background()
	rdb := inspector(t, addr)
	ttl := 150 * time.Millisecond
	b := newLock(t, "get-del", "b", addr, 10*time.Second)
	c := newLock(t, "get-del", "c", addr, 10*time.Second)
	var bValue string
	a := newLockWithPoint(t, "get-del", "a", addr, ttl, func(p string) {
		if p != BetweenGetAndDel {
			return
		}
		time.Sleep(2 * ttl) // a stalls here; its key expires
		if _, err := b.Acquire(ctx); err != nil {
			t.Errorf("b could not take the expired lock while a stalled: %v", err)
		}
		bValue = rdb.Get(ctx, "test:lock").Val()
	})

	if _, err := a.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	// a believes the release went well: its DEL deleted a key...
	if err := a.Release(ctx); err != nil {
		t.Fatalf("a's release: %v", err)
	}
	// ...but that key was b's.
	if bValue == "" {
		t.Fatal("b's key was never there")
	}
	if n := rdb.Exists(ctx, "test:lock").Val(); n != 0 {
		t.Fatalf("a's late DEL should have removed b's key %q; it still exists", bValue)
	}
	if _, err := c.Acquire(ctx); err != nil {
		t.Fatalf("c should take the lock b still believes it holds: %v", err)
	}
	if err := b.Release(ctx); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("b finds its lock gone (c holds it): want ErrNotHeld, got %v", err)
	}
}
