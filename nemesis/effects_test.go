package nemesis_test

// Each fault against real servers, showing its effect on them (not only that it ran): a command
// sent to a paused redis-server runs once it is resumed; a SET fails across a cut link and goes
// through after the heal; a delayed SET lands late; a clock bump expires a key early; a strobe
// makes a key's remaining time jump back and forth; a crash-restart forgets the key; and a heal
// in the middle of every fault at once leaves nothing stopped, cut, delayed or skewed. The servers,
// targets and links are the lock service's (package services), as a run hands them to the nemesis.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/internal/proc"
	"github.com/lockcheck/lockcheck/internal/redisopt"
	"github.com/lockcheck/lockcheck/internal/testmain"
	"github.com/lockcheck/lockcheck/locks"
	. "github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/providers"
	"github.com/lockcheck/lockcheck/providers/faketime"
	_ "github.com/lockcheck/lockcheck/providers/local"
	"github.com/lockcheck/lockcheck/services"
	_ "github.com/lockcheck/lockcheck/services/all"
	rediskind "github.com/lockcheck/lockcheck/services/redis"
)

func TestMain(m *testing.M) { testmain.Run(m) }

// cluster is a started Redis lock service with links for client-1.
type cluster struct{ *services.Topology }

func (c cluster) Node(name string) providers.Node { return c.Targets()[name].(providers.Node) }

// addr is a node's own address.
func addr(n providers.Node) string { return n.Addr(rediskind.ClientPort) }

// state is the node's current process state ('T' when stopped).
func state(n providers.Node) (byte, error) {
	return proc.StateOf(n.(interface{ Pid() int }).Pid())
}

func waitStopped(t *testing.T, n providers.Node) {
	t.Helper()
	eventually(t, 5*time.Second, n.Name()+" stopped", func() bool { s, err := state(n); return err == nil && s == 'T' })
}

