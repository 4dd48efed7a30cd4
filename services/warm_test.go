package services_test

// A kept lock service against real redis-servers: what a run leaves under its key is gone before
// the next run gets the service, and a service is kept only when it may be.

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/services"
)

func warmPlan(t *testing.T) *services.Plan {
	t.Helper()
	d, err := locks.Get("set-nx-px")
	if err != nil {
		t.Fatal(err)
	}
	plan, err := services.MustPlan(services.Spec{Design: d, Nodes: 1})
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

// untouched are the options of a run whose faults act on no server and no client link.
func untouched(dir string) services.Options {
	return services.Options{Dir: dir, DirectClients: true, DirectPeers: true}
}

func alive(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err == nil {
		_ = c.Close()
	}
	return err == nil
}

// The next run gets the service a clean run gave back, without what that run wrote under its key
// (but with another run's key, which is that run's to remove); a run that failed has its service
// stopped, and the next one starts afresh in a folder of its own.
func TestAKeptServiceComesBackWithoutTheRunsKeys(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	keeper := t.TempDir()
	w := services.NewWarm(keeper, time.Minute, nil)
	defer w.Close()
	plan := warmPlan(t)

	first, reused, err := w.Start(ctx, plan, untouched(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	if reused || !first.Kept() || filepath.Dir(first.Dir()) != keeper {
		t.Fatalf("first start: reused %v, kept %v, folder %s (want a new service kept in %s)", reused, first.Kept(), first.Dir(), keeper)
	}
	addr := first.Instance.Upstream("n1")
	rdb := goredis.NewClient(&goredis.Options{Addr: addr})
	defer rdb.Close()
	mine, other := "lockcheck:run-1:lock", "lockcheck:run-0:lock"
	for _, k := range []string{mine, other} {
		if err := rdb.Set(ctx, k, "x", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Give(ctx, first, mine, true); err != nil {
		t.Fatal(err)
	}
	second, reused, err := w.Start(ctx, plan, untouched(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	if !reused || second != first {
		t.Fatalf("second start: reused %v, same service %v; want the kept one", reused, second == first)
	}
	if n, err := rdb.Exists(ctx, mine).Result(); err != nil || n != 0 {
		t.Errorf("the first run's key: exists %d (%v), want removed", n, err)
	}
	if n, err := rdb.Exists(ctx, other).Result(); err != nil || n != 1 {
		t.Errorf("another run's key: exists %d (%v), want it left alone", n, err)
	}

	if err := w.Give(ctx, second, "lockcheck:run-2:lock", false); err != nil {
		t.Fatal(err)
	}
	if alive(addr) {
		t.Errorf("a failed run's service still answers at %s", addr)
	}
	third, reused, err := w.Start(ctx, plan, untouched(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	if reused || third.Dir() == first.Dir() {
		t.Errorf("after a failed run: reused %v, folder %s (the stopped one's is %s)", reused, third.Dir(), first.Dir())
	}
	if err := w.Give(ctx, third, "lockcheck:run-3:lock", true); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if a := third.Instance.Upstream("n1"); alive(a) {
		t.Errorf("Close left a kept service answering at %s", a)
	}
	if started, reusedN := w.Counts(); started != 2 || reusedN != 1 {
		t.Errorf("counts: %d started, %d reused; want 2 and 1", started, reusedN)
	}
}

// A service is kept only for runs no fault touches, and stops when no run asks for it in time,
// leaving its servers' logs and not their data.
func TestAServiceIsKeptOnlyWhileItMayBe(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w := services.NewWarm(t.TempDir(), 100*time.Millisecond, nil)
	defer w.Close()
	plan := warmPlan(t)

	proxied := untouched(t.TempDir())
	proxied.DirectClients = false
	topo, _, err := w.Start(ctx, plan, proxied)
	if err != nil {
		t.Fatal(err)
	}
	if topo.Kept() {
		t.Error("a run whose faults act on client links got a kept service")
	}
	_ = topo.Stop()

	kept, _, err := w.Start(ctx, plan, untouched(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	addr := kept.Instance.Upstream("n1")
	if err := w.Give(ctx, kept, "lockcheck:run-1:lock", true); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for alive(addr) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if alive(addr) {
		t.Fatalf("a kept service nobody asked for still answers at %s", addr)
	}
	next, reused, err := w.Start(ctx, plan, untouched(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = next.Stop() }()
	if reused {
		t.Error("a run got a service that had been stopped for idling")
	}
	server := filepath.Join(kept.Dir(), "servers", "n1")
	if _, err := os.Stat(filepath.Join(server, services.DataDir)); !os.IsNotExist(err) {
		t.Errorf("the stopped service's data folder: %v, want it removed", err)
	}
	if _, err := os.Stat(filepath.Join(server, "redis.log")); err != nil {
		t.Errorf("the stopped service's log: %v", err)
	}
}
