package locks

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// inspect is a plain client for looking at (and tampering with) the lock's key from outside.
func inspect(t *testing.T, addr string) *redis.Client {
	t.Helper()
	rdb := dialRedis(addr, Env{Timeout: time.Second})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

func hashOf(t *testing.T, l Lock) *hashLock {
	t.Helper()
	h, ok := l.(*hashLock)
	if !ok {
		t.Fatalf("not a redisson lock: %T", l)
	}
	return h
}

// renewing reports whether the lock's watchdog is running.
func renewing(h *hashLock) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.dog != nil
}

func TestRedissonReentrancyCountsUpAndDownAndDeletesTheKeyAtZero(t *testing.T) {
	addr := redisNode(t)
	ctx := context.Background()
	rdb := inspect(t, addr)
	a := newLock(t, "redisson", "a", addr, 10*time.Second)
	field := hashOf(t, a).field

	count := func() string {
		v, err := rdb.HGet(ctx, "test:lock", field).Result()
		if errors.Is(err, redis.Nil) {
			return "gone"
		}
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	steps := []struct {
		do   func() error
		want string
	}{
		{func() error { _, err := a.Acquire(ctx); return err }, "1"},
		{func() error { _, err := a.Acquire(ctx); return err }, "2"},
		{func() error { return a.Release(ctx) }, "1"},
		{func() error { return a.Release(ctx) }, "gone"},
	}
	for i, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if got := count(); got != s.want {
			t.Fatalf("step %d: count %s, want %s", i, got, s.want)
		}
	}
	if n := rdb.Exists(ctx, "test:lock").Val(); n != 0 {
		t.Fatalf("the key survived the last release")
	}
	if err := a.Release(ctx); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("a third release: want ErrNotHeld, got %v", err)
	}
}

func TestRedissonRefusesAnotherClientsRelease(t *testing.T) {
	addr := redisNode(t)
	ctx := context.Background()
	rdb := inspect(t, addr)
	a := newLock(t, "redisson", "a", addr, 10*time.Second)
	b := newLock(t, "redisson", "b", addr, 10*time.Second)
	if _, err := a.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Release(ctx); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("b releasing a's lock: want ErrNotHeld, got %v", err)
	}
	if v := rdb.HGet(ctx, "test:lock", hashOf(t, a).field).Val(); v != "1" {
		t.Fatalf("a's count after b's release: %q, want 1", v)
	}
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, err := b.Acquire(short); !errors.Is(err, ErrBusy) {
		t.Fatalf("b acquiring a's lock: want ErrBusy, got %v", err)
	}
}

func TestRedissonWatchdogKeepsTheLockWellPastOneLease(t *testing.T) {
	addr := redisNode(t)
	ctx := context.Background()
	rdb := inspect(t, addr)
	const lease = 300 * time.Millisecond
	a := newLock(t, "redisson", "a", addr, lease)
	b := newLock(t, "redisson", "b", addr, lease)
	if _, err := a.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(4 * lease)
	if pttl := rdb.PTTL(ctx, "test:lock").Val(); pttl <= 0 {
		t.Fatalf("after 4 leases the key has pttl %v: the watchdog did not renew it", pttl)
	}
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if _, err := b.Acquire(short); !errors.Is(err, ErrBusy) {
		t.Fatalf("b after 4 leases: want ErrBusy, got %v", err)
	}
	if err := a.Release(ctx); err != nil {
		t.Fatalf("a's release after 4 leases: %v", err)
	}
	// Released: the watchdog stops, nothing recreates or renews the key.
	time.Sleep(lease)
	if n := rdb.Exists(ctx, "test:lock").Val(); n != 0 {
		t.Fatal("the key exists after the release")
	}
	if renewing(hashOf(t, a)) {
		t.Fatal("the watchdog still runs after the last release")
	}
}

func TestRedissonWaiterIsWokenByTheUnlockMessageNotThePTTL(t *testing.T) {
	addr := redisNode(t)
	ctx := context.Background()
	rdb := inspect(t, addr)
	const lease = 10 * time.Second // the PTTL a waiter is told: far longer than the test
	a := newLock(t, "redisson", "a", addr, lease)
	b := newLock(t, "redisson", "b", addr, lease)
	if _, err := a.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	got := make(chan time.Time, 1)
	errc := make(chan error, 1)
	go func() {
		wait, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		_, err := b.Acquire(wait)
		got <- time.Now()
		errc <- err
	}()
	// Wait until b is subscribed to the unlock channel.
	channel := hashOf(t, a).channel
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if rdb.PubSubNumSub(ctx, channel).Val()[channel] == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("b never subscribed")
		}
	}
	released := time.Now()
	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}
	at := <-got
	if err := <-errc; err != nil {
		t.Fatalf("b's acquire: %v", err)
	}
	woken := at.Sub(released)
	t.Logf("b got the lock %v after a's release (the PTTL it was told was ~%v)", woken, lease)
	if woken > 50*time.Millisecond {
		t.Fatalf("b took %v after the release: it was not woken by the unlock message", woken)
	}
	if n := rdb.PubSubNumSub(ctx, channel).Val()[channel]; n != 0 {
		t.Fatalf("b is still subscribed after acquiring (%d subscribers)", n)
	}
}

func TestRedissonWatchdogStopsSilentlyWhenTheKeyIsDeletedBehindItsBack(t *testing.T) {
	addr := redisNode(t)
	ctx := context.Background()
	rdb := inspect(t, addr)
	const lease = 300 * time.Millisecond
	a := newLock(t, "redisson", "a", addr, lease)
	if _, ok := a.(Expiring); ok {
		t.Fatal("redisson must not know its validity: Redisson never tells the holder")
	}
	if _, err := a.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	h := hashOf(t, a)
	rdb.Del(ctx, "test:lock")
	time.Sleep(lease) // at least two renewal periods: the watchdog finds the field gone
	if renewing(h) {
		t.Fatal("the watchdog still runs after finding the field gone")
	}
	// Put a's field back: nobody renews it any more, so it expires after one lease.
	rdb.HSet(ctx, "test:lock", h.field, 1)
	rdb.PExpire(ctx, "test:lock", lease)
	time.Sleep(2 * lease)
	if n := rdb.Exists(ctx, "test:lock").Val(); n != 0 {
		t.Fatal("a's field was renewed after the watchdog should have stopped")
	}
	// a was never told; it learns only when it releases.
	if err := a.Release(ctx); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("a's release of a lost lock: want ErrNotHeld, got %v", err)
	}
}

func TestRedissonAcquireWaitsForTheReleaseThenGivesUpBusyWithinItsContext(t *testing.T) {
	addr := redisNode(t)
	ctx := context.Background()
	a := newLock(t, "redisson", "a", addr, 10*time.Second)
	d, _ := Get("redisson")
	b, err := d.New(Env{Client: "b", Nodes: []string{addr}, Key: "test:lock", TTL: 10 * time.Second,
		Timeout: 50 * time.Millisecond, Point: func(string) {}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	if _, err := a.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	// b waits for an unlock message that never comes, and stops waiting one command timeout
	// (50ms) before its context ends, so that its answer is a certain "busy".
	start := time.Now()
	wait, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if _, err := b.Acquire(wait); !errors.Is(err, ErrBusy) {
		t.Fatalf("want ErrBusy, got %v", err)
	}
	if took := time.Since(start); took < 200*time.Millisecond || took > 300*time.Millisecond {
		t.Fatalf("b's acquire took %v with a 300ms context and a 50ms command timeout", took)
	}
}
