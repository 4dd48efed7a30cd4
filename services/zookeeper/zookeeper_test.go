package zookeeper

// The ZooKeeper lock service on the local provider, against real servers (java, Debian's jars): a
// standalone server, an ensemble's failover, a client's session expiring while it is cut off, a
// quorum split, servers that never talk to each other around their proxies, peer cuts, and what a
// machine without java or the jars is told.

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/lockcheck/lockcheck/internal/proc"
	"github.com/lockcheck/lockcheck/internal/testmain"
	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/providers"
	"github.com/lockcheck/lockcheck/providers/local"
	"github.com/lockcheck/lockcheck/services"
)

func TestMain(m *testing.M) { testmain.Run(m) }

type quietZKLog struct{}

func (quietZKLog) Printf(string, ...any) {}

// testLogger logs everything to stderr with -v; otherwise nothing.
func testLogger() *slog.Logger {
	if !testing.Verbose() {
		return nil
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// startZK starts servers ZooKeeper servers (tickTime 500ms) with a link per client, and stops
// them at the test's end, checking that no java process of theirs is left.
func startZK(t testing.TB, servers int, clients ...string) (*services.Topology, *Ensemble) {
	t.Helper()
	if err := local.CheckNeeds(needs()); err != nil {
		t.Fatalf("%v (scripts/install-deps.sh installs it)", err)
	}
	d, err := locks.Get("zk")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	began := time.Now()
	topo, err := services.StartKind(ctx, services.Spec{Design: d, Nodes: servers},
		services.Options{Dir: dir, Clients: clients, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d ZooKeeper server(s) ready in %v", servers, time.Since(began).Round(time.Millisecond))
	t.Cleanup(func() {
		if err := topo.Stop(); err != nil {
			t.Errorf("Stop: %v", err)
		}
		if pids := proc.Mentioning(dir); len(pids) > 0 {
			t.Errorf("java processes of this ensemble left after Stop: %v", pids)
		}
	})
	return topo, topo.Instance.(*Ensemble)
}

func pid(n providers.Node) int { return n.(interface{ Pid() int }).Pid() }

// process is the running process of n.
func process(t *testing.T, n providers.Node) *proc.Process {
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

// restart restarts server name the way the nemesis does: it returns once the server serves.
func restart(ctx context.Context, topo *services.Topology, name string) error {
	return topo.Targets()[name].(nemesis.Restarter).Restart(ctx)
}

func mode(t *testing.T, n providers.Node) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	return Mode(ctx, n)
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
func directServerConnections(t *testing.T, z *Ensemble) []string {
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
	var entries []proc.TCPEntry
	for _, name := range z.Names() {
		p := pid(z.Server(name))
		inodes, err := proc.SocketInodes(p)
		if err != nil {
			continue // not running
		}
		if entries == nil {
			entries = proc.TCPEntries(p)
		}
		for _, e := range entries {
			if e.State == proc.TCPEstablished && inodes[e.Inode] {
				socks = append(socks, sock{name, norm(e.Local), norm(e.Remote)})
				owner[norm(e.Local)] = name
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

func vmRSS(t testing.TB, pid int) int {
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
	topo, z := startZK(t, 1, "client-1")
	if strings.Join(z.Names(), ",") != "zk1" || z.Server("zk1") == nil || z.Tick() != DefaultTick {
		t.Fatalf("servers %v, tick %v", z.Names(), z.Tick())
	}
	s := z.Server("zk1")
	if !strings.HasPrefix(s.Addr(ClientPort), "127.0.0.1:") || s.Addr(QuorumPort) != "" || s.Addr(ElectionPort) != "" {
		t.Errorf("addresses: client %q quorum %q election %q", s.Addr(ClientPort), s.Addr(QuorumPort), s.Addr(ElectionPort))
	}
	for _, f := range []string{"zoo.cfg", "zookeeper.log", filepath.Join("data", "myid")} {
		if _, err := os.Stat(filepath.Join(s.Dir(), f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	ctx := t.Context()
	if m, err := mode(t, s); err != nil || m != "standalone" {
		t.Fatalf("mode %q, %v", m, err)
	}
	if l, err := z.Leader(ctx); err != nil || l != s {
		t.Fatalf("Leader = %v, %v", l, err)
	}
	if len(topo.Links.From("zk1")) != 0 {
		t.Errorf("a standalone server has paths to peers: %v", topo.Links.From("zk1"))
	}
	if err := topo.Provider.CutPeers("zk1", nil); err == nil {
		t.Error("CutPeers of a standalone server succeeded")
	}
	addrs := topo.Endpoints("client-1").Nodes
	l := topo.Link("client-1", "zk1")
	if len(addrs) != 1 || l == nil || addrs[0] != l.Addr() || addrs[0] == s.Addr(ClientPort) {
		t.Fatalf("client-1 dials %v, link %v", addrs, l)
	}
	if topo.Link("client-2", "zk1") != nil {
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
	if err := topo.Cut("client-1", nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Second, "disconnect on cut", func() bool { return c.State() != zk.StateHasSession })
	if err := topo.Heal("client-1", nil); err != nil {
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
	old := process(t, s)
	began := time.Now()
	if err := restart(ctx, topo, "zk1"); err != nil {
		t.Fatal(err)
	}
	t.Logf("crash-restarted the standalone server in %v", time.Since(began).Round(time.Millisecond))
	select {
	case <-old.Exited():
	default:
		t.Fatal("old process still running after Restart")
	}
	if pid(s) == old.Pid() {
		t.Fatal("same pid after Restart")
	}
	c2, _ := zkConnect(t, addrs, 2*time.Second)
	if b, _, err := c2.Get("/lockcheck"); err != nil || string(b) != "v1" {
		t.Fatalf("get after restart = %q, %v", b, err)
	}
}

func TestZooKeeperEnsembleFailover(t *testing.T) {
	topo, z := startZK(t, 3, "client-1")
	ctx := t.Context()
	modes := z.Modes(ctx)
	count := map[string]int{}
	for _, m := range modes {
		count[m]++
	}
	if count["leader"] != 1 || count["follower"] != 2 {
		t.Fatalf("modes %v", modes)
	}
	// Each server reaches each other one on both its ports along its own path.
	paths := 0
	for _, from := range z.Names() {
		for _, l := range topo.Links.From(from) {
			if l.To == from || (l.Port != QuorumPort && l.Port != ElectionPort) {
				t.Errorf("unexpected path %s", l.Name())
			}
			paths++
		}
		for _, to := range z.Names() {
			if to != from && (topo.Links.Link(from, to, QuorumPort) == nil || topo.Links.Link(from, to, ElectionPort) == nil) {
				t.Errorf("no quorum or election path %s -> %s", from, to)
			}
		}
	}
	if paths != 12 {
		t.Fatalf("%d paths between servers, want 12 (6 ordered pairs, 2 ports)", paths)
	}
	total := 0
	pids := map[int]bool{}
	for _, name := range z.Names() {
		p := pid(z.Server(name))
		kb := vmRSS(t, p)
		total += kb
		pids[p] = true
		t.Logf("%s pid %d RSS %d MB", name, p, kb/1024)
	}
	t.Logf("3-node ensemble RSS %d MB in total", total/1024)
	if total > 600*1024 {
		t.Errorf("3 servers use %d MB", total/1024)
	}

	old, err := z.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := zkConnect(t, topo.Endpoints("client-1").Nodes, 5*time.Second)
	retryWrite(t, c, "/before", 5*time.Second)

	oldProc := process(t, old)
	if err := old.Kill(); err != nil {
		t.Fatal(err)
	}
	<-oldProc.Exited()
	began := time.Now()
	lctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	leader, err := z.Leader(lctx)
	if err != nil {
		t.Fatal(err)
	}
	if leader == old {
		t.Fatalf("%s still leader after being killed", old.Name())
	}
	t.Logf("killed leader %s; %s leads after %v", old.Name(), leader.Name(), time.Since(began).Round(time.Millisecond))
	retryWrite(t, c, "/after", 10*time.Second)

	began = time.Now()
	rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := restart(rctx, topo, old.Name()); err != nil {
		t.Fatal(err)
	}
	t.Logf("restarted %s in %v", old.Name(), time.Since(began).Round(time.Millisecond))
	if m, err := mode(t, old); err != nil || m != "follower" {
		t.Fatalf("%s after restart: mode %q, %v", old.Name(), m, err)
	}
	if pid(old) == oldProc.Pid() {
		t.Fatal("Restart kept the old process")
	}
	pids[pid(old)] = true
	// It kept its data and caught up: read through a client that talks to it only.
	c2, _ := zkConnect(t, []string{topo.Link("client-1", old.Name()).Addr()}, 5*time.Second)
	if _, err := c2.Sync("/after"); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/before", "/after"} {
		if ok, _, err := c2.Exists(p); err != nil || !ok {
			t.Errorf("%s on restarted %s: exists %v, %v", p, old.Name(), ok, err)
		}
	}
	if d := directServerConnections(t, z); len(d) > 0 {
		t.Errorf("direct connections between servers: %v", d)
	}

	if err := topo.Stop(); err != nil {
		t.Fatal(err)
	}
	for p := range pids {
		if !gone(p) {
			t.Errorf("pid %d still exists after Stop", p)
		}
	}
	if err := topo.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
	if err := restart(ctx, topo, old.Name()); err == nil {
		t.Error("Restart after Stop succeeded")
	}
}

func TestZooKeeperSessionExpiresWhenClientCutOff(t *testing.T) {
	topo, _ := startZK(t, 3, "client-1", "client-2")
	// 1s is the shortest session a 500ms tick allows (2 ticks).
	c1, ev1 := zkConnect(t, topo.Endpoints("client-1").Nodes, time.Second)
	c2, _ := zkConnect(t, topo.Endpoints("client-2").Nodes, 5*time.Second)
	sid1, sid2 := c1.SessionID(), c2.SessionID()
	if _, err := c1.Create("/lock", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}

	if err := topo.Cut("client-1", nil); err != nil {
		t.Fatal(err)
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
	if err := topo.Heal("client-1", nil); err != nil {
		t.Fatal(err)
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
	topo, z := startZK(t, 3, "client-1")
	ctx := t.Context()
	leader, err := z.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var isolated providers.Node
	var majority []string
	for _, name := range z.Names() {
		if s := z.Server(name); s != leader && isolated == nil {
			isolated = s
		} else {
			majority = append(majority, topo.Link("client-1", name).Addr())
		}
	}
	// Every zoo.cfg lists the other servers at paths, never at their real ports.
	for _, name := range z.Names() {
		s := z.Server(name)
		b, err := os.ReadFile(filepath.Join(s.Dir(), "zoo.cfg"))
		if err != nil {
			t.Fatal(err)
		}
		for _, other := range z.Names() {
			if other == name {
				continue
			}
			o := z.Server(other)
			for _, addr := range []string{o.Addr(QuorumPort), o.Addr(ElectionPort)} {
				_, port, _ := strings.Cut(addr, ":")
				if strings.Contains(string(b), ":"+port+"\n") || strings.Contains(string(b), ":"+port+":") {
					t.Errorf("%s's zoo.cfg names %s's real port %s", name, other, port)
				}
			}
		}
	}

	// The nemesis's partition of a server: every path between it and its peers, both ways.
	if err := topo.Cut(isolated.Name(), nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, isolated.Name()+" stops serving when cut off", func() bool {
		_, err := mode(t, isolated)
		return errors.Is(err, ErrNotServing)
	})
	c, _ := zkConnect(t, majority, 5*time.Second)
	for i := 0; i < 5; i++ {
		retryWrite(t, c, "/split-"+strconv.Itoa(i), 5*time.Second)
	}
	if l, err := z.Leader(ctx); err != nil || l != leader {
		t.Errorf("leader during the split: %v, %v (was %s)", l, err, leader.Name())
	}
	if _, err := mode(t, isolated); !errors.Is(err, ErrNotServing) {
		t.Errorf("isolated %s serves: %v", isolated.Name(), err)
	}
	if d := directServerConnections(t, z); len(d) > 0 {
		t.Errorf("direct connections between servers during the split: %v", d)
	}
	// A restart while cut off cannot finish: Restart says so and leaves the process running.
	before := pid(isolated)
	rctx, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
	defer cancel()
	if err := restart(rctx, topo, isolated.Name()); !errors.Is(err, ErrNotServing) {
		t.Fatalf("Restart of a cut-off server = %v, want ErrNotServing", err)
	}
	if p := pid(isolated); p == before {
		t.Fatal("Restart kept the old process")
	} else if _, err := proc.StateOf(p); err != nil || gone(p) {
		t.Fatalf("restarted process not running: %v", err)
	}

	if err := topo.Heal(isolated.Name(), nil); err != nil {
		t.Fatal(err)
	}
	d := waitFor(t, 15*time.Second, isolated.Name()+" follows again after heal", func() bool {
		m, err := mode(t, isolated)
		return err == nil && m == "follower"
	})
	t.Logf("%s isolated and restarted, healed: follows again after %v", isolated.Name(), d.Round(time.Millisecond))
	ci, _ := zkConnect(t, []string{topo.Link("client-1", isolated.Name()).Addr()}, 5*time.Second)
	if _, err := ci.Sync("/"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		if ok, _, err := ci.Exists("/split-" + strconv.Itoa(i)); err != nil || !ok {
			t.Errorf("/split-%d on %s after heal: %v, %v", i, isolated.Name(), ok, err)
		}
	}
}

func TestZooKeeperNoDirectServerConnections(t *testing.T) {
	topo, z := startZK(t, 3)
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
	if err := topo.Cut(leader.Name(), nil); err != nil {
		t.Fatal(err)
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
			t.Logf("isolated leader %s; %s leads after %v", leader.Name(), l.Name(), time.Since(began).Round(time.Millisecond))
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := mode(t, leader); !errors.Is(err, ErrNotServing) {
		t.Errorf("isolated old leader %s: %v", leader.Name(), err)
	}
	if d := directServerConnections(t, z); len(d) > 0 {
		t.Fatalf("direct connections between servers: %v", d)
	}
}

// CutPeers isolates the leader from both followers: it stops serving, the other two elect a new
// leader without it, and after HealPeers it rejoins as a follower.
// A partition of the leader role cuts whichever server leads when it starts from its peers, and
// its heal heals that same server, though another leads by then.
func TestZooKeeperPartitionOfTheLeaderIsolatesItUntilHealed(t *testing.T) {
	topo, z := startZK(t, 3, "client-1")
	ctx := t.Context()
	old, err := z.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := topo.Cut(Leader, nil); err != nil {
		t.Fatal(err)
	}
	var links []string
	for _, peer := range z.Names() {
		if peer == old.Name() {
			continue
		}
		for _, l := range topo.Links.Between(old.Name(), peer) {
			links = append(links, l.Name())
			if !l.IsCut() {
				t.Errorf("%s not cut", l.Name())
			}
		}
	}
	if len(links) != 8 {
		t.Fatalf("%d paths between %s and its 2 peers, want 8 (both directions, quorum and election): %v", len(links), old.Name(), links)
	}
	if l := topo.Link("client-1", old.Name()); l.IsCut() {
		t.Error("cutting a server from its peers cut a client's link")
	}
	waitFor(t, 15*time.Second, old.Name()+" stops serving when cut from its peers", func() bool {
		_, err := mode(t, old)
		return errors.Is(err, ErrNotServing)
	})
	lctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	now, err := z.Leader(lctx)
	if err != nil {
		t.Fatal(err)
	}
	if now == old {
		t.Fatalf("%s still leads while isolated", old.Name())
	}
	if d := directServerConnections(t, z); len(d) > 0 {
		t.Errorf("direct connections between servers during the cut: %v", d)
	}

	if err := topo.Heal(Leader, nil); err != nil {
		t.Fatal(err)
	}
	for _, l := range topo.Links.All() {
		if l.IsCut() {
			t.Errorf("%s still cut after the heal", l.Name())
		}
	}
	d := waitFor(t, 20*time.Second, old.Name()+" follows again after the heal", func() bool {
		m, err := mode(t, old)
		return err == nil && m == "follower"
	})
	t.Logf("leader %s isolated: %s took over; healed, %s follows again after %v", old.Name(), now.Name(), old.Name(), d.Round(time.Millisecond))
}

func TestZooKeeperCutPeersRefusesUnknownServers(t *testing.T) {
	topo, _ := startZK(t, 3)
	if err := topo.Provider.CutPeers("zk9", nil); err == nil {
		t.Error("CutPeers of an unknown server succeeded")
	}
	if err := topo.Provider.CutPeers("zk1", []string{"zk1"}); err == nil {
		t.Error("CutPeers of a server from itself succeeded")
	}
	if err := topo.Provider.CutPeers("zk1", []string{"zk9"}); err == nil {
		t.Error("CutPeers of a server from an unknown one succeeded")
	}
	if err := topo.Cut("zk9", nil); err == nil {
		t.Error("a partition of an unknown target succeeded")
	}
	for _, l := range topo.Links.All() {
		if l.IsCut() {
			t.Errorf("a refused CutPeers cut %s", l.Name())
		}
	}
}

func TestZooKeeperNeedsNameTheirPackages(t *testing.T) {
	d, err := locks.Get("zk")
	if err != nil {
		t.Fatal(err)
	}
	t.Run("no java", func(t *testing.T) {
		t.Setenv("PATH", "")
		err := local.CheckNeeds(needs())
		if err == nil || !strings.Contains(err.Error(), "apt-get install -y default-jre-headless") {
			t.Fatalf("CheckNeeds with an empty PATH = %v", err)
		}
		_, err = services.StartKind(t.Context(), services.Spec{Design: d, Nodes: 1}, services.Options{Dir: t.TempDir()})
		if err == nil || !strings.Contains(err.Error(), "default-jre-headless") {
			t.Fatalf("a start with an empty PATH = %v", err)
		}
	})
	t.Run("no jar", func(t *testing.T) {
		old := jarDir
		jarDir = t.TempDir()
		defer func() { jarDir = old }()
		err := local.CheckNeeds(needs())
		if err == nil || !strings.Contains(err.Error(), "apt-get install -y zookeeper") || !strings.Contains(err.Error(), "zookeeper.jar") {
			t.Fatalf("CheckNeeds without jars = %v", err)
		}
		if !strings.Contains(classpath(), filepath.Join(jarDir, "zookeeper.jar")) {
			t.Errorf("classpath %s does not follow the jar folder", classpath())
		}
	})
	if _, err := os.Stat("/usr/share/java/zookeeper.jar"); err == nil {
		if err := local.CheckNeeds(needs()); err != nil {
			t.Errorf("CheckNeeds on this machine: %v", err)
		}
	}
}

// Leases are the connected clients' sessions with the timeouts the servers negotiated.
func TestLeasesAreTheSessionsWithTheirNegotiatedTimeouts(t *testing.T) {
	topo, z := startZK(t, 1)
	conn, _, err := zk.Connect([]string{z.Server("zk1").Addr(ClientPort)}, 4*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, _, err := conn.Exists("/"); err != nil { // the session is established once a request is answered
		t.Fatal(err)
	}
	ls, err := topo.Leases(t.Context(), "any")
	if err != nil {
		t.Fatal(err)
	}
	if len(ls) != 1 || ls[0].Granted != 4*time.Second || !strings.HasPrefix(ls[0].What, "session 0x") {
		t.Fatalf("leases: %+v, want one session of 4s", ls)
	}
}

func TestConsAnswersAreRead(t *testing.T) {
	text := " /127.0.0.1:57040[1](queued=0,recved=7,sent=7,sid=0x1000212f3cb0000,lop=PING,est=1700000000000,to=4000,lcxid=0x2,lzxid=0x4,lresp=1,llat=0,minlat=0,avglat=0,maxlat=2)\n" +
		" /127.0.0.1:57044[0](queued=0,recved=1,sent=0)\n"
	ls := sessionsIn("zk1", text)
	if len(ls) != 1 || ls[0].Granted != 4*time.Second || ls[0].What != "session 0x1000212f3cb0000" || ls[0].Server != "zk1" {
		t.Fatalf("%+v", ls)
	}
}
