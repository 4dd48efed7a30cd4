package cluster

// Real ZooKeeper servers (Debian's 3.8 jar, run by java directly, no systemd), standalone or as an
// ensemble, with every path between processes behind an in-process toxiproxy proxy:
//
//   - one proxy per (client, server): Link(client, server), as for redis;
//   - two proxies per ordered pair of servers (from, to): QuorumLink(from, to).Quorum, from's
//     connections to to's quorum port (used when from follows to), and .Election, from's
//     connections to to's leader-election port.
//
// Each server has its own zoo.cfg, which lists itself at its real ports and every other server j
// at the ports of the proxies dedicated to (itself, j). So server i reaches j only through
// QuorumLink(i, j), and a scenario can split the ensemble by cutting those.
//
// Two things need more than a proxy, so each proxy between servers forwards to a small relay
// (zkRelay) in front of the real port:
//
//   - ZooKeeper keeps one election connection per pair of servers, owned by the higher id: when
//     the lower id i connects to j, its first message carries i's own election address, j hangs
//     up and dials that address back — i's real port, around every proxy. Such a connection would
//     survive a cut and let an isolated server take part in elections. The election relay
//     rewrites the address in that first message to the proxy (j, i), so the call-back goes
//     through QuorumLink(j, i).Election. TestZooKeeperNoDirectServerConnections checks that no
//     TCP connection ever joins two ZooKeeper processes directly.
//   - A proxy accepts a connection before it dials the server behind it. A follower that dials
//     a newly elected leader a millisecond before the leader has bound its quorum port would be
//     refused and retry (ZooKeeper tries 5 times, 100ms apart); through a proxy it is
//     accepted, then closed, which a follower takes for a failed leader: it goes back to electing
//     while the leader waits initLimit ticks for it (5s lost, observed). The quorum relay retries
//     the dial for up to a second, as ZooKeeper itself would have.
//
// Consequences for fault injection: the election traffic between i < j (both ways, one TCP
// connection) flows through QuorumLink(j, i).Election; QuorumLink(i, j).Election only carries i's
// requests to be called back. The quorum traffic between a follower f and the leader l (both
// ways) flows through QuorumLink(f, l).Quorum. A clean partition cuts both directions; a one-way
// loss is a toxic on one stream (e.g. timeout on "upstream").

import (
	"context"
	byteorder "encoding/binary"
	"errors"
	"fmt"
	"io"
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
	"github.com/rs/zerolog"

	"github.com/lockcheck/lockcheck/internal/proc"
)

const (
	// zkDefaultTick is ZooKeeper's tickTime unless ZooKeeperOptions says otherwise.
	zkDefaultTick = 500 * time.Millisecond
	// zkStartTimeout bounds a start (all servers answering, one leader) or a restart.
	zkStartTimeout = 30 * time.Second
	// zkStartAttempts is how many fresh sets of ports a first start tries when one was taken.
	zkStartAttempts = 3
	// zkMaxServers keeps an ensemble to what one machine runs comfortably.
	zkMaxServers = 9
)

// ErrNotServing means a ZooKeeper server is running but not serving clients (yet): it is looking
// for a leader, e.g. cut off from a quorum.
var ErrNotServing = errors.New("zookeeper: server not serving requests")

// ZooKeeperOptions say what to start.
type ZooKeeperOptions struct {
	Dir      string        // run folder; each server gets Dir/servers/zk<N>/ (data/ with myid, zoo.cfg, zookeeper.log)
	Servers  int           // 1 (or 0) = standalone, 3 = ensemble; at most 9
	Clients  []string      // client names; one proxy per (client, server)
	TickTime time.Duration // ZooKeeper's tick (default 500ms, whole ms); sessions may last 2..20 ticks
	Logger   *slog.Logger  // nil: quiet
}

// ZooKeeper is a started standalone server or ensemble and its proxies.
type ZooKeeper struct {
	Servers  []*ZKServer // zk1..zkN, in order (server.N / myid N)
	TickTime time.Duration

	logger *slog.Logger
	toxi   *toxiproxy.ApiServer

	links     []*Link // client links, client by client, servers in order
	byKey     map[[2]string]*Link
	quorum    []*QuorumLink
	quorumKey map[[2]string]*QuorumLink
	allLinks  []*Link // every proxy, for Stop
	relays    []*zkRelay

	stopped  atomic.Bool
	stopOnce sync.Once
	stopErr  error
}

