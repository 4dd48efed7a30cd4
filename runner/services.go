package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/internal/proc"
	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/scenarios"
)

// services are the servers a run needs: the lock service's nodes (Redis primaries or a ZooKeeper
// ensemble) and the protected resource's Redis, with a proxy per client link.
type services struct {
	redis     *cluster.Cluster   // lock nodes when the lock runs on Redis, and always the resource
	zookeeper *cluster.ZooKeeper // lock nodes when the lock runs on ZooKeeper
	failover  *cluster.Failover  // lock nodes when the scenario has replicas (failover.go)
	nodes     []string
}

func startServices(ctx context.Context, sc *scenarios.Scenario, dir string, clients []string, log *slog.Logger) (*services, error) {
	s := &services{nodes: sc.NodeNames()}
	redisNodes := sc.Nodes
	if sc.Service() == locks.ZooKeeper || sc.Replicas > 0 {
		redisNodes = 0
	}
	var err error
	s.redis, err = cluster.Start(ctx, cluster.Options{Dir: dir, LockNodes: redisNodes, Clients: clients, Logger: log,
		Persistence: sc.Persistence})
	if err != nil {
		return nil, err
	}
	if sc.Service() == locks.ZooKeeper {
		if err := cluster.CheckZooKeeper(); err != nil {
			s.stop()
			return nil, err
		}
		s.zookeeper, err = cluster.StartZooKeeper(ctx, cluster.ZooKeeperOptions{Dir: dir, Servers: sc.Nodes, Clients: clients, Logger: log})
		if err != nil {
			s.stop()
			return nil, err
		}
	}
	if sc.Replicas > 0 {
		if err := s.startFailover(ctx, sc, dir, clients, log); err != nil {
			s.stop()
			return nil, err
		}
	}
	return s, nil
}

func (s *services) stop() {
	if s.zookeeper != nil {
		_ = s.zookeeper.Stop()
	}
	if s.failover != nil {
		_ = s.failover.Stop()
	}
	_ = s.redis.Stop()
}

// lockAddrs are the addresses a client dials for the lock service, through its own proxies.
func (s *services) lockAddrs(client string) []string {
	if s.zookeeper != nil {
		return s.zookeeper.ConnectString(client)
	}
	if s.failover != nil {
		return []string{s.failover.Link(client, s.failover.Nodes[0].Name).Addr()}
	}
	var out []string
	for _, n := range s.nodes {
		out = append(out, s.redis.Link(client, n).Addr())
	}
	return out
}

func (s *services) resourceAddr(client string) string {
	return s.redis.Link(client, cluster.ResourceNode).Addr()
}

func (s *services) resourceDirect() string { return s.redis.Resource.Addr }

func (s *services) link(client, node string) *cluster.Link {
	if s.zookeeper != nil && node != cluster.ResourceNode {
		return s.zookeeper.Link(client, node)
	}
	if s.failover != nil && node != cluster.ResourceNode {
		return s.failover.Link(client, node)
	}
	return s.redis.Link(client, node)
}

// targets are the lock nodes as the nemesis sees them (and "leader" for a ZooKeeper ensemble).
func (s *services) targets() map[string]nemesis.Target {
	out := map[string]nemesis.Target{}
	if s.zookeeper != nil {
		for _, z := range s.zookeeper.Servers {
			out[z.Name] = serverTarget{z}
		}
		out[scenarios.Leader] = &leaderTarget{zk: s.zookeeper}
		return out
	}
	if s.failover != nil {
		return s.failoverTargets()
	}
	for _, n := range s.redis.Nodes {
		out[n.Name] = serverTarget{n}
	}
	return out
}

// server is a Redis or ZooKeeper node: its current process (a new one after each restart).
type server interface {
	Process() *proc.Process
	Restart(ctx context.Context) error
}

// serverTarget signals whatever process the server runs now, so faults still land after a restart.
type serverTarget struct{ s server }

