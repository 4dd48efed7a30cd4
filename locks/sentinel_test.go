package locks

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockcheck/lockcheck/internal/redisopt"
)

func sentinelLock(t *testing.T, f *TestService, design, client string) Lock {
	t.Helper()
	d, err := Get(design)
	if err != nil {
		t.Fatal(err)
	}
	// Nodes[0] leads nowhere: only following Sentinel reaches the primary.
	l, err := d.New(Env{Client: client, Nodes: []string{"127.0.0.1:1"}, Key: "test:lock", TTL: 10 * time.Second,
		Timeout: time.Second, Point: func(string) {},
		Sentinel: f.Endpoints(client).Sentinel})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

func dbsize(t *testing.T, addr string) int64 {
	t.Helper()
	rc := redis.NewClient(redisopt.Options(addr, time.Second))
	defer rc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	n, err := rc.DBSize(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// Every single-node Redis design follows Sentinel to the primary when the run has sentinels, and
// reaches it through the client's own proxy.
func TestSingleNodeRedisDesignsFollowSentinel(t *testing.T) {
	f := startSentinels(t, "client-1")
	n1 := f.Direct["n1"]
	tested := 0
	for _, d := range All() {
		// External programs do not follow Sentinel (the Redis kind refuses replicas for them).
		if (d.Service != "" && d.Service != Redis) || d.Nodes != 1 || d.External {
			continue
		}
		tested++
		t.Run(d.Name, func(t *testing.T) {
			l := sentinelLock(t, f, d.Name, "client-1")
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			direct := redis.NewClient(redisopt.Options(n1, time.Second))
			defer direct.Close()
			if err := direct.FlushAll(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			if _, err := l.Acquire(ctx); err != nil {
				t.Fatalf("acquire through Sentinel: %v", err)
			}
			if n := dbsize(t, n1); n == 0 {
				t.Fatal("the lock is not on the primary")
			}
			if err := l.Release(ctx); err != nil {
				t.Fatalf("release through Sentinel: %v", err)
			}
		})
	}
	if tested < 5 {
		t.Fatalf("only %d single-node Redis designs found", tested)
	}
}

// set-nx-px across a failover whose replica missed the lock: the new primary hands the lock out
// again, with the same fencing token.
func TestSetNxPxLockLostOnFailover(t *testing.T) {
	f := startSentinels(t, "client-1", "client-2")
	if err := f.Network.Cut("n2", []string{"n1"}); err != nil { // the replica's path to the primary
		t.Fatal(err)
	}
	ctx := context.Background()
	first := sentinelLock(t, f, "set-nx-px", "client-1")
	actx, cancel := context.WithTimeout(ctx, 3*time.Second)
	tok1, err := first.Acquire(actx)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	second := sentinelLock(t, f, "set-nx-px", "client-2")
	actx, cancel = context.WithTimeout(ctx, time.Second)
	_, err = second.Acquire(actx)
	cancel()
	if err != ErrBusy {
		t.Fatalf("second client before the failover: %v, want ErrBusy", err)
	}

	kill(t, f.Servers["n1"])
	deadline := time.Now().Add(15 * time.Second)
	for {
		actx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		tok2, err := second.Acquire(actx)
		cancel()
		if err == nil {
			if n := dbsize(t, f.Direct["n2"]); n == 0 {
				t.Fatal("acquired, but not on the promoted replica n2")
			}
			if *tok2 != *tok1 {
				t.Fatalf("tokens %d then %d: the promoted replica's counter should start over", *tok1, *tok2)
			}
			return
		}
		if err == ErrBusy {
			t.Fatal("the promoted replica has the lock key it never received")
		}
		if time.Now().After(deadline) {
			t.Fatalf("no acquisition after the failover: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
