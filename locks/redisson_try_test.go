package locks

import (
	"context"
	"errors"
	"testing"
	"time"
)

// redisson-try answers busy at once where redisson waits for the unlock message.
func TestRedissonTryAnswersBusyAtOnce(t *testing.T) {
	addr := redisNode(t)
	ctx := context.Background()
	a := newLock(t, "redisson-try", "a", addr, 5*time.Second)
	b := newLock(t, "redisson-try", "b", addr, 5*time.Second)
	if _, err := a.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Acquire(ctx); err != nil {
		t.Fatalf("re-entry: %v", err)
	}
	wait, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	start := time.Now()
	if _, err := b.Acquire(wait); !errors.Is(err, ErrBusy) {
		t.Fatalf("b while a holds: want ErrBusy, got %v", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("b's try took %v of its 5s: it waited instead of answering at once", took)
	}
	for i := 0; i < 2; i++ {
		if err := a.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.Acquire(ctx); err != nil {
		t.Fatalf("b after a released: %v", err)
	}
}
