// Package zookeeper is the ZooKeeper lock service: a standalone server or an ensemble (Debian's
// 3.8 jar, run by java directly, no systemd). Clients reach each server through their own links;
// servers reach each other along paths the provider can cut (Placement.Peer): each server's
// zoo.cfg lists itself at its own ports and every other server at the paths from itself to it, so
// a scenario can split the ensemble.
//
// ZooKeeper keeps one election connection per pair of servers, owned by the higher id: when the
// lower id i connects to j, its first message carries i's own election address, j hangs up and
// dials that address back — around any proxy. The election port's Hello (election.go) lets a
// provider that puts proxies between servers rewrite that address to the path from j back to i.
package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lockcheck/lockcheck/internal/yamltime"
	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/providers"
	"github.com/lockcheck/lockcheck/providers/local"
	"github.com/lockcheck/lockcheck/services"
)

// Kind is the ZooKeeper lock service.
type Kind struct{}

func init() { services.Register(Kind{}) }

// Name is "zookeeper".
func (Kind) Name() string { return locks.ZooKeeper }

// QuorumSize: deployments run three (services.Quorum).
func (Kind) QuorumSize() int { return 3 }

// Ports by name, and their numbers in a container.
const (
	ClientPort   = "client"
	QuorumPort   = "quorum"
	ElectionPort = "election"
)

const (
	// DefaultTick is ZooKeeper's tickTime unless the scenario says otherwise; sessions may last
	// 2..20 ticks.
	DefaultTick = 500 * time.Millisecond
	// ensembleTimeout bounds a start: every server answering, one leader.
	ensembleTimeout = 30 * time.Second
	// maxServers keeps an ensemble to what one machine runs comfortably.
	maxServers = 9
)

// logFile is each server's log, in its folder.
const logFile = "zookeeper.log"

// Leader names whichever server leads when a fault strikes.
const Leader = "leader"

const noClock = "ZooKeeper under libfaketime spins at full CPU: skew a client's clock instead"

// ErrNotServing means a server is running but not serving clients (yet): it is looking for a
// leader, e.g. cut off from a quorum.
var ErrNotServing = errors.New("zookeeper: server not serving requests")

// Settings are the scenario's `server:` block for ZooKeeper.
type Settings struct {
	TickTime yamltime.Duration `yaml:"tick_time"` // ZooKeeper's tick (default 500ms, whole milliseconds)
}

// Plan lays out servers zk1..zkN and the leader role.
func (Kind) Plan(s services.Spec, bad services.Report) *services.Plan {
	set := Settings{TickTime: yamltime.Duration(DefaultTick)}
	services.DecodeServer(s, &set, bad)
	tick := set.TickTime.D()
	if tick < time.Millisecond || tick%time.Millisecond != 0 {
		bad("server.tick_time", "%v is not a whole number of milliseconds", tick)
		tick = DefaultTick
	}
	switch {
	case s.Nodes < 1 || s.Nodes > maxServers:
		bad("nodes", "a ZooKeeper ensemble has 1..%d servers, got %d", maxServers, s.Nodes)
		return nil
	}
	if s.TTL != 0 && (s.TTL < 2*tick || s.TTL > 20*tick) {
		bad("ttl", "a ZooKeeper session lasts between 2 and 20 ticks (%s..%s with tick_time %s); %s would be clamped",
			2*tick, 20*tick, tick, s.TTL)
	}
	servers := services.NodeNames("zk", s.Nodes)
	p := &services.Plan{Nodes: servers, Servers: servers, MinTTL: 2 * tick, Detail: tick}
	for _, n := range servers {
		var peers []string
		for _, o := range servers {
			if o != n {
				peers = append(peers, o)
			}
		}
		p.Targets = append(p.Targets, nemesis.TargetInfo{Name: n, Restart: true, NoClock: noClock, Peers: peers})
	}
	// The leader can be cut from the others like any server: the one leading when the partition
	// starts.
	var leaderPeers []string
	if len(servers) > 1 {
		leaderPeers = servers
	}
	p.Targets = append(p.Targets, nemesis.TargetInfo{Name: Leader, Role: "whichever server leads when the fault starts",
		Restart: true, NoClock: noClock, Peers: leaderPeers})
	return p
}

