package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/lockcheck/lockcheck/providers"
	"github.com/lockcheck/lockcheck/providers/local"
	"github.com/lockcheck/lockcheck/proxies"
	"github.com/lockcheck/lockcheck/resource"
	"github.com/lockcheck/lockcheck/scenarios"
	"github.com/lockcheck/lockcheck/services"
	"github.com/lockcheck/lockcheck/services/redis"
)

// ResourceNode is the node name of the protected resource's own redis-server.
const ResourceNode = "resource"

// servers are what a run starts: the lock service (on the scenario's provider) and the protected
// resource (always a local redis-server: faults reach it only through clients' links), with every
// client's links on one proxy set.
type servers struct {
	links    *proxies.Set
	service  *services.Topology
	resProv  providers.Provider
	resource providers.Node
	key      string // the lock's key (LockKey)
	direct   bool   // no fault acts on a client's links or a server: clients dial servers and resource directly
	warm     *services.Warm
	log      *slog.Logger
}

func startServers(ctx context.Context, sc *scenarios.Scenario, dir, provider, config string, clients []string, warm *services.Warm, log *slog.Logger) (*servers, error) {
	s := &servers{links: proxies.New(), key: LockKey(dir), warm: warm, log: log}
	isClient := func(t string) bool { return slices.Contains(clients, t) }
	// Direct only when no fault acts on a link or a server: through a proxy a crashed server
	// looks like a connection that was accepted and then closed, dialled directly like a refused
	// dial, which go-redis's pool answers by backing off for a second; the scenarios that crash
	// or kill servers were measured through proxies.
	uses := sc.Schedule().ServerUses(isClient)
	onServers := sc.ServerFaults()
	s.direct = !sc.Schedule().UsesClientLinks(isClient) && len(onServers) == 0
	var err error
	var reused bool
	s.service, reused, err = warm.Start(ctx, sc.Plan(), services.Options{Dir: dir, Clients: clients, Provider: provider,
		ProviderConfig: config, Links: s.links, Logger: log, Uses: uses,
		DirectClients: s.direct, DirectPeers: len(onServers) == 0})
	if err != nil {
		_ = s.links.Stop()
		return nil, err
	}
	if s.service.Kept() {
		log.Info("lock service kept warm across runs", "reused", reused, "servers", s.service.Dir())
		if err := os.WriteFile(filepath.Join(dir, WarmFile), []byte(s.service.Dir()+"\n"), 0o644); err != nil {
			s.stop(false)
			return nil, err
		}
	}
	if s.resProv, err = local.New(providers.Options{Dir: dir, Logger: log}); err == nil {
		s.resource, err = redis.StartServer(ctx, s.resProv, ResourceNode, false)
	}
	if err == nil {
		store := resource.Dial(s.resourceDirect(), 2*time.Second)
		err = store.Prepare(ctx)
		_ = store.Close()
	}
	for _, c := range clients {
		if err != nil || s.direct {
			break
		}
		_, err = s.links.Add(c, ResourceNode, "", s.resource.Addr(redis.ClientPort))
	}
	if err != nil {
		s.stop(false)
		return nil, fmt.Errorf("start the resource: %w", err)
	}
	return s, nil
}

// stop heals and stops every link (a toxic may be holding data), removes what the run wrote on
// servers that outlive it, then stops every server; a service kept warm goes back to its keeper,
// to be kept if the run ended well (ok).
func (s *servers) stop(ok bool) {
	errs := []error{s.links.Stop()}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	if s.service.Kept() {
		if err := s.warm.Give(ctx, s.service, s.key, ok); err != nil {
			s.log.Error("give the lock service back", "err", err)
		}
	} else {
		if err := s.service.Cleanup(ctx, s.key); err != nil {
			s.log.Error("remove the run's keys from the lock service", "key", s.key, "err", err)
		}
		errs = append(errs, s.service.Stop())
	}
	cancel()
	if s.resProv != nil {
		errs = append(errs, s.resProv.Close())
	}
	_ = errors.Join(errs...)
}

// WarmFile, in a run folder, names the folder of the lock service's servers when the run had
// one kept warm across runs (Options.Warm): their logs are there.
const WarmFile = "servers-kept-warm"

// resourceAddr is client's link to the resource.
func (s *servers) resourceAddr(client string) string {
	if s.direct {
		return s.resourceDirect()
	}
	return s.links.Link(client, ResourceNode, "").Addr()
}

// resourceDirect is the resource itself, for the controller's final reads.
func (s *servers) resourceDirect() string { return s.resource.Addr(redis.ClientPort) }

// CheckMachine reports what this machine lacks for any run (the resource's redis-server), with the
// Debian package to install. The lock service's own needs are checked when it starts.
func CheckMachine() error {
	return local.CheckNeeds(redis.Spec(ResourceNode, false, "", nil).Needs)
}
