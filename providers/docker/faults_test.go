package docker_test

import (
	"bufio"
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/lockcheck/lockcheck/internal/dockertests"
	"github.com/lockcheck/lockcheck/internal/redisopt"
	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/providers"
	"github.com/lockcheck/lockcheck/providers/docker"
	"github.com/lockcheck/lockcheck/services"
	"github.com/lockcheck/lockcheck/services/redis"
	"github.com/lockcheck/lockcheck/services/zookeeper"
)

func rclient(t *testing.T, addr string) *goredis.Client {
	t.Helper()
	rc := goredis.NewClient(redisopt.Options(addr, time.Second))
	t.Cleanup(func() { _ = rc.Close() })
	return rc
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// eventually polls cond every 20ms for up to d.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("not within %s: %s", d, what)
}

func startRedis(t *testing.T, p *docker.Provider, name string, clock bool) providers.Node {
	t.Helper()
	began := time.Now()
	n, err := redis.StartServer(context.Background(), p, name, clock)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s started in %s", name, time.Since(began).Round(time.Millisecond))
	return n
}

// A paused node is frozen: a command sent meanwhile gets no answer, and is answered, on the same
// connection, once it is resumed; Docker reports the container paused.
func TestPauseFreezesTheContainer(t *testing.T) {
	p := newProvider(t)
	n := startRedis(t, p, "n1", false)
	if err := n.Pause(); err != nil {
		t.Fatal(err)
	}
	if st := containerState(t, n); !st.Paused {
		t.Fatalf("container state %+v, want paused", st)
	}
	conn, err := net.Dial("tcp", n.Addr(redis.ClientPort))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$4\r\nsent\r\n")); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	_ = conn.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	if line, err := br.ReadString('\n'); err == nil {
		t.Fatalf("a frozen server answered %q", line)
	}
	if err := n.Resume(); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if line, err := br.ReadString('\n'); err != nil || line != "+OK\r\n" {
		t.Fatalf("after the thaw: %q, %v", line, err)
	}
	if v, err := rclient(t, n.Addr(redis.ClientPort)).Get(ctxFor(t, time.Second), "k").Result(); err != nil || v != "sent" {
		t.Fatalf("GET k = %q, %v: the SET sent while frozen should have run", v, err)
	}
}

// A clock set 10 s ahead inside the container (libfaketime, its file written on the host) expires
// a 5 s key early, and the server's TIME shows the skew; the true clock comes back.
func TestSkewedClockExpiresAKeyEarly(t *testing.T) {
	p := newProvider(t)
	n := startRedis(t, p, "n1", true)
	addr := n.Addr(redis.ClientPort)
	rc := rclient(t, addr)
	if err := rc.Set(ctxFor(t, time.Second), "lease", "x", 5*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	set := time.Now()
	if err := n.SetClock(10*time.Second, 1); err != nil {
		t.Fatal(err)
	}
	eventually(t, 3*time.Second, "the 5 s key expired after a +10 s step", func() bool {
		n, err := rc.Exists(ctxFor(t, time.Second), "lease").Result()
		return err == nil && n == 0
	})
	t.Logf("key gone %s after the step", time.Since(set).Round(time.Millisecond))
	skew, err := redis.ClockSkew(ctxFor(t, time.Second), addr)
	if err != nil || skew < 9*time.Second || skew > 11*time.Second {
		t.Fatalf("server clock skew %s, %v; want about +10s", skew, err)
	}
	if err := n.SetClock(0, 1); err != nil {
		t.Fatal(err)
	}
	eventually(t, 3*time.Second, "the true clock back", func() bool {
		skew, err := redis.ClockSkew(ctxFor(t, time.Second), addr)
		return err == nil && skew > -time.Second && skew < time.Second
	})
}

// A kill ends the server in its container; a restart starts it again there, reachable at the
// same published port and network address, without the data (no persistence).
func TestKillAndRestartKeepTheAddresses(t *testing.T) {
	p := newProvider(t)
	n := startRedis(t, p, "n1", false)
	addr, adv := n.Addr(redis.ClientPort), n.Advertised(redis.ClientPort)
	rc := rclient(t, addr)
	if err := rc.Set(ctxFor(t, time.Second), "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := n.Kill(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "the killed server stops answering", func() bool {
		return rclient(t, addr).Ping(ctxFor(t, time.Second)).Err() != nil
	})
	if !containerState(t, n).Running {
		t.Fatal("the container stopped with its server: a restart would lose its namespace")
	}
	began := time.Now()
	if err := n.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Logf("restarted in %s", time.Since(began).Round(time.Millisecond))
	if n.Addr(redis.ClientPort) != addr || n.Advertised(redis.ClientPort) != adv {
		t.Fatalf("addresses moved: %s %s, were %s %s", n.Addr(redis.ClientPort), n.Advertised(redis.ClientPort), addr, adv)
	}
	// A new client: go-redis keeps returning its last dial error for a while after one failed.
	if err := rclient(t, addr).Get(ctxFor(t, time.Second), "k").Err(); !errors.Is(err, goredis.Nil) {
		t.Fatalf("GET k after a restart without persistence: %v, want nil reply", err)
	}
}

