// Package external is the provider for a cluster the user already runs: an endpoints file names
// its nodes by the names the scenario's service gives them (n1.., s1.., zk1..) with their
// addresses. lockcheck starts nothing there; clients still reach every node through the run's
// toxiproxy links, so client faults (pauses, program points, client partitions and delays, client
// clocks) work as on any provider.
//
// Server faults need the user's hands: the endpoints file may give a hook command per action
// (pause, resume, kill, restart, clock, cut, heal; by default for every node, or per node), which
// lockcheck runs with sh -c in the endpoints file's folder (so ./hooks/pause.sh is found beside
// the file, wherever lockcheck is started) and records in the node's folder (servers/<node>/hooks.log). A
// scenario asking for a server fault whose hook is missing is refused before anything starts
// (providers.Refuser). The cluster outlives the run (providers.Lasting): the run's lock key is
// its own and is removed at the end.
package external

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lockcheck/lockcheck/internal/proc"
	"github.com/lockcheck/lockcheck/providers"
)

// Name is the provider's name in scenarios and on the command line.
const Name = "external"

func init() { providers.Register(Name, New) }

const (
	// hookTimeout bounds one hook command (an ssh or kubectl line).
	hookTimeout = 30 * time.Second
	// readyTimeout bounds waiting for a node to answer, at the start and after a restart hook.
	readyTimeout = 30 * time.Second
	// HookLog is the file in a node's folder that records every hook run for it.
	HookLog = "hooks.log"
)

// Provider is a user's cluster.
type Provider struct {
	o   providers.Options
	eps *Endpoints

	mu    sync.Mutex
	nodes map[string]*node
}

// New reads the endpoints file named by o.Config.
func New(o providers.Options) (providers.Provider, error) {
	if o.Dir == "" {
		return nil, errors.New("external provider: Options.Dir is empty")
	}
	if o.Config == "" {
		return nil, errors.New("the external provider needs an endpoints file naming your cluster's nodes: lockcheck run --provider external " +
			"--endpoints FILE (docs/PROVIDERS.md shows one)")
	}
	eps, err := Load(o.Config)
	if err != nil {
		return nil, err
	}
	if o.Logger == nil {
		o.Logger = nopLogger{}
	}
	return &Provider{o: o, eps: eps, nodes: map[string]*node{}}, nil
}

type nopLogger struct{}

func (nopLogger) Debug(string, ...any) {}

// Name is "external".
func (p *Provider) Name() string { return Name }

// Sample is a node of the type this provider starts (providers.Sampler).
func (p *Provider) Sample() providers.Node { return (*node)(nil) }

// Lasting: the user's cluster outlives the run.
func (p *Provider) Lasting() bool { return true }

