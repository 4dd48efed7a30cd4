// Package redis is the Redis lock service: N independent redis-server primaries (n1..nN, the
// Redlock family), or one primary with replicas under Redis Sentinel (a failover topology:
// sentinel.go). Lock nodes run under libfaketime, so their clocks can be set, with the scenario's
// persistence. StartServer starts a plain redis-server, the protected resource's storage.
package redis

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/providers"
	"github.com/lockcheck/lockcheck/services"
)

// Kind is the Redis lock service.
type Kind struct{}

func init() { services.Register(Kind{}) }

// Name is "redis".
func (Kind) Name() string { return locks.Redis }

// ClientPort is the name (and, in a container, the number) of redis-server's port.
const (
	ClientPort    = "client"
	ContainerPort = 6379
)

// Persistence modes of lock nodes (Settings.Persistence).
const (
	PersistenceNone        = "none"         // no RDB, no AOF: a restart forgets everything
	PersistenceAOFEverysec = "aof-everysec" // AOF, fsync once a second
	PersistenceAOFAlways   = "aof-always"   // AOF, fsync before each reply
)

// PersistenceModes lists the valid persistence values ("" means PersistenceNone).
var PersistenceModes = []string{PersistenceNone, PersistenceAOFEverysec, PersistenceAOFAlways}

// maxNodes keeps a topology to what one machine runs comfortably.
const maxNodes = 9

// Settings are the scenario's `server:` block for Redis. (Scenario files written before each
// kind owned its settings give them at the top level; the loader moves them here.)
type Settings struct {
	Persistence string `yaml:"persistence"` // lock nodes: none (default), aof-everysec, aof-always
	Replicas    int    `yaml:"replicas"`    // replicas of the one primary, under Sentinel (failover)
	Sentinels   int    `yaml:"sentinels"`   // sentinels watching them (default 3 with replicas)
}

// detail is what Plan hands Start.
type detail struct {
	settings Settings
	failover *failoverPlan // nil: independent primaries
}

// Plan lays out the lock nodes n1..nN, or with replicas a failover topology.
func (k Kind) Plan(s services.Spec, bad services.Report) *services.Plan {
	switch {
	case s.Design.NodesProblem(s.Nodes) != "":
		bad("nodes", "%s", s.Design.NodesProblem(s.Nodes))
	case s.Nodes > maxNodes:
		bad("nodes", "at most %d Redis nodes, got %d", maxNodes, s.Nodes)
	}
	var set Settings
	services.DecodeServer(s, &set, bad)
	if set.Persistence != "" && !slices.Contains(PersistenceModes, set.Persistence) {
		bad("server.persistence", "unknown mode %q; valid: %s", set.Persistence, strings.Join(PersistenceModes, ", "))
	}
	if set.Replicas != 0 || set.Sentinels != 0 {
		return planFailover(s, set, bad)
	}
	nodes := services.NodeNames("n", s.Nodes)
	p := &services.Plan{Nodes: nodes, Servers: nodes, MinTTL: time.Millisecond, Detail: detail{settings: set}}
	for _, n := range nodes {
		p.Targets = append(p.Targets, nemesis.TargetInfo{Name: n, Restart: true})
	}
	return p
}

// Start starts the plan's servers.
func (k Kind) Start(ctx context.Context, p *services.Plan, env services.Env) (services.Instance, error) {
	d, _ := p.Detail.(detail)
	if d.failover != nil {
		return startFailover(ctx, p, d, env)
	}
	nodes, err := startNodes(ctx, env.Provider, p.Nodes, true, d.settings.Persistence, nil)
	if err != nil {
		return nil, err
	}
	return primaries{nodes: nodes}, nil
}

// primaries are independent redis-server primaries.
type primaries struct {
	nodes map[string]providers.Node
}

func (ps primaries) Upstream(server string) string { return ps.nodes[server].Addr(ClientPort) }

func (ps primaries) Endpoints(client string, link func(string) string) locks.Endpoints {
	var e locks.Endpoints
	for i := 1; i <= len(ps.nodes); i++ {
		e.Nodes = append(e.Nodes, link("n"+strconv.Itoa(i)))
	}
	return e
}

