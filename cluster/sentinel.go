package cluster

// A failover topology: one Redis primary, R replicas and S real Redis Sentinels (redis-server
// --sentinel), every process on 127.0.0.1. Each replica replicates through its own toxiproxy
// proxy (REPLICAOF <proxy address>), so a scenario can cut the replication link and let a lock
// key miss the replica before the primary dies. Clients reach every data node and every
// sentinel through their own proxies, as in a plain cluster; Sentinel reports real addresses, so
// a client maps them to its proxies (ClientDial).
//
// Sentinel's failover-timeout is deliberately long (FailoverOptions.FailoverTimeout): Sentinel
// "fixes" a replica that replicates from an address other than the primary's real one
// (+fix-slave-config) once failover-timeout has passed since it first saw the replica, which would
// take the replication proxy out of the path. The timeout does not slow a failover down; it only
// delays a second attempt after a failed election (2 × failover-timeout).

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/redis/go-redis/v9"
	"github.com/rs/zerolog"
)

// MasterName is the name the sentinels monitor the primary under.
const MasterName = "lockcheck"

// Default sentinel timings: a dead primary is noticed after DownAfter and, with the election and
// the promotion, replaced about 1–3 s after its death (TestSentinelFailover measures it).
const (
	DefaultDownAfter       = 500 * time.Millisecond
	DefaultFailoverTimeout = 30 * time.Second
)

// FailoverOptions say what to start.
type FailoverOptions struct {
	Dir         string       // run folder; each server gets Dir/servers/<name>/
	Replicas    int          // replicas of the primary (default 1); nodes n2..n(1+Replicas)
	Sentinels   int          // sentinels s1..sS (default 3); quorum is a majority
	Clients     []string     // one proxy per (client, data node) and per (client, sentinel)
	Logger      *slog.Logger // nil: quiet
	Persistence string       // of the data nodes, as Options.Persistence

	DownAfter       time.Duration // sentinel down-after-milliseconds (default DefaultDownAfter)
	FailoverTimeout time.Duration // sentinel failover-timeout (default DefaultFailoverTimeout; see the package note above)
}

// Failover is a started primary, its replicas and their sentinels.
type Failover struct {
	Nodes     []*Redis          // n1 (the first primary), then the replicas n2..
	Sentinels []*SentinelServer // s1..sS
	Quorum    int               // sentinels that must agree the primary is down

	logger      *slog.Logger
	toxi        *toxiproxy.ApiServer
	links       []*Link // client links, client by client: data nodes then sentinels
	byKey       map[[2]string]*Link
	replication map[string]*Link // replica name -> its link to the first primary
	allLinks    []*Link

	stopped  atomic.Bool
	stopOnce sync.Once
	stopErr  error
}

// SentinelServer is one redis-server --sentinel process. It rewrites its own config file (Conf),
// which a Restart reuses, as a real deployment would.
type SentinelServer struct {
	Name    string
	Addr    string // 127.0.0.1:port, direct
	Dir     string
	Conf    string
	LogFile string
	ID      string // its myid

	port   int
	logger *slog.Logger
	lifecycle
}

// StartFailover starts the data nodes, sets up replication through proxies, starts the sentinels
// and returns once every replica is in sync and every sentinel sees the primary, every replica
// and every other sentinel. On error everything already started is stopped.
func StartFailover(ctx context.Context, o FailoverOptions) (*Failover, error) {
	if o.Dir == "" {
		return nil, errors.New("cluster: FailoverOptions.Dir is empty")
	}
	if o.Replicas == 0 {
		o.Replicas = 1
	}
	if o.Sentinels == 0 {
		o.Sentinels = 3
	}
	if o.Replicas < 0 || o.Sentinels < 0 {
		return nil, fmt.Errorf("cluster: %d replicas, %d sentinels", o.Replicas, o.Sentinels)
	}
	if o.DownAfter == 0 {
		o.DownAfter = DefaultDownAfter
	}
	if o.FailoverTimeout == 0 {
		o.FailoverTimeout = DefaultFailoverTimeout
	}
	if err := CheckPersistence(o.Persistence); err != nil {
		return nil, fmt.Errorf("cluster: Persistence: %w", err)
	}
	if err := CheckBinaries(); err != nil {
		return nil, err
	}
	logger := o.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	f := &Failover{
		Quorum:      o.Sentinels/2 + 1,
		logger:      logger,
		toxi:        toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop()),
		byKey:       map[[2]string]*Link{},
		replication: map[string]*Link{},
	}
	began := time.Now()
	if err := f.start(ctx, o); err != nil {
		_ = f.Stop()
		return nil, err
	}
	logger.Debug("failover topology ready", "replicas", o.Replicas, "sentinels", o.Sentinels, "took", time.Since(began))
	return f, nil
}