// realCluster starts lock nodes n1..nN with links for client-1 and a nemesis over them, as a run
// does: the service's targets and its topology as the network.
func realCluster(t *testing.T, nodes int) (cluster, *testNemesis, *recorder) {
	t.Helper()
	d, err := locks.Get("set-nx-px")
	if err != nil {
		t.Fatal(err)
	}
	topo, err := services.StartKind(context.Background(), services.Spec{Design: d, Nodes: nodes},
		services.Options{Dir: t.TempDir(), Clients: []string{"client-1"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = topo.Stop() })
	targets := map[string]Target{"client-1": sleeper(t)} // link faults name a client
	for name, tg := range topo.Targets() {
		targets[name] = tg
	}
	rec := &recorder{}
	n := newTestNemesis(targets, rec.record)
	n.cfg.Network = topo
	t.Cleanup(n.Heal)
	return cluster{topo}, n, rec
}

func rclient(t *testing.T, addr string) *redis.Client {
	t.Helper()
	rc := redis.NewClient(redisopt.Options(addr, time.Second))
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

func completed(rec *recorder, f string) bool { return recorded(rec, f, history.OK) }

func recorded(rec *recorder, f string, typ history.Type) bool {
	for _, e := range rec.all() {
		if e.F == f && e.Type == typ {
			return true
		}
	}
	return false
}

func TestServerPauseRunsACommandSentMeanwhileOnceResumed(t *testing.T) {
	c, n, rec := realCluster(t, 1)
	n1 := c.Node("n1")
	if err := n.Start(Schedule{Faults: []Fault{{Kind: history.Pause, Target: "n1", For: dur(1500 * time.Millisecond)}}}); err != nil {
		t.Fatal(err)
	}
	waitStopped(t, n1)
	conn, err := net.Dial("tcp", c.Link("client-1", "n1").Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$4\r\nsent\r\n")); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	_ = conn.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if line, err := br.ReadString('\n'); err == nil {
		t.Fatalf("a stopped server answered %q", line)
	}
	if s, _ := state(n1); s != 'T' {
		t.Fatalf("n1 state %c during the pause, want T", s)
	}
	// The same connection gets the reply once the nemesis resumes the server.
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := br.ReadString('\n')
	if err != nil || line != "+OK\r\n" {
		t.Fatalf("after SIGCONT: %q, %v", line, err)
	}
	if v, err := rclient(t, addr(n1)).Get(ctxFor(t, time.Second), "k").Result(); err != nil || v != "sent" {
		t.Fatalf("GET k = %q, %v: the SET sent while stopped should have run", v, err)
	}
	eventually(t, 2*time.Second, "pause recorded as over", func() bool { return completed(rec, history.Pause) })
}

func TestPartitionFailsASetAndTheHealLetsItThrough(t *testing.T) {
	c, n, rec := realCluster(t, 2)
	link := c.Link("client-1", "n1")
	if err := n.Start(Schedule{Faults: []Fault{{Kind: history.Partition, Target: "client-1", Params: PartitionParams{Nodes: []string{"n1"}}, For: dur(time.Second)}}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Second, "link cut", link.IsCut)
	if err := rclient(t, link.Addr()).Set(ctxFor(t, time.Second), "k", "v", 0).Err(); err == nil {
		t.Fatal("SET through a cut link succeeded")
	}
	if err := rclient(t, c.Link("client-1", "n2").Addr()).Set(ctxFor(t, time.Second), "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET to n2, which was not cut: %v", err)
	}
	eventually(t, 5*time.Second, "partition healed", func() bool { return completed(rec, history.Partition) })
	if err := rclient(t, link.Addr()).Set(ctxFor(t, time.Second), "k", "after", 0).Err(); err != nil {
		t.Fatalf("SET after the heal: %v", err)
	}
	if v, _ := rclient(t, addr(c.Node("n1"))).Get(ctxFor(t, time.Second), "k").Result(); v != "after" {
		t.Fatalf("n1 has k = %q", v)
	}
}

func TestDelayLandsASetLate(t *testing.T) {
	c, n, rec := realCluster(t, 1)
	if err := n.Start(Schedule{Faults: []Fault{{Kind: history.Delay, Target: "client-1", Params: DelayParams{Latency: dur(2 * time.Second)}, For: dur(10 * time.Second)}}}); err != nil {
		t.Fatal(err)
	}
	direct := rclient(t, addr(c.Node("n1")))
	delayed := rclient(t, c.Link("client-1", "n1").Addr())
	eventually(t, 2*time.Second, "delay in force", func() bool { return recorded(rec, history.Delay, history.Invoke) })
	done := make(chan error, 1)
	go func() { done <- delayed.Set(ctxFor(t, 10*time.Second), "k", "late", 0).Err() }()
	time.Sleep(400 * time.Millisecond) // well inside the 2 s delay
	if err := direct.Get(ctxFor(t, time.Second), "k").Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("the delayed SET landed early: GET = %v", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("delayed SET: %v", err)
	}
	if v, _ := direct.Get(ctxFor(t, time.Second), "k").Result(); v != "late" {
		t.Fatalf("k = %q after the delayed SET returned", v)
	}
}

func requireFaketime(t *testing.T) {
	t.Helper()
	if err := faketime.Check(); err != nil {
		t.Fatal(err)
	}
}

func TestNodeClockBumpExpiresAKeyEarly(t *testing.T) {
	requireFaketime(t)
	c, n, _ := realCluster(t, 1)
	n1 := c.Node("n1")
	rc := rclient(t, addr(n1))
	if err := rc.Set(ctxFor(t, time.Second), "k", "v", 30*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	if err := n.Start(Schedule{Faults: []Fault{{Kind: history.Clock, Target: "n1", Params: ClockParams{Offset: signed(60 * time.Second)}}}}); err != nil {
		t.Fatal(err)
	}
	// A 30 s lease is gone within libfaketime's pickup time, not after 30 s.
	eventually(t, 3*time.Second, "a 30s key expires after a +60s bump", func() bool {
		return errors.Is(rc.Get(ctxFor(t, time.Second), "k").Err(), redis.Nil)
	})
	n.Heal()
	eventually(t, 3*time.Second, "clock back to true time", func() bool {
		d, err := rediskind.ClockSkew(ctxFor(t, time.Second), addr(n1))
		return err == nil && d.Abs() < 200*time.Millisecond
	})
}

func TestStrobeMakesAKeysRemainingTimeJumpBackAndForth(t *testing.T) {
	requireFaketime(t)
	c, n, rec := realCluster(t, 1)
	n1 := c.Node("n1")
	rc := rclient(t, addr(n1))
	ctx := ctxFor(t, 30*time.Second)
	if err := rc.Set(ctx, "long", "v", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rc.Set(ctx, "short", "v", 8*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	if err := n.Start(Schedule{Faults: []Fault{{Kind: history.Strobe, Target: "n1", Params: StrobeParams{Offset: signed(10 * time.Second), Period: dur(time.Second)}, For: dur(5 * time.Second)}}}); err != nil {
		t.Fatal(err)
	}
	var drop, rise time.Duration // largest jumps of PTTL between two samples
	prev := time.Duration(-1)
	shortGone := false
	for deadline := time.Now().Add(5500 * time.Millisecond); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		left, err := rc.PTTL(ctx, "long").Result()
		if err != nil {
			t.Fatal(err)
		}
		if prev >= 0 {
			drop, rise = max(drop, prev-left), max(rise, left-prev)
		}
		prev = left
		shortGone = shortGone || errors.Is(rc.Get(ctx, "short").Err(), redis.Nil)
	}
	t.Logf("PTTL of a 60s key during a ±10s strobe: largest drop %v, largest rise %v", drop, rise)
	if drop < 8*time.Second || rise < 8*time.Second {
		t.Fatalf("PTTL should jump down and back up by about 10s: drop %v, rise %v", drop, rise)
	}
	if !shortGone {
		t.Fatal("an 8s key survived a strobe to +10s: it should have expired early")
	}
	if rc.Exists(ctx, "long").Val() != 1 {
		t.Fatal("the 60s key expired")
	}
	eventually(t, 3*time.Second, "strobe over", func() bool { return completed(rec, history.Strobe) })
	eventually(t, 3*time.Second, "clock back to true time", func() bool {
		d, err := rediskind.ClockSkew(ctx, addr(n1))
		return err == nil && d.Abs() < 200*time.Millisecond
	})
}

func TestCrashRestartForgetsTheKey(t *testing.T) {
	c, n, rec := realCluster(t, 1)
	n1 := c.Node("n1")
	if err := rclient(t, addr(n1)).Set(ctxFor(t, time.Second), "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	old := n1.(interface{ Pid() int }).Pid()
	if err := n.Start(Schedule{Faults: []Fault{{Kind: history.Crash, Target: "n1", For: dur(300 * time.Millisecond)}}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "restarted", func() bool { return completed(rec, history.Crash) })
	if n1.(interface{ Pid() int }).Pid() == old {
		t.Fatal("same process after a crash-restart")
	}
	if err := rclient(t, addr(n1)).Get(ctxFor(t, time.Second), "k").Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("GET k after a restart without persistence = %v, want nil", err)
	}
}

// What the runner does when a run is interrupted (Ctrl-C cancels its context): it calls Heal with
// every kind of fault in force. Nothing may stay stopped, cut, delayed or skewed.
func TestHealMidFaultLeavesNothingStoppedCutOrSkewed(t *testing.T) {
	requireFaketime(t)
	c, n, rec := realCluster(t, 3)
	client := sleeper(t)
	n.AddTarget("client-1", client)
	hour := time.Hour
	err := n.Start(Schedule{Faults: []Fault{
		{Kind: history.Pause, Target: "n1", For: dur(hour)},
		{Kind: history.Pause, Target: "client-1", For: dur(hour)},
		{Kind: history.Partition, Target: "client-1", Params: PartitionParams{Nodes: []string{"n1", "n2"}}, For: dur(hour)},
		{Kind: history.Delay, Target: "client-1", Params: DelayParams{Nodes: []string{"n3"}, Latency: dur(5 * time.Second)}, For: dur(hour)},
		{Kind: history.Clock, Target: "n2", Params: ClockParams{Offset: signed(30 * time.Second)}},
		{Kind: history.Strobe, Target: "n3", Params: StrobeParams{Offset: signed(20 * time.Second), Period: dur(time.Second)}, For: dur(hour)},
	}})
	if err != nil {
		t.Fatal(err)
	}
	// Everything in force before the heal.
	waitStopped(t, c.Node("n1"))
	eventually(t, 3*time.Second, "client stopped", func() bool { s, _ := client.State(); return s == 'T' })
	eventually(t, 3*time.Second, "links cut", func() bool {
		return c.Link("client-1", "n1").IsCut() && c.Link("client-1", "n2").IsCut()
	})
	eventually(t, 3*time.Second, "n2's clock ahead", func() bool {
		d, err := rediskind.ClockSkew(ctxFor(t, time.Second), addr(c.Node("n2")))
		return err == nil && d > 25*time.Second
	})

	n.Heal()

	for _, name := range c.Plan.Nodes {
		if s, err := state(c.Node(name)); err != nil || s == 'T' {
			t.Errorf("%s after heal: state %c, %v", name, s, err)
		}
	}
	if s, _ := client.State(); s == 'T' {
		t.Error("client-1 still stopped after heal")
	}
	for _, name := range c.Plan.Nodes {
		l := c.Link("client-1", name)
		if l.IsCut() {
			t.Errorf("%s still cut after heal", l.Name())
		}
		// A delay of 5 s would make this 1 s-bounded SET fail.
		if err := rclient(t, l.Addr()).Set(ctxFor(t, time.Second), "k", "v", 0).Err(); err != nil {
			t.Errorf("SET through %s after heal: %v", l.Name(), err)
		}
	}
	for _, name := range []string{"n2", "n3"} {
		r := c.Node(name)
		eventually(t, 3*time.Second, name+"'s clock back to true time", func() bool {
			d, err := rediskind.ClockSkew(ctxFor(t, time.Second), addr(r))
			return err == nil && d.Abs() < 200*time.Millisecond
		})
	}
	// Every fault that started has its end in the history.
	open := map[string]bool{}
	for _, e := range rec.all() {
		key := fmt.Sprintf("%s/%d", e.F, e.Op)
		switch e.Type {
		case history.Invoke:
			open[key] = true
		case history.OK, history.Info:
			delete(open, key)
		}
	}
	if len(open) > 0 {
		t.Errorf("faults never recorded as over: %v", strings.Join(keys(open), ", "))
	}
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
