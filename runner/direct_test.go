package runner

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/scenarios"
)

// Clients dial the servers and the resource directly unless a fault may act on their links or on
// a server: a proxy that nothing cuts or delays only costs the controller CPU. Real servers.
func TestProxiesOnlyOnLinksAFaultMayAct(t *testing.T) {
	for _, c := range []struct {
		fault   string
		proxied bool
	}{
		{"{fault: pause, target: holder, for: 1s}", false},
		{"{fault: partition, target: holder, for: 1s}", true},
		{"{fault: delay, target: client-2, latency: 50ms, for: 1s}", true},
		{"{fault: crash, target: n1, at: 1s, for: 100ms}", true},
	} {
		sc, err := scenarios.Parse("direct.yaml", []byte(targetScenario(c.fault)))
		if err != nil {
			t.Fatal(err)
		}
		clients := sc.ClientNames()
		s, err := startServers(context.Background(), sc, t.TempDir(), "", "", clients, nil, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		links := len(s.links.All())
		server := s.service.Endpoints("client-1").Nodes[0]
		upstream := s.service.Instance.Upstream("n1")
		resource := s.resourceAddr("client-1")
		s.stop(true)
		if c.proxied {
			if want := len(clients) * 2; links != want || server == upstream || resource == s.resourceDirect() {
				t.Errorf("%s: %d links (want %d), client-1 dials %s (server %s), the resource at %s", c.fault, links, want, server, upstream, resource)
			}
		} else if links != 0 || server != upstream || resource != s.resourceDirect() {
			t.Errorf("%s: %d links, client-1 dials %s (server %s), the resource at %s (itself %s)", c.fault, links, server, upstream, resource, s.resourceDirect())
		}
	}
}

// Servers reach each other directly unless a fault may act on a server: etcd's members then
// talk raft with no proxy or doorway between them, and still form one cluster. Real servers.
func TestServersReachEachOtherDirectlyUnlessAFaultActsOnOne(t *testing.T) {
	for _, c := range []struct {
		fault string
		peers bool
	}{
		{"{fault: pause, target: holder, for: 1s}", false},
		{"{fault: partition, target: holder, for: 1s}", false},
		{"{fault: crash, target: n1, at: 1s, for: 100ms}", true},
	} {
		text := strings.NewReplacer("lock: set-nx-px", "lock: etcd", "ttl: 500ms", "ttl: 2s").Replace(targetScenario(c.fault))
		sc, err := scenarios.Parse("peers.yaml", []byte(text))
		if err != nil {
			t.Fatal(err)
		}
		clients := sc.ClientNames()
		s, err := startServers(context.Background(), sc, t.TempDir(), "", "", clients, nil, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatalf("%s: %v", c.fault, err)
		}
		peers := 0
		for _, l := range s.links.All() {
			if !slices.Contains(clients, l.From) && l.To != ResourceNode {
				peers++
			}
		}
		s.stop(true)
		if (peers > 0) != c.peers {
			t.Errorf("%s: %d proxies between servers, want them: %v", c.fault, peers, c.peers)
		}
	}
}