// ZKServer is one ZooKeeper server process.
type ZKServer struct {
	Name         string // "zk1".."zkN"
	ID           int    // its myid
	ClientAddr   string // 127.0.0.1:port, direct (not through a proxy)
	QuorumAddr   string // direct; "" when standalone
	ElectionAddr string // direct; "" when standalone
	Dir          string // Dir/servers/zk<N>
	DataDir      string // Dir/servers/zk<N>/data: snapshots, transaction logs, myid
	ConfigFile   string // Dir/servers/zk<N>/zoo.cfg
	LogFile      string // Dir/servers/zk<N>/zookeeper.log (stdout and stderr, appended across restarts)

	standalone bool
	clientPort int
	tick       time.Duration
	logger     *slog.Logger

	lifecycle       // current process, closed flag, restart lock; Process()
	logStart  int64 // size of LogFile when p started (guarded by mu)
}

// QuorumLink is the path from one server to another: two proxies, one to each of To's server
// ports. The comment at the top of zookeeper.go says which traffic flows where.
type QuorumLink struct {
	From, To string
	Quorum   *Link // From's connections to To's quorum port (From following To)
	Election *Link // From's connections to To's election port
}

// Cut cuts both proxies: their listeners close and every connection through them is closed.
func (q *QuorumLink) Cut() error { return errors.Join(q.Quorum.Cut(), q.Election.Cut()) }

// Heal starts both proxies again on the same ports.
func (q *QuorumLink) Heal() error { return errors.Join(q.Quorum.Heal(), q.Election.Heal()) }

// IsCut reports whether the link is cut (both proxies are).
func (q *QuorumLink) IsCut() bool { return q.Quorum.IsCut() && q.Election.IsCut() }

// AddToxic adds the same toxic (toxiproxy JSON, see Link.AddToxic) to both proxies.
func (q *QuorumLink) AddToxic(json string) error {
	return errors.Join(q.Quorum.AddToxic(json), q.Election.AddToxic(json))
}

// RemoveToxics removes every toxic from both proxies.
func (q *QuorumLink) RemoveToxics() error {
	return errors.Join(q.Quorum.RemoveToxics(), q.Election.RemoveToxics())
}

