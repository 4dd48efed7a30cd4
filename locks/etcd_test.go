package locks_test

// Tests of the etcd designs against a real etcd member started through its service kind (an
// external test package: services imports locks). Each client reaches the member through its own
// link, so a test can cut one client off.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/scenarios"
	"github.com/lockcheck/lockcheck/services"
)

// etcdOne starts one member with a 500ms election timeout, so leases of 1 s are granted.
func etcdOne(t *testing.T, clients ...string) *services.Topology {
	t.Helper()
	sc, err := scenarios.Parse("x.yaml", []byte("name: x\nlock: etcd\nnodes: 1\nclients: 1\nttl: 1s\nduration: 2s\n"+
		"server: {election_timeout: 500ms, heartbeat: 100ms}\n"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	top, err := services.Start(ctx, sc.Plan(), services.Options{Dir: t.TempDir(), Clients: clients})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = top.Stop() })
	return top
}

func etcdLock(t *testing.T, top *services.Topology, design, client, key string, ttl time.Duration) locks.Lock {
	t.Helper()
	d, err := locks.Get(design)
	if err != nil {
		t.Fatal(err)
	}
	l, err := d.New(locks.Env{Client: client, Nodes: top.Endpoints(client).Nodes, Key: key, TTL: ttl,
		Timeout: 250 * time.Millisecond, Point: func(string) {}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// etcdProbe is the test's own client, straight to the member (no link).
func etcdProbe(t *testing.T, top *services.Topology) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{top.Instance.Upstream("n1")}, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// lockKeys lists the keys under the lock's prefix, oldest first, with their create revisions.
func lockKeys(t *testing.T, probe *clientv3.Client, key string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	resp, err := probe.Get(ctx, "/lockcheck/"+key+"/", clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, kv := range resp.Kvs {
		out = append(out, fmt.Sprintf("%s@%d", kv.Key, kv.CreateRevision))
	}
	return out
}

func etcdAcquireWithin(l locks.Lock, d time.Duration) (*int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return l.Acquire(ctx)
}

func etcdRelease(t *testing.T, l locks.Lock) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := l.Release(ctx); err != nil {
		t.Fatalf("release: %v", err)
	}
}

// The token is the create revision of the holder's key, and it grows from holder to holder; a
// waiter that gives up is refused as busy and leaves no key behind.
func TestEtcdTokenIsTheKeysCreateRevision(t *testing.T) {
	top := etcdOne(t, "a", "b")
	probe := etcdProbe(t, top)
	const key = "test-token"
	a := etcdLock(t, top, "etcd-unchecked", "a", key, time.Second)
	b := etcdLock(t, top, "etcd-unchecked", "b", key, time.Second)
	var last int64
	for i := 0; i < 3; i++ {
		for _, l := range []locks.Lock{a, b} {
			tok, err := etcdAcquireWithin(l, 2*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			keys := lockKeys(t, probe, key)
			if len(keys) != 1 || !strings.HasSuffix(keys[0], fmt.Sprintf("@%d", *tok)) {
				t.Fatalf("token %d, keys %v: want one key created at the token's revision", *tok, keys)
			}
			if *tok <= last {
				t.Fatalf("token %d after %d: tokens must grow", *tok, last)
			}
			last = *tok
			etcdRelease(t, l)
		}
	}
	// b waits behind a and gives up: busy, and its key is gone.
	if _, err := etcdAcquireWithin(a, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := etcdAcquireWithin(b, 300*time.Millisecond); !errors.Is(err, locks.ErrBusy) {
		t.Fatalf("b behind a: want ErrBusy, got %v", err)
	}
	if keys := lockKeys(t, probe, key); len(keys) != 1 {
		t.Fatalf("after b gave up, keys %v: want only a's", keys)
	}
	etcdRelease(t, a)
}

// The careful design learns that its session ended: cut off from etcd past its 1 s lease, the
// holder's key expires, another client takes the lock, and once the client library has closed
// Done the holder's validity is over and its release says it no longer held. The unchecked design
// offers no such check.
func TestEtcdCheckedHolderLearnsItsSessionEnded(t *testing.T) {
	top := etcdOne(t, "a", "b")
	const key = "test-session"
	a := etcdLock(t, top, "etcd", "a", key, time.Second)
	b := etcdLock(t, top, "etcd", "b", key, time.Second)
	if _, ok := etcdLock(t, top, "etcd-unchecked", "b", key, time.Second).(locks.Expiring); ok {
		t.Fatal("etcd-unchecked must not implement Expiring: it never looks at its session")
	}
	ta, err := etcdAcquireWithin(a, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !a.(locks.Expiring).ValidUntil().IsZero() {
		t.Fatal("a fresh holder must be valid")
	}
	if err := top.Link("a", "n1").Cut(); err != nil {
		t.Fatal(err)
	}
	cut := time.Now()
	tb, err := etcdAcquireWithin(b, 6*time.Second)
	if err != nil || *tb <= *ta {
		t.Fatalf("b while a is cut off: token %v (a had %d), err %v", tb, *ta, err)
	}
	t.Logf("a cut off; its 1s lease expired and b acquired %v later (token %d > %d)", time.Since(cut).Round(time.Millisecond), *tb, *ta)
	deadline := time.Now().Add(3 * time.Second)
	for a.(locks.Expiring).ValidUntil().IsZero() {
		if time.Now().After(deadline) {
			t.Fatal("a's session still looks alive 3s after b took the lock")
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("a's client library closed Done %v after the cut", time.Since(cut).Round(time.Millisecond))
	if err := top.Link("a", "n1").Heal(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := a.Release(ctx); !errors.Is(err, locks.ErrNotHeld) {
		t.Fatalf("a's release after its session ended: want ErrNotHeld, got %v", err)
	}
	etcdRelease(t, b)
	// a gets a new session and can hold again.
	if _, err := etcdAcquireWithin(a, 3*time.Second); err != nil {
		t.Fatalf("a with a new session: %v", err)
	}
	etcdRelease(t, a)
}

// The case Jepsen's etcd 3.4.3 analysis found broken: a waiter whose own lease expires while it
// waits. b queues behind a, is cut off past its lease (its key goes), comes back, and a releases:
// b's Lock must not return as holder. The v3.5 Mutex reads its own key back and fails with
// ErrSessionExpired; c, queued after b, takes the lock.
func TestEtcdWaiterWhoseLeaseExpiredDoesNotHold(t *testing.T) {
	top := etcdOne(t, "a", "b", "c")
	probe := etcdProbe(t, top)
	const key = "test-waiter"
	a := etcdLock(t, top, "etcd-unchecked", "a", key, time.Second)
	b := etcdLock(t, top, "etcd-unchecked", "b", key, time.Second)
	c := etcdLock(t, top, "etcd-unchecked", "c", key, time.Second)
	if _, err := etcdAcquireWithin(a, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	type result struct {
		tok *int64
		err error
	}
	bDone := make(chan result, 1)
	go func() { tok, err := etcdAcquireWithin(b, 15*time.Second); bDone <- result{tok, err} }()
	waitKeys := func(n int, what string) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for len(lockKeys(t, probe, key)) != n {
			if time.Now().After(deadline) {
				t.Fatalf("%s: keys %v", what, lockKeys(t, probe, key))
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitKeys(2, "b queued")
	if err := top.Link("b", "n1").Cut(); err != nil {
		t.Fatal(err)
	}
	waitKeys(1, "b's key gone with its lease")
	cDone := make(chan result, 1)
	go func() { tok, err := etcdAcquireWithin(c, 15*time.Second); cDone <- result{tok, err} }()
	waitKeys(2, "c queued")
	if err := top.Link("b", "n1").Heal(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond) // b's client reconnects; its Lock is still waiting
	etcdRelease(t, a)
	rb := <-bDone
	if rb.err == nil {
		t.Fatalf("b returned as holder (token %d) although its lease expired while it waited", *rb.tok)
	}
	if !strings.Contains(rb.err.Error(), "session is expired") {
		t.Logf("b failed without the library's session check firing: %v", rb.err)
	}
	t.Logf("b: %v", rb.err)
	rc := <-cDone
	if rc.err != nil {
		t.Fatalf("c, queued after b: %v", rc.err)
	}
	etcdRelease(t, c)
}
