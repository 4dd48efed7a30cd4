package redis_test

// The Redis lock service on the local provider, against real redis-server processes: nodes and
// each client's links, cuts and toxics on a client's link, pause, kill and restart, Stop leaving
// nothing behind, and the errors a bad start gets.

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/lockcheck/lockcheck/internal/proc"
	"github.com/lockcheck/lockcheck/internal/testmain"
	"github.com/lockcheck/lockcheck/internal/testredis"
	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/providers"
	"github.com/lockcheck/lockcheck/services"
	"github.com/lockcheck/lockcheck/services/redis"
)

func TestMain(m *testing.M) { testmain.Run(m) }

// lockDesign is the single-node design the tests plan their services for.
func lockDesign(t testing.TB) locks.Design {
	t.Helper()
	d, err := locks.Get("set-nx-px")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// start starts the Redis service spec asks for (Design: set-nx-px unless given) with a link per
// client, and stops it at the test's end.
func start(t testing.TB, spec services.Spec, clients ...string) *services.Topology {
	t.Helper()
	if spec.Design.Name == "" {
		spec.Design = lockDesign(t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	topo, err := services.StartKind(ctx, spec, services.Options{Dir: t.TempDir(), Clients: clients, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := topo.Stop(); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	return topo
}

// lockNodes starts lock nodes n1..nN (independent primaries) with a link per client.
func lockNodes(t testing.TB, n int, clients ...string) *services.Topology {
	t.Helper()
	return start(t, services.Spec{Nodes: n}, clients...)
}

// startResource starts a plain redis-server, as a run starts the protected resource's storage.
func startResource(t testing.TB) providers.Node { return testredis.Start(t, "resource") }

// testLogger logs everything to stderr with -v; otherwise nothing.
func testLogger() *slog.Logger {
	if !testing.Verbose() {
		return nil
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// node is the server name of topo.
func node(t testing.TB, topo *services.Topology, name string) providers.Node {
	t.Helper()
	n, ok := topo.Targets()[name].(providers.Node)
	if !ok {
		t.Fatalf("no server %s", name)
	}
	return n
}

// addr is a node's own client address (not through a link).
func addr(n providers.Node) string { return n.Addr(redis.ClientPort) }

func pid(n providers.Node) int { return n.(interface{ Pid() int }).Pid() }

// process is the running process of n.
func process(t testing.TB, n providers.Node) *proc.Process {
	t.Helper()
	want := pid(n)
	for _, p := range proc.Live() {
		if p.Pid() == want {
			return p
		}
	}
	t.Fatalf("%s: no live process with pid %d", n.Name(), want)
	return nil
}

// gone reports whether pid no longer exists (or is a zombie about to be reaped).
func gone(pid int) bool {
	st, err := proc.StateOf(pid)
	return err != nil || st == 'Z'
}

// kill SIGKILLs n and waits until its process is gone.
func kill(t testing.TB, n providers.Node) {
	t.Helper()
	p := process(t, n)
	if err := n.Kill(); err != nil {
		t.Fatal(err)
	}
	<-p.Exited()
}

// client returns a go-redis client that neither retries nor waits long: a failure shows at once.
func client(t testing.TB, addr string) *goredis.Client {
	t.Helper()
	rc := goredis.NewClient(&goredis.Options{
		Addr:                  addr,
		MaxRetries:            -1,
		DialTimeout:           200 * time.Millisecond,
		ReadTimeout:           200 * time.Millisecond,
		WriteTimeout:          200 * time.Millisecond,
		ContextTimeoutEnabled: true,
		PoolSize:              1,
		DisableIdentity:       true,
	})
	t.Cleanup(func() { rc.Close() })
	return rc
}

func ping(t testing.TB, addr string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	return client(t, addr).Ping(ctx).Err()
}

func mustOK(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestStartPingAndLinks(t *testing.T) {
	topo := lockNodes(t, 3, "client-1", "client-2")
	if want := []string{"n1", "n2", "n3"}; strings.Join(topo.Plan.Nodes, ",") != strings.Join(want, ",") ||
		strings.Join(topo.Plan.Servers, ",") != strings.Join(want, ",") {
		t.Fatalf("nodes %v, servers %v; want %v", topo.Plan.Nodes, topo.Plan.Servers, want)
	}
	if len(topo.Targets()) != 3 {
		t.Fatalf("targets %v", topo.Targets())
	}
	for _, name := range topo.Plan.Nodes {
		n := node(t, topo, name)
		if n.Name() != name || !strings.HasPrefix(addr(n), "127.0.0.1:") || topo.Instance.Upstream(name) != addr(n) {
			t.Errorf("%s: name %q, listens on %s, upstream %s", name, n.Name(), addr(n), topo.Instance.Upstream(name))
		}
		if err := ping(t, addr(n)); err != nil {
			t.Errorf("PING %s direct: %v", name, err)
		}
		if _, err := os.Stat(filepath.Join(n.Dir(), "redis.log")); err != nil {
			t.Errorf("%s log file: %v", name, err)
		}
	}
	if got := len(topo.Links.All()); got != 6 {
		t.Fatalf("%d links, want 6", got)
	}
	for _, l := range topo.Links.All() {
		if l != topo.Link(l.From, l.To) {
			t.Errorf("Link(%s, %s) is not the listed link", l.From, l.To)
		}
		if err := ping(t, l.Addr()); err != nil {
			t.Errorf("PING %s->%s via %s: %v", l.From, l.To, l.Addr(), err)
		}
	}
	if topo.Link("client-3", "n1") != nil || topo.Link("client-1", "n4") != nil {
		t.Error("Link of an unknown client or node is not nil")
	}
	// A client dials its own links, in node order.
	e := topo.Endpoints("client-2")
	for i, name := range topo.Plan.Nodes {
		if i >= len(e.Nodes) || e.Nodes[i] != topo.Link("client-2", name).Addr() {
			t.Fatalf("client-2's endpoints %v are not its links to n1..n3", e.Nodes)
		}
	}
	if e.Sentinel != nil {
		t.Error("independent primaries with a Sentinel endpoint")
	}

	ctx := t.Context()
	if err := client(t, topo.Link("client-1", "n1").Addr()).Set(ctx, "k", "v1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if got, err := client(t, addr(node(t, topo, "n1"))).Get(ctx, "k").Result(); err != nil || got != "v1" {
		t.Fatalf("GET k on n1 = %q, %v; want v1", got, err)
	}
	if err := client(t, addr(node(t, topo, "n2"))).Get(ctx, "k").Err(); !errors.Is(err, goredis.Nil) {
		t.Fatalf("GET k on n2 = %v, want nil (independent nodes)", err)
	}
}

// A cut of a client's link (the nemesis's partition) closes its open connections and refuses new
// ones, and touches no other client's link; a heal brings it back on the same address.
func TestCutAndHeal(t *testing.T) {
	topo := lockNodes(t, 1, "client-1", "client-2")
	l := topo.Link("client-1", "n1")
	addr := l.Addr()
	rc := client(t, addr)
	ctx := t.Context()
	mustOK(t, rc.Ping(ctx).Err())
	mustOK(t, topo.Cut("client-1", []string{"n1"}))
	if !l.IsCut() {
		t.Error("IsCut false after Cut")
	}
	if err := rc.Ping(ctx).Err(); err == nil {
		t.Fatal("PING on an open connection through a cut link succeeded")
	}
	if err := ping(t, addr); err == nil {
		t.Fatal("PING on a new connection through a cut link succeeded")
	}
	if err := topo.Cut("client-1", nil); err != nil {
		t.Fatalf("second Cut: %v", err)
	}
	// The other client's link to the same node is not affected.
	if err := ping(t, topo.Link("client-2", "n1").Addr()); err != nil {
		t.Fatalf("client-2 affected by client-1's cut: %v", err)
	}

	mustOK(t, topo.Heal("client-1", nil))
	if l.Addr() != addr || l.IsCut() {
		t.Fatalf("after heal: address %s -> %s, cut %v", addr, l.Addr(), l.IsCut())
	}
	// A fresh connection works at once.
	if err := ping(t, addr); err != nil {
		t.Fatalf("PING after heal: %v", err)
	}
	// The old client too, eventually: after a failed dial go-redis's pool returns the last dial
	// error until its background re-dial (once a second) succeeds.
	var err error
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if err = rc.Ping(ctx).Err(); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("PING with the same client after heal: %v", err)
	}
	if err := topo.Heal("client-1", []string{"n1"}); err != nil {
		t.Fatalf("second Heal: %v", err)
	}
	if err := topo.Cut("client-9", nil); err == nil {
		t.Error("Cut of an unknown client succeeded")
	}
}

func TestToxics(t *testing.T) {
	topo := lockNodes(t, 1, "client-1")
	l := topo.Link("client-1", "n1")
	rc := client(t, l.Addr())
	ctx := t.Context()
	mustOK(t, rc.Ping(ctx).Err())
	mustOK(t, l.AddToxic(`{"type":"latency","stream":"downstream","attributes":{"latency":100}}`))
	if err := l.AddToxic(`{"type":"latency","stream":"downstream","attributes":{"latency":100}}`); err == nil {
		t.Error("adding the same toxic twice succeeded")
	}
	if err := l.AddToxic(`{"type":"nonsense"}`); err == nil {
		t.Error("unknown toxic type accepted")
	}
	began := time.Now()
	mustOK(t, rc.Ping(ctx).Err())
	if d := time.Since(began); d < 100*time.Millisecond {
		t.Errorf("PING through 100ms latency took %v", d)
	}
	mustOK(t, l.RemoveToxics())
	began = time.Now()
	mustOK(t, rc.Ping(ctx).Err())
	if d := time.Since(began); d > 90*time.Millisecond {
		t.Errorf("PING after RemoveToxics took %v", d)
	}
	// The nemesis's delay holds back what the client sends; Heal removes it.
	mustOK(t, topo.Delay("client-1", nil, 150*time.Millisecond, 0))
	began = time.Now()
	mustOK(t, rc.Ping(ctx).Err())
	if d := time.Since(began); d < 150*time.Millisecond {
		t.Errorf("PING through a 150ms delay took %v", d)
	}
	mustOK(t, topo.Heal("client-1", nil))
	began = time.Now()
	mustOK(t, rc.Ping(ctx).Err())
	if d := time.Since(began); d > 90*time.Millisecond {
		t.Errorf("PING after the delay was healed took %v", d)
	}
	// timeout 0 holds data forever; Stop must still finish (it removes toxics first).
	mustOK(t, l.AddToxic(`{"type":"timeout","attributes":{"timeout":0}}`))
	if err := rc.Ping(ctx).Err(); err == nil {
		t.Error("PING through a timeout toxic succeeded")
	}
	done := make(chan error)
	go func() { done <- topo.Stop() }()
	select {
	case err := <-done:
		mustOK(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("Stop hangs with a timeout toxic in place")
	}
}

func TestPauseAndResume(t *testing.T) {
	topo := lockNodes(t, 1, "client-1")
	n1 := node(t, topo, "n1")
	p := process(t, n1)
	mustOK(t, n1.Pause())
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	mustOK(t, p.WaitStopped(ctx))
	if err := ping(t, addr(n1)); err == nil {
		t.Fatal("PING to a paused node answered within 200ms")
	}
	if err := ping(t, topo.Link("client-1", "n1").Addr()); err == nil {
		t.Fatal("PING through a link to a paused node answered within 200ms")
	}
	mustOK(t, n1.Resume())
	if err := ping(t, addr(n1)); err != nil {
		t.Fatalf("PING after SIGCONT: %v", err)
	}
	if err := ping(t, topo.Link("client-1", "n1").Addr()); err != nil {
		t.Fatalf("PING through the link after SIGCONT: %v", err)
	}
}

func TestKillAndRestart(t *testing.T) {
	topo := lockNodes(t, 2, "client-1")
	n2 := node(t, topo, "n2")
	ctx := t.Context()
	mustOK(t, client(t, addr(n2)).Set(ctx, "k", "v", 0).Err())
	old := process(t, n2)
	kill(t, n2)
	if err := ping(t, addr(n2)); err == nil {
		t.Fatal("PING to a killed node answered")
	}
	if err := ping(t, topo.Link("client-1", "n2").Addr()); err == nil {
		t.Fatal("PING through a link to a killed node answered")
	}
	before := addr(n2)
	mustOK(t, n2.Restart(ctx))
	if addr(n2) != before || pid(n2) == old.Pid() {
		t.Fatalf("restart: addr %s -> %s, pid %d -> %d", before, addr(n2), old.Pid(), pid(n2))
	}
	mustOK(t, ping(t, addr(n2)))
	if err := client(t, topo.Link("client-1", "n2").Addr()).Get(ctx, "k").Err(); !errors.Is(err, goredis.Nil) {
		t.Fatalf("GET k after restart = %v, want nil (nothing persisted)", err)
	}
	// Restart of a running server is a crash-restart.
	running := process(t, n2)
	mustOK(t, n2.Restart(ctx))
	select {
	case <-running.Exited():
	default:
		t.Fatal("Restart left the previous process running")
	}
	mustOK(t, ping(t, addr(n2)))
}

func TestStopKillsEverything(t *testing.T) {
	topo := lockNodes(t, 3, "client-1", "client-2")
	var pids []int
	for _, name := range topo.Plan.Nodes {
		pids = append(pids, pid(node(t, topo, name)))
	}
	// A paused server must die too.
	n1 := node(t, topo, "n1")
	mustOK(t, n1.Pause())
	mustOK(t, topo.Stop())
	for _, pid := range pids {
		if !gone(pid) {
			t.Errorf("redis-server pid %d still there after Stop", pid)
		}
	}
	for _, l := range topo.Links.All() {
		if conn, err := net.DialTimeout("tcp", l.Addr(), 200*time.Millisecond); err == nil {
			conn.Close()
			t.Errorf("proxy %s still accepts connections", l.Addr())
		}
		if err := l.Heal(); err == nil {
			t.Errorf("Heal after Stop succeeded")
		}
	}
	if err := topo.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if err := node(t, topo, "n2").Restart(t.Context()); err == nil {
		t.Fatal("Restart after Stop succeeded")
	}
}

func TestStartFiveNodesTime(t *testing.T) {
	began := time.Now()
	topo := lockNodes(t, 5, "client-1", "client-2", "client-3")
	t.Logf("5 lock nodes, 3 clients (15 proxies): started in %v", time.Since(began))
	if n := len(topo.Links.All()); n != 15 {
		t.Fatalf("%d links", n)
	}
	began = time.Now()
	mustOK(t, topo.Stop())
	t.Logf("stopped in %v", time.Since(began))
}

func TestStartErrors(t *testing.T) {
	ctx := t.Context()
	plan, err := services.MustPlan(services.Spec{Design: lockDesign(t), Nodes: 1})
	mustOK(t, err)
	if _, err := services.Start(ctx, plan, services.Options{}); err == nil {
		t.Error("Start without Dir succeeded")
	}
	if _, err := services.Start(ctx, plan, services.Options{Dir: t.TempDir(), Clients: []string{"a", "a"}}); err == nil {
		t.Error("Start with a repeated client succeeded")
	}
	if _, err := services.MustPlan(services.Spec{Design: lockDesign(t), Nodes: 10}); err == nil || !strings.Contains(err.Error(), "nodes: at most 9") {
		t.Errorf("10 nodes planned: %v", err)
	}
	redlock, err := locks.Get("redlock")
	mustOK(t, err)
	// A quorum design runs on any odd number of nodes from 3 (its 5 is a default); an even or
	// smaller number is refused, saying what it takes. MultiLock needs all its nodes: any number.
	for _, n := range []int{3, 5, 7} {
		if _, err := services.MustPlan(services.Spec{Design: redlock, Nodes: n}); err != nil {
			t.Errorf("redlock on %d nodes: %v", n, err)
		}
	}
	for _, n := range []int{1, 2, 4, 6} {
		if _, err := services.MustPlan(services.Spec{Design: redlock, Nodes: n}); err == nil ||
			!strings.Contains(err.Error(), "an odd number of nodes, 3 or more (3, 5, 7, ...); got") {
			t.Errorf("redlock on %d nodes planned: %v", n, err)
		}
	}
	multilock, err := locks.Get("multilock")
	mustOK(t, err)
	if _, err := services.MustPlan(services.Spec{Design: multilock, Nodes: 2}); err != nil {
		t.Errorf("multilock on 2 nodes: %v", err)
	}
	// Every other design still needs its own number.
	if _, err := services.MustPlan(services.Spec{Design: locks.Design{Name: "two", Nodes: 2}, Nodes: 1}); err == nil ||
		!strings.Contains(err.Error(), "two needs 2 node(s), got 1") {
		t.Errorf("a 2-node design on 1 node planned: %v", err)
	}

	t.Setenv("PATH", "")
	_, err = services.StartKind(ctx, services.Spec{Design: lockDesign(t), Nodes: 1}, services.Options{Dir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "apt-get install -y redis-server") {
		t.Fatalf("StartKind with an empty PATH = %v", err)
	}
	if live := proc.Live(); len(live) != 0 {
		t.Fatalf("%d processes left running", len(live))
	}
}

// A start cut short by its context leaves nothing running.
func TestStartCancelledLeavesNothing(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	for _, spec := range []services.Spec{{Nodes: 3}, {Nodes: 1, Server: redis.Settings{Replicas: 1}}} {
		spec.Design = lockDesign(t)
		if _, err := services.StartKind(ctx, spec, services.Options{Dir: t.TempDir(), Clients: []string{"c"}}); err == nil {
			t.Fatalf("%+v started with a cancelled context", spec)
		} else {
			t.Log(err)
		}
		if live := proc.Live(); len(live) != 0 {
			t.Fatalf("%d processes left running", len(live))
		}
	}
}

// ClockSkew reads a server's TIME: within milliseconds of the real clock for a fresh node.
func TestClockSkewOfATrueClock(t *testing.T) {
	n := startResource(t)
	d, err := redis.ClockSkew(t.Context(), addr(n))
	mustOK(t, err)
	if d.Abs() > 50*time.Millisecond {
		t.Fatalf("a fresh server's clock is %v off", d)
	}
	if _, err := redis.ClockSkew(t.Context(), "127.0.0.1:1"); err == nil {
		t.Error("ClockSkew of nothing succeeded")
	}
}

// Leases are the run's keys that expire, on every primary, with what is left of each; a key
// without a time to live and another run's key are not.
func TestLeasesAreTheRunsKeysWithATimeToLive(t *testing.T) {
	topo := lockNodes(t, 2)
	ctx := t.Context()
	mustOK(t, client(t, addr(node(t, topo, "n1"))).Set(ctx, "lockcheck:run-3:lock", "a", 7*time.Second).Err())
	mustOK(t, client(t, addr(node(t, topo, "n2"))).Set(ctx, "lockcheck:run-3:lock", "a", 5*time.Second).Err())
	mustOK(t, client(t, addr(node(t, topo, "n2"))).Set(ctx, "lockcheck:run-3:token", "1", 0).Err())
	mustOK(t, client(t, addr(node(t, topo, "n2"))).Set(ctx, "lockcheck:run-30:lock", "b", 9*time.Second).Err())
	ls, err := topo.Leases(ctx, "lockcheck:run-3:")
	if err != nil {
		t.Fatal(err)
	}
	left := map[string]time.Duration{}
	for _, l := range ls {
		if l.What != "key lockcheck:run-3:lock" || l.Granted != 0 {
			t.Errorf("lease %+v", l)
		}
		left[l.Server] = l.Length()
	}
	if len(ls) != 2 || left["n1"] <= 5*time.Second || left["n1"] > 7*time.Second || left["n2"] <= 3*time.Second || left["n2"] > 5*time.Second {
		t.Fatalf("leases %+v, want the lock's key on n1 (7s) and n2 (5s)", ls)
	}
}
