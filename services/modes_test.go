package services_test

// A partition's two modes against real servers on local processes: reset fails a connection at
// once, drop leaves it open and unanswered until the client's own deadline or heartbeat timeout.

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	goredis "github.com/redis/go-redis/v9"

	"github.com/lockcheck/lockcheck/internal/redisopt"
	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/providers"
	_ "github.com/lockcheck/lockcheck/providers/local"
	"github.com/lockcheck/lockcheck/services"
	"github.com/lockcheck/lockcheck/services/redis"
	_ "github.com/lockcheck/lockcheck/services/zookeeper"
)

func start(t *testing.T, design string, spec services.Spec, clients ...string) *services.Topology {
	t.Helper()
	d, err := locks.Get(design)
	if err != nil {
		t.Fatal(err)
	}
	spec.Design = d
	if spec.Nodes == 0 {
		spec.Nodes = 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	topo, err := services.StartKind(ctx, spec, services.Options{Dir: t.TempDir(), Clients: clients})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = topo.Stop() })
	return topo
}

// A client cut from Redis in reset mode has its command fail at once; one dropped has it hang
// until its context's deadline, and its link answers again after the heal.
func TestDroppedRedisCommandHangsUntilItsDeadline(t *testing.T) {
	topo := start(t, "set-nx-px", services.Spec{}, "client-1", "client-2")
	rc := map[string]*goredis.Client{}
	for _, c := range []string{"client-1", "client-2"} {
		rc[c] = goredis.NewClient(redisopt.Options(topo.Link(c, "n1").Addr(), time.Second))
		t.Cleanup(func() { _ = rc[c].Close() })
		if err := rc[c].Ping(t.Context()).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := topo.Drop("client-1", nil); err != nil {
		t.Fatal(err)
	}
	if err := topo.Cut("client-2", nil); err != nil {
		t.Fatal(err)
	}
	const deadline = 800 * time.Millisecond
	took := map[string]time.Duration{}
	errs := map[string]error{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for c, r := range rc {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), deadline)
			defer cancel()
			began := time.Now()
			err := r.Get(ctx, "k").Err()
			mu.Lock()
			defer mu.Unlock()
			took[c], errs[c] = time.Since(began), err
		})
	}
	wg.Wait()
	t.Logf("dropped: %v after %v; reset: %v after %v", errs["client-1"], took["client-1"], errs["client-2"], took["client-2"])
	var ne net.Error // go-redis gives the connection the context's deadline: a read timeout
	if !(errors.Is(errs["client-1"], context.DeadlineExceeded) || errors.As(errs["client-1"], &ne) && ne.Timeout()) ||
		took["client-1"] < deadline-50*time.Millisecond {
		t.Errorf("dropped client's GET: %v after %v; want its deadline (%v)", errs["client-1"], took["client-1"], deadline)
	}
	if errs["client-2"] == nil || errors.As(errs["client-2"], &ne) && ne.Timeout() || took["client-2"] > deadline/2 {
		t.Errorf("reset client's GET: %v after %v; want a failure at once", errs["client-2"], took["client-2"])
	}
	for _, c := range []string{"client-1", "client-2"} {
		if err := topo.Heal(c, nil); err != nil {
			t.Fatal(err)
		}
		// go-redis redials a pool whose dial failed in the background, once a second.
		var err error
		for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			err = rc[c].Ping(ctx).Err()
			cancel()
			if err == nil {
				break
			}
		}
		if err != nil {
			t.Errorf("%s after the heal: %v", c, err)
		}
	}
}

