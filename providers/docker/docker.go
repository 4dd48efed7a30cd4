// Package docker is the provider that gives every node its own container, and so its own host: its
// own address on a private Docker network that the run creates and removes, its own network
// namespace, its own clock under libfaketime. Containers are made with testcontainers-go from
// images built on this machine (package images), since no registry can be reached.
//
// Faults are the real thing: a pause is the container's cgroup freezer (docker pause); a kill is
// SIGKILL of the server's processes in the container (its PID 1 only sleeps, so the container,
// its network namespace, address and published ports stay) and a restart starts the server there
// again (docker exec) with the same folder; a node's clock is libfaketime inside the container, its timestamp file
// in the node's bind-mounted folder; a cut between two nodes is iptables DROP rules inside the
// node's network namespace (containers get NET_ADMIN). Clients stay on the host and reach nodes
// through ports published on 127.0.0.1, behind the run's toxiproxy links, so client partitions and
// delays work as with local processes.
//
// Ryuk, testcontainers' reaper container, cannot be pulled here, so the provider cleans up itself:
// every container and network carries the run's labels and the controller's pid (cleanup.go);
// Close removes them, a small watcher process removes them within seconds if the controller is
// killed, and the next start removes whatever a dead controller left behind.
package docker

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tcnetwork "github.com/testcontainers/testcontainers-go/network"

	"github.com/lockcheck/lockcheck/providers"
	"github.com/lockcheck/lockcheck/providers/docker/images"
)

// Name is the provider's name in scenarios and on the command line.
const Name = "docker"

func init() { providers.Register(Name, New) }

// ContainerDir is where a node's folder is mounted inside its container (Placement.Dir).
const ContainerDir = "/node"

// Provider runs nodes as containers on one private network.
type Provider struct {
	o       providers.Options
	cli     *testcontainers.DockerClient
	builder *images.Builder
	run     string // the run's id, in every name and label
	labels  map[string]string
	net     *testcontainers.DockerNetwork
	subnet  netip.Prefix
	reaper  *reaper

	mu     sync.Mutex
	nodes  map[string]*node
	order  []string
	linked map[[2]string]bool // node pairs with a path between them (Placement.Peer)
	nextIP int
	closed bool
}

// New connects to the Docker daemon, removes what dead runs left behind, and creates the run's
// network.
func New(o providers.Options) (providers.Provider, error) {
	if o.Dir == "" {
		return nil, errors.New("docker provider: Options.Dir is empty")
	}
	if o.Logger == nil {
		o.Logger = nopLogger{}
	}
	ctx := context.Background()
	cli, err := images.Connect(ctx)
	if err != nil {
		return nil, fmt.Errorf("docker provider: %w", err)
	}
	p := &Provider{o: o, cli: cli, builder: images.NewBuilder(cli), run: runID(),
		nodes: map[string]*node{}, linked: map[[2]string]bool{}, nextIP: 2}
	// A missing image is built before its first node starts, which takes up to a minute or two:
	// say so where a person sees it, not only in the debug log.
	p.builder.Log = func(format string, a ...any) {
		fmt.Fprintf(os.Stderr, "lockcheck: docker provider: "+format+" (`lockcheck images` builds them all ahead)\n", a...)
	}
	p.labels = runLabels(p.run, o.Dir)
	if n, err := Sweep(ctx, cli); err != nil {
		o.Logger.Debug("removing leftovers of dead runs failed", "err", err)
	} else if n > 0 {
		o.Logger.Debug("removed leftovers of dead runs", "containers and networks", n)
	}
	if err := p.createNetwork(ctx); err != nil {
		cli.Close()
		return nil, err
	}
	p.reaper = startReaper(p.run, o.Logger)
	return p, nil
}

type nopLogger struct{}

func (nopLogger) Debug(string, ...any) {}

// Name is "docker".
func (p *Provider) Name() string { return Name }

