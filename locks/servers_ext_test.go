package locks_test

// Starts the lock services for this package's tests (see servers_test.go): through the service
// kinds on the local provider, as a run starts them.

import (
	"context"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/internal/proc"
	"github.com/lockcheck/lockcheck/internal/testredis"
	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/providers"
	"github.com/lockcheck/lockcheck/services"
	"github.com/lockcheck/lockcheck/services/redis"
	"github.com/lockcheck/lockcheck/services/zookeeper"
)

func init() {
	locks.StartTestService = startTestService
	locks.StartPlainRedis = startPlainRedis
}

func startTestService(t testing.TB, s locks.TestServiceSpec, clients ...string) *locks.TestService {
	t.Helper()
	d, err := locks.Get(s.Design)
	if err != nil {
		t.Fatal(err)
	}
	spec := services.Spec{Design: d, Nodes: s.Nodes}
	if s.Replicas > 0 {
		spec.Server = redis.Settings{Replicas: s.Replicas}
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	began := time.Now()
	topo, err := services.StartKind(ctx, spec, services.Options{Dir: dir, Clients: clients})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := t.(*testing.T); ok { // a benchmark's log would land amid its figures
		t.Logf("%s service (%v) ready in %v", topo.Plan.Kind, topo.Plan.Servers, time.Since(began).Round(time.Millisecond))
	}
	t.Cleanup(func() {
		if err := topo.Stop(); err != nil {
			t.Errorf("stop the %s service: %v", topo.Plan.Kind, err)
		}
		if pids := proc.Mentioning(dir); len(pids) > 0 {
			t.Errorf("processes of the %s service left after Stop: %v", topo.Plan.Kind, pids)
		}
	})
	out := &locks.TestService{Nodes: topo.Plan.Nodes, Servers: map[string]providers.Node{}, Direct: map[string]string{},
		Links: topo.Links, Network: topo, Endpoints: topo.Endpoints}
	port := redis.ClientPort
	if z, ok := topo.Instance.(*zookeeper.Ensemble); ok {
		// The servers themselves: the targets wrap them in a restart that waits until they serve.
		port = zookeeper.ClientPort
		for _, name := range z.Names() {
			out.Servers[name] = z.Server(name)
		}
	} else {
		for name, tg := range topo.Targets() {
			if n, ok := tg.(providers.Node); ok { // not a role (primary)
				out.Servers[name] = n
			}
		}
	}
	for name, n := range out.Servers {
		if addr := n.Addr(port); addr != "" { // a sentinel has no client port
			out.Direct[name] = addr
		}
	}
	return out
}

func startPlainRedis(t testing.TB) string { return testredis.Addr(t, "plain") }
