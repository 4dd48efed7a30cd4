package cluster

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/lockcheck/lockcheck/internal/proc"
)

type quietZKLog struct{}

func (quietZKLog) Printf(string, ...any) {}

// startZK starts servers ZooKeeper servers for the test and stops them at its end, checking that
// no java process of theirs is left.
func startZK(t *testing.T, servers int, clients ...string) *ZooKeeper {
	t.Helper()
	if err := CheckZooKeeper(); err != nil {
		t.Fatalf("%v (scripts/install-deps.sh installs it)", err)
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	began := time.Now()
	z, err := StartZooKeeper(ctx, ZooKeeperOptions{Dir: dir, Servers: servers, Clients: clients, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d ZooKeeper server(s) ready in %v", servers, time.Since(began).Round(time.Millisecond))
	t.Cleanup(func() {
		if err := z.Stop(); err != nil {
			t.Errorf("Stop: %v", err)
		}
		if pids := proc.Mentioning(dir); len(pids) > 0 {
			t.Errorf("java processes of this ensemble left after Stop: %v", pids)
		}
	})
	return z
}

// zkEvents records a go-zookeeper connection's session events.
type zkEvents struct {
	mu     sync.Mutex
	states []zk.State
}

func (e *zkEvents) add(ev zk.Event) {
	if ev.Type != zk.EventSession {
		return
	}
	e.mu.Lock()
	e.states = append(e.states, ev.State)
	e.mu.Unlock()
}

func (e *zkEvents) saw(s zk.State) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, x := range e.states {
		if x == s {
			return true
		}
	}
	return false
}

// zkConnect connects a go-zookeeper client to addrs and waits for its session.
func zkConnect(t *testing.T, addrs []string, sessionTimeout time.Duration) (*zk.Conn, *zkEvents) {
	t.Helper()
	ev := &zkEvents{}
	c, _, err := zk.Connect(addrs, sessionTimeout, zk.WithLogger(quietZKLog{}), zk.WithEventCallback(ev.add))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	waitFor(t, 10*time.Second, "session on "+strings.Join(addrs, ","), func() bool { return c.State() == zk.StateHasSession })
	return c, ev
}

// waitFor polls cond until it holds or d passes, and returns how long it took.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	began := time.Now()
	for !cond() {
		if time.Since(began) > d {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return time.Since(began)
}

// retryWrite creates path until it succeeds (a client may be reconnecting to another server).
func retryWrite(t *testing.T, c *zk.Conn, path string, d time.Duration) {
	t.Helper()
	var err error
	for began := time.Now(); time.Since(began) < d; time.Sleep(20 * time.Millisecond) {
		if _, err = c.Create(path, []byte("x"), 0, zk.WorldACL(zk.PermAll)); err == nil || errors.Is(err, zk.ErrNodeExists) {
			return
		}
	}
	t.Fatalf("create %s: %v", path, err)
}

// directServerConnections lists the TCP connections that join two ZooKeeper processes of z
// directly, bypassing the proxies.
func directServerConnections(t *testing.T, z *ZooKeeper) []string {
	t.Helper()
	type sock struct {
		server        string
		local, remote string
	}
	// IPv4-mapped IPv6 endpoints (Java's sockets) and IPv4 ones compare equal.
	norm := func(ep string) string {
		if len(ep) == 37 && strings.HasPrefix(ep, "0000000000000000FFFF0000") {
			return ep[24:]
		}
		return ep
	}
	var socks []sock
	owner := map[string]string{}
	var entries []tcpEntry
	for _, s := range z.Servers {
		p := s.Process()
		inodes, err := socketInodes(p.Pid())
		if err != nil {
			continue // not running
		}
		if entries == nil {
			entries = tcpEntries(p.Pid())
		}
		for _, e := range entries {
			if e.state == tcpEstablished && inodes[e.inode] {
				socks = append(socks, sock{s.Name, norm(e.local), norm(e.remote)})
				owner[norm(e.local)] = s.Name
			}
		}
	}
	var out []string
	for _, k := range socks {
		if o, ok := owner[k.remote]; ok && o != k.server {
			out = append(out, k.server+"<->"+o)
		}
	}
	return out
}

func vmRSS(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			if err != nil {
				t.Fatal(err)
			}
			return kb
		}
	}
	t.Fatalf("no VmRSS for pid %d", pid)
	return 0
}

func TestZooKeeperStandalone(t *testing.T) {
	z := startZK(t, 1, "client-1")
	if len(z.Servers) != 1 || z.Servers[0].Name != "zk1" || z.Server("zk1") != z.Servers[0] {
		t.Fatalf("servers %+v", z.Servers)
	}
	s := z.Servers[0]
	if !strings.HasPrefix(s.ClientAddr, "127.0.0.1:") || s.QuorumAddr != "" || s.ElectionAddr != "" {
		t.Errorf("addresses: client %q quorum %q election %q", s.ClientAddr, s.QuorumAddr, s.ElectionAddr)
	}
	for _, f := range []string{s.ConfigFile, s.LogFile, filepath.Join(s.DataDir, "myid")} {
		if _, err := os.Stat(f); err != nil || !strings.HasPrefix(f, s.Dir) {
			t.Errorf("%s: %v", f, err)
		}
	}
	ctx := t.Context()
	if m, err := s.Mode(ctx); err != nil || m != "standalone" {
		t.Fatalf("mode %q, %v", m, err)
	}
	if l, err := z.Leader(ctx); err != nil || l != s {
		t.Fatalf("Leader = %v, %v", l, err)
	}
	if len(z.QuorumLinks()) != 0 || z.QuorumLink("zk1", "zk1") != nil {
		t.Error("a standalone server has quorum links")
	}
	addrs := z.ConnectString("client-1")
	l := z.Link("client-1", "zk1")
	if len(addrs) != 1 || l == nil || addrs[0] != l.Addr() || addrs[0] == s.ClientAddr {
		t.Fatalf("ConnectString %v, link %v", addrs, l)
	}
	if z.ConnectString("client-2") != nil || z.Link("client-2", "zk1") != nil {
		t.Error("unknown client has links")
	}

	c, _ := zkConnect(t, addrs, 2*time.Second)
	if _, err := c.Create("/lockcheck", []byte("v1"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if b, _, err := c.Get("/lockcheck"); err != nil || string(b) != "v1" {
		t.Fatalf("get = %q, %v", b, err)
	}

	// The client really goes through its link: cutting it disconnects the client, and after a
	// short cut the same session carries on.
	sid := c.SessionID()
	if err := l.Cut(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Second, "disconnect on cut", func() bool { return c.State() != zk.StateHasSession })
	if err := l.Heal(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "session after heal", func() bool { return c.State() == zk.StateHasSession })
	if c.SessionID() != sid {
		t.Errorf("session changed across a short cut: %x -> %x", sid, c.SessionID())
	}
	if b, _, err := c.Get("/lockcheck"); err != nil || string(b) != "v1" {
		t.Fatalf("get after heal = %q, %v", b, err)
	}

	// Restart of a running server is a crash-restart on the same port with the same data.
	old := s.Process()
	began := time.Now()
	if err := s.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("crash-restarted the standalone server in %v", time.Since(began).Round(time.Millisecond))
	select {
	case <-old.Exited():
	default:
		t.Fatal("old process still running after Restart")
	}
	if s.Process().Pid() == old.Pid() {
		t.Fatal("same pid after Restart")
	}
	c2, _ := zkConnect(t, addrs, 2*time.Second)
	if b, _, err := c2.Get("/lockcheck"); err != nil || string(b) != "v1" {
		t.Fatalf("get after restart = %q, %v", b, err)
	}
}

func TestZooKeeperEnsembleFailover(t *testing.T) {
	z := startZK(t, 3, "client-1")
	ctx := t.Context()
	modes := z.Modes(ctx)
	count := map[string]int{}
	for _, m := range modes {
		count[m]++
	}
	if count["leader"] != 1 || count["follower"] != 2 {
		t.Fatalf("modes %v", modes)
	}
	if n := len(z.QuorumLinks()); n != 6 {
		t.Fatalf("%d quorum links, want 6", n)
	}
	total := 0
	pids := map[int]bool{}
	for _, s := range z.Servers {
		kb := vmRSS(t, s.Process().Pid())
		total += kb
		pids[s.Process().Pid()] = true
		t.Logf("%s pid %d RSS %d MB", s.Name, s.Process().Pid(), kb/1024)
	}
	t.Logf("3-node ensemble RSS %d MB in total", total/1024)
	if total > 600*1024 {
		t.Errorf("3 servers use %d MB", total/1024)
	}

	old, err := z.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := zkConnect(t, z.ConnectString("client-1"), 5*time.Second)
	retryWrite(t, c, "/before", 5*time.Second)

	oldProc := old.Process()
	if err := oldProc.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = oldProc.Wait()
	began := time.Now()
	lctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	leader, err := z.Leader(lctx)
	if err != nil {
		t.Fatal(err)
	}
	if leader == old {
		t.Fatalf("%s still leader after being killed", old.Name)
	}
	t.Logf("killed leader %s; %s leads after %v", old.Name, leader.Name, time.Since(began).Round(time.Millisecond))
	retryWrite(t, c, "/after", 10*time.Second)

	began = time.Now()
	rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := old.Restart(rctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("restarted %s in %v", old.Name, time.Since(began).Round(time.Millisecond))
	if m, err := old.Mode(ctx); err != nil || m != "follower" {
		t.Fatalf("%s after restart: mode %q, %v", old.Name, m, err)
	}
	if old.Process() == oldProc || old.Process().Pid() == oldProc.Pid() {
		t.Fatal("Restart kept the old process")
	}
	pids[old.Process().Pid()] = true
	// It kept its data and caught up: read through a client that talks to it only.
	c2, _ := zkConnect(t, []string{z.Link("client-1", old.Name).Addr()}, 5*time.Second)
	if _, err := c2.Sync("/after"); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/before", "/after"} {
		if ok, _, err := c2.Exists(p); err != nil || !ok {
			t.Errorf("%s on restarted %s: exists %v, %v", p, old.Name, ok, err)
		}
	}
	if d := directServerConnections(t, z); len(d) > 0 {
		t.Errorf("direct connections between servers: %v", d)
	}

	if err := z.Stop(); err != nil {
		t.Fatal(err)
	}
	for pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("pid %d still exists after Stop (kill 0: %v)", pid, err)
		}
	}
	if err := z.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
	if err := old.Restart(ctx); err == nil {
		t.Error("Restart after Stop succeeded")
	}
}

func TestZooKeeperSessionExpiresWhenClientCutOff(t *testing.T) {
	z := startZK(t, 3, "client-1", "client-2")
	// 1s is the shortest session a 500ms tick allows (2 ticks).
	c1, ev1 := zkConnect(t, z.ConnectString("client-1"), time.Second)
	c2, _ := zkConnect(t, z.ConnectString("client-2"), 5*time.Second)
	sid1, sid2 := c1.SessionID(), c2.SessionID()
	if _, err := c1.Create("/lock", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}

	for _, s := range z.Servers {
		if err := z.Link("client-1", s.Name).Cut(); err != nil {
			t.Fatal(err)
		}
	}
	cut := time.Now()
	// The servers expire the session: the ephemeral node goes, as client-2 sees.
	d := waitFor(t, 10*time.Second, "ephemeral node of the cut-off client deleted", func() bool {
		ok, _, err := c2.Exists("/lock")
		return err == nil && !ok
	})
	t.Logf("client-1 cut off from all servers; its 1s session expired after %v", d.Round(time.Millisecond))
	if c1.State() == zk.StateHasSession {
		t.Error("client-1 still believes it has a session while cut off")
	}
	time.Sleep(time.Until(cut.Add(1500 * time.Millisecond)))
	for _, s := range z.Servers {
		if err := z.Link("client-1", s.Name).Heal(); err != nil {
			t.Fatal(err)
		}
	}
	// After the heal the client learns its session is gone (and go-zookeeper opens a new one).
	waitFor(t, 10*time.Second, "StateExpired on client-1", func() bool { return ev1.saw(zk.StateExpired) })
	waitFor(t, 10*time.Second, "new session on client-1", func() bool {
		return c1.State() == zk.StateHasSession && c1.SessionID() != sid1
	})
	if c2.SessionID() != sid2 || c2.State() != zk.StateHasSession {
		t.Errorf("client-2's session affected: %x -> %x, state %v", sid2, c2.SessionID(), c2.State())
	}
}

func TestZooKeeperQuorumSplit(t *testing.T) {
	z := startZK(t, 3, "client-1")
	ctx := t.Context()
	leader, err := z.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var isolated *ZKServer
	var majority []string
	for _, s := range z.Servers {
		if s != leader && isolated == nil {
			isolated = s
		} else {
			majority = append(majority, z.Link("client-1", s.Name).Addr())
		}
	}
	// Every zoo.cfg lists the other servers at proxies, never at their real ports.
	for _, s := range z.Servers {
		b, err := os.ReadFile(s.ConfigFile)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range z.Servers {
			if o == s {
				continue
			}
			for _, addr := range []string{o.QuorumAddr, o.ElectionAddr} {
				_, port, _ := strings.Cut(addr, ":")
				if strings.Contains(string(b), ":"+port+"\n") || strings.Contains(string(b), ":"+port+":") {
					t.Errorf("%s's zoo.cfg names %s's real port %s", s.Name, o.Name, port)
				}
			}
		}
	}

	for _, q := range z.QuorumLinks() {
		if q.From == isolated.Name || q.To == isolated.Name {
			if err := q.Cut(); err != nil {
				t.Fatal(err)
			}
		}
	}
	waitFor(t, 10*time.Second, isolated.Name+" stops serving when cut off", func() bool {
		_, err := isolated.Mode(ctx)
		return errors.Is(err, ErrNotServing)
	})
	c, _ := zkConnect(t, majority, 5*time.Second)
	for i := 0; i < 5; i++ {
		retryWrite(t, c, "/split-"+strconv.Itoa(i), 5*time.Second)
	}
	if l, err := z.Leader(ctx); err != nil || l != leader {
		t.Errorf("leader during the split: %v, %v (was %s)", l, err, leader.Name)
	}
	if _, err := isolated.Mode(ctx); !errors.Is(err, ErrNotServing) {
		t.Errorf("isolated %s serves: %v", isolated.Name, err)
	}
	if d := directServerConnections(t, z); len(d) > 0 {
		t.Errorf("direct connections between servers during the split: %v", d)
	}
	// A restart while cut off cannot finish: Restart says so and leaves the process running.
	before := isolated.Process()
	rctx, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
	defer cancel()
	if err := isolated.Restart(rctx); !errors.Is(err, ErrNotServing) {
		t.Fatalf("Restart of a cut-off server = %v, want ErrNotServing", err)
	}
	if p := isolated.Process(); p == before {
		t.Fatal("Restart kept the old process")
	} else if _, err := p.State(); err != nil {
		t.Fatalf("restarted process not running: %v", err)
	}

	for _, q := range z.QuorumLinks() {
		if err := q.Heal(); err != nil {
			t.Fatal(err)
		}
	}
	d := waitFor(t, 15*time.Second, isolated.Name+" follows again after heal", func() bool {
		m, err := isolated.Mode(ctx)
		return err == nil && m == "follower"
	})
	t.Logf("%s isolated and restarted, healed: follows again after %v", isolated.Name, d.Round(time.Millisecond))
	ci, _ := zkConnect(t, []string{z.Link("client-1", isolated.Name).Addr()}, 5*time.Second)
	if _, err := ci.Sync("/"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		if ok, _, err := ci.Exists("/split-" + strconv.Itoa(i)); err != nil || !ok {
			t.Errorf("/split-%d on %s after heal: %v, %v", i, isolated.Name, ok, err)
		}
	}
}

func TestZooKeeperNoDirectServerConnections(t *testing.T) {
	z := startZK(t, 3)
	// Give every pair time to have opened (and, for the lower id, been called back on) its
	// election connection; then every connection of a server must end at a proxy or relay.
	time.Sleep(500 * time.Millisecond)
	if d := directServerConnections(t, z); len(d) > 0 {
		t.Fatalf("direct connections between servers: %v", d)
	}
	// Isolating the leader cuts it off completely: the other two elect a new one.
	ctx := t.Context()
	leader, err := z.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range z.QuorumLinks() {
		if q.From == leader.Name || q.To == leader.Name {
			if err := q.Cut(); err != nil {
				t.Fatal(err)
			}
		}
	}
	lctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	began := time.Now()
	for {
		l, err := z.Leader(lctx)
		if err != nil {
			t.Fatalf("no new leader with the old one isolated: %v", err)
		}
		if l != leader {
			t.Logf("isolated leader %s; %s leads after %v", leader.Name, l.Name, time.Since(began).Round(time.Millisecond))
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := leader.Mode(ctx); !errors.Is(err, ErrNotServing) {
		t.Errorf("isolated old leader %s: %v", leader.Name, err)
	}
	if d := directServerConnections(t, z); len(d) > 0 {
		t.Fatalf("direct connections between servers: %v", d)
	}
}

func TestCheckZooKeeper(t *testing.T) {
	t.Run("no java", func(t *testing.T) {
		t.Setenv("PATH", "")
		err := CheckZooKeeper()
		if err == nil || !strings.Contains(err.Error(), "default-jre-headless") {
			t.Fatalf("CheckZooKeeper with an empty PATH = %v", err)
		}
		if _, err := StartZooKeeper(t.Context(), ZooKeeperOptions{Dir: t.TempDir()}); err == nil || !strings.Contains(err.Error(), "default-jre-headless") {
			t.Fatalf("StartZooKeeper with an empty PATH = %v", err)
		}
	})
	t.Run("no jar", func(t *testing.T) {
		old := zkJarDir
		zkJarDir = t.TempDir()
		defer func() { zkJarDir = old }()
		err := CheckZooKeeper()
		if err == nil || !strings.Contains(err.Error(), "apt-get install -y zookeeper") || !strings.Contains(err.Error(), "zookeeper.jar") {
			t.Fatalf("CheckZooKeeper without jars = %v", err)
		}
	})
	if _, err := os.Stat("/usr/share/java/zookeeper.jar"); err == nil {
		if err := CheckZooKeeper(); err != nil {
			t.Errorf("CheckZooKeeper on this machine: %v", err)
		}
	}
}
