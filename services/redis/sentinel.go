package redis

// A failover topology: one Redis primary n1, R replicas n2.. and S real Redis Sentinels
// (redis-server --sentinel). Each replica replicates from the primary along a path the provider
// can cut (Placement.Peer: locally a proxy), so a scenario can let a lock key miss the replica
// before the primary dies. Clients follow Sentinel through their own links; Sentinel reports the
// servers' own addresses, which a client maps to its links (Endpoints' Sentinel.Dial).
//
// Sentinel's failover-timeout is deliberately long: Sentinel "fixes" a replica that replicates
// from an address other than the primary's own (+fix-slave-config) once failover-timeout has
// passed since it first saw the replica, which would take the replication path out of the
// provider's hands. The timeout does not slow a failover down; it only delays a second attempt
// after a failed election (2 × failover-timeout).

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/providers"
	"github.com/lockcheck/lockcheck/services"
)

// MasterName is the name the sentinels monitor the primary under.
const MasterName = "lockcheck"

// Sentinel timings: a dead primary is noticed after DownAfter and, with the election and the
// promotion, replaced about 1–3 s after its death (TestSentinelFailover measures it).
const (
	DownAfter              = 500 * time.Millisecond
	DefaultFailoverTimeout = 30 * time.Second
)

// SentinelPort names a sentinel's port (and, in a container, its number).
const (
	SentinelPort          = "sentinel"
	SentinelContainerPort = 26379
)

// Primary names whichever data node Sentinel names primary when a fault strikes.
const Primary = "primary"

const sentinelNoClock = "sentinels do not run under libfaketime; set a data node's clock (n1.., primary)"

type failoverPlan struct {
	replicas, sentinels []string
	quorum              int
}

func planFailover(s services.Spec, set Settings, bad services.Report) *services.Plan {
	switch {
	case set.Replicas < 0:
		bad("server.replicas", "cannot be negative, got %d", set.Replicas)
		return nil
	case set.Replicas == 0:
		bad("server.sentinels", "sentinels watch a primary with replicas: add replicas (e.g. replicas: 1)")
		return nil
	case set.Replicas > 4:
		bad("server.replicas", "at most 4, got %d", set.Replicas)
	}
	if set.Sentinels == 0 {
		set.Sentinels = 3
	}
	if set.Sentinels < 1 || set.Sentinels > 7 {
		bad("server.sentinels", "between 1 and 7, got %d", set.Sentinels)
	}
	if s.Design.Nodes != 1 || s.Nodes != 1 {
		bad("server.replicas", "failover gives one Redis primary replicas; %s uses %d node(s): use a single-node design (e.g. set-nx-px)",
			s.Design.Name, s.Nodes)
	}
	if s.Design.External {
		bad("server.replicas", "%s runs as a program of its own (the lock-client protocol), which does not follow Redis Sentinel", s.Design.Name)
	}
	f := failoverPlan{quorum: set.Sentinels/2 + 1}
	for i := 2; i <= 1+set.Replicas; i++ {
		f.replicas = append(f.replicas, "n"+strconv.Itoa(i))
	}
	f.sentinels = services.NodeNames("s", set.Sentinels)
	p := &services.Plan{Nodes: []string{"n1"}, MinTTL: time.Millisecond, Detail: detail{settings: set, failover: &f}}
	p.Servers = append(append([]string{"n1"}, f.replicas...), f.sentinels...)
	p.Targets = append(p.Targets, nemesis.TargetInfo{Name: "n1", Restart: true, Peers: f.replicas})
	for _, r := range f.replicas {
		p.Targets = append(p.Targets, nemesis.TargetInfo{Name: r, Restart: true, Peers: []string{"n1"}})
	}
	for _, sen := range f.sentinels {
		p.Targets = append(p.Targets, nemesis.TargetInfo{Name: sen, Restart: true, NoClock: sentinelNoClock})
	}
	p.Targets = append(p.Targets, nemesis.TargetInfo{Name: Primary, Role: "whichever data node Sentinel names primary when the fault " +
		"starts", Restart: true})
	return p
}