// StartZooKeeper starts o.Servers ZooKeeper servers on free 127.0.0.1 ports with their proxies,
// and returns once every server answers `srvr` and, for an ensemble, exactly one is the leader
// and the others follow it. On error everything already started is stopped.
func StartZooKeeper(ctx context.Context, o ZooKeeperOptions) (*ZooKeeper, error) {
	if o.Dir == "" {
		return nil, errors.New("zookeeper: ZooKeeperOptions.Dir is empty")
	}
	if o.Servers == 0 {
		o.Servers = 1
	}
	if o.Servers < 0 || o.Servers > zkMaxServers {
		return nil, fmt.Errorf("zookeeper: Servers = %d, want 1..%d", o.Servers, zkMaxServers)
	}
	if o.TickTime == 0 {
		o.TickTime = zkDefaultTick
	}
	if o.TickTime < time.Millisecond || o.TickTime%time.Millisecond != 0 {
		return nil, fmt.Errorf("zookeeper: TickTime %v is not a whole number of milliseconds", o.TickTime)
	}
	seen := map[string]bool{}
	for _, c := range o.Clients {
		if c == "" || seen[c] {
			return nil, fmt.Errorf("zookeeper: client name %q empty or repeated", c)
		}
		seen[c] = true
	}
	if err := CheckZooKeeper(); err != nil {
		return nil, err
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithTimeout(ctx, zkStartTimeout)
	defer cancel()
	var err error
	for i := 0; i < zkStartAttempts; i++ {
		var z *ZooKeeper
		if z, err = startZooKeeperOnce(ctx, o); err == nil {
			return z, nil
		}
		if !errors.Is(err, errPortInUse) || ctx.Err() != nil {
			break
		}
		o.Logger.Debug("zookeeper port taken, retrying with fresh ports", "err", err)
		// Start the next attempt from empty data dirs, as the first one did.
		for n := 1; n <= o.Servers; n++ {
			_ = os.RemoveAll(filepath.Join(o.Dir, "servers", "zk"+strconv.Itoa(n), "data"))
		}
	}
	return nil, err
}

func startZooKeeperOnce(ctx context.Context, o ZooKeeperOptions) (*ZooKeeper, error) {
	began := time.Now()
	z := &ZooKeeper{
		TickTime:  o.TickTime,
		logger:    o.Logger,
		toxi:      toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop()),
		byKey:     map[[2]string]*Link{},
		quorumKey: map[[2]string]*QuorumLink{},
	}
	fail := func(err error) (*ZooKeeper, error) {
		_ = z.Stop()
		return nil, err
	}

	// Hold every server port open until the proxies and relays have their own (kernel-chosen)
	// ports, so none of them lands on a port a server is about to bind.
	n := o.Servers
	perServer := 3
	if n == 1 {
		perServer = 1
	}
	ports, release, err := holdPorts(n * perServer)
	if err != nil {
		return fail(err)
	}
	defer release()
	for i := 1; i <= n; i++ {
		name := "zk" + strconv.Itoa(i)
		dir := filepath.Join(o.Dir, "servers", name)
		s := &ZKServer{
			lifecycle:  lifecycle{kind: "zookeeper"},
			Name:       name,
			ID:         i,
			Dir:        dir,
			DataDir:    filepath.Join(dir, "data"),
			ConfigFile: filepath.Join(dir, "zoo.cfg"),
			LogFile:    filepath.Join(dir, "zookeeper.log"),
			standalone: n == 1,
			clientPort: ports[(i-1)*perServer],
			tick:       o.TickTime,
			logger:     o.Logger,
		}
		s.ClientAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(s.clientPort))
		if n > 1 {
			s.QuorumAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[(i-1)*perServer+1]))
			s.ElectionAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[(i-1)*perServer+2]))
		}
		z.Servers = append(z.Servers, s)
	}

	// Quorum links: for each ordered pair, a proxy to (a relay in front of) the quorum port and
	// one to (a relay in front of) the election port.
	relayOf := map[[2]string]*zkRelay{}
	for _, from := range z.Servers {
		for _, to := range z.Servers {
			if from == to || n == 1 {
				continue
			}
			key := [2]string{from.Name, to.Name}
			qr, err := newZKRelay(to.QuorumAddr, false, zkQuorumDialFor)
			if err != nil {
				return fail(err)
			}
			z.relays = append(z.relays, qr)
			er, err := newZKRelay(to.ElectionAddr, true, 0)
			if err != nil {
				return fail(err)
			}
			z.relays = append(z.relays, er)
			relayOf[key] = er
			q := &QuorumLink{From: from.Name, To: to.Name}
			if q.Quorum, err = z.newLink(from.Name, to.Name, from.Name+"->"+to.Name+" quorum", qr.Addr()); err != nil {
				return fail(err)
			}
			if q.Election, err = z.newLink(from.Name, to.Name, from.Name+"->"+to.Name+" election", er.Addr()); err != nil {
				return fail(err)
			}
			z.quorum = append(z.quorum, q)
			z.quorumKey[key] = q
		}
	}
	// A call-back of to to from goes through the proxy (to, from).
	for key, r := range relayOf {
		r.setAdvertise(z.quorumKey[[2]string{key[1], key[0]}].Election.Addr())
	}

	for _, client := range o.Clients {
		for _, s := range z.Servers {
			l, err := z.newLink(client, s.Name, client+"->"+s.Name, s.ClientAddr)
			if err != nil {
				return fail(err)
			}
			z.links = append(z.links, l)
			z.byKey[[2]string{client, s.Name}] = l
		}
	}

	for _, s := range z.Servers {
		if err := z.writeConfig(s); err != nil {
			return fail(err)
		}
	}
	release()
	for _, s := range z.Servers {
		if err := s.launch(); err != nil {
			return fail(err)
		}
	}
	if err := z.waitEnsemble(ctx); err != nil {
		return fail(err)
	}
	pids := make([]int, len(z.Servers))
	for i, s := range z.Servers {
		pids[i] = s.Process().Pid()
	}
	z.logger.Debug("zookeeper ready", "servers", n, "clients", len(o.Clients), "pids", pids, "took", time.Since(began))
	return z, nil
}

