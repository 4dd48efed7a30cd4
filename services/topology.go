package services

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/providers"
	"github.com/lockcheck/lockcheck/proxies"
)

// Options say how to start a plan.
type Options struct {
	Dir     string   // the run folder; each server gets Dir/servers/<name>/
	Clients []string // one link per (client, server) of the plan
	// Provider names where the servers run (default providers.Default); ProviderConfig is its
	// own settings (an endpoints file for external).
	Provider       string
	ProviderConfig string
	// Links is the run's proxy set, when the caller has one (it keeps other links there too: the
	// resource's); nil: the topology makes and stops its own.
	Links  *proxies.Set
	Logger *slog.Logger
	// Uses are what the run's faults may ask of servers (nemesis.Schedule.ServerUses): a provider
	// that cannot do them all (providers.Refuser) refuses the plan before anything starts.
	Uses []nemesis.Use
	// DirectClients: clients dial the servers themselves, with no proxy on their links, for a
	// run whose faults never act on a client's link (nemesis.Schedule.UsesClientLinks): each
	// proxy copies every byte twice in the controller's process, for nothing.
	DirectClients bool
	// DirectPeers: no fault acts on a server, so the servers may reach each other without the
	// provider's proxies (providers.Options.DirectPeers).
	DirectPeers bool
}

// Topology is a started lock service with its clients' links: what a run, a test or a benchmark
// uses. It implements nemesis.Network.
type Topology struct {
	Plan     *Plan
	Instance Instance
	Provider providers.Provider
	Links    *proxies.Set

	ownLinks bool
	dir      string // Options.Dir
	warmKey  string // the layout it may be kept for (Warm), when it may
	stopOnce sync.Once
	stopErr  error

	targetsOnce sync.Once
	targets     map[string]nemesis.Target
}