func (t serverTarget) Stop() error                       { return t.s.Process().Stop() }
func (t serverTarget) Cont() error                       { return t.s.Process().Cont() }
func (t serverTarget) Kill() error                       { return t.s.Process().Kill() }
func (t serverTarget) Restart(ctx context.Context) error { return t.s.Restart(ctx) }

// SetClock sets a Redis node's clock through libfaketime; other servers have no clock control.
func (t serverTarget) SetClock(offset time.Duration, rate float64) error {
	c, ok := t.s.(interface {
		SetClock(time.Duration, float64) error
	})
	if !ok {
		return errors.New("this server's clock cannot be set")
	}
	return c.SetClock(offset, rate)
}

// leaderTarget is whichever ZooKeeper server leads when a fault starts; the same server then
// receives the rest of that fault (the resume, the restart).
type leaderTarget struct {
	zk  *cluster.ZooKeeper
	mu  sync.Mutex
	cur *cluster.ZKServer
}

func (l *leaderTarget) server(start bool) (*cluster.ZKServer, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if start || l.cur == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		z, err := l.zk.Leader(ctx)
		if err != nil {
			return nil, fmt.Errorf("find the leader: %w", err)
		}
		l.cur = z
	}
	return l.cur, nil
}

func (l *leaderTarget) Stop() error {
	return l.with(true, func(z *cluster.ZKServer) error { return z.Process().Stop() })
}
func (l *leaderTarget) Cont() error {
	return l.with(false, func(z *cluster.ZKServer) error { return z.Process().Cont() })
}
func (l *leaderTarget) Kill() error {
	return l.with(true, func(z *cluster.ZKServer) error { return z.Process().Kill() })
}
func (l *leaderTarget) Restart(ctx context.Context) error {
	return l.with(false, func(z *cluster.ZKServer) error { return z.Restart(ctx) })
}

func (l *leaderTarget) with(start bool, f func(*cluster.ZKServer) error) error {
	z, err := l.server(start)
	if err != nil {
		return err
	}
	return f(z)
}

// network cuts and heals client links for partition faults.
type network struct{ s *services }

func (n network) each(client string, nodes []string, f func(*cluster.Link) error) error {
	if l := n.s.replicationLink(client); l != nil { // a replica's "links": its replication link
		return f(l)
	}
	if len(nodes) == 0 {
		nodes = n.s.nodes
	}
	var errs []error
	for _, node := range nodes {
		l := n.s.link(client, node)
		if l == nil {
			errs = append(errs, fmt.Errorf("no link %s -> %s", client, node))
			continue
		}
		errs = append(errs, f(l))
	}
	return errors.Join(errs...)
}

func (n network) Cut(client string, nodes []string) error {
	if z := n.s.zookeeper; z != nil && z.Server(client) != nil { // a server cut from its peers
		return z.CutPeers(client, nodes)
	}
	return n.each(client, nodes, (*cluster.Link).Cut)
}

// Heal undoes cuts and delays alike.
func (n network) Heal(client string, nodes []string) error {
	if z := n.s.zookeeper; z != nil && z.Server(client) != nil {
		return z.HealPeers(client, nodes)
	}
	return n.each(client, nodes, func(l *cluster.Link) error {
		return errors.Join(l.RemoveToxics(), l.Heal())
	})
}

// delayToxic holds back what the client sends (upstream: client to server), so a request sent in
// time arrives late.
const delayToxic = `{"name":"lockcheck-delay","type":"latency","stream":"upstream","toxicity":1,"attributes":{"latency":%d,"jitter":%d}}`

func (n network) Delay(client string, nodes []string, latency, jitter time.Duration) error {
	return n.each(client, nodes, func(l *cluster.Link) error {
		return l.AddToxic(fmt.Sprintf(delayToxic, latency.Milliseconds(), jitter.Milliseconds()))
	})
}