func (ps primaries) Targets() map[string]nemesis.Target {
	out := map[string]nemesis.Target{}
	for name, n := range ps.nodes {
		out[name] = n
	}
	return out
}

func (primaries) Stop() error { return nil }

// Spec describes one redis-server. extra, when set, adds arguments at each start (a replica's
// REPLICAOF, decided then).
func Spec(name string, clock bool, persistence string, extra func(providers.Placement) []string) providers.NodeSpec {
	return providers.NodeSpec{
		Name:    name,
		Image:   "redis",
		Ports:   []providers.Port{{Name: ClientPort, Number: ContainerPort}},
		Clock:   clock,
		LogFile: "redis.log",
		Needs:   []providers.Need{{Path: "redis-server", Package: "redis-server"}},
		Command: func(pl providers.Placement) ([]string, error) {
			args := []string{"redis-server", "--port", strconv.Itoa(pl.Ports[ClientPort]), "--bind", pl.Host}
			if pl.Host != "127.0.0.1" {
				args = append(args, "--protected-mode", "no") // reached from other containers, without a password
			}
			args = append(args, persistenceArgs(persistence)...)
			// Every node may become a primary: no 5 s wait before a full sync (the default delay
			// batches replicas arriving together; there are at most a few).
			args = append(args, "--repl-diskless-sync-delay", "0")
			args = append(args, "--daemonize", "no", "--dir", pl.Dir, "--logfile", pl.Dir+"/redis.log")
			if extra != nil {
				args = append(args, extra(pl)...)
			}
			return args, nil
		},
		Ready: func(ctx context.Context, n providers.Node) error { return ping(ctx, n.Addr(ClientPort)) },
	}
}

// persistenceArgs are redis-server's options for a persistence mode. RDB snapshots are always off:
// what survives a restart is what the AOF holds, nothing else.
func persistenceArgs(p string) []string {
	switch p {
	case PersistenceAOFEverysec:
		return []string{"--save", "", "--appendonly", "yes", "--appendfsync", "everysec"}
	case PersistenceAOFAlways:
		return []string{"--save", "", "--appendonly", "yes", "--appendfsync", "always"}
	default:
		return []string{"--save", "", "--appendonly", "no"}
	}
}

// StartServer starts one redis-server on p without persistence (the protected resource's
// storage, a test's or a benchmark's server); clock: under libfaketime, as lock nodes run.
func StartServer(ctx context.Context, p providers.Provider, name string, clock bool) (providers.Node, error) {
	if err := p.Add(Spec(name, clock, "", nil)); err != nil {
		return nil, err
	}
	return p.Start(ctx, name)
}

// startNodes adds then starts the named servers, concurrently.
func startNodes(ctx context.Context, p providers.Provider, names []string, clock bool, persistence string,
	extra func(name string) func(providers.Placement) []string) (map[string]providers.Node, error) {
	for _, name := range names {
		var x func(providers.Placement) []string
		if extra != nil {
			x = extra(name)
		}
		if err := p.Add(Spec(name, clock, persistence, x)); err != nil {
			return nil, err
		}
	}
	nodes := make([]providers.Node, len(names))
	errs := make([]error, len(names))
	done := make(chan struct{})
	for i, name := range names {
		go func() {
			defer func() { done <- struct{}{} }()
			nodes[i], errs[i] = p.Start(ctx, name)
		}()
	}
	for range names {
		<-done
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	out := map[string]providers.Node{}
	for i, name := range names {
		out[name] = nodes[i]
	}
	return out, nil
}

// ping sends PING over a raw RESP connection and wants +PONG.
func ping(ctx context.Context, addr string) error {
	line, err := roundTrip(ctx, addr, "*1\r\n$4\r\nPING\r\n")
	if err != nil {
		return err
	}
	if line != "+PONG" {
		return fmt.Errorf("PING answered %q", line)
	}
	return nil
}

// roundTrip sends raw RESP to addr and returns the first line of the answer.
func roundTrip(ctx context.Context, addr, msg string) (string, error) {
	d := net.Dialer{Timeout: 200 * time.Millisecond}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	_ = conn.SetDeadline(time.Now().Add(time.Second))
	if _, err := io.WriteString(conn, msg); err != nil {
		return "", err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	return strings.TrimSpace(line), err
}
