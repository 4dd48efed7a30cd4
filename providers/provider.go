// Package providers says where a lock service's servers run. A provider starts nodes from a
// provider-neutral NodeSpec and hands back one Node handle per server — address, pause, resume,
// kill, restart, clock — and cuts or heals the links between nodes, so the same scenario runs on
// any provider:
//
//   - local (the default): processes on 127.0.0.1, links between servers through toxiproxy proxies;
//   - docker: each node its own container on a private network, links cut with iptables;
//   - external: a cluster the user already runs, faults through the user's hook commands.
//
// Services (package services) describe their servers as NodeSpecs and never ask which provider
// runs them.
package providers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/internal/quickstart"
)

// Port is a port a server listens on, by name.
type Port struct {
	Name string // "client", "quorum", "election", ...
	// Number is the port inside a container (docker); the local provider picks free ports instead.
	Number int
	// Hello, when set, rewrites the first message a peer sends to this port. Some protocols announce
	// the sender's own address in it (ZooKeeper's leader election does) and the receiver dials that
	// address back; on a provider that puts proxies between nodes, the call-back must go through the
	// proxy too. Hello reads the first message from r and returns it with callback (the address at
	// which the receiver reaches the sender, through the proxy) in place of the announced one.
	Hello func(r io.Reader, callback string) ([]byte, error)
	// WaitForBind, on a provider that puts proxies between servers, keeps a peer's connection to
	// this port waiting up to this long while the port is not bound yet. A proxy accepts before it
	// dials, so a peer dialing a port not bound yet sees "accepted, then closed" rather than a
	// refusal; a server that takes that for a failed peer (a ZooKeeper follower dialing a newly
	// elected leader) needs the wait. 0: the connection is closed at once, as a refused one is.
	WaitForBind time.Duration
}

// NodeSpec is what a service asks a provider to run: one server.
type NodeSpec struct {
	Name  string // unique in the run: "n1", "zk2", "s1", "resource"
	Image string // the server type: names the container image ("redis", "zookeeper", "mariadb", ...)
	Ports []Port
	// Clock makes the node's wall clock settable (SetClock): the server runs under libfaketime.
	Clock bool
	// LogFile is the file in the node's folder that receives the server's standard output and error.
	LogFile string
	// User runs the server as this user when the harness is root ("" = as the harness). PostgreSQL,
	// for one, refuses to run as root.
	User string
	// Command returns the server's command line for the node placed at p. It is called before every
	// start, so it may (re)write configuration files into p.HostDir first.
	Command func(p Placement) ([]string, error)
	Env     []string // extra environment for the server
	// Needs lists what the server needs on a machine that runs it directly (programs, files), each
	// with the Debian package that provides it: the local provider checks them before it starts
	// anything and says what to install.
	Needs []Need
	// Ready reports whether the started server serves; Start and Restart poll it (with short
	// timeouts of its own) until it returns nil or the start times out. nil: the server is ready
	// when its process runs and listens on its ports.
	Ready func(ctx context.Context, n Node) error
}

// Need is a program (looked up in PATH) or a file (an absolute path) a server needs, and the
// Debian package that provides it.
type Need struct {
	Path    string
	Package string
}

// Placement is where a node runs, as its own server sees it.
type Placement struct {
	Host    string         // the address to bind: 127.0.0.1 locally, the container's own address on its network
	Ports   map[string]int // port numbers to listen on, by Port.Name
	Dir     string         // the node's folder as the server sees it (data, config, logs)
	HostDir string         // the same folder as the harness sees it: write config files here
	// Peer returns the address at which this node reaches port port of node to, such that a cut
	// between the two (Provider.CutPeers) cuts that path. to must have been added to the provider.
	Peer func(to, port string) (string, error)
	// Direct returns the address node to (this node included) is known by to other nodes: what
	// it announces and what a server reports to clients, not cut by CutPeers (Sentinel names
	// primaries and replicas by it). An IP address and port.
	Direct func(to, port string) (string, error)
}

// Node is one started server.
type Node interface {
	Name() string
	// Addr is where the harness reaches the node's port: 127.0.0.1:N. It does not change across
	// restarts (client links forward to it).
	Addr(port string) string
	// Advertised is the address other nodes and clients know the port by: what the server itself
	// reports (a Sentinel names primaries by it). Locally it is Addr.
	Advertised(port string) string
	// Dir is the node's folder as the harness sees it.
	Dir() string
	Pause() error  // freeze the server (SIGSTOP, cgroup freezer)
	Resume() error // let it go on
	Kill() error   // SIGKILL, no restart: see Restart
	// Restart kills the server if it runs and starts it again with the same ports, folder and clock
	// (a crash-restart), and waits until it is ready.
	Restart(ctx context.Context) error
	// SetClock sets the node's wall clock to real time + offset, running at rate (0 or 1: true
	// speed); SetClock(0, 1) gives it the true clock back. It fails with ErrNoClock when the node
	// was not started with Clock.
	SetClock(offset time.Duration, rate float64) error
	// Stop ends the server for good.
	Stop() error
}

