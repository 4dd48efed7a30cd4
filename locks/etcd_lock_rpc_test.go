package locks_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/scenarios"
	"github.com/lockcheck/lockcheck/services"
	"github.com/lockcheck/lockcheck/services/etcd"
)

// etcdOneAt starts one member of etcd version (Debian's when "") with a 500ms election timeout.
func etcdOneAt(t *testing.T, version string, clients ...string) *services.Topology {
	t.Helper()
	server := "server: {election_timeout: 500ms, heartbeat: 100ms}\n"
	if version != "" {
		server = "server: {election_timeout: 500ms, heartbeat: 100ms, version: " + version + "}\n"
	}
	sc, err := scenarios.Parse("x.yaml", []byte("name: x\nlock: etcd-lock-rpc\nnodes: 1\nclients: 1\nttl: 1s\nduration: 2s\n"+server))
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

// The lock RPC's token is the create revision of the key Lock returned, and it grows from holder
// to holder; a waiter that gives up is busy and leaves no key (its lease is revoked).
func TestEtcdLockRPCTokenIsTheKeysCreateRevision(t *testing.T) {
	top := etcdOneAt(t, "", "a", "b")
	probe := etcdProbe(t, top)
	const key = "test-rpc-token"
	a := etcdLock(t, top, "etcd-lock-rpc", "a", key, time.Second)
	b := etcdLock(t, top, "etcd-lock-rpc", "b", key, time.Second)
	var last int64
	for i := 0; i < 3; i++ {
		for _, l := range []locks.Lock{a, b} {
			tok, err := etcdAcquireWithin(l, 2*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			keys := lockKeys(t, probe, key)
			if tok == nil || len(keys) != 1 || !strings.HasSuffix(keys[0], fmt.Sprintf("@%d", *tok)) {
				t.Fatalf("token %v, keys %v: want one key created at the token's revision", tok, keys)
			}
			if *tok <= last {
				t.Fatalf("token %d after %d: tokens must grow", *tok, last)
			}
			last = *tok
			etcdRelease(t, l)
		}
	}
	if _, err := etcdAcquireWithin(a, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := etcdAcquireWithin(b, 500*time.Millisecond); !errors.Is(err, locks.ErrBusy) {
		t.Fatalf("b behind a: want ErrBusy, got %v", err)
	}
	if keys := lockKeys(t, probe, key); len(keys) != 1 {
		t.Fatalf("after b gave up, keys %v: want only a's", keys)
	}
	etcdRelease(t, a)
	// The lock RPC and the Go client's Mutex are one lock: the same keys, the same queue.
	m := etcdLock(t, top, "etcd-unchecked", "b", key, time.Second)
	if _, err := etcdAcquireWithin(a, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := etcdAcquireWithin(m, 500*time.Millisecond); !errors.Is(err, locks.ErrBusy) {
		t.Fatalf("the Mutex while the lock RPC holds: want ErrBusy, got %v", err)
	}
	etcdRelease(t, a)
}

// etcd #9921 / #11456 through the lock RPC, one member of each server version: b queues behind
// a; everything b sends and receives is held back (as if b were frozen: its connection stays
// open, so its Lock keeps waiting in the server) past its 1 s lease, so its key goes; a unlocks
// and c locks at once. When b's traffic flows again, a 3.4 server has answered b's Lock with
// success although b's key is gone (b gets no token, having no key): b holds beside c. A 3.5
// server has answered "session is expired".
func TestEtcdLockRPCWaiterWhoseLeaseExpired(t *testing.T) {
	for _, c := range []struct {
		version string
		fixed   bool
	}{{"", false}, {"3.4.3", false}, {"3.5.21", true}} {
		name := c.version
		if name == "" {
			name = "debian-3.4.23"
		}
		t.Run(name, func(t *testing.T) {
			if c.version != "" && !etcd.ServerBuilt(c.version) {
				t.Skipf("etcd %s is not built (make track-record builds it, or any run naming it)", c.version)
			}
			top := etcdOneAt(t, c.version, "a", "b", "c")
			probe := etcdProbe(t, top)
			const key = "test-rpc-waiter"
			a := etcdLock(t, top, "etcd-lock-rpc", "a", key, time.Second)
			b := etcdLock(t, top, "etcd-lock-rpc", "b", key, time.Second)
			cl := etcdLock(t, top, "etcd-lock-rpc", "c", key, time.Second)
			if _, err := etcdAcquireWithin(a, 2*time.Second); err != nil {
				t.Fatal(err)
			}
			type result struct {
				tok *int64
				err error
			}
			bDone := make(chan result, 1)
			go func() { tok, err := etcdAcquireWithin(b, 20*time.Second); bDone <- result{tok, err} }()
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
			link := top.Link("b", "n1")
			for _, stream := range []string{"upstream", "downstream"} {
				if err := link.AddToxic(`{"type":"latency","stream":"` + stream + `","attributes":{"latency":60000}}`); err != nil {
					t.Fatal(err)
				}
			}
			waitKeys(1, "b's key gone with its lease")
			// b's Lock is still waiting in the server: a unlocks, c locks at once (its key is
			// the only one), then b's traffic flows again.
			etcdRelease(t, a)
			tc, err := etcdAcquireWithin(cl, 2*time.Second)
			if err != nil {
				t.Fatalf("c after a's unlock: %v", err)
			}
			time.Sleep(200 * time.Millisecond) // the server has answered b by now
			if err := link.RemoveToxics(); err != nil {
				t.Fatal(err)
			}
			rb := <-bDone
			switch {
			case c.fixed && rb.err == nil:
				t.Fatalf("b returned as holder beside c (token %v) although its lease expired while it waited", rb.tok)
			case c.fixed && !strings.Contains(rb.err.Error(), "session is expired"):
				t.Fatalf("b: %v, want the server's \"session is expired\"", rb.err)
			case !c.fixed && rb.err != nil:
				t.Fatalf("b: %v; a 3.4 server hands it the lock (etcd #11456)", rb.err)
			case !c.fixed && rb.tok != nil:
				t.Fatalf("b got token %d, but its key is gone: it can have no create revision", *rb.tok)
			}
			t.Logf("b: token %v, err %v; c holds with token %d", rb.tok, rb.err, *tc)
			etcdRelease(t, cl)
		})
	}
}