// holdPorts listens on n free 127.0.0.1 ports and returns them with a func that closes the
// listeners (idempotent).
func holdPorts(n int) ([]int, func(), error) {
	var lns []net.Listener
	var once sync.Once
	release := func() {
		once.Do(func() {
			for _, l := range lns {
				l.Close()
			}
		})
	}
	ports := make([]int, 0, n)
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			release()
			return nil, nil, err
		}
		lns = append(lns, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, release, nil
}

// newLink creates and starts a proxy named name from from to upstream.
func (z *ZooKeeper) newLink(from, to, name, upstream string) (*Link, error) {
	p := toxiproxy.NewProxy(z.toxi, name, "127.0.0.1:0", upstream)
	if err := z.toxi.Collection.Add(p, true); err != nil {
		return nil, fmt.Errorf("proxy %s: %w", name, err)
	}
	p.Lock()
	addr := p.Listen // the real address, set by the first start
	p.Unlock()
	// server stays nil: Link.Upstream is a *Redis. The proxy forwards to upstream.
	l := &Link{Client: from, Node: to, addr: addr, proxy: p, stopped: &z.stopped}
	z.allLinks = append(z.allLinks, l)
	return l, nil
}

// writeConfig writes s's zoo.cfg and myid. The other servers are listed at the proxies from s.
func (z *ZooKeeper) writeConfig(s *ZKServer) error {
	if err := os.MkdirAll(s.DataDir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(s.DataDir, "myid"), []byte(strconv.Itoa(s.ID)+"\n"), 0o644); err != nil {
		return err
	}
	tick := int(z.TickTime / time.Millisecond)
	var b strings.Builder
	fmt.Fprintf(&b, "# written by lockcheck for %s; other servers are listed at the proxies from %s to them\n", s.Name, s.Name)
	fmt.Fprintf(&b, "tickTime=%d\n", tick)
	b.WriteString("initLimit=10\nsyncLimit=5\n")
	fmt.Fprintf(&b, "minSessionTimeout=%d\nmaxSessionTimeout=%d\n", 2*tick, 20*tick)
	fmt.Fprintf(&b, "dataDir=%s\n", s.DataDir)
	fmt.Fprintf(&b, "clientPort=%d\nclientPortAddress=127.0.0.1\n", s.clientPort)
	b.WriteString("quorumListenOnAllIPs=false\n")
	b.WriteString("admin.enableServer=false\n")
	b.WriteString("4lw.commands.whitelist=srvr,ruok,mntr,stat\n")
	// Every client connects from 127.0.0.1 (through the proxies): no per-address limit.
	b.WriteString("maxClientCnxns=0\n")
	// Writes still reach the kernel before they are acknowledged, so a killed server keeps them;
	// only a machine crash could lose them, and lockcheck does not simulate one.
	b.WriteString("forceSync=no\n")
	b.WriteString("preAllocSize=1024\n") // KB per transaction log file (default 64 MB)
	b.WriteString("autopurge.purgeInterval=0\n")
	if !s.standalone {
		for _, o := range z.Servers {
			q, e := o.QuorumAddr, o.ElectionAddr
			if o != s {
				ql := z.quorumKey[[2]string{s.Name, o.Name}]
				q, e = ql.Quorum.Addr(), ql.Election.Addr()
			}
			_, qp, _ := net.SplitHostPort(q)
			_, ep, _ := net.SplitHostPort(e)
			fmt.Fprintf(&b, "server.%d=127.0.0.1:%s:%s\n", o.ID, qp, ep)
		}
	}
	return os.WriteFile(s.ConfigFile, []byte(b.String()), 0o644)
}

// zkJavaArgs is the command line of a server reading cfg, with ZooKeeper's tick.
func zkJavaArgs(cfg string, tick time.Duration) []string {
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
		"-cp", zkClasspath(),
		zkMainClass, cfg,
	}
}

