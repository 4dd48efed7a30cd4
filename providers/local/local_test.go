package local

// The local provider against real redis-server processes (the NodeSpec the Redis service uses):
// a node's life (start, crash-restart, kill, stop), readiness that only counts the node's own
// process, ports taken by someone else at a first start or a restart, a cancelled start, Close
// leaving nothing behind, missing programs named with their Debian package, and paths between
// nodes through cuttable proxies.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/lockcheck/lockcheck/internal/proc"
	"github.com/lockcheck/lockcheck/internal/redisopt"
	"github.com/lockcheck/lockcheck/internal/testmain"
	"github.com/lockcheck/lockcheck/providers"
	"github.com/lockcheck/lockcheck/proxies"
	"github.com/lockcheck/lockcheck/services/redis"
)

func TestMain(m *testing.M) { testmain.Run(m) }

// newProvider makes a local provider with its own proxy set, both closed at the test's end.
func newProvider(t *testing.T) (*Provider, *proxies.Set) {
	t.Helper()
	links := proxies.New()
	p, err := New(providers.Options{Dir: t.TempDir(), Links: links})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = links.Stop()
		if err := p.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return p.(*Provider), links
}

// startRedis adds and starts spec, failing the test on error.
func startRedis(t *testing.T, p *Provider, spec providers.NodeSpec) *node {
	t.Helper()
	if err := p.Add(spec); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	n, err := p.Start(ctx, spec.Name)
	if err != nil {
		t.Fatal(err)
	}
	return n.(*node)
}

// ping answers whether a redis-server answers PING at addr within 200 ms.
func ping(t *testing.T, addr string) error {
	t.Helper()
	rc := goredis.NewClient(redisopt.Options(addr, 200*time.Millisecond))
	defer rc.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	return rc.Ping(ctx).Err()
}

