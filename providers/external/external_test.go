package external_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	goredis "github.com/redis/go-redis/v9"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/internal/redisopt"
	"github.com/lockcheck/lockcheck/internal/testmain"
	"github.com/lockcheck/lockcheck/providers"
	"github.com/lockcheck/lockcheck/providers/external"
	"github.com/lockcheck/lockcheck/providers/local"
	"github.com/lockcheck/lockcheck/runner"
	"github.com/lockcheck/lockcheck/scenarios"
	"github.com/lockcheck/lockcheck/services/redis"
	"github.com/lockcheck/lockcheck/services/zookeeper"
	"github.com/lockcheck/lockcheck/workloads"
)

func TestMain(m *testing.M) { testmain.Run(m) }

// userCluster starts a real redis-server as a stand-in for a cluster the user runs (lockcheck's
// local provider, in a folder of its own), with a key of the user's in it.
func userCluster(t *testing.T) (providers.Node, *goredis.Client) {
	t.Helper()
	p, err := local.New(providers.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	n, err := redis.StartServer(context.Background(), p, "users-redis", false)
	if err != nil {
		t.Fatal(err)
	}
	rc := goredis.NewClient(redisopt.Options(n.Addr(redis.ClientPort), time.Second))
	t.Cleanup(func() { _ = rc.Close() })
	if err := rc.Set(context.Background(), "users:data", "keep me", 0).Err(); err != nil {
		t.Fatal(err)
	}
	return n, rc
}

func write(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func load(t *testing.T, src string) *scenarios.Scenario {
	t.Helper()
	sc, err := scenarios.Load(write(t, "external-pause.yaml", src))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func options(t *testing.T, endpoints string) runner.Options {
	return runner.Options{ResultsDir: t.TempDir(), Worker: []string{os.Args[0]}, WorkerEnv: append(os.Environ(), workloads.TestWorkerEnv),
		Provider: external.Name, ProviderConfig: endpoints}
}

// A run on the user's server: the server pause is carried out by the user's hooks (here SIGSTOP
// and SIGCONT of the stand-in's pid, one through a script beside the endpoints file, named
// relative to it while lockcheck runs elsewhere), recorded in the history and the node's
// hooks.log; clients reach the server through their own links; the run's keys are removed at the
// end and the user's key is untouched.
func TestHookDrivenServerPauseOnAUsersCluster(t *testing.T) {
	n, rc := userCluster(t)
	pid := n.(interface{ Pid() int }).Pid()
	eps := write(t, "endpoints.yaml", fmt.Sprintf(`# a stand-in for a user's cluster
nodes:
  n1:
    ports: {client: %s}
hooks:
  pause: ./hooks/signal.sh STOP %d
  resume: kill -CONT %d
`, n.Addr(redis.ClientPort), pid, pid))
	os.MkdirAll(filepath.Join(filepath.Dir(eps), "hooks"), 0o755)
	if err := os.WriteFile(filepath.Join(filepath.Dir(eps), "hooks", "signal.sh"), []byte("#!/bin/sh\nkill -$1 $2\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	sc := load(t, `name: external-pause
lock: set-nx-px
clients: 3
ttl: 400ms
duration: 3s
workload: {hold: 50ms, think: 10ms, stagger: 20ms}
nemesis:
  - {fault: pause, target: n1, at: 1s, for: 800ms}
`)
	res, err := runner.Run(context.Background(), sc, options(t, eps))
	if err != nil {
		t.Fatal(err)
	}
	events, err := history.ReadFile(filepath.Join(res.Dir, runner.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	var started, ended bool
	for _, e := range events {
		if e.Process == history.Nemesis && e.F == history.Pause && e.Target == "n1" {
			switch e.Type {
			case history.Invoke:
				started = true
			case history.OK:
				ended = true
			default:
				t.Errorf("pause event %s: %s", e.Type, e.Error)
			}
		}
	}
	if !started || !ended {
		t.Fatalf("pause of n1 recorded: started %v, ended %v", started, ended)
	}
	log, err := os.ReadFile(filepath.Join(res.Dir, "servers", "n1", external.HookLog))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), "pause (ok, ") || !strings.Contains(string(log), fmt.Sprintf("kill -CONT %d", pid)) {
		t.Fatalf("hooks.log does not record the pause and the resume:\n%s", log)
	}
	if res.Verdict.Liveness.Acquisitions < 5 {
		t.Fatalf("only %d acquisitions through the user's server", res.Verdict.Liveness.Acquisitions)
	}
	// The clients were held up by the pause: some acquire waited at least most of it.
	if res.Verdict.Liveness.LongestUnavailable < 500*time.Millisecond {
		t.Errorf("longest unavailability %s: the hook's pause did not hold the clients up", res.Verdict.Liveness.LongestUnavailable)
	}
	keys, err := rc.Keys(context.Background(), "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 1 || keys[0] != "users:data" {
		t.Fatalf("keys left on the user's server: %v; want only users:data", keys)
	}
}

// A scenario asking for a server fault the endpoints file has no hook for is refused before
// anything starts, naming what is missing.
func TestServerFaultWithoutHookIsRefusedBeforeStarting(t *testing.T) {
	n, rc := userCluster(t)
	eps := write(t, "endpoints.yaml", fmt.Sprintf("nodes:\n  n1:\n    ports: {client: %s}\nhooks:\n  pause: 'true'\n  resume: "+
		"'true'\n", n.Addr(redis.ClientPort)))
	sc := load(t, `name: external-crash
lock: set-nx-px
clients: 2
ttl: 400ms
duration: 2s
nemesis:
  - {fault: crash, target: n1, at: 1s, for: 500ms}
`)
	res, err := runner.Run(context.Background(), sc, options(t, eps))
	if err == nil {
		t.Fatal("a crash without kill and restart hooks ran")
	}
	for _, want := range []string{`no "kill" hook for n1`, `no "restart" hook for n1`, "crash on n1"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not say %q: %v", want, err)
		}
	}
	if logs, _ := filepath.Glob(filepath.Join(res.Dir, "logs", "*")); len(logs) > 0 {
		t.Errorf("clients started: %v", logs)
	}
	if keys, _ := rc.Keys(context.Background(), "*").Result(); len(keys) != 1 {
		t.Errorf("keys on the user's server: %v", keys)
	}
}

// A partition in drop mode needs a drop hook: cut and heal hooks alone (a reset's) are refused
// before anything starts, naming the hook to add.
func TestDropPartitionWithoutDropHookIsRefused(t *testing.T) {
	eps := write(t, "endpoints.yaml", `nodes:
  zk1: {ports: {client: 127.0.0.1:1}}
  zk2: {ports: {client: 127.0.0.1:2}}
  zk3: {ports: {client: 127.0.0.1:3}}
hooks: {cut: 'true', heal: 'true'}
`)
	sc := load(t, `name: external-drop
lock: zk
nodes: 3
clients: 2
ttl: 2s
duration: 2s
nemesis:
  - {fault: partition, target: zk1, mode: drop, at: 1s, for: 500ms}
`)
	_, err := runner.Run(context.Background(), sc, options(t, eps))
	if err == nil {
		t.Fatal("a drop partition without a drop hook ran")
	}
	for _, want := range []string{"partition on zk1 (drop)", `no "drop" hook for zk1`, "hooks.drop"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not say %q: %v", want, err)
		}
	}
	if strings.Contains(err.Error(), `"cut"`) {
		t.Errorf("a drop asked for the cut hook: %v", err)
	}
}

func TestEndpointsFileErrorsNameFileLineAndField(t *testing.T) {
	path := write(t, "eps.yaml", "nodes:\n  n1:\n    ports: {client: nowhere}\n    hooks: {pasue: 'kill -STOP 1'}\n")
	_, err := external.Load(path)
	if err == nil {
		t.Fatal("a bad endpoints file loaded")
	}
	for _, want := range []string{path + ":3: nodes.n1.ports.client", path + ":4: nodes.n1.hooks.pasue", "pause, resume"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not say %q:\n%v", want, err)
		}
	}
}

// A ZooKeeper run on a user's server removes the znodes it made under /lockcheck at the end.
func TestZooKeeperRunRemovesItsZnodes(t *testing.T) {
	p, err := local.New(providers.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	z, err := zookeeper.StartEnsemble(context.Background(), p, []string{"users-zk"}, zookeeper.DefaultTick)
	if err != nil {
		t.Fatal(err)
	}
	addr := z.Server("users-zk").Addr(zookeeper.ClientPort)
	eps := write(t, "endpoints.yaml", fmt.Sprintf("nodes:\n  zk1:\n    ports: {client: %s}\n", addr))
	sc := load(t, `name: external-zk
lock: zk-session-aware
clients: 2
ttl: 2s
duration: 2s
workload: {hold: 20ms, think: 10ms}
`)
	res, err := runner.Run(context.Background(), sc, options(t, eps))
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict.Liveness.Acquisitions < 5 {
		t.Fatalf("only %d acquisitions through the user's ZooKeeper", res.Verdict.Liveness.Acquisitions)
	}
	conn, _, err := zk.Connect([]string{addr}, 5*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	children, _, err := conn.Children("/lockcheck")
	if err != nil {
		t.Fatal(err)
	}
	if len(children) != 0 {
		t.Fatalf("znodes left under /lockcheck: %v", children)
	}
}
