package etcd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lockcheck/lockcheck/providers"
	"github.com/lockcheck/lockcheck/services"
)

// clusterTimeout bounds a start: every member up, one leader, leadership handed to the first
// member.
const clusterTimeout = 30 * time.Second

// ErrNotServing means a member runs but does not serve linearizable requests (yet): it has no
// leader, e.g. cut off from a quorum.
var ErrNotServing = errors.New("etcd: member not serving requests")

// Cluster is a started member or cluster.
type Cluster struct {
	services.Ensemble
	names    []string
	members  map[string]providers.Node
	settings Settings
	doors    *doorways
	binary   string        // the etcd program members run: "etcd" on PATH, or a version built in the cache
	version  serverVersion // the version asked for (Debian's when the scenario names none)
	// askedDebian: the scenario named Debian's version, so the members must report it.
	askedDebian bool
	server      string // what the members run, as they report it: the run's record

	mu  sync.Mutex
	ids map[string]uint64 // member ids, learnt once the cluster is up
}

// Start starts the members and returns once they serve, with the first member leading.
func (Kind) Start(ctx context.Context, p *services.Plan, env services.Env) (services.Instance, error) {
	c, err := StartCluster(ctx, env.Provider, p.Nodes, p.Detail.(detail).settings)
	if err != nil {
		return nil, err // not a nil *Cluster in a non-nil Instance
	}
	return c, nil
}

// StartCluster starts members named names on p. It returns once every member serves
// linearizable reads and, for a cluster, the first member leads: lockcheck hands leadership to
// it, so that a scenario knows which member leads when it starts (n1) and can isolate it.
//
// A version built from the module proxy is built first, once (minutes), outside the start's
// timeout and before any member starts.
func StartCluster(ctx context.Context, p providers.Provider, names []string, set Settings) (*Cluster, error) {
	bin, v, err := serverBinary(ctx, set.Version, p)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, clusterTimeout)
	defer cancel()
	c := &Cluster{names: names, members: map[string]providers.Node{}, settings: set, doors: newDoorways(), ids: map[string]uint64{},
		binary: bin, version: v, askedDebian: set.Version != "" && !v.built()}
	c.Ensemble = services.Ensemble{Members: names, Nodes: c.members, Port: ClientPort, LeaderRole: Leader, FindLeader: c.Leader, Restart: c.restart}
	for _, name := range names {
		if err := p.Add(c.spec(name)); err != nil {
			c.doors.close()
			return nil, err
		}
	}
	var mu sync.Mutex
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() {
			n, err := p.Start(ctx, name)
			errs[i] = err
			mu.Lock()
			c.members[name] = n
			mu.Unlock()
		})
	}
	wg.Wait()
	err = errors.Join(errs...)
	if err == nil {
		err = c.waitCluster(ctx)
	}
	if err == nil {
		c.server, err = c.checkVersions(ctx)
	}
	if err == nil && len(names) > 1 {
		err = c.handLeadership(ctx, names[0])
	}
	if err != nil {
		_ = c.Stop()
		return nil, err
	}
	return c, nil
}

// spec describes member name as a node.
func (c *Cluster) spec(name string) providers.NodeSpec {
	return providers.NodeSpec{
		Name:    name,
		Image:   "etcd",
		Ports:   []providers.Port{{Name: ClientPort, Number: 2379}, {Name: PeerPort, Number: 2380}},
		LogFile: "etcd.log",
		// One processor: a member mostly waits on its peers and disk; with one per core its
		// runtime wakes idle threads at every message, a fifth of its CPU with a grid's clusters
		// side by side on two cores.
		Env:     []string{"GOMAXPROCS=1"},
		Needs:   needs(c.version.built()),
		Command: func(pl providers.Placement) ([]string, error) { return c.command(name, pl) },
		Ready: func(ctx context.Context, n providers.Node) error {
			return version(ctx, n.Addr(ClientPort))
		},
	}
}

