package redis_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/lockcheck/lockcheck/internal/proc"
	"github.com/lockcheck/lockcheck/providers"
	"github.com/lockcheck/lockcheck/services"
	"github.com/lockcheck/lockcheck/services/redis"
)

func startPersistent(t *testing.T, persistence string, nodes int) *services.Topology {
	t.Helper()
	return start(t, services.Spec{Nodes: nodes, Server: redis.Settings{Persistence: persistence}})
}

// crashRestart SIGKILLs n and starts it again, as the nemesis's crash fault does.
func crashRestart(t *testing.T, n providers.Node) {
	t.Helper()
	kill(t, n)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	mustOK(t, n.Restart(ctx))
}

func configGet(t *testing.T, rc *goredis.Client, name string) string {
	t.Helper()
	m, err := rc.ConfigGet(t.Context(), name).Result()
	mustOK(t, err)
	return m[name]
}

// A10 without persistence: a crash-restart forgets the lock.
func TestPersistenceNoneForgets(t *testing.T) {
	for _, p := range []string{"", redis.PersistenceNone} {
		n1 := node(t, startPersistent(t, p, 1), "n1")
		rc := client(t, addr(n1))
		if a := configGet(t, rc, "appendonly"); a != "no" {
			t.Fatalf("persistence %q: appendonly %s", p, a)
		}
		mustOK(t, rc.Set(t.Context(), "k", "v", 10*time.Second).Err())
		crashRestart(t, n1)
		if err := rc.Get(t.Context(), "k").Err(); !errors.Is(err, goredis.Nil) {
			t.Fatalf("persistence %q: GET k after a crash-restart = %v, want nil", p, err)
		}
	}
}

// With fsync before each reply, a key acknowledged just before a SIGKILL is there after the
// restart, its TTL still running (Redis logs an absolute expiry time).
func TestPersistenceAOFAlwaysKeepsKey(t *testing.T) {
	topo := startPersistent(t, redis.PersistenceAOFAlways, 2)
	n1 := node(t, topo, "n1")
	rc := client(t, addr(n1))
	ctx := t.Context()
	if a, f := configGet(t, rc, "appendonly"), configGet(t, rc, "appendfsync"); a != "yes" || f != "always" {
		t.Fatalf("appendonly %s, appendfsync %s", a, f)
	}
	if a, f := configGet(t, client(t, addr(node(t, topo, "n2"))), "appendonly"), configGet(t, client(t, addr(node(t, topo, "n2"))),
		"appendfsync"); a != "yes" || f != "always" {
		t.Fatalf("n2: appendonly %s, appendfsync %s", a, f)
	}
	// The resource's storage is never persistent.
	if a := configGet(t, client(t, addr(startResource(t))), "appendonly"); a != "no" {
		t.Fatalf("the resource has appendonly %s", a)
	}
	mustOK(t, rc.Set(ctx, "k", "v", 10*time.Second).Err())
	set := time.Now()
	crashRestart(t, n1)
	v, err := rc.Get(ctx, "k").Result()
	if err != nil || v != "v" {
		t.Fatalf("GET k after a crash-restart = %q, %v; want v", v, err)
	}
	pttl, err := rc.PTTL(ctx, "k").Result()
	mustOK(t, err)
	elapsed := time.Since(set)
	t.Logf("key survived the SIGKILL; PTTL %v, %v after the SET", pttl, elapsed)
	if pttl <= 0 || pttl > 10*time.Second-elapsed+20*time.Millisecond || pttl < 10*time.Second-elapsed-time.Second {
		t.Fatalf("PTTL after restart %v, %v after a PX 10000 SET", pttl, elapsed)
	}
	if _, err := os.Stat(filepath.Join(n1.Dir(), "appendonlydir")); err != nil {
		t.Fatalf("no AOF in the data dir: %v", err)
	}
	// A second crash-restart too (the reloaded AOF is appended to, not replaced).
	mustOK(t, rc.Set(ctx, "k2", "v2", 0).Err())
	crashRestart(t, n1)
	if n, err := rc.Exists(ctx, "k", "k2").Result(); err != nil || n != 2 {
		t.Fatalf("after a second crash-restart EXISTS k k2 = %d, %v", n, err)
	}
}

// With fsync once a second, report what a SIGKILL right after the reply does to the key. The
// fsync policy protects against losing the OS's page cache (a machine crash); a SIGKILL of the
// process alone does not lose what Redis has already write()n, and Redis writes the AOF buffer
// before it replies, so the key is expected to survive — but that is not asserted.
func TestPersistenceAOFEverysecObserved(t *testing.T) {
	n1 := node(t, startPersistent(t, redis.PersistenceAOFEverysec, 1), "n1")
	rc := client(t, addr(n1))
	ctx := t.Context()
	if a, f := configGet(t, rc, "appendonly"), configGet(t, rc, "appendfsync"); a != "yes" || f != "everysec" {
		t.Fatalf("appendonly %s, appendfsync %s", a, f)
	}
	const trials = 5
	survived := 0
	for i := range trials {
		key := "k" + strconv.Itoa(i)
		mustOK(t, rc.Set(ctx, key, "v", 10*time.Second).Err())
		crashRestart(t, n1)
		switch err := rc.Get(ctx, key).Err(); {
		case err == nil:
			survived++
		case errors.Is(err, goredis.Nil):
		default:
			t.Fatalf("GET %s after restart: %v", key, err)
		}
	}
	t.Logf("aof-everysec: %d of %d keys written right before a SIGKILL survived the restart", survived, trials)
	mustOK(t, rc.Set(ctx, "after", "v", 0).Err())
	mustOK(t, ping(t, addr(n1)))
}

func TestPersistenceInvalid(t *testing.T) {
	_, err := services.StartKind(t.Context(), services.Spec{Design: lockDesign(t), Nodes: 1, Server: redis.Settings{Persistence: "aof"}},
		services.Options{Dir: t.TempDir()})
	if err == nil {
		t.Fatal("a start with persistence aof succeeded")
	}
	for _, want := range []string{"persistence:", `"aof"`, "none", "aof-everysec", "aof-always"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	if live := proc.Live(); len(live) != 0 {
		t.Fatalf("%d processes left running", len(live))
	}
	for _, p := range append([]string{""}, redis.PersistenceModes...) {
		if _, err := services.MustPlan(services.Spec{Design: lockDesign(t), Nodes: 1, Server: redis.Settings{Persistence: p}}); err != nil {
			t.Errorf("persistence %q refused: %v", p, err)
		}
	}
}
