package locks

// Real lock services for the tests, and the helpers that start them. Services start through
// package services and its kinds, which import this package, so a test of this package cannot
// import them: servers_ext_test.go (package locks_test, built into the same test binary) sets
// StartTestService and StartPlainRedis when the binary starts.

import (
	"context"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/internal/proc"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/providers"
	"github.com/lockcheck/lockcheck/proxies"
)

// TestServiceSpec is the lock service a test wants.
type TestServiceSpec struct {
	Design   string // the design whose service it is (set-nx-px, redlock, zk, ...)
	Nodes    int    // lock nodes; 0: the design's own number
	Replicas int    // Redis: replicas of the one primary n1, watched by three sentinels
}

// TestService is a started lock service with a link per client.
type TestService struct {
	Nodes   []string                  // the lock nodes in order: n1.., zk1..
	Servers map[string]providers.Node // every server by name (replicas and sentinels too)
	Direct  map[string]string         // each server's own client address, not through a link
	Links   *proxies.Set              // each client's link to each server, and paths between servers
	// Network cuts and heals a client's links, or a server off from its peers (a replica from
	// its primary), as the nemesis does.
	Network   nemesis.Network
	Endpoints func(client string) Endpoints // what a client of the run would dial
}

// StartTestService starts a service with a link per client and stops it at the test's end,
// checking that none of its processes is left.
var StartTestService func(t testing.TB, s TestServiceSpec, clients ...string) *TestService

// StartPlainRedis starts one redis-server without libfaketime (as the resource's storage runs) and
// returns its address; it stops at the test's end.
var StartPlainRedis func(t testing.TB) string

// Link is client's link to server.
func (s *TestService) Link(client, server string) *proxies.Link {
	return s.Links.Link(client, server, "")
}

// node is lock node i (0-based).
func (s *TestService) node(i int) providers.Node { return s.Servers[s.Nodes[i]] }

// redisNode starts one real redis-server lock node (under libfaketime, as in a run) and returns
// its own address.
func redisNode(t *testing.T) string {
	t.Helper()
	s := StartTestService(t, TestServiceSpec{Design: "set-nx-px"})
	return s.Direct["n1"]
}

// n5Cluster starts five independent redis-server primaries with a proxied link per (client,
// node), so a test can cut one client's link or slow it down.
func n5Cluster(t *testing.T, clients ...string) *TestService {
	t.Helper()
	return StartTestService(t, TestServiceSpec{Design: "redlock", Nodes: 5}, clients...)
}

// zkStandalone starts one real ZooKeeper server (tickTime 500ms: sessions of 1..10s) with a
// proxied link for each client.
func zkStandalone(t *testing.T, clients ...string) *TestService {
	t.Helper()
	return StartTestService(t, TestServiceSpec{Design: "zk", Nodes: 1}, clients...)
}

// startSentinels starts a Redis primary n1, its replica n2 and three sentinels, with a link per
// client to each.
func startSentinels(t *testing.T, clients ...string) *TestService {
	t.Helper()
	return StartTestService(t, TestServiceSpec{Design: "set-nx-px", Replicas: 1}, clients...)
}

// process is the running process of n.
func process(t *testing.T, n providers.Node) *proc.Process {
	t.Helper()
	pid := n.(interface{ Pid() int }).Pid()
	for _, p := range proc.Live() {
		if p.Pid() == pid {
			return p
		}
	}
	t.Fatalf("%s: no live process with pid %d", n.Name(), pid)
	return nil
}

// pause freezes n (SIGSTOP), waits until it is stopped, and resumes it at the test's end.
func pause(t *testing.T, n providers.Node) {
	t.Helper()
	p := process(t, n)
	if err := n.Pause(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Resume() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.WaitStopped(ctx); err != nil {
		t.Fatal(err)
	}
}

// kill SIGKILLs n and waits until its process is gone.
func kill(t *testing.T, n providers.Node) {
	t.Helper()
	p := process(t, n)
	if err := n.Kill(); err != nil {
		t.Fatal(err)
	}
	<-p.Exited()
}
