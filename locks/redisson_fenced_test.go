package locks

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestRedissonFencedHandsOutIncreasingTokensAndRedissonNone(t *testing.T) {
	addr := redisNode(t)
	ctx := context.Background()
	a := newLock(t, "redisson-fenced", "a", addr, 10*time.Second)
	b := newLock(t, "redisson-fenced", "b", addr, 10*time.Second)

	t1, err := a.Acquire(ctx)
	if err != nil || t1 == nil {
		t.Fatalf("a acquire: token=%v err=%v", t1, err)
	}
	// A re-entry INCRs too, as RFencedLock's script does.
	t2, err := a.Acquire(ctx)
	if err != nil || t2 == nil || *t2 <= *t1 {
		t.Fatalf("a re-entry: token=%v (outer %d) err=%v", t2, *t1, err)
	}
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, err := b.Acquire(short); !errors.Is(err, ErrBusy) {
		t.Fatalf("b while a holds: want ErrBusy, got %v", err)
	}
	for range 2 {
		if err := a.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	t3, err := b.Acquire(ctx)
	if err != nil || t3 == nil || *t3 <= *t2 {
		t.Fatalf("b after a released: token=%v (a had %d) err=%v", t3, *t2, err)
	}

	plain := newLock(t, "redisson", "c", addr, 10*time.Second)
	if err := b.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if tok, err := plain.Acquire(ctx); err != nil || tok != nil {
		t.Fatalf("redisson: token=%v err=%v, want no token", tok, err)
	}
}