// command is member name's command line at pl, opening its doorways first when members need
// them (doorways.go).
func (c *Cluster) command(name string, pl providers.Placement) ([]string, error) {
	urls, doors, err := c.peerURLs(name, pl)
	if err != nil {
		return nil, err
	}
	workDir := pl.Dir
	if doors {
		hostPeers := filepath.Join(pl.HostDir, peersDir)
		if err := os.MkdirAll(hostPeers, 0o755); err != nil {
			return nil, err
		}
		for _, other := range c.names {
			if other == name {
				continue
			}
			path, err := pl.Peer(other, PeerPort)
			if err != nil {
				return nil, err
			}
			if err := c.doors.ensure(name, other, hostPeers, path); err != nil {
				return nil, err
			}
		}
		workDir = pl.Dir + "/" + peersDir
	}
	advertised, err := pl.Direct(name, ClientPort)
	if err != nil {
		return nil, err
	}
	initial := make([]string, len(c.names))
	for i, m := range c.names {
		initial[i] = m + "=" + urls[m]
	}
	listen := func(port string) string {
		return "http://" + net.JoinHostPort(pl.Host, strconv.Itoa(pl.Ports[port]))
	}
	return []string{
		"env", "-C", workDir, c.binary,
		"--name", name,
		"--data-dir", pl.Dir + "/" + services.DataDir,
		"--listen-client-urls", listen(ClientPort),
		"--advertise-client-urls", "http://" + advertised,
		"--listen-peer-urls", listen(PeerPort),
		"--initial-advertise-peer-urls", urls[name],
		"--initial-cluster", strings.Join(initial, ","),
		"--initial-cluster-state", "new", // ignored on a restart: the data folder says what it is
		"--initial-cluster-token", "lockcheck",
		"--heartbeat-interval", strconv.FormatInt(c.settings.Heartbeat.D().Milliseconds(), 10),
		"--election-timeout", strconv.FormatInt(c.settings.ElectionTimeout.D().Milliseconds(), 10),
		"--logger", "zap", "--log-outputs", "stderr",
	}, nil
}

// peerURLs returns every member's peer URL as member name's placement sees the cluster, and
// whether members need doorways: when name's paths to its peers are not their direct addresses.
func (c *Cluster) peerURLs(name string, pl providers.Placement) (map[string]string, bool, error) {
	doors := false
	for _, other := range c.names {
		if other == name {
			continue
		}
		path, err := pl.Peer(other, PeerPort)
		if err != nil {
			return nil, false, err
		}
		direct, err := pl.Direct(other, PeerPort)
		if err != nil {
			return nil, false, err
		}
		doors = doors || path != direct
	}
	urls := map[string]string{}
	for _, m := range c.names {
		if doors {
			urls[m] = unixURL(m)
			continue
		}
		direct, err := pl.Direct(m, PeerPort)
		if err != nil {
			return nil, false, err
		}
		urls[m] = "http://" + direct
	}
	return urls, doors, nil
}

// Server says which etcd the members run, as they report it ("etcd 3.4.23"; a version built from
// the module proxy names its module and version): the run records it.
func (c *Cluster) Server() string { return c.server }

// Member returns the member named name, or nil.
func (c *Cluster) Member(name string) providers.Node { return c.members[name] }

// Names lists the members in order.
func (c *Cluster) Names() []string { return append([]string(nil), c.names...) }

// Stop closes the doorways and removes the members' write-ahead logs; the provider stops the
// members. etcd preallocates each WAL segment at 64 MB (3.4 has no setting for it), so a
// 3-member run would leave 200 MB in its run folder; the rest of each data folder stays.
func (c *Cluster) Stop() error {
	if c == nil {
		return nil
	}
	c.doors.close()
	var errs []error
	for _, n := range c.members {
		if n != nil {
			errs = append(errs, os.RemoveAll(filepath.Join(n.Dir(), services.DataDir, "member", "wal")))
		}
	}
	return errors.Join(errs...)
}

