package services

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/lockcheck/lockcheck/internal/yamltime"
	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/providers"
)

// OneServer is a kind of lock service that is a single server (a database): a whole Kind once its
// package says what sets it apart. S is the kind's settings (its server: block).
type OneServer[S any] struct {
	Service string // the kind's name ("mariadb")
	Title   string // how messages name it ("MariaDB")
	Node    string // the server's name
	Port    string // the name of its client port
	NoClock string // why its clock cannot be set ("" if it can)
	// Params are what clients connect with besides the address (database, user).
	Params map[string]string
	// Check checks the decoded settings, reporting problems under "server.<setting>".
	Check func(set S, bad Report)
	// Spec describes the server, with its settings.
	Spec func(name string, set S) providers.NodeSpec
	// IdleLimits, when set, are how long the server lets a session stay idle outside a
	// transaction and inside one before it ends it (0: no limit), from the settings: a session
	// lock's promise lasts that long from each statement (locks.ParamIdleLimit).
	IdleLimits func(set S) (session, transaction time.Duration)
	// Cleanup removes what a run wrote under key from the server at addr, for a server that
	// outlives the run (Cleaner); nil: the kind cannot.
	Cleanup func(ctx context.Context, addr, key string) error
}

// NoDatabaseClock is why a database server's clock is not set.
const NoDatabaseClock = "no database lock reads the server's clock (none expires by time): skew a client's clock instead"

// Name is the kind's name.
func (k OneServer[S]) Name() string { return k.Service }

// Plan decodes and checks the settings and lays out the one server.
func (k OneServer[S]) Plan(s Spec, bad Report) *Plan {
	var set S
	DecodeServer(s, &set, bad)
	if k.Check != nil {
		k.Check(set, bad)
	}
	if s.Nodes != 1 {
		bad("nodes", "the %s service is one server; %s runs on 1 node, got %d", k.Title, s.Design.Name, s.Nodes)
	}
	p := &Plan{Nodes: []string{k.Node}, Servers: []string{k.Node}, MinTTL: time.Millisecond, Detail: set}
	p.Targets = []nemesis.TargetInfo{{Name: k.Node, Restart: true, NoClock: k.NoClock}}
	return p
}

// Start starts the server and waits until it serves (its spec's Ready).
func (k OneServer[S]) Start(ctx context.Context, p *Plan, env Env) (Instance, error) {
	set, _ := p.Detail.(S)
	if err := env.Provider.Add(k.Spec(k.Node, set)); err != nil {
		return nil, err
	}
	n, err := env.Provider.Start(ctx, k.Node)
	if err != nil {
		return nil, err
	}
	params := k.Params
	if k.IdleLimits != nil {
		session, transaction := k.IdleLimits(set)
		params = locks.WithIdleLimits(params, session, transaction)
	}
	return oneServer[S]{kind: k, node: n, params: params}, nil
}

// oneServer is a started OneServer.
type oneServer[S any] struct {
	kind   OneServer[S]
	node   providers.Node
	params map[string]string
}

func (i oneServer[S]) Upstream(string) string { return i.node.Addr(i.kind.Port) }

// Endpoints: the client's link to the server, and what it connects with.
func (i oneServer[S]) Endpoints(_ string, link func(string) string) locks.Endpoints {
	return locks.Endpoints{Nodes: []string{link(i.kind.Node)}, Params: i.params}
}

// Targets: the server (a restart waits until it serves: the provider's Ready).
func (i oneServer[S]) Targets() map[string]nemesis.Target {
	return map[string]nemesis.Target{i.kind.Node: i.node}
}

func (oneServer[S]) Stop() error { return nil }

// Cleanup removes what a run wrote under key (OneServer.Cleanup).
func (i oneServer[S]) Cleanup(ctx context.Context, key string) error {
	if i.kind.Cleanup == nil {
		return fmt.Errorf("the %s service cannot remove what a run wrote under %q", i.kind.Title, key)
	}
	return i.kind.Cleanup(ctx, i.node.Addr(i.kind.Port), key)
}

// CheckWhole reports each of lengths (server settings by name; 0 is unset) that is not a whole
// number of unit, which the title's server counts in (unitName: "seconds").
func CheckWhole(bad Report, title string, unit time.Duration, unitName string, lengths map[string]yamltime.Duration) {
	names := make([]string, 0, len(lengths))
	for name := range lengths {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if d := lengths[name].D(); d != 0 && (d < unit || d%unit != 0) {
			bad("server."+name, "%s: %s takes whole %s", d, title, unitName)
		}
	}
}