// Provider runs nodes.
type Provider interface {
	Name() string
	// Add reserves a node (its ports, its name on the network) without starting it, so that
	// nodes added together can name each other in their configuration (Placement.Peer).
	Add(spec NodeSpec) error
	// Start starts a node added before and waits until it is ready.
	Start(ctx context.Context, name string) (Node, error)
	// CutPeers cuts node off from peers (every node it has a path to when peers is empty), both
	// ways, so that connections between them fail (refused, reset); HealPeers undoes it and a
	// Dropper's DropPeers.
	CutPeers(node string, peers []string) error
	HealPeers(node string, peers []string) error
	// Close stops every node the provider started and frees what it holds.
	Close() error
}

// Dropper is implemented by a provider that can partition servers silently: DropPeers is
// CutPeers with packets dropped instead of connections failed, so what the servers send each
// other goes unanswered until HealPeers (iptables DROP), and each side learns of the partition by
// its own timeouts. Its action is "drop" (Refuser).
type Dropper interface {
	DropPeers(node string, peers []string) error
}

// Refuser is implemented by a provider that cannot carry out every fault on every server (an
// external cluster without a hook for it). Before anything starts, the run asks it about each
// action its faults may take — "pause", "resume", "kill", "restart", "clock", "cut", "drop",
// "heal", the names of the Node methods and CutPeers/DropPeers/HealPeers — on each server target (a node's name, or a
// role such as "leader" that stands for any of them), and refuses the scenario with the reasons.
type Refuser interface {
	Refuses(target, action string) error
}

// Sampler is implemented by a provider whose nodes are all of one type: Sample returns one that is
// never started (a nil pointer of that type will do). A fault kind with a server action of its
// own (nemesis.Capability: an optional interface a node may implement) asks it, before anything
// starts, whether this provider's nodes can do it.
type Sampler interface {
	Sample() Node
}

// Lasting is implemented by a provider whose servers outlive the run (a cluster the user runs):
// what the run writes there is kept under a per-run key and removed at the end.
type Lasting interface {
	Lasting() bool
}

// OnThisMachine is implemented by a provider whose servers are processes of this machine, run from
// its own file system (local): the only kind that can run a server program built here (a server
// version built into the user's cache), as opposed to an image's or a user's cluster's.
type OnThisMachine interface {
	RunsOnThisMachine() bool
}

// ErrNoClock is returned by SetClock on a node whose clock cannot be set.
var ErrNoClock = errors.New("this node's clock cannot be set")

// ErrUnsupported is returned for a fault a provider cannot carry out (an external cluster without
// a hook for it).
var ErrUnsupported = errors.New("not supported by this provider")

// Options are what every provider is made with.
type Options struct {
	Dir string // the run folder: node folders go in Dir/servers/<name>/
	// Links is the run's proxy set: providers that put proxies between nodes add them there.
	Links LinkAdder
	// Config is the provider's own settings (an endpoints file for external), "" for none.
	Config string
	// Logger receives debug messages; nil: quiet.
	Logger Logger
	// DirectPeers: no fault of the run acts on a server, so nothing will cut a path between two:
	// a provider that puts proxies on those paths may give Placement.Peer the peer's own address.
	// Every message between servers (etcd's raft, ZooKeeper's quorum) then skips the harness.
	DirectPeers bool
}

// LinkAdder makes proxies (package proxies' Set implements it).
type LinkAdder interface {
	// AddLink creates a proxy named from->to (port) listening on a free 127.0.0.1 port and
	// forwarding to upstream, and returns its address.
	AddLink(from, to, port, upstream string) (string, error)
	// CutBetween, DropBetween and HealBetween cut (connections fail), drop (nothing gets through,
	// connections stay open) and heal every proxy between a and b, both ways.
	CutBetween(a, b string) error
	DropBetween(a, b string) error
	HealBetween(a, b string) error
}

// Logger is the part of *slog.Logger providers use.
type Logger interface {
	Debug(msg string, args ...any)
}

// Factory makes a provider for one run.
type Factory func(o Options) (Provider, error)

var factories = map[string]Factory{}

// Register makes a provider available by name. It panics on a repeated name.
func Register(name string, f Factory) {
	if _, dup := factories[name]; dup {
		panic("provider registered twice: " + name)
	}
	factories[name] = f
}

// New makes the named provider, or says which names are valid.
func New(name string, o Options) (Provider, error) {
	f, ok := factories[name]
	if !ok {
		return nil, Unknown(name)
	}
	return f(o)
}

// linkedElsewhere are lockcheck's providers by the package that registers them: a program links
// only those it imports (the docker provider brings the Docker client with it).
var linkedElsewhere = map[string]string{
	"docker":   "github.com/lockcheck/lockcheck/providers/docker",
	"external": "github.com/lockcheck/lockcheck/providers/external",
	"local":    "github.com/lockcheck/lockcheck/providers/local",
}

// Unknown is the error for a provider name that is not registered: the valid names, and for one
// of lockcheck's own providers that this program does not link, the package to import.
func Unknown(name string) error {
	msg := fmt.Sprintf("unknown provider %q; valid providers: %s", name, strings.Join(Names(), ", "))
	if pkg, ok := linkedElsewhere[name]; ok {
		msg = fmt.Sprintf("the %s provider is not built into this program (import _ %q to add it); valid providers: %s",
			name, pkg, strings.Join(Names(), ", "))
	}
	return errors.New(msg + quickstart.Missing())
}

// Names lists the registered providers.
func Names() []string {
	out := make([]string, 0, len(factories))
	for n := range factories {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Default is the provider a run uses unless told otherwise.
const Default = "local"
