// Package local is the default provider: every node a process on 127.0.0.1, on free ports the
// provider picks, in its own folder of the run folder, under internal/proc (own process group,
// parent-death signal), so every server dies with the harness. Paths between two servers go
// through the run's proxies (Placement.Peer), each behind a small relay (relay.go), so a
// partition between servers is a real refused or reset TCP connection.
package local

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/lockcheck/lockcheck/providers"
)

// Name is the provider's name in scenarios and on the command line.
const Name = "local"

func init() { providers.Register(Name, New) }

// Provider runs nodes as local processes.
type Provider struct {
	o providers.Options

	mu     sync.Mutex
	nodes  map[string]*node
	peers  map[peerKey]string // (from, to, port) -> the proxy address from uses
	relays []*relay
	closed bool
}

type peerKey struct{ from, to, port string }

// New makes a local provider. Options.Links is needed only when nodes name each other
// (Placement.Peer).
func New(o providers.Options) (providers.Provider, error) {
	if o.Dir == "" {
		return nil, errors.New("local provider: Options.Dir is empty")
	}
	if o.Logger == nil {
		o.Logger = nopLogger{}
	}
	return &Provider{o: o, nodes: map[string]*node{}, peers: map[peerKey]string{}}, nil
}

// Name is "local".
func (p *Provider) Name() string { return Name }

// Sample is a node of the type this provider starts (providers.Sampler).
func (p *Provider) Sample() providers.Node { return (*node)(nil) }

var _ providers.Dropper = (*Provider)(nil)

// RunsOnThisMachine: servers are processes here, so a server built into the user's cache runs.
func (p *Provider) RunsOnThisMachine() bool { return true }

type nopLogger struct{}

func (nopLogger) Debug(string, ...any) {}

// Add reserves spec's ports for the node's life (so nothing else, including the proxies and relays
// made meanwhile or an outgoing connection while the server restarts, gets them).
func (p *Provider) Add(spec providers.NodeSpec) error {
	if spec.Name == "" || spec.Command == nil || len(spec.Ports) == 0 {
		return fmt.Errorf("local provider: node %q needs a name, a command and at least one port", spec.Name)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return errors.New("local provider: closed")
	}
	if p.nodes[spec.Name] != nil {
		return fmt.Errorf("local provider: node %q added twice", spec.Name)
	}
	if err := CheckNeeds(spec.Needs); err != nil {
		return fmt.Errorf("node %s: %w", spec.Name, err)
	}
	n, err := newNode(p, spec)
	if err != nil {
		return err
	}
	p.nodes[spec.Name] = n
	return nil
}