func port(t *testing.T, addr string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// gone reports whether pid no longer exists (or is a zombie about to be reaped).
func gone(pid int) bool {
	st, err := proc.StateOf(pid)
	return err != nil || st == 'Z'
}

func TestNodeLifeStartCrashRestartKillStop(t *testing.T) {
	p, _ := newProvider(t)
	n := startRedis(t, p, redis.Spec("n1", false, "", nil))
	addr := n.Addr(redis.ClientPort)
	if n.Name() != "n1" || !strings.HasPrefix(addr, "127.0.0.1:") || n.Advertised(redis.ClientPort) != addr {
		t.Fatalf("name %q, addr %q, advertised %q", n.Name(), addr, n.Advertised(redis.ClientPort))
	}
	if n.Addr("nonsense") != "" {
		t.Error("Addr of an unknown port is not empty")
	}
	if want := filepath.Join(p.o.Dir, "servers", "n1"); n.Dir() != want {
		t.Errorf("Dir %s, want %s", n.Dir(), want)
	}
	if _, err := os.Stat(filepath.Join(n.Dir(), "redis.log")); err != nil {
		t.Errorf("log file: %v", err)
	}
	first := n.process()
	if ok, err := proc.ListensOn(first.Pid(), port(t, addr)); err != nil || !ok {
		t.Fatalf("pid %d does not listen on %s: %v", first.Pid(), addr, err)
	}
	if err := ping(t, addr); err != nil {
		t.Fatal(err)
	}

	// Restart of a running server is a crash-restart: the old process is gone, same port.
	if err := n.Restart(t.Context()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-first.Exited():
	default:
		t.Fatal("Restart left the previous process running")
	}
	second := n.process()
	if second.Pid() == first.Pid() || n.Addr(redis.ClientPort) != addr || n.Pid() != second.Pid() {
		t.Fatalf("restart: pid %d -> %d (Pid %d), addr %s -> %s", first.Pid(), second.Pid(), n.Pid(), addr, n.Addr(redis.ClientPort))
	}
	if err := ping(t, addr); err != nil {
		t.Fatal(err)
	}

	// Kill does not restart; Restart after a kill does.
	if err := n.Kill(); err != nil {
		t.Fatal(err)
	}
	<-second.Exited()
	if err := ping(t, addr); err == nil {
		t.Fatal("PING to a killed node answered")
	}
	if err := n.Restart(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := ping(t, addr); err != nil {
		t.Fatal(err)
	}

	// Stop is for good.
	last := n.process()
	if err := n.Stop(); err != nil {
		t.Fatal(err)
	}
	<-last.Exited()
	if err := n.Restart(t.Context()); err == nil {
		t.Fatal("Restart after Stop succeeded")
	}
	if err := n.Pause(); err == nil {
		// The process has exited: signalling it must fail rather than pretend.
		t.Error("Pause after Stop succeeded")
	}
}

// A port answered by someone else's process does not count: here the harness itself listens on
// the node's port (and answers the spec's Ready check), while the node's process never does.
func TestReadyWantsTheNodesOwnProcess(t *testing.T) {
	p, _ := newProvider(t)
	var mu sync.Mutex
	var impostor net.Listener
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		if impostor != nil {
			impostor.Close()
		}
	})
	spec := providers.NodeSpec{
		Name:  "x",
		Ports: []providers.Port{{Name: "client"}},
		Command: func(pl providers.Placement) ([]string, error) {
			l, err := net.Listen("tcp", hostPort(pl.Ports["client"]))
			if err != nil {
				return nil, err
			}
			go func() {
				for {
					c, err := l.Accept()
					if err != nil {
						return
					}
					c.Close()
				}
			}()
			mu.Lock()
			impostor = l
			mu.Unlock()
			return []string{"sleep", "60"}, nil
		},
		Ready: func(ctx context.Context, n providers.Node) error {
			c, err := net.DialTimeout("tcp", n.Addr("client"), 200*time.Millisecond)
			if err == nil {
				c.Close()
			}
			return err
		},
	}
	if err := p.Add(spec); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	_, err := p.Start(ctx, "x")
	if err == nil || !strings.Contains(err.Error(), "is not listened on by pid") {
		t.Fatalf("Start with the port answered by another process = %v, want a readiness failure naming the pid", err)
	}
	t.Log(err)
	for _, lp := range proc.Live() {
		if strings.Contains(strings.Join(lp.Cmd().Args, " "), "sleep 60") {
			t.Errorf("the node's process (pid %d) was left running after its failed start", lp.Pid())
		}
	}
}

// A port picked free but taken by the time redis-server binds it: the first start moves to fresh
// ports.
func TestFirstStartMovesOffATakenPort(t *testing.T) {
	p, _ := newProvider(t)
	spec := redis.Spec("n1", false, "", nil)
	inner := spec.Command
	var taken []net.Listener
	var ports []int
	spec.Command = func(pl providers.Placement) ([]string, error) {
		ports = append(ports, pl.Ports[redis.ClientPort])
		if len(ports) == 1 {
			l, err := net.Listen("tcp", hostPort(pl.Ports[redis.ClientPort]))
			if err != nil {
				return nil, fmt.Errorf("take the port: %w", err)
			}
			taken = append(taken, l)
		}
		return inner(pl)
	}
	t.Cleanup(func() {
		for _, l := range taken {
			l.Close()
		}
	})
	n := startRedis(t, p, spec)
	if len(ports) != 2 || ports[0] == ports[1] {
		t.Fatalf("ports tried: %v, want the taken one then a fresh one", ports)
	}
	if got := port(t, n.Addr(redis.ClientPort)); got != ports[1] {
		t.Fatalf("node on port %d, want %d", got, ports[1])
	}
	if err := ping(t, n.Addr(redis.ClientPort)); err != nil {
		t.Fatal(err)
	}
}

