package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func startFailover(t testing.TB, clients ...string) *Failover {
	t.Helper()
	if err := CheckBinaries(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir, err := os.MkdirTemp("", "lockcheck-sentinel-")
	if err != nil {
		t.Fatal(err)
	}
	f, err := StartFailover(ctx, FailoverOptions{Dir: dir, Clients: clients, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := f.Stop(); err != nil {
			t.Errorf("Stop: %v", err)
		}
		os.RemoveAll(dir)
	})
	return f
}

// followingClient is a go-redis client that follows Sentinel, reaching sentinels and data nodes
// only through client's proxies (the dialer refuses any other address).
func followingClient(t testing.TB, f *Failover, client string) *redis.Client {
	t.Helper()
	dial := f.ClientDial(client)
	rc := redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName:    MasterName,
		SentinelAddrs: f.SentinelAddrs(),
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			proxy, ok := dial[addr]
			if !ok {
				return nil, fmt.Errorf("no proxy for %s", addr)
			}
			var d net.Dialer
			return d.DialContext(ctx, network, proxy)
		},
		Protocol: 2, DisableIdentity: true, MaxRetries: -1, DialerRetries: 1, PoolSize: 1,
		DialTimeout: 200 * time.Millisecond, ContextTimeoutEnabled: true,
	})
	t.Cleanup(func() { rc.Close() })
	return rc
}

func mustDo(t testing.TB, rc *redis.Client, args ...any) any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	v, err := rc.Do(ctx, args...).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		t.Fatalf("%v: %v", args, err)
	}
	return v
}

func direct(t testing.TB, r *Redis) *redis.Client {
	t.Helper()
	rc := redis.NewClient(directOptions(r.Addr))
	t.Cleanup(func() { rc.Close() })
	return rc
}

// waitReplicated waits until replica r holds key = value.
func waitReplicated(t testing.TB, r *Redis, key, value string) {
	t.Helper()
	rc := direct(t, r)
	deadline := time.Now().Add(5 * time.Second)
	for {
		if v, _ := rc.Get(context.Background(), key).Result(); v == value {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never got %s=%s", r.Name, key, value)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// killPrimaryAndWait SIGKILLs the primary and waits until a majority of sentinels name another node
// that also calls itself master; it returns that node and how long it took.
func killPrimaryAndWait(t testing.TB, f *Failover) (*Redis, time.Duration) {
	t.Helper()
	ctx := context.Background()
	old, err := f.Primary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := old.Process().Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	deadline := killed.Add(20 * time.Second)
	for time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		p, err := f.Primary(ctx)
		if err != nil || p == old {
			continue
		}
		role, err := direct(t, p).Do(ctx, "ROLE").Slice()
		if err == nil && len(role) > 0 && role[0] == "master" {
			return p, time.Since(killed)
		}
	}
	for _, s := range f.Sentinels {
		t.Logf("%s log:\n%s", s.Name, logTail(s.LogFile, 0))
	}
	t.Fatalf("no failover within 20s of killing %s", old.Name)
	return nil, 0
}

// writeUntilOK retries a SET through a client that follows Sentinel until it succeeds (each
// attempt fails fast while the old primary is gone and Sentinel still names it).
func writeUntilOK(t testing.TB, rc *redis.Client, key, value string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	var err error
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		err = rc.Set(ctx, key, value, 0).Err()
		cancel()
		if err == nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("SET %s through Sentinel never succeeded: %v", key, err)
}

// A kill -9 of the primary makes the sentinels promote the replica, and a client that follows
// Sentinel (through its own proxies) then writes to the promoted node.
func TestSentinelFailover(t *testing.T) {
	f := startFailover(t, "client-1")
	n1, n2 := f.Nodes[0], f.Nodes[1]
	if p, err := f.Primary(context.Background()); err != nil || p != n1 {
		t.Fatalf("primary before the fault = %v, %v; want n1", p, err)
	}
	rc := followingClient(t, f, "client-1")
	writeUntilOK(t, rc, "before", "1")
	if got := mustDo(t, direct(t, n1), "GET", "before"); got != "1" {
		t.Fatalf("the write before the failover went elsewhere: n1 has %v", got)
	}
	waitReplicated(t, n2, "before", "1")

	promoted, took := killPrimaryAndWait(t, f)
	t.Logf("failover: %s promoted %v after kill -9 of n1", promoted.Name, took.Round(time.Millisecond))
	if promoted != n2 {
		t.Fatalf("promoted %s, want n2", promoted.Name)
	}
	writeUntilOK(t, rc, "after", "2")
	if got := mustDo(t, direct(t, n2), "GET", "after"); got != "2" {
		t.Fatalf("the write after the failover did not land on n2: %v", got)
	}
	// The client reached n2 through its own proxy, not directly.
	info := mustDo(t, direct(t, n2), "CLIENT", "LIST").(string)
	if !strings.Contains(info, "cmd=set") {
		t.Fatalf("n2 saw no SET from a client:\n%s", info)
	}
}

// With the replication link cut, a key written to the primary misses the replica; after the
// primary dies and the replica is promoted, the key is gone, while a key written before the cut
// survived the failover.
func TestSentinelFailoverLosesWhatTheCutReplicaMissed(t *testing.T) {
	f := startFailover(t, "client-1")
	n1, n2 := f.Nodes[0], f.Nodes[1]
	rc := followingClient(t, f, "client-1")
	writeUntilOK(t, rc, "before-cut", "1")
	waitReplicated(t, n2, "before-cut", "1")

	if err := f.ReplicationLink("n2").Cut(); err != nil {
		t.Fatal(err)
	}
	writeUntilOK(t, rc, "lock", "client-1")
	if got := mustDo(t, direct(t, n1), "GET", "lock"); got != "client-1" {
		t.Fatalf("primary lacks the key written after the cut: %v", got)
	}
	time.Sleep(200 * time.Millisecond) // long enough for replication, were the link up
	if got := mustDo(t, direct(t, n2), "GET", "lock"); got != nil {
		t.Fatalf("the replica got the key across a cut link: %v", got)
	}

	promoted, took := killPrimaryAndWait(t, f)
	t.Logf("failover with the replication link cut: %s promoted %v after kill -9", promoted.Name, took.Round(time.Millisecond))
	if promoted != n2 {
		t.Fatalf("promoted %s, want n2", promoted.Name)
	}
	writeUntilOK(t, rc, "probe", "x") // the client now follows n2
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if v, err := rc.Get(ctx, "lock").Result(); !errors.Is(err, redis.Nil) {
		t.Fatalf("after the failover the lock key is still there: %q, %v", v, err)
	}
	if v, err := rc.Get(ctx, "before-cut").Result(); err != nil || v != "1" {
		t.Fatalf("the key written before the cut was lost too: %q, %v", v, err)
	}
}

// Stop kills every process of the topology.
func TestSentinelStopKillsEverything(t *testing.T) {
	f := startFailover(t, "client-1")
	var pids []int
	for _, r := range f.Nodes {
		pids = append(pids, r.Process().Pid())
	}
	for _, s := range f.Sentinels {
		pids = append(pids, s.Process().Pid())
	}
	if err := f.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil && !strings.Contains(string(st), ") Z ") {
			t.Errorf("pid %d still running after Stop", pid)
		}
	}
	if err := f.Link("client-1", "s1").Heal(); err == nil {
		t.Error("a link healed after Stop")
	}
}

// A crash-restarted replica replicates through its proxy again: it gets new writes, and stops
// getting them when its replication link is cut.
func TestSentinelReplicaRestartRejoinsThroughItsProxy(t *testing.T) {
	f := startFailover(t, "client-1")
	n2 := f.Nodes[1]
	rc := followingClient(t, f, "client-1")
	if err := f.RestartNode(context.Background(), n2); err != nil {
		t.Fatal(err)
	}
	writeUntilOK(t, rc, "after-restart", "1")
	waitReplicated(t, n2, "after-restart", "1")
	if err := f.ReplicationLink("n2").Cut(); err != nil {
		t.Fatal(err)
	}
	writeUntilOK(t, rc, "after-cut", "1")
	time.Sleep(200 * time.Millisecond)
	if got := mustDo(t, direct(t, n2), "GET", "after-cut"); got != nil {
		t.Fatalf("the restarted replica bypasses its proxy: it got %v across a cut link", got)
	}
}
