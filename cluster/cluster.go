// Package cluster starts and stops the real servers of a run — for now independent redis-server
// primaries for the lock (each under libfaketime, so its clock can be set, and with optional AOF
// persistence) and one for the protected resource — and puts an in-process toxiproxy
// proxy on every (client, server) link, so faults can be injected per link (asymmetric
// partitions, latency) as well as per process (pause, kill, restart).
//
// Every server binds 127.0.0.1 on a free port, runs under internal/proc (own process group,
// Pdeathsig) and so dies with the controller.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"
)

// ResourceNode is the node name of the protected resource's own redis.
const ResourceNode = "resource"

// Options say what to start.
type Options struct {
	Dir       string       // run folder; each server gets Dir/servers/<name>/ (data dir, redis.log)
	LockNodes int          // independent redis primaries for the lock, named "n1".."nN"
	Clients   []string     // client names; one proxy per (client, lock node) and per (client, "resource")
	Logger    *slog.Logger // nil: quiet
	// Persistence of the lock nodes (the resource never persists): "" or "none" (nothing
	// survives a restart), "aof-everysec" or "aof-always" (the AOF in the node's data dir, kept
	// across Restart, is reloaded). See PersistenceModes.
	Persistence string
}

// Cluster is a started set of servers and their proxies.
type Cluster struct {
	Nodes    []*Redis // lock nodes n1..nN, in order
	Resource *Redis   // the protected resource's own redis

	logger *slog.Logger
	toxi   *toxiproxy.ApiServer
	links  []*Link
	byKey  map[[2]string]*Link

	stopped  atomic.Bool
	stopOnce sync.Once
	stopErr  error
}

// Start starts the servers concurrently, then the proxies, and returns once every server answers
// PING. On error everything already started is stopped.
func Start(ctx context.Context, o Options) (*Cluster, error) {
	if o.Dir == "" {
		return nil, errors.New("cluster: Options.Dir is empty")
	}
	if o.LockNodes < 0 {
		return nil, fmt.Errorf("cluster: LockNodes = %d", o.LockNodes)
	}
	if err := CheckPersistence(o.Persistence); err != nil {
		return nil, fmt.Errorf("cluster: Persistence: %w", err)
	}
	seen := map[string]bool{}
	for _, c := range o.Clients {
		if c == "" || seen[c] {
			return nil, fmt.Errorf("cluster: client name %q empty or repeated", c)
		}
		seen[c] = true
	}
	if err := CheckBinaries(); err != nil {
		return nil, err
	}
	logger := o.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	c := &Cluster{
		logger: logger,
		toxi:   toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop()),
		byKey:  map[[2]string]*Link{},
	}

	names := make([]string, 0, o.LockNodes+1)
	for i := 1; i <= o.LockNodes; i++ {
		names = append(names, "n"+strconv.Itoa(i))
	}
	names = append(names, ResourceNode)
	servers := make([]*Redis, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		// Lock nodes run under libfaketime (settable clocks) with the chosen persistence; the
		// resource keeps the true clock and persists nothing.
		cfg := redisConfig{persistence: o.Persistence, faketime: true}
		if name == ResourceNode {
			cfg = redisConfig{}
		}
		wg.Go(func() {
			servers[i], errs[i] = startRedis(ctx, name, filepath.Join(o.Dir, "servers", name), logger, cfg)
		})
	}
	wg.Wait()
	c.Nodes = servers[:o.LockNodes:o.LockNodes]
	c.Resource = servers[o.LockNodes]
	if err := errors.Join(errs...); err != nil {
		_ = c.Stop()
		return nil, err
	}

	for _, client := range o.Clients {
		for _, r := range servers {
			l, err := c.newLink(client, r)
			if err != nil {
				_ = c.Stop()
				return nil, err
			}
			c.links = append(c.links, l)
			c.byKey[[2]string{client, r.Name}] = l
		}
	}
	logger.Debug("cluster started", "nodes", o.LockNodes, "clients", len(o.Clients), "links", len(c.links))
	return c, nil
}

// Node returns the lock node or resource server named name ("n1".., "resource"), or nil.
func (c *Cluster) Node(name string) *Redis {
	if c.Resource != nil && name == c.Resource.Name {
		return c.Resource
	}
	for _, r := range c.Nodes {
		if r != nil && r.Name == name {
			return r
		}
	}
	return nil
}

// Servers returns every server: the lock nodes, then the resource.
func (c *Cluster) Servers() []*Redis {
	out := make([]*Redis, 0, len(c.Nodes)+1)
	out = append(out, c.Nodes...)
	return append(out, c.Resource)
}

// Link returns the link from client to node ("n1".. or "resource"), or nil if there is none.
func (c *Cluster) Link(client, node string) *Link {
	return c.byKey[[2]string{client, node}]
}

// Links returns every link, client by client, each client's lock nodes in order then its
// resource link.
func (c *Cluster) Links() []*Link {
	return append([]*Link(nil), c.links...)
}

// Stop heals every proxy (removes its toxics, which may be holding data), stops toxiproxy, and
// kills every server, waiting until each is gone. It is idempotent and safe to call concurrently
// (from a defer and a Ctrl-C handler): later calls wait for the first and return its result.
func (c *Cluster) Stop() error {
	c.stopOnce.Do(func() {
		c.stopped.Store(true)
		errs := []error{stopLinks(c.toxi, c.links)}
		var stops []func() error
		for _, r := range append(append([]*Redis(nil), c.Nodes...), c.Resource) {
			if r != nil {
				stops = append(stops, func() error { return r.stop(r.Name) })
			}
		}
		errs = append(errs, stopAll(stops))
		c.stopErr = errors.Join(errs...)
		c.logger.Debug("cluster stopped", "err", c.stopErr)
	})
	return c.stopErr
}