// Ensemble is a started standalone server or ensemble.
type Ensemble struct {
	services.Ensemble
	names   []string
	servers map[string]providers.Node
	tick    time.Duration
}

// Start starts the servers and returns once every server serves and, for an ensemble, exactly one
// leads and the others follow.
func (Kind) Start(ctx context.Context, p *services.Plan, env services.Env) (services.Instance, error) {
	return StartEnsemble(ctx, env.Provider, p.Nodes, p.Detail.(time.Duration))
}

// StartEnsemble starts servers named names on p with tick.
func StartEnsemble(ctx context.Context, p providers.Provider, names []string, tick time.Duration) (*Ensemble, error) {
	ctx, cancel := context.WithTimeout(ctx, ensembleTimeout)
	defer cancel()
	z := &Ensemble{names: names, servers: map[string]providers.Node{}, tick: tick}
	z.Ensemble = services.Ensemble{Members: names, Nodes: z.servers, Port: ClientPort, LeaderRole: Leader, FindLeader: z.Leader, Restart: z.restart}
	if p.Name() == local.Name {
		makeArchive(ctx, tick) // once per machine
	}
	for i, name := range names {
		if err := p.Add(z.spec(i+1, name)); err != nil {
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
			z.servers[name] = n
			mu.Unlock()
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if err := z.waitEnsemble(ctx); err != nil {
		return nil, err
	}
	return z, nil
}

// spec describes server id as a node.
func (z *Ensemble) spec(id int, name string) providers.NodeSpec {
	ports := []providers.Port{{Name: ClientPort, Number: 2181}}
	if len(z.names) > 1 {
		// A follower dialing a newly elected leader's quorum port before it is bound must wait, not
		// see "accepted, then closed" (providers.Port.WaitForBind): ZooKeeper retries a refusal
		// itself for about a second.
		ports = append(ports, providers.Port{Name: QuorumPort, Number: 2888, WaitForBind: time.Second},
			providers.Port{Name: ElectionPort, Number: 3888, Hello: rewriteElectionHello})
	}
	return providers.NodeSpec{
		Name:    name,
		Image:   "zookeeper",
		Ports:   ports,
		LogFile: logFile,
		Needs:   needs(),
		Command: func(pl providers.Placement) ([]string, error) {
			cfg, err := z.writeConfig(id, name, pl)
			if err != nil {
				return nil, err
			}
			argv := []string{"java"}
			if pl.Dir == pl.HostDir { // a process of this machine: it sees the archive
				argv = append(argv, archive().Flags()...)
			}
			return append(argv, javaArgs(cfg, z.tick)...), nil
		},
		// Up: it answers at all (an ensemble member serves only once a quorum is up).
		Ready: func(ctx context.Context, n providers.Node) error {
			_, err := fourLetterWord(ctx, n.Addr(ClientPort), "srvr")
			return err
		},
	}
}

// writeConfig writes the server's zoo.cfg and myid into its folder and returns the config's path
// as the server sees it. The other servers are listed at the paths from this one to them.
func (z *Ensemble) writeConfig(id int, name string, pl providers.Placement) (string, error) {
	data := filepath.Join(pl.HostDir, services.DataDir)
	if err := os.MkdirAll(data, 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(data, "myid"), []byte(strconv.Itoa(id)+"\n"), 0o644); err != nil {
		return "", err
	}
	tick := int(z.tick / time.Millisecond)
	var b strings.Builder
	fmt.Fprintf(&b, "# written by lockcheck for %s; other servers are listed at the paths from %s to them\n", name, name)
	fmt.Fprintf(&b, "tickTime=%d\n", tick)
	b.WriteString("initLimit=10\nsyncLimit=5\n")
	fmt.Fprintf(&b, "minSessionTimeout=%d\nmaxSessionTimeout=%d\n", 2*tick, 20*tick)
	fmt.Fprintf(&b, "dataDir=%s\n", pl.Dir+"/"+services.DataDir)
	fmt.Fprintf(&b, "clientPort=%d\nclientPortAddress=%s\n", pl.Ports[ClientPort], pl.Host)
	b.WriteString("quorumListenOnAllIPs=false\n")
	b.WriteString("admin.enableServer=false\n")
	b.WriteString("4lw.commands.whitelist=srvr,ruok,mntr,stat,cons\n")
	// Every client connects from the same address (through its links): no per-address limit.
	b.WriteString("maxClientCnxns=0\n")
	// Writes still reach the kernel before they are acknowledged, so a killed server keeps them;
	// only a machine crash could lose them, and lockcheck does not simulate one.
	b.WriteString("forceSync=no\n")
	b.WriteString("preAllocSize=1024\n") // KB per transaction log file (default 64 MB)
	b.WriteString("autopurge.purgeInterval=0\n")
	if len(z.names) > 1 {
		for i, other := range z.names {
			var q, e string
			if other == name {
				q = net.JoinHostPort(pl.Host, strconv.Itoa(pl.Ports[QuorumPort]))
				e = net.JoinHostPort(pl.Host, strconv.Itoa(pl.Ports[ElectionPort]))
			} else {
				var err error
				if q, err = pl.Peer(other, QuorumPort); err != nil {
					return "", err
				}
				if e, err = pl.Peer(other, ElectionPort); err != nil {
					return "", err
				}
			}
			qh, qp, _ := net.SplitHostPort(q)
			_, ep, _ := net.SplitHostPort(e)
			fmt.Fprintf(&b, "server.%d=%s:%s:%s\n", i+1, qh, qp, ep)
		}
	}
	if err := os.WriteFile(filepath.Join(pl.HostDir, "zoo.cfg"), []byte(b.String()), 0o644); err != nil {
		return "", err
	}
	return pl.Dir + "/zoo.cfg", nil
}

// javaArgs is the command line of a server reading cfg, with ZooKeeper's tick.
func javaArgs(cfg string, tick time.Duration) []string {
	return []string{
		"-Xmx64m", "-XX:+UseSerialGC",
		"-XX:TieredStopAtLevel=1", // C1 only: a faster start and less CPU when three JVMs start at once
		"-XX:-UsePerfData",        // no /tmp/hsperfdata_* files left behind by a SIGKILL
		"-Dorg.slf4j.simpleLogger.showDateTime=true",
		"-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd'T'HH:mm:ss.SSS",
		"-Dzookeeper.jmx.log4j.disable=true",
		// A server looking for a leader and hearing nobody (cut off) retries with a doubling
		// interval, by default up to 60s, so it would rejoin up to a minute after a heal. Cap it
		// at two ticks.
		"-Dzookeeper.fastleader.maxNotificationInterval=" + strconv.Itoa(int(2*tick/time.Millisecond)),
		"-cp", classpath(),
		mainClass, cfg,
	}
}

// Server returns the server named name, or nil.
func (z *Ensemble) Server(name string) providers.Node { return z.servers[name] }

// Names lists the servers in order.
func (z *Ensemble) Names() []string { return append([]string(nil), z.names...) }

// Tick is the ensemble's tickTime.
func (z *Ensemble) Tick() time.Duration { return z.tick }

// Stop has nothing to stop besides the provider's nodes.
func (z *Ensemble) Stop() error { return nil }

// restart starts a server again and waits until it serves (leads or follows). If ctx ends while
// it runs but does not serve yet (cut off from a quorum), the error wraps ErrNotServing and the
// server keeps running.
func (z *Ensemble) restart(ctx context.Context, n providers.Node) error {
	if err := n.Restart(ctx); err != nil {
		return err
	}
	return waitServing(ctx, n)
}

// Mode asks a server (`srvr`) for its mode: "leader", "follower", "standalone" (or "observer"). A
// running server that is not serving (looking for a leader) returns ErrNotServing.
func Mode(ctx context.Context, n providers.Node) (string, error) {
	out, err := fourLetterWord(ctx, n.Addr(ClientPort), "srvr")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(out, "\n") {
		if m, ok := strings.CutPrefix(strings.TrimSpace(line), "Mode:"); ok {
			return strings.TrimSpace(m), nil
		}
	}
	if strings.Contains(out, "not currently serving") {
		return "", ErrNotServing
	}
	return "", fmt.Errorf("zookeeper %s: unexpected srvr answer %q", n.Name(), out)
}

// Modes asks every server for its mode once: "" for a server that is down or not serving.
func (z *Ensemble) Modes(ctx context.Context) map[string]string {
	out := make(map[string]string, len(z.servers))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for name, n := range z.servers {
		wg.Go(func() {
			m, _ := Mode(ctx, n)
			mu.Lock()
			out[name] = m
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}

// Leader polls the servers until exactly one says it leads (or, standalone, until the server
// serves), and returns it. It fails when ctx ends first; pass a short ctx for a snapshot. While an
// isolated old leader has not yet noticed it lost its quorum, two servers say "leader": Leader
// keeps waiting until one of them gives up.
func (z *Ensemble) Leader(ctx context.Context) (providers.Node, error) {
	for {
		modes := z.Modes(ctx)
		var leaders []string
		for _, name := range z.names {
			if m := modes[name]; m == "leader" || m == "standalone" {
				leaders = append(leaders, name)
			}
		}
		if len(leaders) == 1 {
			return z.servers[leaders[0]], nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("zookeeper: no single leader (modes %v): %w", modes, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// waitEnsemble polls until every server serves and, for an ensemble, exactly one leads and the
// others follow.
func (z *Ensemble) waitEnsemble(ctx context.Context) error {
	for {
		modes := z.Modes(ctx)
		leaders, followers := 0, 0
		for _, m := range modes {
			switch m {
			case "leader", "standalone":
				leaders++
			case "follower":
				followers++
			}
		}
		if leaders == 1 && leaders+followers == len(z.servers) {
			return nil
		}
		select {
		case <-ctx.Done():
			var tails []string
			for _, name := range z.names {
				if m := modes[name]; m != "leader" && m != "follower" && m != "standalone" {
					tails = append(tails, fmt.Sprintf("%s's log ends:\n%s", name, lastLines(filepath.Join(z.servers[name].Dir(), logFile), 12)))
				}
			}
			return fmt.Errorf("zookeeper not ready (modes %v): %w; logs in %s\n%s", modes, ctx.Err(),
				filepath.Dir(z.servers[z.names[0]].Dir()), strings.Join(tails, "\n"))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// lastLines returns the last n lines of the file at path (what a server that would not join said).
func lastLines(path string, n int) string {
	lines := strings.Split(providers.LogTail(path, 0), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// waitServing polls until n serves (standalone, or leading or following) or ctx ends.
func waitServing(ctx context.Context, n providers.Node) error {
	var last error
	for {
		var m string
		m, last = Mode(ctx, n)
		if last == nil && (m == "standalone" || m == "leader" || m == "follower" || m == "observer") {
			return nil
		}
		select {
		case <-ctx.Done():
			if last == nil {
				last = fmt.Errorf("mode %q", m)
			}
			return fmt.Errorf("zookeeper %s: %w: %v (last answer: %v)", n.Name(), ErrNotServing, ctx.Err(), last)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// fourLetterWord sends a four-letter command to a ZooKeeper client port and returns the whole
// answer (the server closes the connection after it). Every step is bounded: a server that is
// still starting may accept and never answer.
func fourLetterWord(ctx context.Context, addr, cmd string) (string, error) {
	d := net.Dialer{Timeout: 200 * time.Millisecond}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	_ = conn.SetDeadline(time.Now().Add(500 * time.Millisecond))
	if _, err := io.WriteString(conn, cmd); err != nil {
		return "", err
	}
	b, err := io.ReadAll(io.LimitReader(conn, 64<<10))
	if err != nil {
		return "", err
	}
	return string(b), nil
}
