package locks

import (
	"context"
	"errors"
	"testing"
)

func TestGetThenSetExcludesWhenTheCallsDoNotInterleave(t *testing.T) {
	addr := redisNode(t)
	ctx := context.Background()
	a := newLock(t, "get-then-set", "a", addr, 0)
	b := newLock(t, "get-then-set", "b", addr, 0)

	if tok, err := a.Acquire(ctx); err != nil || tok != nil {
		t.Fatalf("a acquire: token=%v err=%v (get-then-set has no token)", tok, err)
	}
	if _, err := b.Acquire(ctx); !errors.Is(err, ErrBusy) {
		t.Fatalf("b acquire while a holds: want ErrBusy, got %v", err)
	}
	if err := a.Release(ctx); err != nil {
		t.Fatalf("a release: %v", err)
	}
	if _, err := b.Acquire(ctx); err != nil {
		t.Fatalf("b acquire after a released: %v", err)
	}
	if pttl := inspector(t, addr).PTTL(ctx, "test:lock").Val(); pttl != -1 {
		t.Fatalf("the article's SET has no expiry: PTTL must be -1, got %v", pttl)
	}
}

// The race the article warns of: a finds the key empty; before its SET, b also finds it empty
// and sets it; then a sets it too. Both were told they hold the lock.
func TestGetThenSetLetsTwoClientsInWhenBothSeeTheKeyEmpty(t *testing.T) {
	addr := redisNode(t)
	ctx := context.Background()
	b := newLock(t, "get-then-set", "b", addr, 0)
	var bErr error
	bTook := false
	a := newLockWithPoint(t, "get-then-set", "a", addr, 0, func(p string) {
		if p == BetweenGetAndSet && !bTook {
			_, bErr = b.Acquire(ctx)
			bTook = bErr == nil
		}
	})
	if _, err := a.Acquire(ctx); err != nil {
		t.Fatalf("a acquire: %v", err)
	}
	if !bTook {
		t.Fatalf("b, between a's GET and SET, must find the key empty and take the lock: %v", bErr)
	}
	if v := inspector(t, addr).Get(ctx, "test:lock").Val(); v != ValueOf(a) || v == ValueOf(b) {
		t.Fatalf("a's late SET overwrote b's value: key %q, a's value %q, b's %q", v, ValueOf(a), ValueOf(b))
	}
	// b's release finds a's value and deletes nothing; a's release frees the lock.
	if err := b.Release(ctx); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("b's release must find a's value and delete nothing: %v", err)
	}
	if err := a.Release(ctx); err != nil {
		t.Fatalf("a release: %v", err)
	}
}
