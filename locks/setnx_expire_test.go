package locks

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// newLockWithPoint is newLock with a program-point hook: point runs where the design calls
// Env.Point, so a test can stop, crash or interleave a client there.
func newLockWithPoint(t *testing.T, design, client, addr string, ttl time.Duration, point func(string)) Lock {
	t.Helper()
	d, err := Get(design)
	if err != nil {
		t.Fatal(err)
	}
	l, err := d.New(Env{Client: client, Nodes: []string{addr}, Key: "test:lock", TTL: ttl,
		Timeout: time.Second, Point: point})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// inspector is a plain client for looking at the lock key from outside.
func inspector(t *testing.T, addr string) *redis.Client {
	t.Helper()
	rdb := dialRedis(addr, Env{Timeout: time.Second})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// crashAt makes a point hook that "kills" the client at the named point: it unwinds Acquire or
// Release with a panic that runCrashing recovers, so the command after the point never runs.
type crashed struct{ point string }

func crashAt(name string) func(string) {
	return func(p string) {
		if p == name {
			panic(crashed{p})
		}
	}
}

func runCrashing(t *testing.T, f func()) {
	t.Helper()
	defer func() {
		r := recover()
		if _, ok := r.(crashed); !ok {
			t.Fatalf("expected the client to crash at its point, got %v", r)
		}
	}()
	f()
}

func TestSetnxExpireTakesTheKeyThenGivesItATTL(t *testing.T) {
	addr := redisNode(t)
	ctx := context.Background()
	rdb := inspector(t, addr)
	a := newLock(t, "setnx-expire", "a", addr, 2*time.Second)
	b := newLock(t, "setnx-expire", "b", addr, 2*time.Second)

	tok, err := a.Acquire(ctx)
	if err != nil || tok != nil {
		t.Fatalf("a acquire: token=%v err=%v (setnx-expire has no token)", tok, err)
	}
	if pttl := rdb.PTTL(ctx, "test:lock").Val(); pttl <= 0 || pttl > 2*time.Second {
		t.Fatalf("after a clean acquire the key must have the TTL, PTTL=%v", pttl)
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
	if err := a.Release(ctx); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("a's second release must not free b's lock: got %v", err)
	}
}

func TestSetnxExpireCrashBetweenTheTwoCommandsLeavesALockThatNeverExpires(t *testing.T) {
	addr := redisNode(t)
	ctx := context.Background()
	rdb := inspector(t, addr)
	ttl := 100 * time.Millisecond
	a := newLockWithPoint(t, "setnx-expire", "a", addr, ttl, crashAt(BetweenSetnxAndExpire))
	b := newLock(t, "setnx-expire", "b", addr, ttl)

	runCrashing(t, func() { _, _ = a.Acquire(ctx) })
	if pttl := rdb.PTTL(ctx, "test:lock").Val(); pttl != -1 {
		t.Fatalf("after a crash between SETNX and EXPIRE the key must have no TTL (PTTL -1), got %v", pttl)
	}
	time.Sleep(5 * ttl)
	if _, err := b.Acquire(ctx); !errors.Is(err, ErrBusy) {
		t.Fatalf("5 TTLs after the crash the lock must still be held (deadlock): got %v", err)
	}
	if err := b.Release(ctx); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("nobody alive can release it: b's release got %v", err)
	}
}
