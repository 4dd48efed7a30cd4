package locks

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// newZKLock builds client's lock of design on key, reaching z through client's links.
func newZKLock(t *testing.T, design string, z *TestService, client, key, role string, ttl time.Duration) Lock {
	t.Helper()
	d, err := Get(design)
	if err != nil {
		t.Fatal(err)
	}
	if d.Service != ZooKeeper {
		t.Fatalf("%s: Service %q", design, d.Service)
	}
	l, err := d.New(Env{Client: client, Nodes: z.Endpoints(client).Nodes, Key: key, TTL: ttl,
		Timeout: time.Second, Role: role, Point: func(string) {}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

type zkQuiet struct{}

func (zkQuiet) Printf(string, ...any) {}

// zkProbe is a plain go-zookeeper connection for the test to look at the lock's nodes.
func zkProbe(t *testing.T, z *TestService, client string) *zk.Conn {
	t.Helper()
	c, _, err := zk.Connect(z.Endpoints(client).Nodes, 10*time.Second, zk.WithLogger(zkQuiet{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	zkWaitFor(t, 10*time.Second, "probe session", func() bool { return c.State() == zk.StateHasSession })
	return c
}

// zkChildren lists the lock's nodes in sequence order.
func zkChildren(t *testing.T, c *zk.Conn, key string) []string {
	t.Helper()
	ch, _, err := c.Children(zkLockPath(key))
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		t.Fatal(err)
	}
	return zkSortBySeq(ch)
}

// zkWaitFor polls cond until it holds or d passes, and returns how long it took.
func zkWaitFor(t *testing.T, d time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	began := time.Now()
	for !cond() {
		if time.Since(began) > d {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return time.Since(began)
}

// zkCutClient cuts (or heals) every link of client.
func zkCutClient(t *testing.T, z *TestService, client string, cut bool) {
	t.Helper()
	f := z.Network.Heal
	if cut {
		f = z.Network.Cut
	}
	if err := f(client, nil); err != nil {
		t.Fatal(err)
	}
}

type zkAcquired struct {
	token *int64
	err   error
	at    time.Time
}

// zkAcquireAsync starts an Acquire bounded by d and delivers its result.
func zkAcquireAsync(l Lock, d time.Duration) <-chan zkAcquired {
	out := make(chan zkAcquired, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		tok, err := l.Acquire(ctx)
		out <- zkAcquired{tok, err, time.Now()}
	}()
	return out
}

func zkAcquireWithin(l Lock, d time.Duration) (*int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return l.Acquire(ctx)
}

// Every ZooKeeper mutex (the library's, ours, and zk-rw's writers) excludes a second client, lets
// a waiter that gives up leave no node behind (ErrBusy), wakes a waiter by the holder's release
// (the watch) well before any timeout, and hands out czxids in acquisition order.
func TestZKMutexesExcludeWakeWaitersAndHandOutIncreasingTokens(t *testing.T) {
	z := zkStandalone(t, "a", "b", "probe")
	probe := zkProbe(t, z, "probe")
	for _, c := range []struct{ design, role string }{{"zk", ""}, {"zk-session-aware", ""}, {"zk-rw", WriteRole}} {
		t.Run(c.design, func(t *testing.T) {
			key := "test:" + c.design
			a := newZKLock(t, c.design, z, "a", key, c.role, 4*time.Second)
			b := newZKLock(t, c.design, z, "b", key, c.role, 4*time.Second)

			t1, err := zkAcquireWithin(a, 5*time.Second)
			if err != nil || t1 == nil {
				t.Fatalf("a acquire: token=%v err=%v", t1, err)
			}
			if n := zkChildren(t, probe, key); len(n) != 1 {
				t.Fatalf("nodes while a holds: %v", n)
			}
			began := time.Now()
			if _, err := zkAcquireWithin(b, 300*time.Millisecond); !errors.Is(err, ErrBusy) {
				t.Fatalf("b acquire while a holds: want ErrBusy, got %v", err)
			}
			t.Logf("b gave up after %v with ErrBusy", time.Since(began).Round(time.Millisecond))
			if n := zkChildren(t, probe, key); len(n) != 1 {
				t.Fatalf("b's node was left in the queue after it gave up: %v", n)
			}

			wait := zkAcquireAsync(b, 10*time.Second)
			zkWaitFor(t, 2*time.Second, "b's node queued", func() bool { return len(zkChildren(t, probe, key)) == 2 })
			time.Sleep(200 * time.Millisecond)
			select {
			case r := <-wait:
				t.Fatalf("b acquired while a holds: %+v", r)
			default:
			}
			released := time.Now()
			if err := a.Release(context.Background()); err != nil {
				t.Fatalf("a release: %v", err)
			}
			r := <-wait
			if r.err != nil || r.token == nil || *r.token <= *t1 {
				t.Fatalf("b after a's release: token=%v (a had %d) err=%v", r.token, *t1, r.err)
			}
			woke := r.at.Sub(released)
			t.Logf("a's token %d, b's %d; b woke %v after a's release (its Acquire had 10s)", *t1, *r.token, woke.Round(time.Millisecond))
			if woke > time.Second {
				t.Errorf("b took %v to notice the release", woke)
			}

			if err := a.Release(context.Background()); !errors.Is(err, ErrNotHeld) {
				t.Fatalf("a's second release: want ErrNotHeld, got %v", err)
			}
			if _, err := zkAcquireWithin(a, 200*time.Millisecond); !errors.Is(err, ErrBusy) {
				t.Fatalf("a acquire while b holds: want ErrBusy, got %v", err)
			}
			if err := b.Release(context.Background()); err != nil {
				t.Fatalf("b release: %v", err)
			}
			if n := zkChildren(t, probe, key); len(n) != 0 {
				t.Fatalf("nodes left after both released: %v", n)
			}
			t3, err := zkAcquireWithin(a, 5*time.Second)
			if err != nil || *t3 <= *r.token {
				t.Fatalf("a again: token=%v (b had %d) err=%v", t3, *r.token, err)
			}
			// Close ends the session: its ephemeral node goes at once.
			if err := a.Close(); err != nil {
				t.Fatal(err)
			}
			zkWaitFor(t, 2*time.Second, "a's node deleted on Close", func() bool { return len(zkChildren(t, probe, key)) == 0 })
		})
	}
}

func TestZKLockPathAndSequences(t *testing.T) {
	for key, want := range map[string]string{
		"lockcheck:lock": "/lockcheck/lockcheck:lock",
		"a/b c":          "/lockcheck/a_b_c",
		"..":             "/lockcheck/_..",
		"":               "/lockcheck/_",
	} {
		if got := zkLockPath(key); got != want {
			t.Errorf("zkLockPath(%q) = %q, want %q", key, got, want)
		}
	}
	got := zkSortBySeq([]string{"_c_x-__WRIT__0000000010", "junk", "_c_y-__READ__0000000002", "_c_z-lock-0000000007"})
	if fmt.Sprint(got) != "[_c_y-__READ__0000000002 _c_z-lock-0000000007 _c_x-__WRIT__0000000010]" {
		t.Errorf("sorted: %v", got)
	}
}

// A release sent while cut off has an unknown outcome: the node stays in the queue while the
// session lives. The client deletes it before its next attempt, so it never waits behind its
// own orphan (go-zookeeper's zk.Lock alone would).
func TestZKReleaseWhileCutOffLeavesNoOrphan(t *testing.T) {
	z := zkStandalone(t, "a", "probe")
	probe := zkProbe(t, z, "probe")
	for _, design := range []string{"zk", "zk-session-aware"} {
		t.Run(design, func(t *testing.T) {
			key := "test:orphan-" + design
			a := newZKLock(t, design, z, "a", key, "", 4*time.Second)
			if _, err := zkAcquireWithin(a, 5*time.Second); err != nil {
				t.Fatal(err)
			}
			zkCutClient(t, z, "a", true)
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			lost := a.Release(ctx)
			cancel()
			if lost == nil || errors.Is(lost, ErrNotHeld) {
				t.Fatalf("release while cut off: want an unknown outcome, got %v", lost)
			}
			zkCutClient(t, z, "a", false)
			old := zkChildren(t, probe, key)
			if len(old) != 1 {
				t.Fatalf("nodes after the lost release: %v", old)
			}
			tok, err := zkAcquireWithin(a, 5*time.Second)
			if err != nil {
				t.Fatalf("acquire after the lost release: %v", err)
			}
			now := zkChildren(t, probe, key)
			if len(now) != 1 || now[0] == old[0] {
				t.Fatalf("nodes: %v before, %v after (the old one must be gone)", old, now)
			}
			t.Logf("release lost (%v); the next acquire deleted the old node and took token %d", lost, *tok)
			if err := a.Release(context.Background()); err != nil {
				t.Fatal(err)
			}
		})
	}
}