// Start starts a node added before and waits until it is ready.
func (p *Provider) Start(ctx context.Context, name string) (providers.Node, error) {
	n := p.node(name)
	if n == nil {
		return nil, fmt.Errorf("local provider: no node %q (Add it first)", name)
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

// peer is Placement.Peer for node from: the address of a proxy (through a relay) from from to
// port of node to, made on first use.
func (p *Provider) peer(from, to, port string) (string, error) {
	if p.o.DirectPeers {
		return p.direct(to, port)
	}
	if p.o.Links == nil {
		return "", errors.New("local provider: no proxy set to put links between nodes in (Options.Links)")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.peerLocked(from, to, port)
}

func (p *Provider) peerLocked(from, to, port string) (string, error) {
	k := peerKey{from, to, port}
	if addr, ok := p.peers[k]; ok {
		return addr, nil
	}
	target := p.nodes[to]
	if target == nil {
		return "", fmt.Errorf("local provider: %s names node %q, which was not added", from, to)
	}
	spec, ok := target.port(port)
	if !ok {
		return "", fmt.Errorf("local provider: node %s has no port %q", to, port)
	}
	r, err := newRelay(func() string { return target.addr(port) }, spec.Hello, spec.WaitForBind)
	if err != nil {
		return "", err
	}
	p.relays = append(p.relays, r)
	addr, err := p.o.Links.AddLink(from, to, port, r.Addr())
	if err != nil {
		return "", err
	}
	p.peers[k] = addr
	if spec.Hello != nil {
		// to calls from back through the proxy to -> from of the same port.
		back, err := p.peerLocked(to, from, port)
		if err != nil {
			return "", err
		}
		r.setCallback(back)
	}
	return addr, nil
}

// direct is Placement.Direct: locally, a node's real address.
func (p *Provider) direct(to, port string) (string, error) {
	n := p.node(to)
	if n == nil {
		return "", fmt.Errorf("local provider: no node %q", to)
	}
	addr := n.addr(port)
	if addr == "" {
		return "", fmt.Errorf("local provider: node %s has no port %q", to, port)
	}
	return addr, nil
}

// CutPeers cuts node off from peers (every node it has a path with when empty), both ways: the
// proxies between them stop, so connections are refused or reset.
func (p *Provider) CutPeers(node string, peers []string) error {
	return p.eachPeer(node, peers, p.o.Links.CutBetween)
}

// DropPeers partitions node from peers silently: the proxies between them keep their connections
// and pass nothing until healed (proxies.Link.Drop).
func (p *Provider) DropPeers(node string, peers []string) error {
	return p.eachPeer(node, peers, p.o.Links.DropBetween)
}

func (p *Provider) eachPeer(node string, peers []string, f func(a, b string) error) error {
	peers, err := p.peersOf(node, peers)
	if err != nil {
		return err
	}
	var errs []error
	for _, q := range peers {
		errs = append(errs, f(node, q))
	}
	return errors.Join(errs...)
}

// HealPeers undoes CutPeers and DropPeers.
func (p *Provider) HealPeers(node string, peers []string) error {
	return p.eachPeer(node, peers, p.o.Links.HealBetween)
}

func (p *Provider) peersOf(node string, asked []string) ([]string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.nodes[node] == nil {
		return nil, fmt.Errorf("local provider: no node %q", node)
	}
	linked := map[string]bool{}
	for k := range p.peers {
		switch node {
		case k.from:
			linked[k.to] = true
		case k.to:
			linked[k.from] = true
		}
	}
	if len(asked) == 0 {
		for n := range linked {
			asked = append(asked, n)
		}
		sort.Strings(asked)
	}
	if p.o.Links == nil || len(asked) == 0 {
		return nil, fmt.Errorf("local provider: %s has no links to other nodes to cut", node)
	}
	for _, q := range asked {
		if !linked[q] {
			return nil, fmt.Errorf("local provider: no path between %s and %q to cut", node, q)
		}
	}
	return asked, nil
}

// Close stops every node (at once, waiting for each) and every relay. Idempotent.
func (p *Provider) Close() error {
	p.mu.Lock()
	p.closed = true
	nodes := make([]*node, 0, len(p.nodes))
	for _, n := range p.nodes {
		nodes = append(nodes, n)
	}
	relays := p.relays
	p.relays = nil
	p.mu.Unlock()
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Go(func() { errs[i] = n.Stop() })
	}
	wg.Wait()
	for _, r := range relays {
		r.close()
	}
	return errors.Join(errs...)
}

// CheckNeeds reports every program or file in needs that this machine lacks, each with the
// Debian package to install.
func CheckNeeds(needs []providers.Need) error {
	var errs []error
	for _, nd := range needs {
		var err error
		if strings.HasPrefix(nd.Path, "/") {
			_, err = os.Stat(nd.Path)
		} else {
			_, err = exec.LookPath(nd.Path)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s not found: install the Debian package %s (apt-get install -y %s)", nd.Path, nd.Package, nd.Package))
		}
	}
	return errors.Join(errs...)
}

func nodeDir(runDir, name string) (string, error) {
	dir := filepath.Join(runDir, "servers", name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	return dir, nil
}

func hostPort(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }
