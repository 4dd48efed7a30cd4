package redis_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/lockcheck/lockcheck/internal/redisopt"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/providers"
	"github.com/lockcheck/lockcheck/services"
	"github.com/lockcheck/lockcheck/services/redis"
)

// startFailover starts a primary n1, one replica n2 and three sentinels with a link per client.
func startFailover(t testing.TB, clients ...string) *services.Topology {
	t.Helper()
	return start(t, services.Spec{Nodes: 1, Server: redis.Settings{Replicas: 1, Sentinels: 3}}, clients...)
}

// primary asks the sentinels which data node is the primary now.
func primary(t testing.TB, topo *services.Topology) (providers.Node, error) {
	t.Helper()
	f, ok := topo.Instance.(interface {
		Primary(context.Context) (providers.Node, error)
	})
	if !ok {
		t.Fatalf("%T does not say which node is the primary", topo.Instance)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return f.Primary(ctx)
}

// followingClient is a go-redis client that follows Sentinel, reaching sentinels and data nodes
// only through client's own links (the dialer refuses any other address), as a worker does.
func followingClient(t testing.TB, topo *services.Topology, client string) *goredis.Client {
	t.Helper()
	s := topo.Endpoints(client).Sentinel
	if s == nil || s.Master != redis.MasterName || len(s.Addrs) != 3 {
		t.Fatalf("%s's Sentinel endpoint: %+v", client, s)
	}
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		link, ok := s.Dial[addr]
		if !ok {
			return nil, fmt.Errorf("no link for %s", addr)
		}
		var d net.Dialer
		return d.DialContext(ctx, network, link)
	}
	o := redisopt.FailoverOptions(s.Master, s.Addrs, 200*time.Millisecond, dial)
	rc := goredis.NewFailoverClient(o)
	t.Cleanup(func() { rc.Close() })
	return rc
}

func mustDo(t testing.TB, rc *goredis.Client, args ...any) any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	v, err := rc.Do(ctx, args...).Result()
	if err != nil && !errors.Is(err, goredis.Nil) {
		t.Fatalf("%v: %v", args, err)
	}
	return v
}

func direct(t testing.TB, n providers.Node) *goredis.Client {
	t.Helper()
	rc := goredis.NewClient(redisopt.Options(addr(n), time.Second))
	t.Cleanup(func() { rc.Close() })
	return rc
}