// Server returns the server named name ("zk1"..), or nil.
func (z *ZooKeeper) Server(name string) *ZKServer {
	for _, s := range z.Servers {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// Link returns the link from client to server ("zk1"..), or nil if there is none.
func (z *ZooKeeper) Link(client, server string) *Link {
	return z.byKey[[2]string{client, server}]
}

// Links returns every client link, client by client, each client's servers in order.
func (z *ZooKeeper) Links() []*Link {
	return append([]*Link(nil), z.links...)
}

// ConnectString returns the addresses client dials, one per server in order (the proxies from
// client), or nil for an unknown client. Join them with "," for a Java-style connect string.
func (z *ZooKeeper) ConnectString(client string) []string {
	var out []string
	for _, s := range z.Servers {
		l := z.Link(client, s.Name)
		if l == nil {
			return nil
		}
		out = append(out, l.Addr())
	}
	return out
}

// QuorumLink returns the link from server from to server to, or nil (unknown names, from == to,
// or a standalone server).
func (z *ZooKeeper) QuorumLink(from, to string) *QuorumLink {
	return z.quorumKey[[2]string{from, to}]
}

// QuorumLinks returns every quorum link, by From then To.
func (z *ZooKeeper) QuorumLinks() []*QuorumLink {
	return append([]*QuorumLink(nil), z.quorum...)
}

// PeerLinks returns the quorum links between server and each of peers, both directions (every
// other server when peers is empty). Cutting them all isolates server from those peers: no
// quorum traffic and no election traffic either way.
func (z *ZooKeeper) PeerLinks(server string, peers []string) ([]*QuorumLink, error) {
	if z.Server(server) == nil {
		return nil, fmt.Errorf("zookeeper: no server %q", server)
	}
	if len(peers) == 0 {
		for _, s := range z.Servers {
			if s.Name != server {
				peers = append(peers, s.Name)
			}
		}
	}
	var out []*QuorumLink
	for _, p := range peers {
		there, back := z.QuorumLink(server, p), z.QuorumLink(p, server)
		if there == nil || back == nil {
			return nil, fmt.Errorf("zookeeper: no quorum link between %s and %q (standalone, or not a peer)", server, p)
		}
		out = append(out, there, back)
	}
	return out, nil
}

// CutPeers isolates server from peers (every other server when empty), both directions.
func (z *ZooKeeper) CutPeers(server string, peers []string) error {
	links, err := z.PeerLinks(server, peers)
	if err != nil {
		return err
	}
	var errs []error
	for _, q := range links {
		errs = append(errs, q.Cut())
	}
	return errors.Join(errs...)
}

// HealPeers undoes CutPeers (and removes any toxic on those links).
func (z *ZooKeeper) HealPeers(server string, peers []string) error {
	links, err := z.PeerLinks(server, peers)
	if err != nil {
		return err
	}
	var errs []error
	for _, q := range links {
		errs = append(errs, q.RemoveToxics(), q.Heal())
	}
	return errors.Join(errs...)
}

// Modes asks every server for its mode once (`srvr`): "leader", "follower", "standalone", or ""
// for a server that is down or not serving.
func (z *ZooKeeper) Modes(ctx context.Context) map[string]string {
	out := make(map[string]string, len(z.Servers))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, s := range z.Servers {
		wg.Go(func() {
			m, _ := s.Mode(ctx)
			mu.Lock()
			out[s.Name] = m
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}

// Leader polls the servers (`srvr`) until exactly one says it leads (or, standalone, until the
// server serves), and returns it. It fails when ctx ends first; pass a short ctx for a snapshot.
// While an isolated old leader has not yet noticed it lost its quorum, two servers say "leader":
// Leader keeps waiting until one of them gives up.
func (z *ZooKeeper) Leader(ctx context.Context) (*ZKServer, error) {
	var modes map[string]string
	for {
		modes = z.Modes(ctx)
		var leaders []*ZKServer
		for _, s := range z.Servers {
			if m := modes[s.Name]; m == "leader" || m == "standalone" {
				leaders = append(leaders, s)
			}
		}
		if len(leaders) == 1 {
			return leaders[0], nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("zookeeper: no single leader (modes %v): %w", modes, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// waitEnsemble polls until every server serves and, for an ensemble, exactly one leads and the
// others follow. It fails as soon as a server exits.
func (z *ZooKeeper) waitEnsemble(ctx context.Context) error {
	var modes map[string]string
	for {
		for _, s := range z.Servers {
			if err := s.exitError(); err != nil {
				return err
			}
		}
		modes = z.Modes(ctx)
		leaders, followers := 0, 0
		for _, m := range modes {
			switch m {
			case "leader", "standalone":
				leaders++
			case "follower":
				followers++
			}
		}
		if leaders == 1 && leaders+followers == len(z.Servers) {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("zookeeper not ready (modes %v): %w; logs in %s", modes, ctx.Err(), filepath.Dir(z.Servers[0].Dir))
		case <-time.After(20 * time.Millisecond):
		}
	}
	// The answers came from our processes, not from someone else's server on a port we picked.
	for _, s := range z.Servers {
		if err := s.checkOwnsClientPort(); err != nil {
			return err
		}
	}
	return nil
}

// Stop heals every proxy (removes its toxics, which may be holding data) and stops it, stops the
// relays and toxiproxy, and kills every server, waiting until each is gone. It is idempotent and
// safe to call concurrently: later calls wait for the first and return its result.
func (z *ZooKeeper) Stop() error {
	z.stopOnce.Do(func() {
		z.stopped.Store(true)
		errs := []error{stopLinks(z.toxi, z.allLinks)}
		for _, r := range z.relays {
			r.close()
		}
		var stops []func() error
		for _, s := range z.Servers {
			stops = append(stops, func() error { return s.stop(s.Name) })
		}
		errs = append(errs, stopAll(stops))
		z.stopErr = errors.Join(errs...)
		z.logger.Debug("zookeeper stopped", "err", z.stopErr)
	})
	return z.stopErr
}

// Mode asks the server (`srvr` on its direct client port) for its mode: "leader", "follower",
// "standalone" (or "observer"). A running server that is not serving (looking for a leader)
// returns ErrNotServing.
func (s *ZKServer) Mode(ctx context.Context) (string, error) {
	out, err := fourLetterWord(ctx, s.ClientAddr, "srvr")
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
	return "", fmt.Errorf("zookeeper %s: unexpected srvr answer %q", s.Name, out)
}

// Restart starts the server again with the same ports, config and data dir, and waits until it
// serves (in an ensemble: until it leads or follows). A process still running is killed first (a
// crash-restart). If ctx ends while the new process runs but does not serve yet (e.g. it is cut
// off from a quorum), Restart returns an error wrapping ErrNotServing and leaves it running.
func (s *ZKServer) Restart(ctx context.Context) error {
	s.restartMu.Lock()
	defer s.restartMu.Unlock()
	if err := s.killAndWait(s.Name); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, zkStartTimeout)
	defer cancel()
	var err error
	for i := 0; i < portAttempts; i++ {
		began := time.Now()
		if err = s.launch(); err != nil {
			return err
		}
		if err = s.waitServing(ctx); err == nil {
			s.logger.Debug("zookeeper restarted", "name", s.Name, "pid", s.Process().Pid(), "took", time.Since(began))
			return nil
		}
		if !errors.Is(err, errPortInUse) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(100 * time.Millisecond):
		}
	}
	return err
}

// launch starts one java process for s (not waiting for it to serve).
func (s *ZKServer) launch() error {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return fmt.Errorf("zookeeper %s: stopped", s.Name)
	}
	java, err := exec.LookPath("java")
	if err != nil {
		return fmt.Errorf("zookeeper %s: %w", s.Name, CheckZooKeeper())
	}
	logf, err := os.OpenFile(s.LogFile, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	logStart, _ := logf.Seek(0, io.SeekEnd)
	cmd := exec.Command(java, zkJavaArgs(s.ConfigFile, s.tick)...)
	cmd.Dir = s.Dir
	cmd.Stdout, cmd.Stderr = logf, logf
	p, err := proc.StartProcess(cmd)
	logf.Close()
	if err != nil {
		return fmt.Errorf("zookeeper %s: start java: %w", s.Name, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		_ = p.Kill()
		_ = p.Wait()
		return fmt.Errorf("zookeeper %s: stopped", s.Name)
	}
	s.p, s.logStart = p, logStart
	return nil
}

// exitError returns nil while the current process runs, else why it is gone (errPortInUse if
// its log says a port was taken), with the end of its log.
func (s *ZKServer) exitError() error {
	s.mu.Lock()
	p, logStart := s.p, s.logStart
	s.mu.Unlock()
	if p == nil {
		return fmt.Errorf("zookeeper %s: not started", s.Name)
	}
	select {
	case <-p.Exited():
	default:
		return nil
	}
	tail := logTail(s.LogFile, logStart)
	if strings.Contains(tail, "Address already in use") {
		return fmt.Errorf("zookeeper %s: %w", s.Name, errPortInUse)
	}
	return fmt.Errorf("zookeeper %s exited (%v); %s:\n%s", s.Name, p.Wait(), s.LogFile, tail)
}

// waitServing polls until s serves (standalone, or leading or following), its process exits, or
// ctx ends (then the process keeps running).
func (s *ZKServer) waitServing(ctx context.Context) error {
	var last error
	for {
		if err := s.exitError(); err != nil {
			return err
		}
		var m string
		m, last = s.Mode(ctx)
		if last == nil && (m == "standalone" || m == "leader" || m == "follower" || m == "observer") {
			return s.checkOwnsClientPort()
		}
		select {
		case <-ctx.Done():
			if last == nil {
				last = fmt.Errorf("mode %q", m)
			}
			return fmt.Errorf("zookeeper %s: %w: %v (last answer: %v)", s.Name, ErrNotServing, ctx.Err(), last)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// checkOwnsClientPort checks that the client port is listened on by s's own process.
func (s *ZKServer) checkOwnsClientPort() error {
	p := s.Process()
	ok, err := listensOn(p.Pid(), s.clientPort)
	if err != nil {
		return fmt.Errorf("zookeeper %s: %w", s.Name, err)
	}
	if !ok {
		if err := s.exitError(); err != nil {
			return err
		}
		return fmt.Errorf("zookeeper %s: %s is answered by another process than pid %d", s.Name, s.ClientAddr, p.Pid())
	}
	return nil
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

// listensOn reports whether process pid has a listening TCP socket on port (any address).
func listensOn(pid, port int) (bool, error) {
	inodes, err := socketInodes(pid)
	if err != nil {
		return false, err
	}
	for _, e := range tcpEntries(pid) {
		if e.state == tcpListen && e.localPort == port && inodes[e.inode] {
			return true, nil
		}
	}
	return false, nil
}

// socketInodes returns the inodes of the sockets process pid has open.
func socketInodes(pid int) (map[string]bool, error) {
	dir := "/proc/" + strconv.Itoa(pid) + "/fd"
	fds, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join(dir, fd.Name()))
		if err != nil {
			continue // closed meanwhile
		}
		if inode, ok := strings.CutPrefix(target, "socket:["); ok {
			out[strings.TrimSuffix(inode, "]")] = true
		}
	}
	return out, nil
}

const (
	tcpEstablished = "01"
	tcpListen      = "0A"
)

// tcpEntry is one line of /proc/net/tcp{,6}.
type tcpEntry struct {
	local, remote string // hex address:port as in the file
	localPort     int
	state, inode  string
}

// tcpEntries lists the TCP sockets of pid's network namespace (IPv4 and IPv6).
func tcpEntries(pid int) []tcpEntry {
	var out []tcpEntry
	for _, f := range []string{"tcp", "tcp6"} {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/net/" + f)
		if err != nil {
			continue
		}
		lines := strings.Split(string(b), "\n")
		for _, line := range lines[1:] {
			fs := strings.Fields(line)
			if len(fs) < 10 {
				continue
			}
			i := strings.LastIndexByte(fs[1], ':')
			if i < 0 {
				continue
			}
			port, err := strconv.ParseUint(fs[1][i+1:], 16, 16)
			if err != nil {
				continue
			}
			out = append(out, tcpEntry{local: fs[1], remote: fs[2], localPort: int(port), state: fs[3], inode: fs[9]})
		}
	}
	return out
}

// ZooKeeper's election handshake (QuorumCnxManager): a connecting server first sends a protocol
// version, its id, and (for these versions) the length and text of its own election address.
const (
	zkElectionProtocolV1 = -65536
	zkElectionProtocolV2 = -65535
	zkMaxInitialAddr     = 4096
)

// zkQuorumDialFor is how long a quorum relay keeps dialing a server port that refuses.
const zkQuorumDialFor = time.Second

// zkRelay forwards connections (from a proxy) to one server port. An election relay rewrites
// the address in the first message of each connection to advertise, the proxy through which
// the receiving server must call the sender back; a quorum relay keeps dialing a refusing port
// for a while. See the comment at the top of this file.
type zkRelay struct {
	ln      net.Listener
	target  string
	rewrite bool
	dialFor time.Duration

	mu        sync.Mutex
	advertise string
	conns     map[net.Conn]struct{}
	closed    bool
	wg        sync.WaitGroup
}

func newZKRelay(target string, rewrite bool, dialFor time.Duration) (*zkRelay, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &zkRelay{ln: ln, target: target, rewrite: rewrite, dialFor: dialFor, conns: map[net.Conn]struct{}{}}
	r.wg.Add(1)
	go r.serve()
	return r, nil
}

// Addr is where the relay listens.
func (r *zkRelay) Addr() string { return r.ln.Addr().String() }

func (r *zkRelay) setAdvertise(addr string) {
	r.mu.Lock()
	r.advertise = addr
	r.mu.Unlock()
}

func (r *zkRelay) serve() {
	defer r.wg.Done()
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		if !r.track(c) {
			c.Close()
			return
		}
		r.wg.Add(1)
		go r.handle(c)
	}
}

// track remembers c for close; false once the relay is closed.
func (r *zkRelay) track(c net.Conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	r.conns[c] = struct{}{}
	return true
}

func (r *zkRelay) untrack(c net.Conn) {
	c.Close()
	r.mu.Lock()
	delete(r.conns, c)
	r.mu.Unlock()
}

func (r *zkRelay) isClosed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closed
}

// dial connects to the target, retrying a refusal for up to dialFor.
func (r *zkRelay) dial() (net.Conn, error) {
	deadline := time.Now().Add(r.dialFor)
	for {
		up, err := net.DialTimeout("tcp", r.target, time.Second)
		if err == nil || !time.Now().Before(deadline) || r.isClosed() {
			return up, err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (r *zkRelay) handle(down net.Conn) {
	defer r.wg.Done()
	defer r.untrack(down)
	up, err := r.dial()
	if err != nil {
		return // the server is down: the caller sees the connection close
	}
	if !r.track(up) {
		up.Close()
		return
	}
	defer r.untrack(up)

	if r.rewrite {
		_ = down.SetReadDeadline(time.Now().Add(10 * time.Second))
		first, err := r.initialMessage(down)
		if err != nil {
			return
		}
		_ = down.SetReadDeadline(time.Time{})
		if _, err := up.Write(first); err != nil {
			return
		}
	}
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, down); done <- struct{}{} }()
	go func() { _, _ = io.Copy(down, up); done <- struct{}{} }()
	<-done
	// One side is gone: so is the connection. Closing both ends the other copy.
	up.Close()
	down.Close()
	<-done
}

// initialMessage reads the sender's first message from c and returns it rewritten (or as read,
// if it is not one it knows).
func (r *zkRelay) initialMessage(c net.Conn) ([]byte, error) {
	head := make([]byte, 8, 64)
	if _, err := io.ReadFull(c, head); err != nil {
		return nil, err
	}
	v := int64(byteorder.BigEndian.Uint64(head))
	if v != zkElectionProtocolV1 && v != zkElectionProtocolV2 {
		return head, nil // an old-style first message (just the id) carries no address
	}
	rest := make([]byte, 12) // sid, address length
	if _, err := io.ReadFull(c, rest); err != nil {
		return nil, err
	}
	n := int32(byteorder.BigEndian.Uint32(rest[8:]))
	if n <= 0 || n > zkMaxInitialAddr {
		return append(head, rest...), nil // ZooKeeper rejects it itself
	}
	addr := make([]byte, n)
	if _, err := io.ReadFull(c, addr); err != nil {
		return nil, err
	}
	r.mu.Lock()
	adv := r.advertise
	r.mu.Unlock()
	if adv == "" {
		adv = string(addr)
	}
	out := append(head, rest[:8]...)
	out = byteorder.BigEndian.AppendUint32(out, uint32(len(adv)))
	return append(out, adv...), nil
}

// close stops accepting, closes every connection and waits for the relay's goroutines.
func (r *zkRelay) close() {
	r.mu.Lock()
	r.closed = true
	conns := make([]net.Conn, 0, len(r.conns))
	for c := range r.conns {
		conns = append(conns, c)
	}
	r.mu.Unlock()
	r.ln.Close()
	for _, c := range conns {
		c.Close()
	}
	r.wg.Wait()
}
