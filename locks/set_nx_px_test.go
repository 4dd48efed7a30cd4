package locks

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockcheck/lockcheck/internal/redisopt"
)

// K10 on a single node: the client stalls between sending its SET and reading the reply (here the
// point callback stands in for the SIGSTOP a scenario uses). The server has already run the SET:
// the key holds the client's value while the client is stalled. The stall outlives the TTL, and
// afterwards the client reads the OK and believes it holds a lease that no longer exists.
func TestSetNxPxStalledBetweenSendAndReplyTakesAnExpiredLease(t *testing.T) {
	addr := redisNode(t)
	direct := redis.NewClient(redisopt.Options(addr, time.Second))
	defer direct.Close()
	ttl := 200 * time.Millisecond
	var during string
	passes := 0
	d, _ := Get("set-nx-px")
	l, err := d.New(Env{Client: "a", Nodes: []string{addr}, Key: "test:lock", TTL: ttl, Timeout: 5 * time.Second,
		Point: func(p string) {
			if p != BetweenSendAndReply {
				return
			}
			passes++
			stallEnd := time.Now().Add(2 * ttl) // the stall: the lease runs out while the reply waits
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			for during == "" && time.Now().Before(stallEnd.Add(-ttl)) { // the server runs it at once
				during, _ = direct.Get(ctx, "test:lock").Result()
			}
			time.Sleep(time.Until(stallEnd))
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	tok, err := l.Acquire(ctx)
	if err != nil || tok == nil {
		t.Fatalf("acquire after the stall: token %v, err %v (the OK was waiting in the socket)", tok, err)
	}
	if passes != 1 {
		t.Fatalf("passed %s %d times, want once", BetweenSendAndReply, passes)
	}
	if ours := l.(*setNxPx).value; during != ours {
		t.Fatalf("while stalled the key held %q, want the client's own value %q (the SET ran before the reply was read)", during, ours)
	}
	if n, err := direct.Exists(ctx, "test:lock").Result(); err != nil || n != 0 {
		t.Fatalf("the lease should have expired during the stall: exists=%d err=%v", n, err)
	}
	if err := l.Release(ctx); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("release of the expired lease = %v, want ErrNotHeld", err)
	}
	// A busy attempt sends its SET too, so it passes the point again; nothing else does.
	other := newLock(t, "set-nx-px", "b", addr, 10*time.Second)
	if _, err := other.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Acquire(ctx); !errors.Is(err, ErrBusy) {
		t.Fatalf("want busy, got %v", err)
	}
	if passes != 2 {
		t.Fatalf("passes = %d after a busy attempt, want 2", passes)
	}
}
