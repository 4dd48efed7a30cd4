package locks

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockcheck/lockcheck/internal/redisopt"
)

// n5Lock builds a design's lock for client, dialling every node through client's links.
func n5Lock(t *testing.T, c *TestService, design, client string, ttl time.Duration, point func(string)) Lock {
	t.Helper()
	d, err := Get(design)
	if err != nil {
		t.Fatal(err)
	}
	if point == nil {
		point = func(string) {}
	}
	env := Env{Client: client, Key: "test:lock", TTL: ttl, Timeout: 500 * time.Millisecond, Point: point}
	for _, n := range c.Nodes {
		env.Nodes = append(env.Nodes, c.Link(client, n).Addr())
	}
	l, err := d.New(env)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// n5Keys reports, node by node, whether the lock key exists (read directly, not through a link).
// A node that does not answer reads as "?".
func n5Keys(t *testing.T, c *TestService) string {
	t.Helper()
	var b strings.Builder
	for _, n := range c.Nodes {
		rdb := redis.NewClient(redisopt.Options(c.Direct[n], 200*time.Millisecond))
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		k, err := rdb.Exists(ctx, "test:lock").Result()
		cancel()
		_ = rdb.Close()
		switch {
		case err != nil:
			b.WriteByte('?')
		case k == 1:
			b.WriteByte('1')
		default:
			b.WriteByte('0')
		}
	}
	return b.String()
}

// n5Settled is n5Keys once it reads want, or after 2 s: redlock holds the lock once a majority
// said yes, and the rest of its SETs land a moment later.
func n5Settled(t *testing.T, c *TestService, want string) string {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		got := n5Keys(t, c)
		if got == want || time.Now().After(deadline) {
			return got
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// n5SetForeign writes someone else's lock value on node i (0-based), as another client would.
func n5SetForeign(t *testing.T, c *TestService, i int, ttl time.Duration) {
	t.Helper()
	rdb := redis.NewClient(redisopt.Options(c.Direct[c.Nodes[i]], time.Second))
	defer rdb.Close()
	if err := rdb.Set(context.Background(), "test:lock", "someone-else", ttl).Err(); err != nil {
		t.Fatal(err)
	}
}

// n5Stop freezes node i (SIGSTOP) until the test ends.
func n5Stop(t *testing.T, c *TestService, i int) {
	t.Helper()
	pause(t, c.node(i))
}

// n5Kill kills node i for good.
func n5Kill(t *testing.T, c *TestService, i int) {
	t.Helper()
	kill(t, c.node(i))
}

func n5Cut(t *testing.T, c *TestService, client string, i int) {
	t.Helper()
	if err := c.Network.Cut(client, []string{c.Nodes[i]}); err != nil {
		t.Fatal(err)
	}
}

// n5Clear deletes the lock key on nodes i... directly (not through a link), so that a test can
// try again from where it started.
func n5Clear(t *testing.T, c *TestService, nodes ...int) {
	t.Helper()
	for _, i := range nodes {
		rdb := redis.NewClient(redisopt.Options(c.Direct[c.Nodes[i]], time.Second))
		err := rdb.Del(context.Background(), "test:lock").Err()
		_ = rdb.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
}

// relaxNodeTimeout sets Redlock's per-node timeout to a second, whatever the TTL, for the rest of
// the test: the test checks the quorum and validity logic, and a client stalled for 50 ms (other
// jobs on 2 shared cores) would see a healthy node time out. Tests of the timeout itself keep the
// docs' bounds.
func relaxNodeTimeout(t *testing.T) {
	lo, hi := redlockNodeTimeoutMin, redlockNodeTimeoutMax
	redlockNodeTimeoutMin, redlockNodeTimeoutMax = time.Second, time.Second
	t.Cleanup(func() { redlockNodeTimeoutMin, redlockNodeTimeoutMax = lo, hi })
}

// once runs check and fails the test with the reason it gives ("" when it held).
func once(t *testing.T, check func() string) {
	t.Helper()
	if why := check(); why != "" {
		t.Fatal(why)
	}
}

func TestRedlockExcludesOthersAndReleasesOnEveryNode(t *testing.T) {
	c := n5Cluster(t, "a", "b")
	ctx := n5Ctx(t)
	relaxNodeTimeout(t)
	once(t, func() string {
		n5Clear(t, c, 0, 1, 2, 3, 4)
		a := n5Lock(t, c, "redlock", "a", 10*time.Second, nil)
		b := n5Lock(t, c, "redlock", "b", 10*time.Second, nil)

		before := time.Now()
		tok, err := a.Acquire(ctx)
		after := time.Now()
		if err != nil || tok != nil {
			return fmt.Sprintf("a acquire: token=%v err=%v (redlock has no token)", tok, err)
		}
		if got := n5Settled(t, c, "11111"); got != "11111" {
			return fmt.Sprintf("keys after a's acquire: %s, want 11111", got)
		}
		// The hold ends at start + ttl − drift (drift = 1% + 2 ms = 102 ms), start within the call.
		until := a.(Expiring).ValidUntil()
		hold := 10*time.Second - 102*time.Millisecond
		if until.Before(before.Add(hold)) || until.After(after.Add(hold)) {
			t.Fatalf("ValidUntil %v after the call, want %v after its start (call took %v)", until.Sub(before), hold, after.Sub(before))
		}
		if _, err := b.Acquire(ctx); !errors.Is(err, ErrBusy) {
			return fmt.Sprintf("b acquire while a holds: want ErrBusy, got %v", err)
		}
		if got := n5Keys(t, c); got != "11111" {
			return fmt.Sprintf("b's failed attempt disturbed a's keys: %s", got)
		}
		if err := a.Release(ctx); err != nil {
			return fmt.Sprintf("a release: %v", err)
		}
		if got := n5Keys(t, c); got != "00000" {
			return fmt.Sprintf("keys after release: %s, want 00000", got)
		}
		if !a.(Expiring).ValidUntil().IsZero() {
			t.Fatal("ValidUntil must be zero once released")
		}
		if _, err := b.Acquire(ctx); err != nil {
			return fmt.Sprintf("b acquire after release: %v", err)
		}
		// a's late release must not free b's lock.
		if err := a.Release(ctx); !errors.Is(err, ErrNotHeld) {
			return fmt.Sprintf("a's second release: want ErrNotHeld, got %v", err)
		}
		if got := n5Settled(t, c, "11111"); got != "11111" {
			return fmt.Sprintf("a's late release touched b's keys (or b missed a node): %s", got)
		}
		return ""
	})
}

func TestRedlockAcquiresWithTwoOfFiveNodesDown(t *testing.T) {
	c := n5Cluster(t, "a", "b")
	ctx := n5Ctx(t)
	relaxNodeTimeout(t)
	n5Kill(t, c, 0) // n1 dead: connection refused
	n5Stop(t, c, 1) // n2 frozen: the SET times out after the per-node timeout
	once(t, func() string {
		n5Clear(t, c, 2, 3, 4)
		a := n5Lock(t, c, "redlock", "a", 2*time.Second, nil)
		if _, err := a.Acquire(ctx); err != nil {
			return fmt.Sprintf("with 3 of 5 nodes up a majority is there: %v", err)
		}
		// The frozen node cost the per-node timeout (a second here) out of the validity.
		v := a.(*redlock).Validity()
		if max := 2*time.Second - time.Second - redlockDrift(2*time.Second); v > max || v <= 0 {
			t.Fatalf("validity %v, want positive and at most %v", v, max)
		}
		b := n5Lock(t, c, "redlock", "b", 2*time.Second, nil)
		if _, err := b.Acquire(ctx); !errors.Is(err, ErrBusy) {
			return fmt.Sprintf("b against a's 3 keys: want ErrBusy, got %v", err)
		}
		return ""
	})
}

func TestRedlockRefusesWithThreeOfFiveUnavailableAndUnlocksTheRest(t *testing.T) {
	c := n5Cluster(t, "a", "b")
	ctx := n5Ctx(t)
	relaxNodeTimeout(t)
	n5Kill(t, c, 0)
	n5Stop(t, c, 1)
	n5Cut(t, c, "a", 2) // n3 is up, but a cannot reach it
	once(t, func() string {
		n5Clear(t, c, 2, 3, 4)
		a := n5Lock(t, c, "redlock", "a", 10*time.Second, nil)
		_, err := a.Acquire(ctx)
		if err == nil || errors.Is(err, ErrBusy) {
			t.Fatalf("2 of 5 nodes: want an unknown-outcome error (not busy), got %v", err)
		}
		if !a.(Expiring).ValidUntil().IsZero() {
			t.Fatal("a failed attempt must leave no validity")
		}
		// a took n4 and n5, then gave them back although their keys had 10 s to live.
		if got := n5Keys(t, c); got != "??000" {
			return fmt.Sprintf("keys after the failed attempt: %s, want ??000", got)
		}
		return ""
	})
}

func TestRedlockIsBusyOnlyWhenAMajorityRefuses(t *testing.T) {
	c := n5Cluster(t, "a")
	ctx := n5Ctx(t)
	relaxNodeTimeout(t)
	// Someone else holds n1..n3: a majority refuses, so the failure is certain.
	once(t, func() string {
		n5Clear(t, c, 3, 4)
		for i := range 3 {
			n5SetForeign(t, c, i, 10*time.Second)
		}
		a := n5Lock(t, c, "redlock", "a", 10*time.Second, nil)
		if _, err := a.Acquire(ctx); !errors.Is(err, ErrBusy) {
			return fmt.Sprintf("3 refusals: want ErrBusy, got %v", err)
		}
		if got := n5Keys(t, c); got != "11100" {
			return fmt.Sprintf("a must give back n4 and n5: keys %s, want 11100", got)
		}
		return ""
	})

	// Two refusals, one node unreachable, two OKs: nobody knows who would win. Not busy.
	n5Cut(t, c, "a", 2)
	once(t, func() string {
		n5Clear(t, c, 3, 4)
		for i := range 3 {
			n5SetForeign(t, c, i, 10*time.Second)
		}
		a := n5Lock(t, c, "redlock", "a", 10*time.Second, nil)
		_, err := a.Acquire(ctx)
		if err == nil || errors.Is(err, ErrBusy) {
			t.Fatalf("2 refusals + 1 unknown: want an unknown-outcome error, got %v", err)
		}
		if got := n5Keys(t, c); got != "11100" {
			return fmt.Sprintf("a must give back n4 and n5 again: keys %s, want 11100", got)
		}
		return ""
	})
}

func TestRedlockValidityShrinksWithASlowNode(t *testing.T) {
	c := n5Cluster(t, "fast", "slow")
	ctx := n5Ctx(t)
	ttl := 2 * time.Second
	fast := n5Lock(t, c, "redlock", "fast", ttl, nil)
	// Three nodes answer the slow client 20 ms late: within the 50 ms per-node timeout, so they
	// count, and a majority cannot be had without one of them: 20 ms less validity. (One slow
	// node alone would not cost validity: the lock is held once a majority said yes.)
	for _, n := range []string{"n3", "n4", "n5"} {
		if err := c.Link("slow", n).AddToxic(`{"type":"latency","attributes":{"latency":20}}`); err != nil {
			t.Fatal(err)
		}
	}
	slow := n5Lock(t, c, "redlock", "slow", ttl, nil)
	acquire := func(l Lock) (time.Duration, string, error) {
		if _, err := l.Acquire(ctx); err != nil {
			return 0, "", err
		}
		v, keys := l.(*redlock).Validity(), n5Settled(t, c, "11111")
		return v, keys, l.Release(ctx)
	}
	relaxNodeTimeout(t)
	once(t, func() string {
		n5Clear(t, c, 0, 1, 2, 3, 4)
		vFast, _, err := acquire(fast)
		if err != nil {
			return fmt.Sprintf("fast client: %v", err)
		}
		vSlow, keys, err := acquire(slow)
		if err != nil {
			return fmt.Sprintf("slow client: %v", err)
		}
		if vSlow > ttl-20*time.Millisecond-redlockDrift(ttl) {
			t.Fatalf("validity with three 20 ms nodes: %v, want at most ttl − 20 ms − drift", vSlow)
		}
		if vFast-vSlow < 15*time.Millisecond || keys != "11111" {
			return fmt.Sprintf("want the slow nodes counted (keys %s, want 11111) and about 20 ms of validity lost to them (%v, without them %v)",
				keys, vSlow, vFast)
		}
		return ""
	})
}

func TestRedlockGivesUpWhenElapsedExceedsValidity(t *testing.T) {
	c := n5Cluster(t, "a", "b")
	ctx := n5Ctx(t)
	relaxNodeTimeout(t)
	ttl := 300 * time.Millisecond
	// K10: every reply says OK, but the client stalls before it reads the clock (replies waiting
	// in socket buffers during a pause). The elapsed-time check must make it give up (A8).
	paused := func(p string) {
		if p == RedlockBeforeElapsedCheck {
			time.Sleep(ttl)
		}
	}
	a := n5Lock(t, c, "redlock", "a", ttl, paused)
	_, err := a.Acquire(ctx)
	if err == nil || errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "gave it up") {
		t.Fatalf("want a gave-it-up error, got %v", err)
	}
	if !a.(Expiring).ValidUntil().IsZero() {
		t.Fatal("a must not believe it holds")
	}
	b := n5Lock(t, c, "redlock", "b", 10*time.Second, nil)
	if _, err := b.Acquire(ctx); err != nil {
		t.Fatalf("b after a gave up: %v", err)
	}
}

func TestRedlockExtendKeepsTheLockPastItsFirstTTL(t *testing.T) {
	c := n5Cluster(t, "a", "b")
	ctx := n5Ctx(t)
	relaxNodeTimeout(t)
	ttl := 400 * time.Millisecond
	a := n5Lock(t, c, "redlock", "a", ttl, nil).(*redlock)
	b := n5Lock(t, c, "redlock", "b", ttl, nil)
	if _, err := a.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	first := a.ValidUntil()
	time.Sleep(250 * time.Millisecond)
	if err := a.Extend(ctx); err != nil {
		t.Fatalf("extend within validity: %v", err)
	}
	if !a.ValidUntil().After(first.Add(200 * time.Millisecond)) {
		t.Fatalf("extend must move ValidUntil by about 250 ms: %v -> %v", first, a.ValidUntil())
	}
	time.Sleep(250 * time.Millisecond) // 500 ms after acquiring: past the first TTL
	if _, err := b.Acquire(ctx); !errors.Is(err, ErrBusy) {
		t.Fatalf("b after the first TTL of an extended lock: want ErrBusy, got %v", err)
	}
	if err := a.Release(ctx); err != nil {
		t.Fatalf("release of the extended lock: %v", err)
	}
}

// The characteristic failure: a holder stalls past the TTL (a GC pause after its last validity
// check). Another client takes the lock; the stalled one could only know it by looking at the
// clock again, and nothing in the lock stops it from writing meanwhile (K3).
func TestRedlockHolderStalledPastTheTTLLosesItWithoutBeingTold(t *testing.T) {
	c := n5Cluster(t, "a", "b")
	ctx := n5Ctx(t)
	ttl := 200 * time.Millisecond
	relaxNodeTimeout(t)
	once(t, func() string {
		n5Clear(t, c, 0, 1, 2, 3, 4)
		a := n5Lock(t, c, "redlock", "a", ttl, nil).(*redlock)
		b := n5Lock(t, c, "redlock", "b", 10*time.Second, nil)
		if _, err := a.Acquire(ctx); err != nil {
			return fmt.Sprintf("a acquire: %v", err)
		}
		if !time.Now().Before(a.ValidUntil()) {
			return "a's validity check does not pass right after acquiring"
		}
		time.Sleep(300 * time.Millisecond) // the pause, after the check
		if _, err := b.Acquire(ctx); err != nil {
			return fmt.Sprintf("b must get the expired lock: %v", err)
		}
		// Both "hold" now: b legitimately, a by its stale check. Only the clock tells a.
		if !time.Now().After(a.ValidUntil()) {
			t.Fatal("a's validity should be over")
		}
		// Both ask the nodes (a's keys are gone): a stall can time them out too.
		if err := a.Extend(ctx); !errors.Is(err, ErrNotHeld) {
			return fmt.Sprintf("a's extend after expiry: want ErrNotHeld, got %v", err)
		}
		if err := a.Release(ctx); !errors.Is(err, ErrNotHeld) {
			return fmt.Sprintf("a's release after expiry: want ErrNotHeld, got %v", err)
		}
		if got := n5Settled(t, c, "11111"); got != "11111" {
			return fmt.Sprintf("a's late release touched b's keys (or b missed a node): %s", got)
		}
		return ""
	})
}

// n5Ctx bounds every command of a test, as the worker does: a frozen node must cost a timeout,
// not hang the test (lockcheck's go-redis clients have no socket timeouts).
func n5Ctx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// K10 on Redlock: the client stalls once all five SETs are on the wire, before it reads any reply.
// Every node has already set the key to the client's value; the stall outlives the TTL. After it,
// the elapsed-time check (and the per-node timeouts) make Redlock give up and unlock everything.
func TestRedlockStalledBetweenSendAndReplyGivesUp(t *testing.T) {
	c := n5Cluster(t, "a", "b")
	ctx := n5Ctx(t)
	ttl := 300 * time.Millisecond
	var during string
	passes := 0
	a := n5Lock(t, c, "redlock", "a", ttl, func(p string) {
		if p != BetweenSendAndReply {
			return
		}
		passes++
		// Sent means on the wire to the node's proxy, which forwards it a moment later.
		stallEnd := time.Now().Add(2 * ttl)
		for during = n5Keys(t, c); during != "11111" && time.Now().Before(stallEnd.Add(-ttl)); during = n5Keys(t, c) {
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(time.Until(stallEnd))
	})
	_, err := a.Acquire(ctx)
	if err == nil || errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "gave it up") {
		t.Fatalf("want a gave-it-up error after the stall, got %v", err)
	}
	t.Logf("after the stall: %v", err)
	if passes != 1 {
		t.Fatalf("passed %s %d times, want once", BetweenSendAndReply, passes)
	}
	if during != "11111" {
		t.Fatalf("keys while stalled: %s, want 11111 (all five SETs sent before any reply is read)", during)
	}
	if !a.(Expiring).ValidUntil().IsZero() {
		t.Fatal("a must not believe it holds")
	}
	if got := n5Keys(t, c); got != "00000" {
		t.Fatalf("keys after giving up: %s, want 00000", got)
	}
	b := n5Lock(t, c, "redlock", "b", 10*time.Second, nil)
	if _, err := b.Acquire(ctx); err != nil {
		t.Fatalf("b after a gave up: %v", err)
	}
}

// With a node whose link is cut the SET to it is never sent: the point must not wait for it.
func TestRedlockSendReplyPointWithANodeUnreachable(t *testing.T) {
	c := n5Cluster(t, "a")
	ctx := n5Ctx(t)
	relaxNodeTimeout(t)
	n5Cut(t, c, "a", 4)
	var during string
	a := n5Lock(t, c, "redlock", "a", 10*time.Second, func(p string) {
		if p == BetweenSendAndReply {
			for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
				if during = n5Keys(t, c); during == "11110" {
					break
				}
			}
		}
	})
	if _, err := a.Acquire(ctx); err != nil {
		t.Fatalf("acquire with 4 of 5 nodes: %v", err)
	}
	if during != "11110" {
		t.Fatalf("keys at the point: %s, want 11110", during)
	}
}
