package locks

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestRedislockExcludesOthersWithOneAttemptAndChecksTheOwner(t *testing.T) {
	addr := redisNode(t)
	ctx := context.Background()
	a := newLock(t, "redislock", "a", addr, 10*time.Second)
	b := newLock(t, "redislock", "b", addr, 10*time.Second)
	tok, err := a.Acquire(ctx)
	if err != nil || tok != nil {
		t.Fatalf("a acquire: token=%v err=%v (v0.9.4 has no fencing token)", tok, err)
	}
	// NoRetry: a busy lock is refused at once, however long the context allows.
	start := time.Now()
	long, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if _, err := b.Acquire(long); !errors.Is(err, ErrBusy) {
		t.Fatalf("b while a holds: want ErrBusy, got %v", err)
	}
	if took := time.Since(start); took > 200*time.Millisecond {
		t.Fatalf("b's single attempt took %v: the library retried", took)
	}
	if err := b.Release(ctx); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("b releasing without holding: want ErrNotHeld, got %v", err)
	}
	if err := a.Release(ctx); err != nil {
		t.Fatalf("a release: %v", err)
	}
	if _, err := b.Acquire(ctx); err != nil {
		t.Fatalf("b after a released: %v", err)
	}
}

func TestRedislockLeaseExpiresUnderAHolderThatNeverRefreshes(t *testing.T) {
	addr := redisNode(t)
	ctx := context.Background()
	a := newLock(t, "redislock", "a", addr, 150*time.Millisecond)
	b := newLock(t, "redislock", "b", addr, 10*time.Second)
	if _, err := a.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // a still believes it holds: nothing told it otherwise
	if _, err := b.Acquire(ctx); err != nil {
		t.Fatalf("b could not take the expired lease: %v", err)
	}
	if err := a.Release(ctx); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("a's late release: want ErrNotHeld, got %v", err)
	}
	if _, err := a.Acquire(ctx); !errors.Is(err, ErrBusy) {
		t.Fatalf("a's late release freed b's lock: %v", err)
	}
}