// Start starts plan on a provider and puts a proxy on every client's link to every server. On
// error everything started is stopped.
func Start(ctx context.Context, plan *Plan, o Options) (*Topology, error) {
	if plan == nil {
		return nil, errors.New("services: no plan")
	}
	if o.Dir == "" {
		return nil, errors.New("services: Options.Dir is empty")
	}
	seen := map[string]bool{}
	for _, c := range o.Clients {
		if c == "" || seen[c] {
			return nil, fmt.Errorf("services: client name %q empty or repeated", c)
		}
		seen[c] = true
	}
	kind, err := Lookup(plan.Kind)
	if err != nil {
		return nil, err
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	t := &Topology{Plan: plan, Links: o.Links, dir: o.Dir}
	if t.Links == nil {
		t.Links, t.ownLinks = proxies.New(), true
	}
	name := o.Provider
	if name == "" {
		name = providers.Default
	}
	t.Provider, err = providers.New(name, providers.Options{Dir: o.Dir, Links: t.Links, Config: o.ProviderConfig, Logger: o.Logger,
		DirectPeers: o.DirectPeers})
	if err != nil {
		t.stopLinks()
		return nil, err
	}
	if err := refused(t.Provider, o.Uses); err != nil {
		_ = t.Stop()
		return nil, err
	}
	began := time.Now()
	t.Instance, err = kind.Start(ctx, plan, Env{Dir: o.Dir, Provider: t.Provider, Links: t.Links, Logger: o.Logger})
	if err != nil {
		_ = t.Stop()
		return nil, fmt.Errorf("start %s: %w", plan.Kind, err)
	}
	for _, c := range o.Clients {
		if o.DirectClients {
			break
		}
		for _, s := range plan.Servers {
			if _, err := t.Links.Add(c, s, "", t.Instance.Upstream(s)); err != nil {
				_ = t.Stop()
				return nil, err
			}
		}
	}
	o.Logger.Debug("lock service ready", "kind", plan.Kind, "provider", name, "servers", plan.Servers,
		"clients", len(o.Clients), "took", time.Since(began))
	return t, nil
}

// refused asks a provider that cannot do every fault whether it can do uses, and whether its
// nodes have the server actions of a kind's own (nemesis.Capability), and joins its reasons.
func refused(p providers.Provider, uses []nemesis.Use) error {
	r, _ := p.(providers.Refuser)
	s, _ := p.(providers.Sampler)
	var errs []error
	for _, u := range uses {
		if _, ok := p.(providers.Dropper); !ok && u.Act == "drop" {
			errs = append(errs, fmt.Errorf("%s on %s (drop): it cannot drop packets between servers; use mode reset", u.Fault, u.Target))
		} else if u.Need != nil && s != nil && !u.Need.Has(s.Sample()) {
			errs = append(errs, fmt.Errorf("%s on %s (%s): its nodes have no %q action", u.Fault, u.Target, u.Act, u.Act))
		} else if r != nil {
			if err := r.Refuses(u.Target, u.Act); err != nil {
				errs = append(errs, fmt.Errorf("%s on %s (%s): %w", u.Fault, u.Target, u.Act, err))
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("the %s provider cannot carry out this scenario's faults: %w", p.Name(), errors.Join(errs...))
	}
	return nil
}

// Server is what the servers run, as the service reports it (Versioned), or "".
func (t *Topology) Server() string {
	if v, ok := t.Instance.(Versioned); ok {
		return v.Server()
	}
	return ""
}

// Leases are what the servers keep for what the run wrote under key (LeaseKeeper); none for a
// service that keeps no lease (a database's lock lasts until it is released).
func (t *Topology) Leases(ctx context.Context, key string) ([]Lease, error) {
	k, ok := t.Instance.(LeaseKeeper)
	if !ok {
		return nil, nil
	}
	return k.Leases(ctx, key)
}

// Cleaner is implemented by an Instance that can remove from its servers what a run wrote under
// key (the lock's key and the names derived from it).
type Cleaner interface {
	Cleanup(ctx context.Context, key string) error
}

// Cleanup removes what the run wrote under key, on a provider whose servers outlive the run
// (providers.Lasting); elsewhere the servers go away with their data and it does nothing.
func (t *Topology) Cleanup(ctx context.Context, key string) error {
	l, ok := t.Provider.(providers.Lasting)
	if !ok || !l.Lasting() {
		return nil
	}
	c, ok := t.Instance.(Cleaner)
	if !ok {
		return fmt.Errorf("the %s service cannot remove what the run wrote under %q", t.Plan.Kind, key)
	}
	return c.Cleanup(ctx, key)
}

// StartKind plans spec for the design's service and starts it: for tests and tools.
func StartKind(ctx context.Context, spec Spec, o Options) (*Topology, error) {
	plan, err := MustPlan(spec)
	if err != nil {
		return nil, err
	}
	return Start(ctx, plan, o)
}

// Dir is the folder the service's servers run in (Options.Dir).
func (t *Topology) Dir() string { return t.dir }

// Link is client's link to server, or nil.
func (t *Topology) Link(client, server string) *proxies.Link { return t.Links.Link(client, server, "") }

// Endpoints is what client dials: its proxies, or the servers themselves when it has none
// (Options.DirectClients).
func (t *Topology) Endpoints(client string) locks.Endpoints {
	return t.Instance.Endpoints(client, func(server string) string {
		if l := t.Link(client, server); l != nil {
			return l.Addr()
		}
		return t.Instance.Upstream(server)
	})
}

// Targets are the nemesis's handles on the servers and roles.
// They are made once, so a role (the leader, the primary) keeps the node a fault resolved it to
// for the rest of that fault, whichever way the fault reaches it (its process, its links).
func (t *Topology) Targets() map[string]nemesis.Target {
	t.targetsOnce.Do(func() { t.targets = t.Instance.Targets() })
	return t.targets
}

// Cut cuts a client's links to nodes (every server when empty), or a server off from its peers.
func (t *Topology) Cut(target string, nodes []string) error {
	if r, ok := t.Targets()[target].(*Role); ok {
		n, err := r.node(true)
		if err != nil {
			return err
		}
		return t.Provider.CutPeers(n.Name(), nodes)
	}
	if t.isServer(target) {
		return t.Provider.CutPeers(target, nodes)
	}
	return t.eachLink(target, nodes, (*proxies.Link).Cut)
}

// Drop partitions a client from nodes (every server when empty), or a server from its peers,
// silently: connections stay open and nothing gets through until Heal. A client's links are its
// proxies on every provider; a server's paths are the provider's, which must be a
// providers.Dropper.
func (t *Topology) Drop(target string, nodes []string) error {
	server := target
	if r, ok := t.Targets()[target].(*Role); ok {
		n, err := r.node(true)
		if err != nil {
			return err
		}
		server = n.Name()
	} else if !t.isServer(target) {
		return t.eachLink(target, nodes, (*proxies.Link).Drop)
	}
	d, ok := t.Provider.(providers.Dropper)
	if !ok {
		return fmt.Errorf("the %s provider cannot drop packets between servers (partition mode drop); mode reset cuts connections", t.Provider.Name())
	}
	return d.DropPeers(server, nodes)
}

// Heal undoes cuts, drops and delays alike.
func (t *Topology) Heal(target string, nodes []string) error {
	if r, ok := t.Targets()[target].(*Role); ok {
		n, err := r.node(false)
		if err != nil {
			return err
		}
		return t.Provider.HealPeers(n.Name(), nodes)
	}
	if t.isServer(target) {
		return t.Provider.HealPeers(target, nodes)
	}
	return t.eachLink(target, nodes, func(l *proxies.Link) error { return errors.Join(l.RemoveToxics(), l.Heal()) })
}

// delayToxic holds back what the client sends (upstream: client to server), so a request sent in
// time arrives late.
const delayToxic = `{"name":"lockcheck-delay","type":"latency","stream":"upstream","toxicity":1,"attributes":{"latency":%d,"jitter":%d}}`

// Delay holds back what client sends on its links to nodes (every server when empty).
func (t *Topology) Delay(client string, nodes []string, latency, jitter time.Duration) error {
	return t.eachLink(client, nodes, func(l *proxies.Link) error {
		return l.AddToxic(fmt.Sprintf(delayToxic, latency.Milliseconds(), jitter.Milliseconds()))
	})
}

func (t *Topology) isServer(name string) bool { return slices.Contains(t.Plan.Servers, name) }

func (t *Topology) eachLink(client string, nodes []string, f func(*proxies.Link) error) error {
	if len(nodes) == 0 {
		nodes = t.Plan.Servers
	}
	var errs []error
	for _, node := range nodes {
		l := t.Links.Link(client, node, "")
		if l == nil {
			errs = append(errs, fmt.Errorf("no link %s -> %s", client, node))
			continue
		}
		errs = append(errs, f(l))
	}
	return errors.Join(errs...)
}

// Stop stops the service, its nodes, and (when the topology made them) the proxies. Idempotent.
func (t *Topology) Stop() error {
	t.stopOnce.Do(func() {
		var errs []error
		if t.ownLinks {
			errs = append(errs, t.stopLinks()) // first: a toxic may be holding data
		}
		if t.Instance != nil {
			errs = append(errs, t.Instance.Stop())
		}
		if t.Provider != nil {
			errs = append(errs, t.Provider.Close())
		}
		t.stopErr = errors.Join(errs...)
	})
	return t.stopErr
}

func (t *Topology) stopLinks() error {
	if t.ownLinks {
		return t.Links.Stop()
	}
	return nil
}

var _ nemesis.Network = (*Topology)(nil)
