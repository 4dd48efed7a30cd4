package locks

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The failure the Japanese article on designing a Redis lock worries about: a overruns its TTL and b takes the lock before a releases.
// The GET under WATCH sees b's value, so a deletes nothing.
func TestWatchMultiLateReleaseDoesNotDeleteTheNextHoldersLock(t *testing.T) {
	addr := redisNode(t)
	ctx := context.Background()
	rdb := inspector(t, addr)
	ttl := 150 * time.Millisecond
	a := newLock(t, "watch-multi", "a", addr, ttl)
	b := newLock(t, "watch-multi", "b", addr, 10*time.Second)

	if _, err := a.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * ttl)
	if _, err := b.Acquire(ctx); err != nil {
		t.Fatalf("b could not take the expired lock: %v", err)
	}
	bValue := rdb.Get(ctx, "test:lock").Val()
	if err := a.Release(ctx); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("a's late release: want ErrNotHeld, got %v", err)
	}
	if got := rdb.Get(ctx, "test:lock").Val(); got != bValue {
		t.Fatalf("b's lock was touched by a's release: value %q, want %q", got, bValue)
	}
}

// The Japanese article says WATCH only takes effect once a transaction is opened (at MULTI). On real Redis it
// takes effect when sent: a stalls after its GET saw its own value and before MULTI; its key expires
// and b takes the lock in that window; EXEC aborts and b's lock survives. The same stall deletes
// b's lock under get-del (TestGetDelLateDelDeletesTheNextHoldersLock).
func TestWatchMultiStallBetweenGetAndMultiAbortsTheExec(t *testing.T) {
	addr := redisNode(t)
	ctx := context.Background()
	rdb := inspector(t, addr)
	ttl := 150 * time.Millisecond
	b := newLock(t, "watch-multi", "b", addr, 10*time.Second)
	var bValue string
	a := newLockWithPoint(t, "watch-multi", "a", addr, ttl, func(p string) {
		if p != BetweenGetAndMulti {
			return
		}
		time.Sleep(2 * ttl)
		if _, err := b.Acquire(ctx); err != nil {
			t.Errorf("b could not take the expired lock while a stalled: %v", err)
		}
		bValue = rdb.Get(ctx, "test:lock").Val()
	})

	if _, err := a.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.Release(ctx); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("a's release after b took the lock: want ErrNotHeld (EXEC aborted), got %v", err)
	}
	if bValue == "" {
		t.Fatal("b's key was never there")
	}
	if got := rdb.Get(ctx, "test:lock").Val(); got != bValue {
		t.Fatalf("a's EXEC deleted b's lock: value now %q, want %q", got, bValue)
	}
}

// Expiry alone, with nobody taking the lock, also counts as a change to a watched key on Redis
// 6.0.9 and later: the EXEC aborts and the release reports the lock was no longer held.
func TestWatchMultiKeyExpiringAfterWatchAbortsTheExec(t *testing.T) {
	addr := redisNode(t)
	ctx := context.Background()
	ttl := 150 * time.Millisecond
	a := newLockWithPoint(t, "watch-multi", "a", addr, ttl, func(p string) {
		if p == BetweenGetAndMulti {
			time.Sleep(2 * ttl)
		}
	})
	if _, err := a.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.Release(ctx); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("release after the key expired under WATCH: want ErrNotHeld, got %v", err)
	}

	// The same on a raw transaction, to see that it is EXEC that refuses (not a DEL of nothing).
	rdb := inspector(t, addr)
	if err := rdb.Set(ctx, "test:lock", "v", ttl).Err(); err != nil {
		t.Fatal(err)
	}
	err := rdb.Watch(ctx, func(tx *redis.Tx) error {
		if tx.Get(ctx, "test:lock").Val() != "v" {
			t.Fatal("GET under WATCH did not see the key")
		}
		time.Sleep(2 * ttl)
		_, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Del(ctx, "test:lock")
			return nil
		})
		return err
	}, "test:lock")
	if !errors.Is(err, redis.TxFailedErr) {
		t.Fatalf("EXEC after the watched key expired: want an aborted transaction, got %v", err)
	}
}

// What WATCH does not do: guard a transaction sent on another connection. A pooled client that
// sends WATCH and GET on one connection and MULTI/DEL/EXEC on another deletes b's lock, just as
// get-del does. That is the one way the article's release really fails; watch-multi avoids it by
// running the whole release on one connection.
func TestWatchOnAnotherConnectionProtectsNothing(t *testing.T) {
	addr := redisNode(t)
	ctx := context.Background()
	rdb := inspector(t, addr)
	ttl := 150 * time.Millisecond
	a := newLock(t, "watch-multi", "a", addr, ttl)
	b := newLock(t, "watch-multi", "b", addr, 10*time.Second)
	if _, err := a.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	aValue := rdb.Get(ctx, "test:lock").Val()

	watching := dialRedis(addr, Env{Timeout: time.Second})
	defer watching.Close()
	other := dialRedis(addr, Env{Timeout: time.Second})
	defer other.Close()
	err := watching.Watch(ctx, func(tx *redis.Tx) error {
		if got := tx.Get(ctx, "test:lock").Val(); got != aValue {
			t.Fatalf("GET under WATCH: %q, want a's value", got)
		}
		time.Sleep(2 * ttl)
		if _, err := b.Acquire(ctx); err != nil {
			t.Fatalf("b could not take the expired lock: %v", err)
		}
		// MULTI/DEL/EXEC on a connection that never sent WATCH.
		cmds, err := other.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Del(ctx, "test:lock")
			return nil
		})
		if err != nil {
			t.Fatalf("EXEC on the other connection: %v", err)
		}
		if n := cmds[0].(*redis.IntCmd).Val(); n != 1 {
			t.Fatalf("the DEL on the other connection deleted %d keys, want b's", n)
		}
		return nil
	}, "test:lock")
	if err != nil {
		t.Fatal(err)
	}
	if n := rdb.Exists(ctx, "test:lock").Val(); n != 0 {
		t.Fatal("b's lock should be gone")
	}
}