// restart starts a member again and waits until it serves. If ctx ends while it runs but does not
// serve yet (cut off from a quorum), the error wraps ErrNotServing and the member keeps running.
func (c *Cluster) restart(ctx context.Context, n providers.Node) error {
	if err := n.Restart(ctx); err != nil {
		return err
	}
	return waitServing(ctx, n)
}

// statuses asks every member for its status once; a member that does not answer is missing.
func (c *Cluster) statuses(ctx context.Context) map[string]memberStatus {
	out := make(map[string]memberStatus, len(c.members))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for name, n := range c.members {
		wg.Go(func() {
			s, err := status(ctx, n.Addr(ClientPort))
			if err != nil {
				return
			}
			mu.Lock()
			out[name] = s
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}

// Leader polls the members until exactly one says it leads, and returns it. It fails when ctx
// ends first. While an isolated old leader has not yet noticed that it lost its quorum (etcd's
// leaders check it every election timeout), two members say so: Leader waits until one stops.
func (c *Cluster) Leader(ctx context.Context) (providers.Node, error) {
	for {
		st := c.statuses(ctx)
		var leaders []string
		for _, name := range c.names {
			if s, ok := st[name]; ok && s.leads() {
				leaders = append(leaders, name)
			}
		}
		if len(leaders) == 1 {
			return c.members[leaders[0]], nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("etcd: no single leader (members that say they lead: %v): %w", leaders, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// waitCluster polls until every member follows the same leader, one of them, and serves a
// linearizable read; then it learns the member ids.
func (c *Cluster) waitCluster(ctx context.Context) error {
	var last string
	for {
		st := c.statuses(ctx)
		ok := len(st) == len(c.members)
		var leader uint64
		ids := map[uint64]string{}
		for name, s := range st {
			ids[s.ID] = name
			if leader == 0 {
				leader = s.Leader
			}
			ok = ok && s.Leader != 0 && s.Leader == leader
		}
		_, known := ids[leader]
		ok = ok && known
		if ok {
			var errs []error
			for _, n := range c.members {
				errs = append(errs, linearizableRead(ctx, n.Addr(ClientPort)))
			}
			if err := errors.Join(errs...); err != nil {
				ok, last = false, err.Error()
			}
		} else {
			last = fmt.Sprintf("statuses %+v", st)
		}
		if ok {
			c.mu.Lock()
			for id, name := range ids {
				c.ids[name] = id
			}
			c.mu.Unlock()
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("etcd not ready (%s): %w; logs in %s", last, ctx.Err(), filepath.Dir(c.members[c.names[0]].Dir()))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// ID is member name's id (0 before the cluster is up).
func (c *Cluster) ID(name string) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ids[name]
}

// handLeadership makes member to the leader, and waits until every member follows it.
func (c *Cluster) handLeadership(ctx context.Context, to string) error {
	for {
		cur, err := c.Leader(ctx)
		if err != nil {
			return err
		}
		if cur.Name() == to {
			if err := c.waitCluster(ctx); err != nil {
				return err
			}
			if cur, err = c.Leader(ctx); err == nil && cur.Name() == to {
				return nil
			}
			continue
		}
		if err := moveLeader(ctx, cur.Addr(ClientPort), c.ID(to)); err != nil {
			select {
			case <-ctx.Done():
				return fmt.Errorf("etcd: hand leadership from %s to %s: %w", cur.Name(), to, err)
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
}

// waitServing polls until n serves a linearizable read or ctx ends.
func waitServing(ctx context.Context, n providers.Node) error {
	var last error
	for {
		if last = linearizableRead(ctx, n.Addr(ClientPort)); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("etcd %s: %w: %v (last answer: %v)", n.Name(), ErrNotServing, ctx.Err(), last)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
