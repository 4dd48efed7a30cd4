package locks

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"
)

func fairOf(t *testing.T, l Lock) *fairLock {
	t.Helper()
	f, ok := l.(*fairLock)
	if !ok {
		t.Fatalf("not a redis-fair lock: %T", l)
	}
	return f
}

// waitQueued waits until the lock's queue holds n waiters.
func waitQueued(t *testing.T, f *fairLock, n int64) {
	t.Helper()
	rdb := inspect(t, f.env.Nodes[0])
	for deadline := time.Now().Add(3 * time.Second); ; time.Sleep(2 * time.Millisecond) {
		if rdb.LLen(context.Background(), f.queue).Val() == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the queue never held %d waiters: %v", n, rdb.LRange(context.Background(), f.queue, 0, -1).Val())
		}
	}
}

// Three waiters queue in turn behind a holder; each release hands the lock to the longest waiter.
func TestRedisFairServesWaitersInTheOrderTheyQueued(t *testing.T) {
	addr := redisNode(t)
	ctx := context.Background()
	holder := newLock(t, "redis-fair", "holder", addr, 5*time.Second)
	if _, err := holder.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var order []string
	var wg sync.WaitGroup
	waiters := map[string]Lock{}
	for i, name := range []string{"w1", "w2", "w3"} {
		l := newLock(t, "redis-fair", name, addr, 5*time.Second)
		waiters[name] = l
		wg.Add(1)
		go func() {
			defer wg.Done()
			wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			if _, err := l.Acquire(wctx); err != nil {
				t.Errorf("%s: %v", name, err)
				return
			}
			mu.Lock()
			order = append(order, name)
			mu.Unlock()
			time.Sleep(20 * time.Millisecond) // hold a little, so a late waiter could try to barge in
			if err := l.Release(ctx); err != nil {
				t.Errorf("%s release: %v", name, err)
			}
		}()
		waitQueued(t, fairOf(t, holder), int64(i+1))
	}
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if len(order) != 3 || order[0] != "w1" || order[1] != "w2" || order[2] != "w3" {
		t.Fatalf("served in order %v, want [w1 w2 w3]", order)
	}
	rdb := inspect(t, addr)
	if n := rdb.Exists(ctx, "test:lock", fairOf(t, holder).queue, fairOf(t, holder).timeouts).Val(); n != 0 {
		t.Fatalf("%d of the lock's keys survive the last release", n)
	}
}

// A waiter that gives up leaves the queue (Redisson's acquireFailed), so nobody waits behind it.
func TestRedisFairWaiterThatGivesUpLeavesTheQueue(t *testing.T) {
	addr := redisNode(t)
	ctx := context.Background()
	a := newLock(t, "redis-fair", "a", addr, 5*time.Second)
	b := newLock(t, "redis-fair", "b", addr, 5*time.Second)
	if _, err := a.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if _, err := b.Acquire(short); !errors.Is(err, ErrBusy) {
		t.Fatalf("b while a holds: want ErrBusy, got %v", err)
	}
	rdb := inspect(t, addr)
	f := fairOf(t, b)
	if q, z := rdb.LLen(ctx, f.queue).Val(), rdb.ZCard(ctx, f.timeouts).Val(); q != 0 || z != 0 {
		t.Fatalf("after b gave up the queue has %d entries and the timeouts %d, want none", q, z)
	}
	if err := b.Release(ctx); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("b releasing a's lock: want ErrNotHeld, got %v", err)
	}
}