// A replica cut from its primary (iptables DROP in the replica's namespace) misses the writes
// made meanwhile; when the primary dies, Sentinel promotes it anyway and the write is lost.
func TestCutReplicaMissesWritesAndIsPromoted(t *testing.T) {
	dockertests.Need(t)
	d, err := locks.Get("set-nx-px")
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	topo, err := services.StartKind(context.Background(),
		services.Spec{Design: d, Nodes: 1, Server: redis.Settings{Replicas: 1, Sentinels: 3}, Duration: 10 * time.Second},
		services.Options{Dir: t.TempDir(), Provider: docker.Name})
	if err != nil {
		t.Fatal(err)
	}
	defer topo.Stop()
	t.Logf("primary, replica and 3 sentinels ready in %s", time.Since(began).Round(time.Millisecond))
	targets := topo.Targets()
	n1, n2 := targets["n1"].(providers.Node), targets["n2"].(providers.Node)
	primary, replica := rclient(t, n1.Addr(redis.ClientPort)), rclient(t, n2.Addr(redis.ClientPort))
	if err := primary.Set(ctxFor(t, time.Second), "before", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "a write before the cut reaches the replica", func() bool {
		return replica.Get(ctxFor(t, time.Second), "before").Val() == "1"
	})
	if err := topo.Cut("n2", []string{"n1"}); err != nil {
		t.Fatal(err)
	}
	if err := primary.Set(ctxFor(t, time.Second), "after", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if err := replica.Get(ctxFor(t, time.Second), "after").Err(); !errors.Is(err, goredis.Nil) {
		t.Fatalf("the cut replica has the write made during the cut: %v", err)
	}
	if err := n1.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	eventually(t, 20*time.Second, "Sentinel promotes the replica", func() bool {
		info, err := replica.Info(ctxFor(t, time.Second), "replication").Result()
		return err == nil && strings.Contains(info, "role:master")
	})
	t.Logf("replica promoted %s after the primary's kill", time.Since(killed).Round(time.Millisecond))
	if err := replica.Get(ctxFor(t, time.Second), "after").Err(); !errors.Is(err, goredis.Nil) {
		t.Fatalf("the promoted replica has the write it was cut from: %v", err)
	}
	if v := replica.Get(ctxFor(t, time.Second), "before").Val(); v != "1" {
		t.Fatalf("the promoted replica lost the write made before the cut: %q", v)
	}
	if err := topo.Heal("n2", []string{"n1"}); err != nil {
		t.Fatal(err)
	}
}

// A ZooKeeper ensemble runs with one container per server, each knowing the others by their
// addresses on the run's network; cutting the leader from its peers makes the other two elect a
// new one.
func TestZooKeeperLeaderCutFromPeersIsReplaced(t *testing.T) {
	dockertests.Need(t)
	d, err := locks.Get("zk")
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	topo, err := services.StartKind(context.Background(), services.Spec{Design: d, Nodes: 3},
		services.Options{Dir: t.TempDir(), Provider: docker.Name})
	if err != nil {
		t.Fatal(err)
	}
	defer topo.Stop()
	t.Logf("3 ZooKeeper servers ready in %s", time.Since(began).Round(time.Millisecond))
	z := topo.Instance.(*zookeeper.Ensemble)
	leader, err := z.Leader(ctxFor(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := topo.Cut(leader.Name(), nil); err != nil {
		t.Fatal(err)
	}
	cut := time.Now()
	var next string
	eventually(t, 30*time.Second, "a new leader among the other two", func() bool {
		modes := z.Modes(ctxFor(t, 2*time.Second))
		for name, m := range modes {
			if name != leader.Name() && m == "leader" {
				next = name
				return true
			}
		}
		return false
	})
	t.Logf("%s cut off; %s leads %s later", leader.Name(), next, time.Since(cut).Round(time.Millisecond))
	if err := topo.Heal(leader.Name(), nil); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the healed server follows", func() bool {
		m, err := zookeeper.Mode(ctxFor(t, 2*time.Second), leader)
		return err == nil && m == "follower"
	})
}

// The two modes between containers: a replica whose link to its primary is dropped (iptables
// DROP) still reports the link up while it misses writes, and gets them after the heal; cut in
// reset mode (REJECT with TCP resets) it reports the link down at once.
func TestReplicaLinkDroppedStaysUpResetGoesDown(t *testing.T) {
	dockertests.Need(t)
	d, err := locks.Get("set-nx-px")
	if err != nil {
		t.Fatal(err)
	}
	topo, err := services.StartKind(context.Background(),
		services.Spec{Design: d, Nodes: 1, Server: redis.Settings{Replicas: 1, Sentinels: 1}, Duration: 10 * time.Second},
		services.Options{Dir: t.TempDir(), Provider: docker.Name})
	if err != nil {
		t.Fatal(err)
	}
	defer topo.Stop()
	targets := topo.Targets()
	n1, n2 := targets["n1"].(providers.Node), targets["n2"].(providers.Node)
	primary, replica := rclient(t, n1.Addr(redis.ClientPort)), rclient(t, n2.Addr(redis.ClientPort))
	link := func() string {
		info, _ := replica.Info(ctxFor(t, time.Second), "replication").Result()
		for _, l := range strings.Split(info, "\r\n") {
			if s, ok := strings.CutPrefix(l, "master_link_status:"); ok {
				return s
			}
		}
		return "?"
	}
	has := func(k string) bool { return replica.Get(ctxFor(t, time.Second), k).Val() == "1" }
	if err := primary.Set(ctxFor(t, time.Second), "before", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the replica has the first write", func() bool { return has("before") && link() == "up" })
	if err := topo.Drop("n2", []string{"n1"}); err != nil {
		t.Fatal(err)
	}
	if err := primary.Set(ctxFor(t, time.Second), "during-drop", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond)
	if has("during-drop") || link() != "up" {
		t.Fatalf("dropped: replica has the write %v, link %s; want no write and the link still up", has("during-drop"), link())
	}
	if err := topo.Heal("n2", []string{"n1"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the write made during the drop arrives after the heal", func() bool { return has("during-drop") })
	if err := topo.Cut("n2", []string{"n1"}); err != nil {
		t.Fatal(err)
	}
	cut := time.Now()
	eventually(t, 5*time.Second, "a reset cut takes the link down", func() bool { return link() == "down" })
	t.Logf("reset: the link went down %v after the cut", time.Since(cut).Round(time.Millisecond))
	if err := topo.Heal("n2", []string{"n1"}); err != nil {
		t.Fatal(err)
	}
}