// waitReplicated waits until replica n holds key = value.
func waitReplicated(t testing.TB, n providers.Node, key, value string) {
	t.Helper()
	rc := direct(t, n)
	deadline := time.Now().Add(5 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		v, _ := rc.Get(ctx, key).Result()
		cancel()
		if v == value {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never got %s=%s", n.Name(), key, value)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// killPrimaryAndWait SIGKILLs the primary and waits until a majority of sentinels name another node
// that also calls itself master; it returns that node and how long it took.
func killPrimaryAndWait(t testing.TB, topo *services.Topology) (providers.Node, time.Duration) {
	t.Helper()
	old, err := primary(t, topo)
	if err != nil {
		t.Fatal(err)
	}
	if err := old.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	deadline := killed.Add(20 * time.Second)
	for time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		p, err := primary(t, topo)
		if err != nil || p == old {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		role, err := direct(t, p).Do(ctx, "ROLE").Slice()
		cancel()
		if err == nil && len(role) > 0 && role[0] == "master" {
			return p, time.Since(killed)
		}
	}
	for _, s := range topo.Plan.Servers {
		if strings.HasPrefix(s, "s") {
			t.Logf("%s log:\n%s", s, providers.LogTail(filepath.Join(node(t, topo, s).Dir(), "sentinel.log"), 0))
		}
	}
	t.Fatalf("no failover within 20s of killing %s", old.Name())
	return nil, 0
}

// writeUntilOK retries a SET through a client that follows Sentinel until it succeeds (each
// attempt fails fast while the old primary is gone and Sentinel still names it).
func writeUntilOK(t testing.TB, rc *goredis.Client, key, value string) {
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

// cutReplication cuts replica r's path to the primary n1 (the nemesis's partition of a server
// from its peers).
func cutReplication(t testing.TB, topo *services.Topology, r string) {
	t.Helper()
	if err := topo.Cut(r, []string{"n1"}); err != nil {
		t.Fatal(err)
	}
}

func TestSentinelPlan(t *testing.T) {
	topo := startFailover(t, "client-1")
	if got := strings.Join(topo.Plan.Servers, ","); got != "n1,n2,s1,s2,s3" {
		t.Fatalf("servers %s", got)
	}
	tg, ok := topo.Plan.Target(redis.Primary)
	if !ok || tg.Role == "" {
		t.Fatalf("no primary role: %+v", tg)
	}
	if tg, _ := topo.Plan.Target("s1"); tg.NoClock == "" {
		t.Error("a sentinel offers a clock")
	}
	for _, bad := range []services.Spec{{Nodes: 1, Server: redis.Settings{Sentinels: 3}}, {Nodes: 1, Server: redis.Settings{Replicas: 5}},
		{Nodes: 1, Server: redis.Settings{Replicas: 1, Sentinels: 8}}} {
		bad.Design = lockDesign(t)
		if _, err := services.MustPlan(bad); err == nil {
			t.Errorf("%+v planned", bad)
		}
	}
}

// A kill -9 of the primary makes the sentinels promote the replica, and a client that follows
// Sentinel (through its own links) then writes to the promoted node.
func TestSentinelFailover(t *testing.T) {
	topo := startFailover(t, "client-1")
	n1, n2 := node(t, topo, "n1"), node(t, topo, "n2")
	if p, err := primary(t, topo); err != nil || p != n1 {
		t.Fatalf("primary before the fault = %v, %v; want n1", p, err)
	}
	rc := followingClient(t, topo, "client-1")
	writeUntilOK(t, rc, "before", "1")
	if got := mustDo(t, direct(t, n1), "GET", "before"); got != "1" {
		t.Fatalf("the write before the failover went elsewhere: n1 has %v", got)
	}
	waitReplicated(t, n2, "before", "1")

	promoted, took := killPrimaryAndWait(t, topo)
	t.Logf("failover: %s promoted %v after kill -9 of n1", promoted.Name(), took.Round(time.Millisecond))
	if promoted != n2 {
		t.Fatalf("promoted %s, want n2", promoted.Name())
	}
	writeUntilOK(t, rc, "after", "2")
	if got := mustDo(t, direct(t, n2), "GET", "after"); got != "2" {
		t.Fatalf("the write after the failover did not land on n2: %v", got)
	}
	// The client reached n2 through its own link, not directly.
	info := mustDo(t, direct(t, n2), "CLIENT", "LIST").(string)
	if !strings.Contains(info, "cmd=set") {
		t.Fatalf("n2 saw no SET from a client:\n%s", info)
	}
	if topo.Link("client-1", "n2").Addr() == addr(n2) {
		t.Fatal("the client's link to n2 is n2 itself")
	}
}

// With the replication path cut, a key written to the primary misses the replica; after the
// primary dies and the replica is promoted, the key is gone, while a key written before the cut
// survived the failover.
func TestSentinelFailoverLosesWhatTheCutReplicaMissed(t *testing.T) {
	topo := startFailover(t, "client-1")
	n1, n2 := node(t, topo, "n1"), node(t, topo, "n2")
	rc := followingClient(t, topo, "client-1")
	writeUntilOK(t, rc, "before-cut", "1")
	waitReplicated(t, n2, "before-cut", "1")

	cutReplication(t, topo, "n2")
	writeUntilOK(t, rc, "lock", "client-1")
	if got := mustDo(t, direct(t, n1), "GET", "lock"); got != "client-1" {
		t.Fatalf("primary lacks the key written after the cut: %v", got)
	}
	time.Sleep(200 * time.Millisecond) // long enough for replication, were the path up
	if got := mustDo(t, direct(t, n2), "GET", "lock"); got != nil {
		t.Fatalf("the replica got the key across a cut path: %v", got)
	}

	promoted, took := killPrimaryAndWait(t, topo)
	t.Logf("failover with the replication path cut: %s promoted %v after kill -9", promoted.Name(), took.Round(time.Millisecond))
	if promoted != n2 {
		t.Fatalf("promoted %s, want n2", promoted.Name())
	}
	writeUntilOK(t, rc, "probe", "x") // the client now follows n2
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if v, err := rc.Get(ctx, "lock").Result(); !errors.Is(err, goredis.Nil) {
		t.Fatalf("after the failover the lock key is still there: %q, %v", v, err)
	}
	if v, err := rc.Get(ctx, "before-cut").Result(); err != nil || v != "1" {
		t.Fatalf("the key written before the cut was lost too: %q, %v", v, err)
	}
}

// The primary role stands for whichever node Sentinel names when a fault starts: after a
// failover, a fault on "primary" strikes n2.
func TestSentinelPrimaryRoleFollowsTheFailover(t *testing.T) {
	topo := startFailover(t, "client-1")
	role := topo.Targets()[redis.Primary]
	mustOK(t, role.Pause())
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if err := process(t, node(t, topo, "n1")).WaitStopped(ctx); err != nil {
		t.Fatalf("pausing the primary role did not stop n1: %v", err)
	}
	mustOK(t, role.Resume())
	promoted, _ := killPrimaryAndWait(t, topo)
	mustOK(t, role.Kill())
	if err := ping(t, addr(promoted)); err == nil {
		t.Fatalf("killing the primary role left %s answering", promoted.Name())
	}
	mustOK(t, role.(nemesis.Restarter).Restart(ctx))
	mustOK(t, ping(t, addr(promoted)))
}

// Stop kills every process of the topology.
func TestSentinelStopKillsEverything(t *testing.T) {
	topo := startFailover(t, "client-1")
	var pids []int
	for _, name := range topo.Plan.Servers {
		pids = append(pids, pid(node(t, topo, name)))
	}
	mustOK(t, topo.Stop())
	for _, p := range pids {
		if !gone(p) {
			t.Errorf("pid %d still running after Stop", p)
		}
	}
	if err := topo.Link("client-1", "s1").Heal(); err == nil {
		t.Error("a link healed after Stop")
	}
}

// A crash-restarted replica replicates along its cuttable path again: it gets new writes, and
// stops getting them when that path is cut.
func TestSentinelReplicaRestartRejoinsThroughItsPath(t *testing.T) {
	topo := startFailover(t, "client-1")
	n2 := node(t, topo, "n2")
	rc := followingClient(t, topo, "client-1")
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	mustOK(t, topo.Targets()["n2"].(nemesis.Restarter).Restart(ctx))
	writeUntilOK(t, rc, "after-restart", "1")
	waitReplicated(t, n2, "after-restart", "1")
	cutReplication(t, topo, "n2")
	writeUntilOK(t, rc, "after-cut", "1")
	time.Sleep(200 * time.Millisecond)
	if got := mustDo(t, direct(t, n2), "GET", "after-cut"); got != nil {
		t.Fatalf("the restarted replica bypasses its path: it got %v across a cut", got)
	}
}