// At a restart the port cannot move (proxies point at it): a taken port fails the restart after a
// few tries with the log's reason, and is retried long enough to get it back when it frees.
func TestRestartKeepsItsPort(t *testing.T) {
	p, _ := newProvider(t)
	n := startRedis(t, p, redis.Spec("n1", false, "", nil))
	addr := n.Addr(redis.ClientPort)
	kill := func() {
		pr := n.process()
		if err := n.Kill(); err != nil {
			t.Fatal(err)
		}
		<-pr.Exited()
	}
	kill()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := n.Restart(ctx); !errors.Is(err, errPortInUse) {
		l.Close()
		t.Fatalf("Restart on a taken port = %v, want errPortInUse", err)
	}
	if err := ping(t, addr); err == nil {
		t.Fatal("something answers PING on the taken port")
	}

	// Freed while Restart retries: it gets its port back.
	time.AfterFunc(150*time.Millisecond, func() { l.Close() })
	if err := n.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if n.Addr(redis.ClientPort) != addr {
		t.Fatalf("port moved on restart: %s -> %s", addr, n.Addr(redis.ClientPort))
	}
	if ok, err := proc.ListensOn(n.Pid(), port(t, addr)); err != nil || !ok {
		t.Fatalf("restarted pid %d does not listen on %s: %v", n.Pid(), addr, err)
	}
	if err := ping(t, addr); err != nil {
		t.Fatal(err)
	}
}

