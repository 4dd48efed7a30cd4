package etcd_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/providers"
	"github.com/lockcheck/lockcheck/scenarios"
	"github.com/lockcheck/lockcheck/services"
	"github.com/lockcheck/lockcheck/services/etcd"
)

// A version lockcheck does not build is refused when the scenario loads, naming the module it
// would come from and the versions it does build.
func TestUnknownVersionIsRefusedAtLoad(t *testing.T) {
	src := "name: x\nlock: etcd\nnodes: 3\nclients: 1\nttl: 2s\nduration: 2s\nserver:\n  version: 3.5.99\n"
	_, err := scenarios.Parse("x.yaml", []byte(src))
	if err == nil {
		t.Fatal("want an error for etcd 3.5.99")
	}
	for _, w := range []string{"x.yaml:8: server.version:", "go.etcd.io/etcd/server/v3@v3.5.99", "supported: 3.4.23 (Debian's etcd-server",
		"3.4.3 (go.etcd.io/etcd@v0.0.0-20191023171146-3cf2f69b5738)", "3.5.21 (go.etcd.io/etcd/server/v3@v3.5.21)"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not contain %q", err, w)
		}
	}
	if strings.Count(err.Error(), "\n") > 0 {
		t.Errorf("want one line, got %q", err)
	}
	for _, v := range etcd.ServerVersions() {
		if _, err := scenarios.Parse("x.yaml", []byte(strings.Replace(src, "3.5.99", v, 1))); err != nil {
			t.Errorf("version %s: %v", v, err)
		}
	}
}

// noHost is a provider whose servers do not run on this machine (an image's, a user's cluster's):
// the part of the docker and external providers the version check looks at. Adding a node to it
// is a failure of the test: the refusal must come before anything is added or built.
type noHost struct{ added int }

func (p *noHost) Name() string                 { return "docker" }
func (p *noHost) Add(providers.NodeSpec) error { p.added++; return errors.New("added a node") }
func (p *noHost) Start(context.Context, string) (providers.Node, error) {
	return nil, errors.New("started a node")
}
func (p *noHost) CutPeers(string, []string) error  { return nil }
func (p *noHost) HealPeers(string, []string) error { return nil }
func (p *noHost) Close() error                     { return nil }

// A built version on a provider that cannot run programs of this machine is refused before any
// node is added or anything is built, in one line that says what runs there and what to use.
func TestBuiltVersionNeedsTheLocalProvider(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir()) // nothing built: a build would show as a folder here
	p := &noHost{}
	_, err := etcd.StartCluster(context.Background(), p, []string{"n1", "n2", "n3"}, etcd.Settings{
		ElectionTimeout: 1e9, Heartbeat: 1e8, Version: "3.4.3"})
	want := "server.version 3.4.3: the docker provider cannot run an etcd built on this machine (docker runs its image's, Debian's etcd 3.4.23"
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "needs the local provider") {
		t.Fatalf("got %v, want an error containing %q", err, want)
	}
	if p.added != 0 {
		t.Fatalf("%d nodes added before the refusal", p.added)
	}
	if entries, _ := os.ReadDir(os.Getenv("XDG_CACHE_HOME")); len(entries) != 0 {
		t.Fatalf("something was built or cached before the refusal: %v", entries)
	}
	// Debian's own version is what the image runs: no refusal there.
	if _, err := etcd.StartCluster(context.Background(), p, []string{"n1"}, etcd.Settings{
		ElectionTimeout: 1e9, Heartbeat: 1e8, Version: "3.4.23"}); err == nil || !strings.Contains(err.Error(), "added a node") {
		t.Fatalf("3.4.23 on the image provider: got %v, want it to go on to add its nodes", err)
	}
}

// Each version lockcheck builds starts as a 3-member cluster with n1 leading, and the run records
// what the members report. Versions not built yet are built only with LOCKCHECK_BUILD_SERVERS=1
// (minutes each; make track-record builds what its scenarios need); Debian's always runs.
func TestEveryVersionStartsAndSaysWhatItIs(t *testing.T) {
	for _, v := range etcd.ServerVersions() {
		t.Run(v, func(t *testing.T) {
			if v != "3.4.23" && !etcd.ServerBuilt(v) {
				if os.Getenv("LOCKCHECK_BUILD_SERVERS") != "1" {
					t.Skipf("etcd %s is not built (LOCKCHECK_BUILD_SERVERS=1 builds it here, a few minutes)", v)
				}
				began := time.Now()
				if _, err := etcd.BuildServer(context.Background(), v); err != nil {
					t.Fatal(err)
				}
				t.Logf("built etcd %s in %v", v, time.Since(began).Round(time.Second))
			}
			began := time.Now()
			top := start(t, plan3(t, "server: {version: "+v+"}\n"), "client-1")
			t.Logf("etcd %s: 3 members ready, n1 leading, in %v", v, time.Since(began).Round(time.Millisecond))
			c := top.Instance.(*etcd.Cluster)
			if got := c.Server(); !strings.HasPrefix(got, "etcd "+v) {
				t.Fatalf("cluster says it runs %q, want etcd %s", got, v)
			}
			if l := leader(t, c, 5*time.Second); l != "n1" {
				t.Fatalf("leader %s, want n1", l)
			}
			if err := put(top.Link("client-1", "n2").Addr(), "k", "v"); err != nil {
				t.Fatalf("a write through n2: %v", err)
			}
		})
	}
}

// BenchmarkStartThreeMembersByVersion: start time of a 3-member cluster (ready, n1 leading) of
// each version that is built (Debian's always).
//
//	go test -run '^$' -bench StartThreeMembersByVersion -benchtime 5x ./services/etcd/
func BenchmarkStartThreeMembersByVersion(b *testing.B) {
	for _, v := range etcd.ServerVersions() {
		b.Run(v, func(b *testing.B) {
			if v != "3.4.23" && !etcd.ServerBuilt(v) {
				b.Skipf("etcd %s is not built", v)
			}
			p := plan3(b, "server: {version: "+v+"}\n")
			for i := 0; i < b.N; i++ {
				top, err := services.Start(context.Background(), p, services.Options{Dir: b.TempDir()})
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				_ = top.Stop()
				b.StartTimer()
			}
		})
	}
}
