package services

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/providers"
)

// Role is a target that stands for whichever node resolve names when a fault starts — the
// ZooKeeper leader, the Sentinel primary. The same node then receives the rest of that fault
// (the resume, the restart, the clock reset).
type Role struct {
	resolve func(ctx context.Context) (providers.Node, error)
	// restart, if set, restarts a node the way its service needs (rejoin a topology, wait until
	// it serves); else the node's own Restart.
	restart func(ctx context.Context, n providers.Node) error

	mu  sync.Mutex
	cur providers.Node
}

// NewRole makes a role target. restart may be nil.
func NewRole(resolve func(context.Context) (providers.Node, error), restart func(context.Context, providers.Node) error) *Role {
	return &Role{resolve: resolve, restart: restart}
}

// roleResolveTimeout bounds finding the node a role stands for.
const roleResolveTimeout = 10 * time.Second

// node returns the node the role stands for: looked up afresh when a fault starts, else the one
// found then.
func (r *Role) node(start bool) (providers.Node, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if start || r.cur == nil {
		ctx, cancel := context.WithTimeout(context.Background(), roleResolveTimeout)
		defer cancel()
		n, err := r.resolve(ctx)
		if err != nil {
			return nil, fmt.Errorf("find the node: %w", err)
		}
		r.cur = n
	}
	return r.cur, nil
}

func (r *Role) with(start bool, f func(providers.Node) error) error {
	n, err := r.node(start)
	if err != nil {
		return err
	}
	return f(n)
}

// Pause freezes the node the role stands for now.
func (r *Role) Pause() error { return r.with(true, providers.Node.Pause) }

// Resume resumes the node the fault paused.
func (r *Role) Resume() error { return r.with(false, providers.Node.Resume) }

// Kill kills the node the role stands for now.
func (r *Role) Kill() error { return r.with(true, providers.Node.Kill) }

// Restart restarts the node the fault killed.
func (r *Role) Restart(ctx context.Context) error {
	return r.with(false, func(n providers.Node) error {
		if r.restart != nil {
			return r.restart(ctx, n)
		}
		return n.Restart(ctx)
	})
}

// SetClock sets the clock of the node the role stands for now; a reset (offset 0, rate 0 or 1)
// goes to the node set before.
func (r *Role) SetClock(offset time.Duration, rate float64) error {
	reset := offset == 0 && (rate == 0 || rate == 1)
	return r.with(!reset, func(n providers.Node) error { return n.SetClock(offset, rate) })
}

// StandsFor is the node the role stands for now, found afresh (a fault starts): what a fault
// kind's own server action is looked for on (nemesis.StandsFor).
func (r *Role) StandsFor() (any, error) { return r.node(true) }

// Restarting is a node whose restart does more than the provider's: it rejoins its topology or
// waits until it serves.
type Restarting struct {
	providers.Node
	restart func(ctx context.Context, n providers.Node) error
}

// NewRestarting wraps n so that Restart calls restart.
func NewRestarting(n providers.Node, restart func(context.Context, providers.Node) error) Restarting {
	return Restarting{Node: n, restart: restart}
}

// Restart restarts the node the service's way.
func (r Restarting) Restart(ctx context.Context) error { return r.restart(ctx, r.Node) }

// StandsFor is the node (nemesis.StandsFor).
func (r Restarting) StandsFor() (any, error) { return r.Node, nil }

// Ensemble is the part of an Instance that a service of several equal servers with a leader
// (ZooKeeper, etcd) shares: its clients dial every server in order, and the nemesis acts on each
// server, restarted the service's way, and on the leader.
type Ensemble struct {
	Members    []string                  // the servers' names, in order
	Nodes      map[string]providers.Node // the servers by name
	Port       string                    // the client port's name
	LeaderRole string                    // the leader role's target name
	// FindLeader resolves the leader; Restart restarts a server the service's way.
	FindLeader func(context.Context) (providers.Node, error)
	Restart    func(context.Context, providers.Node) error
}

// Upstream is the server's client port.
func (e Ensemble) Upstream(server string) string { return e.Nodes[server].Addr(e.Port) }

// Endpoints: the client's links to every server, in order.
func (e Ensemble) Endpoints(_ string, link func(string) string) locks.Endpoints {
	var out locks.Endpoints
	for _, name := range e.Members {
		out.Nodes = append(out.Nodes, link(name))
	}
	return out
}

// Targets: every server (a restart waits until it serves again) and the leader.
func (e Ensemble) Targets() map[string]nemesis.Target {
	out := map[string]nemesis.Target{}
	for name, n := range e.Nodes {
		out[name] = NewRestarting(n, e.Restart)
	}
	out[e.LeaderRole] = NewRole(e.FindLeader, e.Restart)
	return out
}

var (
	_ nemesis.Target      = (*Role)(nil)
	_ nemesis.Restarter   = (*Role)(nil)
	_ nemesis.ClockSetter = (*Role)(nil)
	_ nemesis.Target      = Restarting{}
	_ nemesis.StandsFor   = (*Role)(nil)
	_ nemesis.StandsFor   = Restarting{}
)