// Sample is a node of the type this provider starts (providers.Sampler).
func (p *Provider) Sample() providers.Node { return (*node)(nil) }

// Run is the run's id, found in the labels and names of its containers and network.
func (p *Provider) Run() string { return p.run }

func runID() string { return fmt.Sprintf("%08x", rand.Uint32()) }

// createNetwork creates the run's bridge network on a /24 that no other network uses. The
// subnet is chosen, not left to Docker, because nodes get fixed addresses (a restarted node keeps
// its address, and nodes name each other in their configuration before they start).
func (p *Provider) createNetwork(ctx context.Context) error {
	start := rand.IntN(200)
	var last error
	for i := 0; i < 40; i++ {
		third := 16 + (start+i*7)%224
		subnet := netip.MustParsePrefix(fmt.Sprintf("172.30.%d.0/24", third))
		nw, err := tcnetwork.New(ctx,
			tcnetwork.WithLabels(p.labels),
			tcnetwork.WithIPAM(&network.IPAM{Driver: "default", Config: []network.IPAMConfig{{Subnet: subnet}}}))
		if err == nil {
			p.net, p.subnet = nw, subnet
			p.o.Logger.Debug("docker network created", "name", nw.Name, "subnet", subnet)
			return nil
		}
		last = err
		if !strings.Contains(err.Error(), "overlap") {
			break
		}
	}
	return fmt.Errorf("docker provider: create the run's network: %w", last)
}

// ip is the i-th host address of the run's subnet.
func (p *Provider) ip(i int) netip.Addr {
	a := p.subnet.Addr().As4()
	a[3] = byte(i)
	return netip.AddrFrom4(a)
}