// A start cut short by its context leaves nothing running.
func TestStartCancelledLeavesNothing(t *testing.T) {
	p, _ := newProvider(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	for _, name := range []string{"n1", "n2", "n3"} {
		if err := p.Add(redis.Spec(name, false, "", nil)); err != nil {
			t.Fatal(err)
		}
		if _, err := p.Start(ctx, name); err == nil {
			t.Fatalf("Start of %s with a cancelled context succeeded", name)
		} else {
			t.Log(err)
		}
	}
	if live := proc.Live(); len(live) != 0 {
		t.Fatalf("%d processes left running", len(live))
	}
}

// Close kills every node (a paused one too) and every relay; nothing restarts afterwards.
func TestCloseKillsEverything(t *testing.T) {
	p, _ := newProvider(t)
	var peerAddr string
	a := startRedis(t, p, redis.Spec("a", false, "", nil))
	b := startRedis(t, p, redis.Spec("b", false, "", func(pl providers.Placement) []string {
		peerAddr, _ = pl.Peer("a", redis.ClientPort)
		return nil
	}))
	if peerAddr == "" || len(p.relays) != 1 {
		t.Fatalf("no path from b to a (peer %q, %d relays)", peerAddr, len(p.relays))
	}
	relay := p.relays[0].Addr()
	pids := []int{a.Pid(), b.Pid()}
	if err := a.Pause(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if !gone(pid) {
			t.Errorf("redis-server pid %d still there after Close", pid)
		}
	}
	if c, err := net.DialTimeout("tcp", relay, 200*time.Millisecond); err == nil {
		c.Close()
		t.Errorf("relay %s still accepts connections", relay)
	}
	if err := b.Restart(t.Context()); err == nil {
		t.Error("Restart after Close succeeded")
	}
	if err := p.Add(redis.Spec("c", false, "", nil)); err == nil {
		t.Error("Add after Close succeeded")
	}
	if err := p.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestCheckNeedsNamesTheDebianPackage(t *testing.T) {
	needs := redis.Spec("n1", false, "", nil).Needs
	if err := CheckNeeds(needs); err != nil {
		t.Fatalf("CheckNeeds on this machine: %v", err)
	}
	missing := filepath.Join(t.TempDir(), "nothing.jar")
	if err := CheckNeeds([]providers.Need{{Path: missing, Package: "libnothing-java"}}); err == nil ||
		!strings.Contains(err.Error(), missing+" not found: install the Debian package libnothing-java (apt-get install -y libnothing-java)") {
		t.Fatalf("CheckNeeds of a missing file = %v", err)
	}

	t.Setenv("PATH", "")
	err := CheckNeeds(needs)
	want := "redis-server not found: install the Debian package redis-server (apt-get install -y redis-server)"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("CheckNeeds with an empty PATH = %v, want it to contain %q", err, want)
	}
	p, _ := newProvider(t)
	if err := p.Add(redis.Spec("n1", false, "", nil)); err == nil || !strings.Contains(err.Error(), "apt-get install -y redis-server") {
		t.Fatalf("Add with an empty PATH = %v", err)
	}
}

func TestBadRequestsAreRefused(t *testing.T) {
	p, _ := newProvider(t)
	spec := redis.Spec("n1", false, "", nil)
	for _, bad := range []providers.NodeSpec{
		{Command: spec.Command, Ports: spec.Ports},
		{Name: "x", Ports: spec.Ports},
		{Name: "x", Command: spec.Command},
	} {
		if err := p.Add(bad); err == nil {
			t.Errorf("Add(%+v) succeeded", bad)
		}
	}
	if err := p.Add(spec); err != nil {
		t.Fatal(err)
	}
	if err := p.Add(spec); err == nil {
		t.Error("a node added twice")
	}
	if _, err := p.Start(t.Context(), "n9"); err == nil {
		t.Error("Start of a node never added succeeded")
	}
	bad := redis.Spec("b", false, "", nil)
	bad.Command = func(pl providers.Placement) ([]string, error) {
		_, err := pl.Peer("n9", redis.ClientPort)
		return nil, err
	}
	if err := p.Add(bad); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Start(t.Context(), "b"); err == nil || !strings.Contains(err.Error(), `"n9"`) {
		t.Errorf("a path to a node never added = %v", err)
	}
	if err := p.CutPeers("n9", nil); err == nil {
		t.Error("CutPeers of an unknown node succeeded")
	}
	if err := p.CutPeers("n1", nil); err == nil {
		t.Error("CutPeers of a node without paths succeeded")
	}
	if _, err := New(providers.Options{}); err == nil {
		t.Error("New without a folder succeeded")
	}
}

// A path between two nodes (Placement.Peer) reaches the other node through a proxy the provider
// cuts and heals; the direct address (Placement.Direct) is the node's own.
func TestPeerPathsAreCutAndHealed(t *testing.T) {
	p, links := newProvider(t)
	a := startRedis(t, p, redis.Spec("a", false, "", nil))
	var peer, direct string
	var errs []error
	startRedis(t, p, redis.Spec("b", false, "", func(pl providers.Placement) []string {
		var err1, err2 error
		peer, err1 = pl.Peer("a", redis.ClientPort)
		direct, err2 = pl.Direct("a", redis.ClientPort)
		errs = append(errs, err1, err2)
		return nil
	}))
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	startRedis(t, p, redis.Spec("c", false, "", nil))
	if direct != a.Addr(redis.ClientPort) || peer == direct {
		t.Fatalf("peer %s, direct %s, a at %s", peer, direct, a.Addr(redis.ClientPort))
	}
	if l := links.Link("b", "a", redis.ClientPort); l == nil || l.Addr() != peer {
		t.Fatalf("the path b -> a is not a proxy of the set: %v", l)
	}
	if err := ping(t, peer); err != nil {
		t.Fatalf("PING a along b's path: %v", err)
	}
	if err := p.CutPeers("a", []string{"c"}); err == nil {
		t.Error("CutPeers between nodes without a path succeeded")
	}
	if err := p.CutPeers("a", nil); err != nil {
		t.Fatal(err)
	}
	if err := ping(t, peer); err == nil {
		t.Fatal("PING along a cut path answered")
	}
	if err := ping(t, a.Addr(redis.ClientPort)); err != nil {
		t.Fatalf("a itself stopped answering: %v", err)
	}
	if err := p.HealPeers("b", []string{"a"}); err != nil {
		t.Fatal(err)
	}
	if err := ping(t, peer); err != nil {
		t.Fatalf("PING along a healed path: %v", err)
	}
}
