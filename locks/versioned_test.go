package locks

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// LIB@VERSION names resolve without building anything, keep the properties of LIB's built-in
// design, and map each version to its module; bad names say what can be named.
func TestVersionedNames(t *testing.T) {
	for _, c := range []struct {
		name, want, source string
	}{
		{"redsync@v4.0.3", "redsync@v4.0.3", "github.com/go-redsync/redsync/v4 v4.0.3"},
		{"redsync@4.0.4", "redsync@v4.0.4", "github.com/go-redsync/redsync/v4 v4.0.4"},
		{"redsync@v1.2.0", "redsync@v1.2.0", "github.com/go-redsync/redsync v1.2.0"},
		{"etcd@v3.4.3", "etcd@v3.4.3", "go.etcd.io/etcd v0.0.0-20191023171146-3cf2f69b5738 (= v3.4.3)"},
		{"etcd-unchecked@v3.5.21", "etcd-unchecked@v3.5.21", "go.etcd.io/etcd/client/v3 v3.5.21"},
		{"zk@v1.0.1", "zk@v1.0.1", "github.com/go-zookeeper/zk v1.0.1"},
	} {
		d, err := Get(c.name)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		lib, _, _ := strings.Cut(c.name, "@")
		base, _ := Get(lib)
		if d.Name != c.want || !strings.HasPrefix(d.Source, c.source+",") {
			t.Errorf("%s: name %q source %q; want %q from %q", c.name, d.Name, d.Source, c.want, c.source)
		}
		if d.Service != base.Service || d.Nodes != base.Nodes || d.Token != base.Token || d.Expires != base.Expires ||
			d.Queued != base.Queued || d.Renews != base.Renews || d.Blocking != base.Blocking {
			t.Errorf("%s does not keep the properties of %s", c.name, lib)
		}
		if !d.External || d.Prepare == nil || d.New == nil || d.Program != nil {
			t.Errorf("%s: want an external design that is prepared, built by name in the worker", c.name)
		}
	}
	for _, c := range []struct{ name, want string }{
		{"jedis@v3.0.0", `"jedis" is not a library that can be named with a version; those are: redsync, etcd, etcd-unchecked, zk`},
		{"redsync@4.x", `"4.x" is not a version: write redsync@vMAJOR.MINOR.PATCH, e.g. redsync@v4.0.3`},
		{"redsync@v2.0.0", "no adapter for github.com/go-redsync/redsync v2.0.0; versions that can be named: v1.x (github.com/go-redsync/redsync), v4.x"},
		{"etcd@v3.4.20", "only as pseudo-versions; lockcheck knows v3.4.3 (= v0.0.0-20191023171146-3cf2f69b5738)"},
		{"etcd@v3.4.3+incompatible", "is not a version"},
		{"zk@", "is not a version"},
	} {
		_, err := Get(c.name)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: want an error saying %q, got %v", c.name, c.want, err)
		}
	}
}

// redsync PR #61 through lockcheck's adapter, the library at each version: a holder whose key
// expired and was taken is told by Extend (valid) that it still holds in v4.0.3, and by Unlock
// that it released; v4.0.4 says no to both.
func TestVersionedRedsyncExtendAfterExpiry(t *testing.T) {
	addr := redisNode(t)
	for _, c := range []struct {
		version    string
		stillValid bool
	}{{"v4.0.3", true}, {"v4.0.4", false}} {
		t.Run(c.version, func(t *testing.T) {
			d, err := Get("redsync@" + c.version)
			if err != nil {
				t.Fatal(err)
			}
			if err := d.Prepare(); err != nil {
				t.Fatal(err)
			}
			env := func(client string) Env {
				return Env{Client: client, Nodes: []string{addr}, Key: "test:redsync:" + c.version, TTL: 300 * time.Millisecond,
					Timeout: time.Second, Point: func(string) {}}
			}
			a, err := d.New(env("a"))
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			b, err := d.New(env("b"))
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			ctx := context.Background()
			if _, err := a.Acquire(ctx); err != nil {
				t.Fatal(err)
			}
			time.Sleep(600 * time.Millisecond) // a's key expires
			if _, err := b.Acquire(ctx); err != nil {
				t.Fatalf("b could not take the expired lock: %v", err)
			}
			valid := a.(Expiring).ValidUntil().IsZero()
			if valid != c.stillValid {
				t.Errorf("a's Extend after b took the lock: still valid = %v, want %v", valid, c.stillValid)
			}
			err = a.Release(ctx)
			if released := err == nil; released != c.stillValid {
				t.Errorf("a's Unlock after b took the lock: %v", err)
			}
			if !c.stillValid && !errors.Is(err, ErrNotHeld) {
				t.Errorf("a's Unlock: want ErrNotHeld, got %v", err)
			}
			if err := b.Release(ctx); err != nil {
				t.Errorf("b's Unlock: %v (a's must not have deleted b's key)", err)
			}
		})
	}
}