// A waiter that queued and then froze (never tries again, never leaves) keeps the lock from
// everyone behind it, although the lock is free, until its timeout: its wait time after it
// queued, plus the lease the holder had left then.
func TestRedisFairFrozenHeadBlocksTheQueueUntilItsTimeout(t *testing.T) {
	addr := redisNode(t)
	ctx := context.Background()
	const lease = 300 * time.Millisecond
	holder := newLock(t, "redis-fair", "holder", addr, lease)
	frozen := fairOf(t, newLock(t, "redis-fair", "frozen", addr, lease))
	next := newLock(t, "redis-fair", "next", addr, lease)
	if _, err := holder.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	const frozenWait = 600 * time.Millisecond
	queued := time.Now()
	if ttl, err := frozen.try(ctx, frozenWait.Milliseconds()); err != nil || ttl < 0 {
		t.Fatalf("the frozen waiter's one try: ttl %v, err %v; want it queued", ttl, err)
	}
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := next.Acquire(wctx); err != nil {
		t.Fatalf("next never got the lock: %v", err)
	}
	blocked := time.Since(queued)
	t.Logf("next got the free lock %v after the frozen head queued (its wait %v, the lease %v)", blocked, frozenWait, lease)
	if blocked < frozenWait {
		t.Fatalf("next got the lock after %v, before the frozen head's timeout (>= %v)", blocked, frozenWait)
	}
	if q := inspect(t, addr).LRange(ctx, frozen.queue, 0, -1).Val(); slices.Contains(q, frozen.field) {
		t.Fatalf("the frozen head is still in the queue: %v", q)
	}
}

// A waiter that keeps asking keeps its place however long the queue stays non-empty: here for
// four times its wait time plus the lease, behind a holder whose watchdog renews its lease. In
// Redisson's scripts its timeout is never renewed, so it would be dropped after its wait time
// plus the lease, and queue again behind the waiter that came after it.
func TestRedisFairWaiterThatKeepsAskingKeepsItsPlace(t *testing.T) {
	addr := redisNode(t)
	ctx := context.Background()
	const lease = 300 * time.Millisecond
	const wait = 200 * time.Millisecond // the first waiter's: shorter than the contention
	holder := newLock(t, "redis-fair", "holder", addr, lease)
	first := fairOf(t, newLock(t, "redis-fair", "first", addr, lease))
	second := fairOf(t, newLock(t, "redis-fair", "second", addr, lease))
	if _, err := holder.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	ask := func(f *fairLock, wait time.Duration) {
		t.Helper()
		if ttl, err := f.try(ctx, wait.Milliseconds()); err != nil || ttl < 0 {
			t.Fatalf("%s asked while the holder holds: ttl %v, err %v; want it queued", f.env.Client, ttl, err)
		}
	}
	// Both ask as a live waiter does, at least once a lease; the second with a wait time so long
	// that it is never dropped, so only the first could lose its place.
	for end := time.Now().Add(4 * (wait + lease)); time.Now().Before(end); time.Sleep(lease / 3) {
		ask(first, wait)
		ask(second, time.Minute)
	}
	if q := inspect(t, addr).LRange(ctx, first.queue, 0, -1).Val(); !slices.Equal(q, []string{first.field, second.field}) {
		t.Fatalf("queue %v, want [first second] (%s %s)", q, first.field, second.field)
	}
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if ttl, err := first.try(ctx, wait.Milliseconds()); err != nil || ttl >= 0 {
		t.Fatalf("the head asked after the release: ttl %v, err %v; want the lock", ttl, err)
	}
	if err := first.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestRedisFairIsReentrantAndRefusesOthersReleases(t *testing.T) {
	addr := redisNode(t)
	ctx := context.Background()
	a := newLock(t, "redis-fair", "a", addr, 5*time.Second)
	b := newLock(t, "redis-fair", "b", addr, 5*time.Second)
	for i := 0; i < 2; i++ {
		if _, err := a.Acquire(ctx); err != nil {
			t.Fatalf("a acquire %d: %v", i+1, err)
		}
	}
	if err := b.Release(ctx); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("b releasing a's lock: want ErrNotHeld, got %v", err)
	}
	rdb := inspect(t, addr)
	if v := rdb.HGet(ctx, "test:lock", fairOf(t, a).field).Val(); v != "2" {
		t.Fatalf("a's count %q, want 2", v)
	}
	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if n := rdb.Exists(ctx, "test:lock").Val(); n != 0 {
		t.Fatal("the key survived the last release")
	}
	if renewing(fairOf(t, a).hashLock) {
		t.Fatal("the watchdog still runs after the last release")
	}
}