func (f *Failover) start(ctx context.Context, o FailoverOptions) error {
	// Data nodes: all start as primaries; the replicas are then pointed at their proxy.
	n := 1 + o.Replicas
	f.Nodes = make([]*Redis, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		name := "n" + strconv.Itoa(i+1)
		wg.Go(func() {
			f.Nodes[i], errs[i] = startRedis(ctx, name, filepath.Join(o.Dir, "servers", name), f.logger,
				redisConfig{persistence: o.Persistence, faketime: true})
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	// Every node may become a primary: no 5 s wait before a full sync (the default delay batches
	// replicas arriving together; we have at most a few).
	for _, r := range f.Nodes {
		if err := command(ctx, r.Addr, "CONFIG", "SET", "repl-diskless-sync-delay", "0"); err != nil {
			return fmt.Errorf("redis %s: %w", r.Name, err)
		}
	}
	primary := f.Nodes[0]
	for _, r := range f.Nodes[1:] {
		l, err := f.newLink(r.Name, primary.Name, r.Name+"->"+primary.Name+" replication", primary.Addr, primary)
		if err != nil {
			return err
		}
		f.replication[r.Name] = l
		host, port, _ := net.SplitHostPort(l.Addr())
		if err := command(ctx, r.Addr, "REPLICAOF", host, port); err != nil {
			return fmt.Errorf("redis %s: REPLICAOF %s: %w", r.Name, l.Addr(), err)
		}
	}
	for _, r := range f.Nodes[1:] {
		if err := waitInSync(ctx, r); err != nil {
			return err
		}
	}

	if err := f.startSentinels(ctx, o); err != nil {
		return err
	}
	for _, client := range o.Clients {
		for _, r := range f.Nodes {
			if err := f.addClientLink(client, r.Name, r.Addr, r); err != nil {
				return err
			}
		}
		for _, s := range f.Sentinels {
			if err := f.addClientLink(client, s.Name, s.Addr, nil); err != nil {
				return err
			}
		}
	}
	return f.waitSentinels(ctx, o.Replicas)
}

func (f *Failover) addClientLink(client, node, upstream string, r *Redis) error {
	if f.byKey[[2]string{client, node}] != nil {
		return fmt.Errorf("cluster: client name %q repeated", client)
	}
	l, err := f.newLink(client, node, client+"->"+node, upstream, r)
	if err != nil {
		return err
	}
	f.links = append(f.links, l)
	f.byKey[[2]string{client, node}] = l
	return nil
}

// newLink creates and starts a proxy from from to upstream; r is the Redis behind it, if any.
func (f *Failover) newLink(from, to, name, upstream string, r *Redis) (*Link, error) {
	p := toxiproxy.NewProxy(f.toxi, name, "127.0.0.1:0", upstream)
	if err := f.toxi.Collection.Add(p, true); err != nil {
		return nil, fmt.Errorf("proxy %s: %w", name, err)
	}
	p.Lock()
	addr := p.Listen
	p.Unlock()
	l := &Link{Client: from, Node: to, addr: addr, server: r, proxy: p, stopped: &f.stopped}
	f.allLinks = append(f.allLinks, l)
	return l, nil
}

// startSentinels writes each sentinel's config, already naming the replicas and the other
// sentinels (so they need not wait for hello messages to find each other), and starts them.
func (f *Failover) startSentinels(ctx context.Context, o FailoverOptions) error {
	var err error
	for attempt := 0; attempt < portAttempts; attempt++ {
		if err = f.startSentinelsOnce(ctx, o); !errors.Is(err, errPortInUse) {
			return err
		}
		for _, s := range f.Sentinels {
			if s != nil {
				_ = s.stop(s.Name)
			}
		}
		f.logger.Debug("sentinel port taken, retrying with fresh ports")
	}
	return err
}

func (f *Failover) startSentinelsOnce(ctx context.Context, o FailoverOptions) error {
	ports, release, err := holdPorts(o.Sentinels)
	if err != nil {
		return err
	}
	defer release()
	f.Sentinels = make([]*SentinelServer, o.Sentinels)
	for i := range f.Sentinels {
		name := "s" + strconv.Itoa(i+1)
		dir := filepath.Join(o.Dir, "servers", name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		f.Sentinels[i] = &SentinelServer{Name: name, Dir: dir, Conf: filepath.Join(dir, "sentinel.conf"),
			LogFile: filepath.Join(dir, "sentinel.log"), ID: randomID(), port: ports[i],
			Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[i])), logger: f.logger,
			lifecycle: lifecycle{kind: "sentinel"}}
	}
	for _, s := range f.Sentinels {
		if err := os.WriteFile(s.Conf, []byte(f.sentinelConf(s, o)), 0o644); err != nil {
			return err
		}
	}
	release()
	errs := make([]error, len(f.Sentinels))
	var wg sync.WaitGroup
	for i, s := range f.Sentinels {
		wg.Go(func() { errs[i] = s.launch(ctx) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (f *Failover) sentinelConf(s *SentinelServer, o FailoverOptions) string {
	primary := f.Nodes[0]
	var b strings.Builder
	line := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	line("port %d", s.port)
	line("bind 127.0.0.1")
	line("daemonize no")
	line("dir %s", s.Dir)
	line("logfile %s", s.LogFile)
	line("sentinel myid %s", s.ID)
	// Announce loopback explicitly: what a sentinel tells others about itself must stay on 127.0.0.1.
	line("sentinel announce-ip 127.0.0.1")
	line("sentinel monitor %s 127.0.0.1 %d %d", MasterName, primary.port, f.Quorum)
	line("sentinel down-after-milliseconds %s %d", MasterName, o.DownAfter.Milliseconds())
	line("sentinel failover-timeout %s %d", MasterName, o.FailoverTimeout.Milliseconds())
	line("sentinel parallel-syncs %s 1", MasterName)
	for _, r := range f.Nodes[1:] {
		line("sentinel known-replica %s 127.0.0.1 %d", MasterName, r.port)
	}
	for _, other := range f.Sentinels {
		if other != s {
			line("sentinel known-sentinel %s 127.0.0.1 %d %s", MasterName, other.port, other.ID)
		}
	}
	return b.String()
}

// randomID is a sentinel myid: 40 hex characters.
func randomID() string {
	b := make([]byte, 20)
	if _, err := rand.Read(b); err != nil {
		panic("crypto/rand: " + err.Error())
	}
	return hex.EncodeToString(b)
}

// launch starts the sentinel process and waits until it answers PING with its own pid.
func (s *SentinelServer) launch(ctx context.Context) error {
	cmd := exec.Command("redis-server", s.Conf, "--sentinel")
	cmd.Dir = s.Dir
	_, err := s.launchServer(ctx, s.Name, s.Addr, s.LogFile, cmd, nil)
	return err
}

// Restart kills the sentinel if it runs and starts it again with its (rewritten) config file.
func (s *SentinelServer) Restart(ctx context.Context) error {
	s.restartMu.Lock()
	defer s.restartMu.Unlock()
	if err := s.killAndWait(s.Name); err != nil {
		return err
	}
	return s.launch(ctx)
}

// waitSentinels waits until every sentinel sees the primary up, every replica connected and every
// other sentinel: before that a failover could not be agreed on.
func (f *Failover) waitSentinels(ctx context.Context, replicas int) error {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	for _, s := range f.Sentinels {
		rc := redis.NewSentinelClient(directOptions(s.Addr))
		var last error
		for {
			if last = sentinelSeesAll(ctx, rc, replicas, len(f.Sentinels)-1); last == nil {
				break
			}
			if !sleepCtx(ctx, 20*time.Millisecond) {
				rc.Close()
				return fmt.Errorf("sentinel %s: %w (last: %v); log: %s", s.Name, ctx.Err(), last, s.LogFile)
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
func waitInSync(ctx context.Context, r *Redis) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	rc := redis.NewClient(directOptions(r.Addr))
	defer rc.Close()
	for {
		info, err := rc.Info(ctx, "replication").Result()
		if err == nil && strings.Contains(info, "master_link_status:up") {
			return nil
		}
		if !sleepCtx(ctx, 10*time.Millisecond) {
			return fmt.Errorf("redis %s: replication not in sync: %w (last: %v)", r.Name, ctx.Err(), err)
		}
	}
}

// RestartNode crash-restarts data node r (SIGKILL if it runs, then start it again) and gives it
// back what StartFailover set up: no full-sync delay, and, for a replica whose first primary is
// still the primary, replication through its proxy. Without this a restarted replica would be
// an empty primary until Sentinel noticed (seconds later) and repointed it, bypassing the proxy.
func (f *Failover) RestartNode(ctx context.Context, r *Redis) error {
	if err := r.Restart(ctx); err != nil {
		return err
	}
	if err := command(ctx, r.Addr, "CONFIG", "SET", "repl-diskless-sync-delay", "0"); err != nil {
		return fmt.Errorf("redis %s: %w", r.Name, err)
	}
	l := f.replication[r.Name]
	if l == nil {
		return nil
	}
	if p, err := f.Primary(ctx); err != nil || p != f.Nodes[0] {
		return err // after a failover Sentinel repoints it at the new primary itself
	}
	host, port, _ := net.SplitHostPort(l.Addr())
	if err := command(ctx, r.Addr, "REPLICAOF", host, port); err != nil {
		return fmt.Errorf("redis %s: REPLICAOF %s: %w", r.Name, l.Addr(), err)
	}
	return nil
}

// Primary asks the sentinels which node is the primary and returns the majority's answer (the
// first answer if there is no majority yet, as during a failover).
func (f *Failover) Primary(ctx context.Context) (*Redis, error) {
	counts := map[string]int{}
	first := ""
	var errs []error
	for _, s := range f.Sentinels {
		addr, err := s.PrimaryAddr(ctx)
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
	for _, r := range f.Nodes {
		if r.Addr == best {
			return r, nil
		}
	}
	return nil, fmt.Errorf("sentinels name %s as primary, which is none of our nodes", best)
}

// PrimaryAddr is this sentinel's answer to SENTINEL get-master-addr-by-name.
func (s *SentinelServer) PrimaryAddr(ctx context.Context) (string, error) {
	rc := redis.NewSentinelClient(directOptions(s.Addr))
	defer rc.Close()
	hp, err := rc.GetMasterAddrByName(ctx, MasterName).Result()
	if err != nil {
		return "", fmt.Errorf("sentinel %s: %w", s.Name, err)
	}
	if len(hp) != 2 {
		return "", fmt.Errorf("sentinel %s: get-master-addr-by-name answered %q", s.Name, hp)
	}
	return net.JoinHostPort(hp[0], hp[1]), nil
}

// Node returns the data node named name ("n1"..), or nil.
func (f *Failover) Node(name string) *Redis {
	for _, r := range f.Nodes {
		if r.Name == name {
			return r
		}
	}
	return nil
}

// Sentinel returns the sentinel named name, or nil.
func (f *Failover) Sentinel(name string) *SentinelServer {
	for _, s := range f.Sentinels {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// Link returns the link from client to a data node or sentinel, or nil.
func (f *Failover) Link(client, node string) *Link { return f.byKey[[2]string{client, node}] }

// Links returns every client link.
func (f *Failover) Links() []*Link { return append([]*Link(nil), f.links...) }

// ReplicationLink returns the link replica replicates through (to the first primary), or nil.
func (f *Failover) ReplicationLink(replica string) *Link { return f.replication[replica] }

// SentinelAddrs are the sentinels' real addresses (what a client is told; it dials them through
// ClientDial).
func (f *Failover) SentinelAddrs() []string {
	out := make([]string, len(f.Sentinels))
	for i, s := range f.Sentinels {
		out[i] = s.Addr
	}
	return out
}

// ClientDial maps every real address a sentinel may tell client about (data nodes, sentinels) to
// that client's proxy for it.
func (f *Failover) ClientDial(client string) map[string]string {
	out := map[string]string{}
	for _, r := range f.Nodes {
		if l := f.Link(client, r.Name); l != nil {
			out[r.Addr] = l.Addr()
		}
	}
	for _, s := range f.Sentinels {
		if l := f.Link(client, s.Name); l != nil {
			out[s.Addr] = l.Addr()
		}
	}
	return out
}

// Stop heals and stops every proxy, then kills the sentinels and the data nodes, waiting until
// each is gone. Idempotent and safe to call concurrently.
func (f *Failover) Stop() error {
	f.stopOnce.Do(func() {
		f.stopped.Store(true)
		errs := []error{stopLinks(f.toxi, f.allLinks)}
		var stops []func() error
		for _, s := range f.Sentinels {
			if s != nil {
				stops = append(stops, func() error { return s.stop(s.Name) })
			}
		}
		for _, r := range f.Nodes {
			if r != nil {
				stops = append(stops, func() error { return r.stop(r.Name) })
			}
		}
		errs = append(errs, stopAll(stops))
		f.stopErr = errors.Join(errs...)
		f.logger.Debug("failover topology stopped", "err", f.stopErr)
	})
	return f.stopErr
}

// directOptions are go-redis options for the controller's own short commands to a server.
func directOptions(addr string) *redis.Options {
	return &redis.Options{Addr: addr, Protocol: 2, DisableIdentity: true, MaxRetries: -1, DialerRetries: 1,
		DialTimeout: time.Second, ContextTimeoutEnabled: true, PoolSize: 1}
}

// command sends one command directly to addr.
func command(ctx context.Context, addr string, args ...any) error {
	rc := redis.NewClient(directOptions(addr))
	defer rc.Close()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return rc.Do(ctx, args...).Err()
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}
