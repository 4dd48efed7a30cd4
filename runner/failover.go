package runner

// A run with replicas: the lock's Redis is a primary, replicas and Redis Sentinels
// (cluster.Failover); clients follow Sentinel through their own proxies.

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/scenarios"
)

func (s *services) startFailover(ctx context.Context, sc *scenarios.Scenario, dir string, clients []string, log *slog.Logger) error {
	var err error
	// Sentinel takes a replica's replication proxy out of the path failover-timeout after it first
	// saw it (cluster/sentinel.go): keep that beyond the end of the run.
	s.failover, err = cluster.StartFailover(ctx, cluster.FailoverOptions{Dir: dir, Replicas: sc.Replicas,
		Sentinels: sc.Sentinels, Clients: clients, Logger: log, Persistence: sc.Persistence,
		FailoverTimeout: max(cluster.DefaultFailoverTimeout, sc.Duration.D()+30*time.Second)})
	if err != nil {
		return err
	}
	// A client partitioned from "every lock node" loses the data nodes and the sentinels.
	s.nodes = append(sc.NodeNames(), append(sc.ReplicaNames(), sc.SentinelNames()...)...)
	return nil
}

// failoverTargets: every data node and sentinel, and "primary".
func (s *services) failoverTargets() map[string]nemesis.Target {
	out := map[string]nemesis.Target{}
	for _, r := range s.failover.Nodes {
		out[r.Name] = serverTarget{failoverNode{r, s.failover}}
	}
	for _, sen := range s.failover.Sentinels {
		out[sen.Name] = serverTarget{sen}
	}
	out[scenarios.Primary] = &primaryTarget{f: s.failover}
	return out
}

// replicationLink is the link a replica named name replicates through, or nil.
func (s *services) replicationLink(name string) *cluster.Link {
	if s.failover == nil {
		return nil
	}
	return s.failover.ReplicationLink(name)
}

// sentinelEnv is what client needs to follow Sentinel through its proxies (nil without failover).
func (s *services) sentinelEnv(client string) *locks.SentinelEnv {
	if s.failover == nil {
		return nil
	}
	return &locks.SentinelEnv{Master: cluster.MasterName, Addrs: s.failover.SentinelAddrs(), Dial: s.failover.ClientDial(client)}
}

// failoverNode is a data node whose crash-restart puts it back in the topology (a replica
// replicates through its proxy again).
type failoverNode struct {
	*cluster.Redis
	f *cluster.Failover
}

func (n failoverNode) Restart(ctx context.Context) error { return n.f.RestartNode(ctx, n.Redis) }

// primaryTarget is whichever node Sentinel names primary when a fault starts; the same node then
// receives the rest of that fault (the resume, the restart, the clock reset).
type primaryTarget struct {
	f   *cluster.Failover
	mu  sync.Mutex
	cur *cluster.Redis
}

func (p *primaryTarget) node(start bool) (*cluster.Redis, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if start || p.cur == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		r, err := p.f.Primary(ctx)
		if err != nil {
			return nil, fmt.Errorf("find the primary: %w", err)
		}
		p.cur = r
	}
	return p.cur, nil
}

func (p *primaryTarget) with(start bool, f func(*cluster.Redis) error) error {
	r, err := p.node(start)
	if err != nil {
		return err
	}
	return f(r)
}

func (p *primaryTarget) Stop() error {
	return p.with(true, func(r *cluster.Redis) error { return r.Process().Stop() })
}
func (p *primaryTarget) Cont() error {
	return p.with(false, func(r *cluster.Redis) error { return r.Process().Cont() })
}
func (p *primaryTarget) Kill() error {
	return p.with(true, func(r *cluster.Redis) error { return r.Process().Kill() })
}
func (p *primaryTarget) Restart(ctx context.Context) error {
	return p.with(false, func(r *cluster.Redis) error { return p.f.RestartNode(ctx, r) })
}

// SetClock sets the primary's clock; a reset (offset 0, rate 1 or 0) goes to the node set before.
func (p *primaryTarget) SetClock(offset time.Duration, rate float64) error {
	reset := offset == 0 && (rate == 0 || rate == 1)
	return p.with(!reset, func(r *cluster.Redis) error { return r.SetClock(offset, rate) })
}