// failover is a started primary, its replicas and their sentinels.
type failover struct {
	plan      failoverPlan
	data      map[string]providers.Node // n1, replicas
	sentinels map[string]providers.Node

	mu      sync.Mutex
	started bool // the first start is over: a replica's restart asks Sentinel whom to follow
}

func startFailover(ctx context.Context, p *services.Plan, d detail, env services.Env) (*failover, error) {
	fp := *d.failover
	f := &failover{plan: fp}
	data := append([]string{"n1"}, fp.replicas...)
	var err error
	f.data, err = startNodes(ctx, env.Provider, data, true, d.settings.Persistence, f.replicaOf)
	if err != nil {
		return nil, err
	}
	for _, r := range fp.replicas {
		if err := waitInSync(ctx, f.data[r]); err != nil {
			return nil, err
		}
	}
	timeout := max(DefaultFailoverTimeout, p.Spec.Duration+30*time.Second)
	if err := f.startSentinels(ctx, env.Provider, timeout); err != nil {
		return nil, err
	}
	if err := f.waitSentinels(ctx); err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.started = true
	f.mu.Unlock()
	return f, nil
}

// replicaOf is a data node's extra arguments: a replica follows n1 along a path the provider can
// cut — at its first start, and at a restart while n1 is still the primary (after a failover,
// Sentinel repoints it at the new primary itself). Without this a restarted replica would be an
// empty primary until Sentinel noticed (seconds later) and repointed it around the path.
func (f *failover) replicaOf(name string) func(providers.Placement) []string {
	if name == "n1" {
		return nil
	}
	return func(pl providers.Placement) []string {
		f.mu.Lock()
		started := f.started
		f.mu.Unlock()
		if started {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if primary, err := f.Primary(ctx); err != nil || primary != f.data["n1"] {
				return nil
			}
		}
		addr, err := pl.Peer("n1", ClientPort)
		if err != nil {
			return nil
		}
		host, port, _ := net.SplitHostPort(addr)
		return []string{"--replicaof", host, port}
	}
}

