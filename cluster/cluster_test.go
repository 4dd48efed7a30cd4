package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockcheck/lockcheck/internal/proc"
)

type quietRedisLog struct{}

func (quietRedisLog) Printf(context.Context, string, ...any) {}

func TestMain(m *testing.M) {
	redis.SetLogger(quietRedisLog{}) // dial failures are what the tests provoke
	code := m.Run()
	// A safety net: every test stops its cluster, but a panic must not leave servers behind.
	if err := proc.KillAll(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
}

func startCluster(t *testing.T, nodes int, clients ...string) *Cluster {
	t.Helper()
	return startClusterWith(t, Options{LockNodes: nodes, Clients: clients})
}

// startClusterWith starts a cluster with o, its Dir and Logger filled in, and stops it at the
// test's end.
func startClusterWith(t *testing.T, o Options) *Cluster {
	t.Helper()
	if err := CheckBinaries(); err != nil {
		t.Fatal(err)
	}
	o.Dir, o.Logger = t.TempDir(), testLogger()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	c, err := Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	return c
}

// testLogger logs everything to stderr with -v; otherwise it is nil (quiet).
func testLogger() *slog.Logger {
	if !testing.Verbose() {
		return nil
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// client returns a go-redis client that neither retries nor waits long: a failure shows at once.
func client(t *testing.T, addr string) *redis.Client {
	t.Helper()
	rc := redis.NewClient(&redis.Options{
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

func ping(t *testing.T, addr string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	return client(t, addr).Ping(ctx).Err()
}

func TestStartPingAndLinks(t *testing.T) {
	c := startCluster(t, 3, "client-1", "client-2")
	if len(c.Nodes) != 3 || c.Resource == nil {
		t.Fatalf("nodes %d, resource %v", len(c.Nodes), c.Resource)
	}
	for i, r := range c.Servers() {
		want := "n" + strconv.Itoa(i+1)
		if r == c.Resource {
			want = "resource"
		}
		if r.Name != want {
			t.Errorf("server %d named %q, want %q", i, r.Name, want)
		}
		if !strings.HasPrefix(r.Addr, "127.0.0.1:") {
			t.Errorf("%s listens on %s", r.Name, r.Addr)
		}
		if err := ping(t, r.Addr); err != nil {
			t.Errorf("PING %s direct: %v", r.Name, err)
		}
		if _, err := os.Stat(filepath.Join(r.Dir, "redis.log")); err != nil || r.LogFile != filepath.Join(r.Dir, "redis.log") {
			t.Errorf("%s log file: %v", r.Name, err)
		}
	}
	if got := len(c.Links()); got != 8 {
		t.Fatalf("%d links, want 8", got)
	}
	for _, l := range c.Links() {
		if l != c.Link(l.Client, l.Node) {
			t.Errorf("Link(%s, %s) is not the listed link", l.Client, l.Node)
		}
		if err := ping(t, l.Addr()); err != nil {
			t.Errorf("PING %s->%s via %s: %v", l.Client, l.Node, l.Addr(), err)
		}
	}
	if c.Link("client-3", "n1") != nil || c.Link("client-1", "n4") != nil {
		t.Error("Link of an unknown client or node is not nil")
	}

	ctx := t.Context()
	if err := client(t, c.Link("client-1", "n1").Addr()).Set(ctx, "k", "v1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if got, err := client(t, c.Node("n1").Addr).Get(ctx, "k").Result(); err != nil || got != "v1" {
		t.Fatalf("GET k on n1 = %q, %v; want v1", got, err)
	}
	if err := client(t, c.Node("n2").Addr).Get(ctx, "k").Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("GET k on n2 = %v, want nil (independent nodes)", err)
	}
}

func TestCutAndHeal(t *testing.T) {
	c := startCluster(t, 1, "client-1", "client-2")
	l := c.Link("client-1", "n1")
	addr := l.Addr()
	rc := client(t, addr)
	ctx := t.Context()
	if err := rc.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := l.Cut(); err != nil {
		t.Fatal(err)
	}
	if !l.IsCut() {
		t.Error("IsCut false after Cut")
	}
	if err := rc.Ping(ctx).Err(); err == nil {
		t.Fatal("PING on an open connection through a cut link succeeded")
	}
	if err := ping(t, addr); err == nil {
		t.Fatal("PING on a new connection through a cut link succeeded")
	}
	if err := l.Cut(); err != nil {
		t.Fatalf("second Cut: %v", err)
	}
	// The other client's link to the same node is not affected.
	if err := ping(t, c.Link("client-2", "n1").Addr()); err != nil {
		t.Fatalf("client-2 affected by client-1's cut: %v", err)
	}

	if err := l.Heal(); err != nil {
		t.Fatal(err)
	}
	if l.Addr() != addr {
		t.Fatalf("address changed on heal: %s -> %s", addr, l.Addr())
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
	if err := ping(t, addr); err != nil {
		t.Fatalf("PING after heal: %v", err)
	}
	if err := l.Heal(); err != nil {
		t.Fatalf("second Heal: %v", err)
	}
}

func TestToxics(t *testing.T) {
	c := startCluster(t, 1, "client-1")
	l := c.Link("client-1", "n1")
	rc := client(t, l.Addr())
	ctx := t.Context()
	if err := rc.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := l.AddToxic(`{"type":"latency","stream":"downstream","attributes":{"latency":100}}`); err != nil {
		t.Fatal(err)
	}
	if err := l.AddToxic(`{"type":"latency","stream":"downstream","attributes":{"latency":100}}`); err == nil {
		t.Error("adding the same toxic twice succeeded")
	}
	if err := l.AddToxic(`{"type":"nonsense"}`); err == nil {
		t.Error("unknown toxic type accepted")
	}
	start := time.Now()
	if err := rc.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 100*time.Millisecond {
		t.Errorf("PING through 100ms latency took %v", d)
	}
	if err := l.RemoveToxics(); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	if err := rc.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 90*time.Millisecond {
		t.Errorf("PING after RemoveToxics took %v", d)
	}
	// timeout 0 holds data forever; Stop must still finish (it removes toxics first).
	if err := l.AddToxic(`{"type":"timeout","attributes":{"timeout":0}}`); err != nil {
		t.Fatal(err)
	}
	if err := rc.Ping(ctx).Err(); err == nil {
		t.Error("PING through a timeout toxic succeeded")
	}
	done := make(chan error)
	go func() { done <- c.Stop() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Stop hangs with a timeout toxic in place")
	}
}

func TestPauseAndResume(t *testing.T) {
	c := startCluster(t, 1, "client-1")
	n1 := c.Node("n1")
	p := n1.Process()
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if err := p.WaitStopped(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ping(t, n1.Addr); err == nil {
		t.Fatal("PING to a paused node answered within 200ms")
	}
	if err := ping(t, c.Link("client-1", "n1").Addr()); err == nil {
		t.Fatal("PING through a link to a paused node answered within 200ms")
	}
	if err := p.Cont(); err != nil {
		t.Fatal(err)
	}
	if err := ping(t, n1.Addr); err != nil {
		t.Fatalf("PING after SIGCONT: %v", err)
	}
	if err := ping(t, c.Link("client-1", "n1").Addr()); err != nil {
		t.Fatalf("PING through the link after SIGCONT: %v", err)
	}
}

func TestKillAndRestart(t *testing.T) {
	c := startCluster(t, 2, "client-1")
	n2 := c.Node("n2")
	ctx := t.Context()
	if err := client(t, n2.Addr).Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	old := n2.Process()
	if err := old.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = old.Wait()
	if err := ping(t, n2.Addr); err == nil {
		t.Fatal("PING to a killed node answered")
	}
	if err := ping(t, c.Link("client-1", "n2").Addr()); err == nil {
		t.Fatal("PING through a link to a killed node answered")
	}
	addr := n2.Addr
	if err := n2.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if n2.Addr != addr || n2.Process() == old || n2.Process().Pid() == old.Pid() {
		t.Fatalf("restart: addr %s -> %s, pid %d -> %d", addr, n2.Addr, old.Pid(), n2.Process().Pid())
	}
	if err := ping(t, n2.Addr); err != nil {
		t.Fatal(err)
	}
	if err := client(t, c.Link("client-1", "n2").Addr()).Get(ctx, "k").Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("GET k after restart = %v, want nil (nothing persisted)", err)
	}
	// Restart of a running server is a crash-restart.
	running := n2.Process()
	if err := n2.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-running.Exited():
	default:
		t.Fatal("Restart left the previous process running")
	}
	if err := ping(t, n2.Addr); err != nil {
		t.Fatal(err)
	}
}

// If someone else took the port while the node was down, Restart fails with the log's reason
// rather than answering from the wrong server, and works once the port is free again.
func TestRestartPortTaken(t *testing.T) {
	c := startCluster(t, 1)
	n1 := c.Node("n1")
	p := n1.Process()
	_ = p.Kill()
	_ = p.Wait()
	ln, err := net.Listen("tcp", n1.Addr)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := n1.Restart(ctx); !errors.Is(err, errPortInUse) {
		t.Fatalf("Restart on a taken port = %v, want errPortInUse", err)
	}
	ln.Close()
	if err := n1.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ping(t, n1.Addr); err != nil {
		t.Fatal(err)
	}
}

// A port picked free but taken by the time redis-server binds it: the start moves to another.
func TestStartRetriesTakenPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	taken := ln.Addr().(*net.TCPAddr).Port
	calls := 0
	pickPort = func() (int, error) {
		calls++
		if calls == 1 {
			return taken, nil
		}
		return freePort()
	}
	t.Cleanup(func() { pickPort = freePort })
	c := startCluster(t, 0)
	if c.Resource.Addr == ln.Addr().String() || calls != 2 {
		t.Fatalf("resource on %s after %d port picks", c.Resource.Addr, calls)
	}
	if err := ping(t, c.Resource.Addr); err != nil {
		t.Fatal(err)
	}
}

// A start cut short by its context leaves nothing running.
func TestStartCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := Start(ctx, Options{Dir: t.TempDir(), LockNodes: 3, Clients: []string{"c"}}); err == nil {
		t.Fatal("Start with a cancelled context succeeded")
	} else {
		t.Log(err)
	}
	if live := proc.Live(); len(live) != 0 {
		t.Fatalf("%d processes left running", len(live))
	}
}

func TestReadyCheckWantsOurPid(t *testing.T) {
	c := startCluster(t, 1)
	n1 := c.Node("n1")
	if err := pingCheck(t.Context(), n1.Addr, n1.Process().Pid()); err != nil {
		t.Fatal(err)
	}
	if err := pingCheck(t.Context(), n1.Addr, n1.Process().Pid()+1); err == nil {
		t.Fatal("ready check accepted a server with another pid")
	}
}

func TestStopKillsEverything(t *testing.T) {
	c := startCluster(t, 3, "client-1", "client-2")
	var pids []int
	for _, r := range c.Servers() {
		pids = append(pids, r.Process().Pid())
	}
	// A paused server must die too.
	if err := c.Nodes[0].Process().Stop(); err != nil {
		t.Fatal(err)
	}
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if st, err := proc.StateOf(pid); err == nil {
			t.Errorf("redis-server pid %d still there (state %c)", pid, st)
		}
	}
	for _, l := range c.Links() {
		if conn, err := net.DialTimeout("tcp", l.Addr(), 200*time.Millisecond); err == nil {
			conn.Close()
			t.Errorf("proxy %s still accepts connections", l.Addr())
		}
		if err := l.Heal(); err == nil {
			t.Errorf("Heal after Stop succeeded")
		}
	}
	if err := c.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if err := c.Nodes[1].Restart(t.Context()); err == nil {
		t.Fatal("Restart after Stop succeeded")
	}
}

func TestStartFiveNodesTime(t *testing.T) {
	start := time.Now()
	c := startCluster(t, 5, "client-1", "client-2", "client-3")
	took := time.Since(start)
	t.Logf("5 lock nodes + resource, 3 clients (18 proxies): started in %v", took)
	if len(c.Links()) != 18 {
		t.Fatalf("%d links", len(c.Links()))
	}
	start = time.Now()
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	t.Logf("stopped in %v", time.Since(start))
}

func TestStartErrors(t *testing.T) {
	ctx := t.Context()
	if _, err := Start(ctx, Options{LockNodes: 1}); err == nil {
		t.Error("Start without Dir succeeded")
	}
	if _, err := Start(ctx, Options{Dir: t.TempDir(), LockNodes: 1, Clients: []string{"a", "a"}}); err == nil {
		t.Error("Start with a repeated client succeeded")
	}
}

func TestCheckBinariesEmptyPath(t *testing.T) {
	t.Setenv("PATH", "")
	err := CheckBinaries()
	if err == nil {
		t.Fatal("CheckBinaries with an empty PATH succeeded")
	}
	want := "redis-server not found in PATH: install the Debian package redis-server (apt-get install -y redis-server)"
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("CheckBinaries = %q, want it to contain %q", err, want)
	}
	if _, err := Start(t.Context(), Options{Dir: t.TempDir(), LockNodes: 1}); err == nil || !strings.Contains(err.Error(), "apt-get install") {
		t.Fatalf("Start with an empty PATH = %v", err)
	}
}