// A ZooKeeper session cut in reset mode is disconnected at once; dropped, the client hears nothing
// until its own read timeout (2/3 of the session), and the server expires the session once the
// partition outlasts it: its ephemeral node goes while the partition lasts, and the client is told
// its session expired when the heal lets it back.
func TestDroppedZooKeeperSessionExpiresOnTheServer(t *testing.T) {
	topo := start(t, "zk", services.Spec{}, "client-1", "client-2", "observer")
	const session = 2 * time.Second
	type client struct {
		conn   *zk.Conn
		states chan zk.State
	}
	connect := func(name string) client {
		states := make(chan zk.State, 100)
		conn, events, err := zk.Connect([]string{topo.Link(name, "zk1").Addr()}, session, zk.WithLogger(quiet{}))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(conn.Close)
		go func() {
			for e := range events {
				if e.Type == zk.EventSession {
					states <- e.State
				}
			}
		}()
		for s := range states {
			if s == zk.StateHasSession {
				break
			}
		}
		return client{conn, states}
	}
	// disconnected waits up to d for the client to see its connection end.
	disconnected := func(c client, d time.Duration) (time.Duration, bool) {
		began := time.Now()
		for timeout := time.After(d); ; {
			select {
			case s := <-c.states:
				if s == zk.StateDisconnected {
					return time.Since(began), true
				}
			case <-timeout:
				return d, false
			}
		}
	}
	dropped, reset, observer := connect("client-1"), connect("client-2"), connect("observer")
	if _, err := dropped.conn.Create("/mine", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}

	if err := topo.Cut("client-2", nil); err != nil {
		t.Fatal(err)
	}
	if took, ok := disconnected(reset, time.Second); !ok || took > 500*time.Millisecond {
		t.Errorf("reset: disconnected %v after %v; want at once", ok, took)
	}
	if err := topo.Drop("client-1", nil); err != nil {
		t.Fatal(err)
	}
	dropAt := time.Now()
	took, ok := disconnected(dropped, 3*time.Second)
	t.Logf("dropped: the client saw its connection end after %v", took)
	if !ok || took < session/2 {
		t.Errorf("drop: disconnected %v after %v; want only at the client's read timeout (2/3 of %v)", ok, took, session)
	}
	var gone time.Duration
	for gone == 0 && time.Since(dropAt) < 3*session {
		if exists, _, err := observer.conn.Exists("/mine"); err == nil && !exists {
			gone = time.Since(dropAt)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("the dropped session's ephemeral node went %v into the partition", gone)
	if gone == 0 || gone < session-200*time.Millisecond {
		t.Fatalf("the dropped session's ephemeral node went after %v; want once the session (%v) ran out on the server", gone, session)
	}
	if err := topo.Heal("client-1", nil); err != nil {
		t.Fatal(err)
	}
	for timeout := time.After(5 * time.Second); ; {
		select {
		case s := <-dropped.states:
			if s == zk.StateExpired {
				return
			}
		case <-timeout:
			t.Fatal("after the heal, the dropped client was not told its session expired")
		}
	}
}

type quiet struct{}

func (quiet) Printf(string, ...any) {}

// A replica whose link to its primary is dropped still counts the link as up (Redis notices only
// at repl-timeout) while it misses the writes; cut in reset mode, it reports the link down.
func TestDroppedReplicationLinkStaysUpButCarriesNothing(t *testing.T) {
	topo := start(t, "set-nx-px", services.Spec{Server: redis.Settings{Replicas: 1, Sentinels: 1}, Duration: 10 * time.Second})
	targets := topo.Targets()
	n1, n2 := targets["n1"].(providers.Node), targets["n2"].(providers.Node)
	primary := goredis.NewClient(redisopt.Options(n1.Addr(redis.ClientPort), time.Second))
	replica := goredis.NewClient(redisopt.Options(n2.Addr(redis.ClientPort), time.Second))
	t.Cleanup(func() { _ = primary.Close(); _ = replica.Close() })
	ctx := t.Context()
	link := func() string {
		info, _ := replica.Info(ctx, "replication").Result()
		for _, l := range strings.Split(info, "\r\n") {
			if s, ok := strings.CutPrefix(l, "master_link_status:"); ok {
				return s
			}
		}
		return "?"
	}
	eventually := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("not within 10s: %s", what)
			}
		}
	}
	write := func(k string) {
		if err := primary.Set(ctx, k, "1", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	has := func(k string) bool { return replica.Get(ctx, k).Val() == "1" }
	write("before")
	eventually("the replica has the first write", func() bool { return has("before") && link() == "up" })

	if err := topo.Drop("n2", []string{"n1"}); err != nil {
		t.Fatal(err)
	}
	write("during-drop")
	time.Sleep(1500 * time.Millisecond)
	if has("during-drop") || link() != "up" {
		t.Fatalf("dropped: replica has the write %v, link %s; want no write and the link still up", has("during-drop"), link())
	}
	if err := topo.Heal("n2", []string{"n1"}); err != nil {
		t.Fatal(err)
	}
	eventually("the held write arrives after the heal", func() bool { return has("during-drop") })

	if err := topo.Cut("n2", []string{"n1"}); err != nil {
		t.Fatal(err)
	}
	eventually("a reset cut takes the link down", func() bool { return link() == "down" })
	if err := topo.Heal("n2", []string{"n1"}); err != nil {
		t.Fatal(err)
	}
}