// startSentinels writes each sentinel's config, already naming the replicas and the other
// sentinels (so they need not wait for hello messages to find each other), and starts them.
func (f *failover) startSentinels(ctx context.Context, p providers.Provider, failoverTimeout time.Duration) error {
	ids := map[string]string{}
	for _, s := range f.plan.sentinels {
		ids[s] = randomID()
	}
	for _, s := range f.plan.sentinels {
		if err := p.Add(f.sentinelSpec(s, ids, failoverTimeout)); err != nil {
			return err
		}
	}
	f.sentinels = map[string]providers.Node{}
	var mu sync.Mutex
	errs := make([]error, len(f.plan.sentinels))
	var wg sync.WaitGroup
	for i, s := range f.plan.sentinels {
		wg.Go(func() {
			n, err := p.Start(ctx, s)
			errs[i] = err
			mu.Lock()
			f.sentinels[s] = n
			mu.Unlock()
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (f *failover) sentinelSpec(name string, ids map[string]string, failoverTimeout time.Duration) providers.NodeSpec {
	written := false
	return providers.NodeSpec{
		Name:    name,
		Image:   "redis",
		Ports:   []providers.Port{{Name: SentinelPort, Number: SentinelContainerPort}},
		LogFile: "sentinel.log",
		Needs:   []providers.Need{{Path: "redis-server", Package: "redis-server"}},
		Command: func(pl providers.Placement) ([]string, error) {
			conf := filepath.Join(pl.HostDir, "sentinel.conf")
			// A sentinel rewrites its own config file; a restart reuses it, as a real
			// deployment would. Written afresh only until the first start succeeded.
			if !written || !exists(conf) {
				text, err := f.sentinelConf(name, pl, ids, failoverTimeout)
				if err != nil {
					return nil, err
				}
				if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
					return nil, err
				}
			}
			written = true
			return []string{"redis-server", filepath.Join(pl.Dir, "sentinel.conf"), "--sentinel"}, nil
		},
		Ready: func(ctx context.Context, n providers.Node) error { return ping(ctx, n.Addr(SentinelPort)) },
	}
}

func (f *failover) sentinelConf(name string, pl providers.Placement, ids map[string]string, failoverTimeout time.Duration) (string, error) {
	var errs []error
	direct := func(node, port string) (string, string) {
		addr, err := pl.Direct(node, port)
		errs = append(errs, err)
		host, p, _ := net.SplitHostPort(addr)
		return host, p
	}
	var b strings.Builder
	line := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	self, _ := direct(name, SentinelPort)
	line("port %d", pl.Ports[SentinelPort])
	line("bind %s", pl.Host)
	line("daemonize no")
	line("dir %s", pl.Dir)
	line("logfile %s", pl.Dir+"/sentinel.log")
	line("sentinel myid %s", ids[name])
	// What a sentinel tells others about itself must be an address they reach it at.
	line("sentinel announce-ip %s", self)
	host, port := direct("n1", ClientPort)
	line("sentinel monitor %s %s %s %d", MasterName, host, port, f.plan.quorum)
	line("sentinel down-after-milliseconds %s %d", MasterName, DownAfter.Milliseconds())
	line("sentinel failover-timeout %s %d", MasterName, failoverTimeout.Milliseconds())
	line("sentinel parallel-syncs %s 1", MasterName)
	for _, r := range f.plan.replicas {
		host, port := direct(r, ClientPort)
		line("sentinel known-replica %s %s %s", MasterName, host, port)
	}
	for _, other := range f.plan.sentinels {
		if other != name {
			host, port := direct(other, SentinelPort)
			line("sentinel known-sentinel %s %s %s %s", MasterName, host, port, ids[other])
		}
	}
	return b.String(), errors.Join(errs...)
}

func exists(path string) bool { _, err := os.Stat(path); return err == nil }

// randomID is a sentinel myid: 40 hex characters.
func randomID() string {
	b := make([]byte, 20)
	if _, err := rand.Read(b); err != nil {
		panic("crypto/rand: " + err.Error())
	}
	return hex.EncodeToString(b)
}

// waitSentinels waits until every sentinel sees the primary up, every replica connected and every
// other sentinel: before that a failover could not be agreed on.
func (f *failover) waitSentinels(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	for _, name := range f.plan.sentinels {
		s := f.sentinels[name]
		rc := redis.NewSentinelClient(directOptions(s.Addr(SentinelPort)))
		var last error
		for {
			if last = sentinelSeesAll(ctx, rc, len(f.plan.replicas), len(f.plan.sentinels)-1); last == nil {
				break
			}
			if !sleepCtx(ctx, 20*time.Millisecond) {
				rc.Close()
				return fmt.Errorf("sentinel %s: %w (last: %v); log: %s", name, ctx.Err(), last, filepath.Join(s.Dir(), "sentinel.log"))
			}
		}
		rc.Close()
	}
	return nil
}

func sentinelSeesAll(ctx context.Context, rc *redis.SentinelClient, replicas, others int) error {
	m, err := rc.Master(ctx, MasterName).Result()
	if err != nil {
		return err
	}
	if m["flags"] != "master" {
		return fmt.Errorf("primary flags %q", m["flags"])
	}
	reps, err := rc.Replicas(ctx, MasterName).Result()
	if err != nil {
		return err
	}
	if up := countFlags(reps, "slave", "master-link-status", "ok"); up != replicas {
		return fmt.Errorf("%d of %d replicas up", up, replicas)
	}
	sens, err := rc.Sentinels(ctx, MasterName).Result()
	if err != nil {
		return err
	}
	if up := countFlags(sens, "sentinel", "", ""); up != others {
		return fmt.Errorf("%d of %d other sentinels up", up, others)
	}
	return nil
}

// countFlags counts instances whose flags are exactly want (no s_down, disconnected, ...) and,
// when field is given, whose field has value value.
func countFlags(instances []map[string]string, want, field, value string) int {
	n := 0
	for _, i := range instances {
		if i["flags"] == want && (field == "" || i[field] == value) {
			n++
		}
	}
	return n
}

// waitInSync waits until replica r reports its link to the primary up.
func waitInSync(ctx context.Context, r providers.Node) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	rc := redis.NewClient(directOptions(r.Addr(ClientPort)))
	defer rc.Close()
	for {
		info, err := rc.Info(ctx, "replication").Result()
		if err == nil && strings.Contains(info, "master_link_status:up") {
			return nil
		}
		if !sleepCtx(ctx, 10*time.Millisecond) {
			return fmt.Errorf("redis %s: replication not in sync: %w (last: %v)", r.Name(), ctx.Err(), err)
		}
	}
}

// Primary asks the sentinels which data node is the primary and returns the majority's answer (the
// first answer if there is no majority yet, as during a failover).
func (f *failover) Primary(ctx context.Context) (providers.Node, error) {
	counts := map[string]int{}
	first := ""
	var errs []error
	for _, name := range f.plan.sentinels {
		addr, err := primaryAddr(ctx, f.sentinels[name])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if first == "" {
			first = addr
		}
		counts[addr]++
	}
	best := first
	for addr, n := range counts {
		if n > counts[best] {
			best = addr
		}
	}
	if best == "" {
		return nil, fmt.Errorf("no sentinel answered: %w", errors.Join(errs...))
	}
	for _, n := range f.data {
		if n.Advertised(ClientPort) == best {
			return n, nil
		}
	}
	return nil, fmt.Errorf("sentinels name %s as primary, which is none of our nodes", best)
}

// primaryAddr is one sentinel's answer to SENTINEL get-master-addr-by-name.
func primaryAddr(ctx context.Context, s providers.Node) (string, error) {
	rc := redis.NewSentinelClient(directOptions(s.Addr(SentinelPort)))
	defer rc.Close()
	hp, err := rc.GetMasterAddrByName(ctx, MasterName).Result()
	if err != nil {
		return "", fmt.Errorf("sentinel %s: %w", s.Name(), err)
	}
	if len(hp) != 2 {
		return "", fmt.Errorf("sentinel %s: get-master-addr-by-name answered %q", s.Name(), hp)
	}
	return net.JoinHostPort(hp[0], hp[1]), nil
}

func (f *failover) Upstream(server string) string {
	if n := f.data[server]; n != nil {
		return n.Addr(ClientPort)
	}
	return f.sentinels[server].Addr(SentinelPort)
}

// Endpoints: the client follows Sentinel; every address a sentinel may name maps to the client's
// link to that server.
func (f *failover) Endpoints(client string, link func(string) string) locks.Endpoints {
	env := &locks.SentinelEnv{Master: MasterName, Dial: map[string]string{}}
	for _, name := range f.plan.sentinels {
		addr := f.sentinels[name].Advertised(SentinelPort)
		env.Addrs = append(env.Addrs, addr)
		env.Dial[addr] = link(name)
	}
	for name, n := range f.data {
		env.Dial[n.Advertised(ClientPort)] = link(name)
	}
	return locks.Endpoints{Nodes: []string{link("n1")}, Sentinel: env}
}

func (f *failover) Targets() map[string]nemesis.Target {
	out := map[string]nemesis.Target{}
	for name, n := range f.data {
		out[name] = n // a replica's restart follows n1 again if it is still the primary (replicaOf)
	}
	for name, n := range f.sentinels {
		out[name] = n
	}
	out[Primary] = services.NewRole(f.Primary, nil)
	return out
}

func (f *failover) Stop() error { return nil }

// directOptions are go-redis options for the harness's own short commands to a server.
func directOptions(addr string) *redis.Options {
	return &redis.Options{Addr: addr, Protocol: 2, DisableIdentity: true, MaxRetries: -1, DialerRetries: 1,
		DialTimeout: time.Second, ContextTimeoutEnabled: true, PoolSize: 1}
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}