// Add reserves a node: its address on the run's network and a host port for each of its ports.
// The image it names is built here if it is missing.
func (p *Provider) Add(spec providers.NodeSpec) error {
	if spec.Name == "" || spec.Command == nil || len(spec.Ports) == 0 {
		return fmt.Errorf("docker provider: node %q needs a name, a command and at least one port", spec.Name)
	}
	if spec.Image == "" {
		return fmt.Errorf("docker provider: node %s names no image (NodeSpec.Image); known: %s", spec.Name, strings.Join(images.Names(), ", "))
	}
	for _, pt := range spec.Ports {
		if pt.Number <= 0 {
			return fmt.Errorf("docker provider: node %s: port %q has no container port number", spec.Name, pt.Name)
		}
	}
	ref, _, err := p.builder.Ensure(context.Background(), spec.Image)
	if err != nil {
		return fmt.Errorf("docker provider: node %s: %w", spec.Name, err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return errors.New("docker provider: closed")
	}
	if p.nodes[spec.Name] != nil {
		return fmt.Errorf("docker provider: node %q added twice", spec.Name)
	}
	if p.nextIP > 254 {
		return errors.New("docker provider: no addresses left on the run's network")
	}
	n, err := newNode(p, spec, ref, p.ip(p.nextIP))
	if err != nil {
		return err
	}
	p.nextIP++
	p.nodes[spec.Name] = n
	p.order = append(p.order, spec.Name)
	return nil
}

// Start creates and starts a node's container and waits until its server is ready.
func (p *Provider) Start(ctx context.Context, name string) (providers.Node, error) {
	n := p.node(name)
	if n == nil {
		return nil, fmt.Errorf("docker provider: no node %q (Add it first)", name)
	}
	if err := n.firstStart(ctx); err != nil {
		return nil, err
	}
	return n, nil
}

func (p *Provider) node(name string) *node {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.nodes[name]
}

// peer is Placement.Peer for node from: the direct address of to's port (cuts are iptables rules
// in the nodes' namespaces, not proxies), remembered as a path a cut without peers acts on.
func (p *Provider) peer(from, to, port string) (string, error) {
	addr, err := p.direct(to, port)
	if err != nil {
		return "", err
	}
	p.mu.Lock()
	p.linked[pair(from, to)] = true
	p.mu.Unlock()
	return addr, nil
}

// direct is Placement.Direct: the node's address on the run's network and the container port.
func (p *Provider) direct(to, port string) (string, error) {
	n := p.node(to)
	if n == nil {
		return "", fmt.Errorf("docker provider: no node %q", to)
	}
	addr := n.Advertised(port)
	if addr == "" {
		return "", fmt.Errorf("docker provider: node %s has no port %q", to, port)
	}
	return addr, nil
}

func pair(a, b string) [2]string {
	if a > b {
		a, b = b, a
	}
	return [2]string{a, b}
}

// CutPeers cuts node off from peers (every node it has a path with when empty), both ways: rules
// for each peer's address in node's INPUT and OUTPUT chains that answer TCP with a reset, so
// connections fail at once, as a stopped proxy makes them locally. The rules live in the
// container's network namespace, so a cut lasts across the server's restarts until healed.
func (p *Provider) CutPeers(node string, peers []string) error { return p.cut(node, peers, cutReset) }

// DropPeers is CutPeers with DROP rules: packets vanish, as in Jepsen's partitions, and the
// servers notice by their own timeouts.
func (p *Provider) DropPeers(node string, peers []string) error { return p.cut(node, peers, cutDrop) }

// HealPeers undoes CutPeers and DropPeers.
func (p *Provider) HealPeers(node string, peers []string) error { return p.cut(node, peers, cutHeal) }

var _ providers.Dropper = (*Provider)(nil)

func (p *Provider) cut(node string, peers []string, how cutHow) error {
	n, _, ips, err := p.peersOf(node, peers)
	if err != nil {
		return err
	}
	return n.applyCuts(ips, how)
}

func (p *Provider) linkedPeers(node string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for k := range p.linked {
		switch node {
		case k[0]:
			out = append(out, k[1])
		case k[1]:
			out = append(out, k[0])
		}
	}
	sort.Strings(out)
	return out
}

// peersOf resolves a cut's peers (every node node has a path with when asked is empty) to names
// and addresses.
func (p *Provider) peersOf(node string, asked []string) (*node, []string, []netip.Addr, error) {
	n := p.node(node)
	if n == nil {
		return nil, nil, nil, fmt.Errorf("docker provider: no node %q", node)
	}
	if len(asked) == 0 {
		asked = p.linkedPeers(node)
	}
	if len(asked) == 0 {
		return nil, nil, nil, fmt.Errorf("docker provider: %s has no paths to other nodes to cut", node)
	}
	var ips []netip.Addr
	for _, q := range asked {
		qn := p.node(q)
		if qn == nil || q == node {
			return nil, nil, nil, fmt.Errorf("docker provider: no node %q to cut %s from", q, node)
		}
		ips = append(ips, qn.ip)
	}
	return n, asked, ips, nil
}

// Close removes every container and the network, and stops the watcher. Idempotent.
func (p *Provider) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	nodes := make([]*node, 0, len(p.nodes))
	for _, name := range p.order {
		nodes = append(nodes, p.nodes[name])
	}
	p.mu.Unlock()
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Go(func() { errs[i] = n.Stop() })
	}
	wg.Wait()
	ctx := context.Background()
	if p.net != nil {
		if _, err := p.cli.NetworkRemove(ctx, p.net.ID, client.NetworkRemoveOptions{}); err != nil {
			errs = append(errs, fmt.Errorf("remove network %s: %w", p.net.Name, err))
		}
	}
	p.reaper.stop()
	errs = append(errs, p.cli.Close())
	return errors.Join(errs...)
}

// freePort picks a free 127.0.0.1 port and holds it until released (so nothing else made
// meanwhile, a proxy or another node, gets it).
func freePort() (net.Listener, int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, 0, err
	}
	return l, l.Addr().(*net.TCPAddr).Port, nil
}

func nodeDir(runDir, name string) (string, error) {
	dir := filepath.Join(runDir, "servers", name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	return dir, nil
}

func hostPort(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }
