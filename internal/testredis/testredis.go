// Package testredis starts a plain redis-server for a test, as a run starts the protected
// resource's storage: a local process, no libfaketime, no persistence, stopped with the test.
package testredis

import (
	"context"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/providers"
	"github.com/lockcheck/lockcheck/providers/local"
	"github.com/lockcheck/lockcheck/services/redis"
)

// Start starts a redis-server named name on a local provider of its own.
func Start(t testing.TB, name string) providers.Node {
	t.Helper()
	p, err := local.New(providers.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	n, err := redis.StartServer(ctx, p, name, false)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// Addr starts a redis-server named name and returns its address.
func Addr(t testing.TB, name string) string {
	t.Helper()
	return Start(t, name).Addr(redis.ClientPort)
}