// Refuses says why action cannot be done to target: no hook for it. A role (a target that is no
// node of the file, such as leader or primary) may be any node, so every node needs the hook.
func (p *Provider) Refuses(target, action string) error {
	if !slices.Contains(Actions, action) {
		return fmt.Errorf("an endpoints file gives hooks for %s, not %s", strings.Join(Actions, ", "), action)
	}
	nodes := []string{target}
	if _, ok := p.eps.Nodes[target]; !ok {
		nodes = p.eps.Names()
	}
	var missing []string
	for _, n := range nodes {
		if p.eps.Hook(n, action) == "" {
			missing = append(missing, n)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("%s has no %q hook for %s: add hooks.%s (for every node) or nodes.<name>.hooks.%s, a command that does it (e.g. over ssh)",
		p.eps.Path, action, strings.Join(missing, ", "), action, action)
}

// Add checks that the endpoints file names the node with every port its service needs.
func (p *Provider) Add(spec providers.NodeSpec) error {
	ep, ok := p.eps.Nodes[spec.Name]
	if !ok {
		return fmt.Errorf("%s names no node %q (it names %s); the scenario's service needs it", p.eps.Path, spec.Name, strings.Join(p.eps.Names(), ", "))
	}
	for _, pt := range spec.Ports {
		if _, ok := ep.Ports[pt.Name]; !ok {
			return fmt.Errorf("%s: nodes.%s.ports: no %q port (the %s server needs it)", p.eps.Path, spec.Name, pt.Name, spec.Image)
		}
	}
	dir := filepath.Join(p.o.Dir, "servers", spec.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.nodes[spec.Name] != nil {
		return fmt.Errorf("external provider: node %q added twice", spec.Name)
	}
	p.nodes[spec.Name] = &node{p: p, spec: spec, ep: ep, dir: dir}
	return nil
}

// Start starts nothing: it waits until the node answers.
func (p *Provider) Start(ctx context.Context, name string) (providers.Node, error) {
	p.mu.Lock()
	n := p.nodes[name]
	p.mu.Unlock()
	if n == nil {
		return nil, fmt.Errorf("external provider: no node %q (Add it first)", name)
	}
	if err := n.waitReady(ctx); err != nil {
		return nil, err
	}
	return n, nil
}

// CutPeers runs the cut hook on node for peers.
func (p *Provider) CutPeers(node string, peers []string) error { return p.peerHook("cut", node, peers) }

// DropPeers runs the drop hook on node for peers.
func (p *Provider) DropPeers(node string, peers []string) error {
	return p.peerHook("drop", node, peers)
}

var _ providers.Dropper = (*Provider)(nil)

// HealPeers runs the heal hook.
func (p *Provider) HealPeers(node string, peers []string) error {
	return p.peerHook("heal", node, peers)
}

func (p *Provider) peerHook(action, name string, peers []string) error {
	p.mu.Lock()
	n := p.nodes[name]
	var addrs []string
	if len(peers) == 0 {
		for other := range p.nodes {
			if other != name {
				peers = append(peers, other)
			}
		}
	}
	for _, q := range peers {
		if qn := p.nodes[q]; qn != nil {
			addrs = append(addrs, qn.Advertised(qn.spec.Ports[0].Name))
		}
	}
	p.mu.Unlock()
	if n == nil {
		return fmt.Errorf("external provider: no node %q", name)
	}
	return n.hook(action, map[string]string{"peers": strings.Join(peers, " "), "peer_addrs": strings.Join(addrs, " ")})
}

// Close stops nothing: the cluster is the user's.
func (p *Provider) Close() error { return nil }

// node is one node of the user's cluster.
type node struct {
	p    *Provider
	spec providers.NodeSpec
	ep   NodeEndpoints
	dir  string

	hookMu sync.Mutex // one hook at a time per node, in order
}

func (n *node) Name() string { return n.spec.Name }

// Addr is the address the endpoints file gives.
func (n *node) Addr(port string) string { return n.ep.Ports[port] }

// Advertised is what the servers know the port by: the file's advertised address, else Addr.
func (n *node) Advertised(port string) string {
	if a := n.ep.Advertised[port]; a != "" {
		return a
	}
	return n.ep.Ports[port]
}

func (n *node) Dir() string { return n.dir }

// Act runs the hook of a fault kind's own action (nemesis.Actor).
func (n *node) Act(action string) error { return n.hook(action, nil) }

func (n *node) Pause() error  { return n.hook("pause", nil) }
func (n *node) Resume() error { return n.hook("resume", nil) }
func (n *node) Kill() error   { return n.hook("kill", nil) }

// Restart runs the restart hook and waits until the node answers again.
func (n *node) Restart(ctx context.Context) error {
	if err := n.hook("restart", nil); err != nil {
		return err
	}
	return n.waitReady(ctx)
}

// SetClock runs the clock hook with the offset in seconds and the rate.
func (n *node) SetClock(offset time.Duration, rate float64) error {
	if rate == 0 {
		rate = 1
	}
	if n.p.eps.Hook(n.spec.Name, "clock") == "" {
		return fmt.Errorf("node %s: %w: no clock hook in %s", n.spec.Name, providers.ErrNoClock, n.p.eps.Path)
	}
	return n.hook("clock", map[string]string{
		"offset": strconv.FormatFloat(offset.Seconds(), 'f', 3, 64),
		"rate":   strconv.FormatFloat(rate, 'f', -1, 64),
	})
}

// Stop does nothing to the user's server.
func (n *node) Stop() error { return nil }

// hook runs the command for action on this node and records it. The command may use the
// placeholders {node} {addr} {host} {port} (the node's first port, as lockcheck reaches it),
// {offset} {rate} (clock), {peers} {peer_addrs} (cut, heal: names and advertised addresses, space
// separated); the same values are in its environment as LOCKCHECK_NODE, LOCKCHECK_ADDR, ...
func (n *node) hook(action string, extra map[string]string) error {
	cmdText := n.p.eps.Hook(n.spec.Name, action)
	if cmdText == "" {
		return fmt.Errorf("node %s: %w: no %q hook in %s", n.spec.Name, providers.ErrUnsupported, action, n.p.eps.Path)
	}
	addr := n.Addr(n.spec.Ports[0].Name)
	host, port, _ := net.SplitHostPort(addr)
	vals := map[string]string{"node": n.spec.Name, "addr": addr, "host": host, "port": port, "action": action}
	for k, v := range extra {
		vals[k] = v
	}
	var env []string
	for k, v := range vals {
		cmdText = strings.ReplaceAll(cmdText, "{"+k+"}", v)
		env = append(env, "LOCKCHECK_"+strings.ToUpper(k)+"="+v)
	}
	n.hookMu.Lock()
	defer n.hookMu.Unlock()
	began := time.Now()
	out, err := runHook(cmdText, n.p.eps.Dir(), env)
	n.record(began, action, cmdText, out, err)
	n.p.o.Logger.Debug("hook", "node", n.spec.Name, "action", action, "command", cmdText, "took", time.Since(began), "err", err)
	if err != nil {
		return fmt.Errorf("node %s: %s hook %q: %w: %s", n.spec.Name, action, cmdText, err, strings.TrimSpace(tail(out, 500)))
	}
	return nil
}

// runHook runs cmdText with sh -c in dir, as a child that dies with the harness, for at most
// hookTimeout.
func runHook(cmdText, dir string, env []string) (string, error) {
	cmd := exec.Command("sh", "-c", cmdText)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	p, err := proc.StartProcess(cmd)
	if err != nil {
		return "", err
	}
	select {
	case <-p.Exited():
	case <-time.After(hookTimeout):
		_ = p.Kill()
		<-p.Exited()
		return out.String(), fmt.Errorf("did not finish within %s", hookTimeout)
	}
	return out.String(), p.Wait()
}

// record appends one hook run to the node's hooks.log.
func (n *node) record(began time.Time, action, cmdText, out string, err error) {
	f, ferr := os.OpenFile(filepath.Join(n.dir, HookLog), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if ferr != nil {
		return
	}
	defer f.Close()
	status := "ok"
	if err != nil {
		status = "failed: " + err.Error()
	}
	fmt.Fprintf(f, "%s %s (%s, %s): %s\n", began.Format(time.RFC3339Nano), action, status, time.Since(began).Round(time.Millisecond), cmdText)
	if out = strings.TrimRight(out, "\n"); out != "" {
		fmt.Fprintf(f, "  %s\n", strings.ReplaceAll(out, "\n", "\n  "))
	}
}

// waitReady polls the spec's Ready check (else a TCP connect to the first port) until it passes.
func (n *node) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	var last error
	for {
		if n.spec.Ready != nil {
			last = n.spec.Ready(ctx, n)
		} else {
			var c net.Conn
			d := net.Dialer{Timeout: time.Second}
			if c, last = d.DialContext(ctx, "tcp", n.Addr(n.spec.Ports[0].Name)); last == nil {
				c.Close()
			}
		}
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("node %s at %s (from %s) does not answer: %v", n.spec.Name, n.Addr(n.spec.Ports[0].Name), n.p.eps.Path, last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func tail(s string, max int) string {
	if len(s) > max {
		return "..." + s[len(s)-max:]
	}
	return s
}
