// Package locks holds the lock designs lockcheck runs, one file per design, behind one small
// interface, and a registry by name. A design knows nothing of faults or checking: it takes the
// lock, gives it back, and says which fencing token (if any) it handed out.
package locks

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/lockcheck/lockcheck/clock"
	"github.com/lockcheck/lockcheck/internal/quickstart"
)

// ErrBusy means another client holds the lock: the attempt certainly did not take it.
var ErrBusy = errors.New("lock held by another client")

// ErrNotHeld means a release found the lock no longer ours (it expired, or someone took it).
var ErrNotHeld = errors.New("lock not held by this client")

// Lock is one client's handle on one lock.
type Lock interface {
	// Acquire makes one attempt to take the lock, waiting at most until ctx is done. ctx bounds
	// this attempt only, and the caller cancels it as soon as Acquire returns: whatever must keep
	// a hold alive (a heartbeat, a watchdog, a session's keep-alive) must run on a context of the
	// lock's own, made when the lock is built and cancelled by Close, never on ctx, or it dies the
	// moment the lock is taken. It returns ErrBusy when the lock is certainly held by someone
	// else; any other error leaves the outcome unknown. token is nil when the design has no
	// fencing token.
	Acquire(ctx context.Context) (token *int64, err error)
	// Release gives the lock back: nil, ErrNotHeld, or another error (outcome unknown).
	Release(ctx context.Context) error
	// Close frees connections.
	Close() error
}

// Expiring is implemented by designs whose client knows when its own hold ends (Redlock's
// validity = TTL − elapsed − drift). The workload stops treating itself as holder after it.
type Expiring interface {
	ValidUntil() time.Time
}

// Env is what a design gets to build a client's lock.
type Env struct {
	Client  string        // the client's name; owner identity where a design uses one
	Nodes   []string      // addresses of the lock service's nodes, as this client reaches them
	Key     string        // the lock's key
	TTL     time.Duration // lease length, for designs that expire
	Timeout time.Duration // bound on each command to a node
	// Clock is the client's own wall clock, which a scenario may skew: compute every time a
	// design reasons about (expiry values, validity) through it, never with time.Now.
	Clock clock.Clock
	// Role is "read" or "write" for designs with shared (read) and exclusive (write) holds;
	// empty for plain mutexes.
	Role string
	// Point marks a program point inside lock code where a scenario may stop the client (for
	// example between sending commands and reading replies). Never nil.
	Point func(name string)
	// Params are settings of the lock service a client needs besides addresses (a database's
	// name, a user), as the service kind names them.
	Params map[string]string
	// Sentinel, when set, makes single-node Redis designs follow Redis Sentinel to the current
	// primary (redisconn.go) instead of dialing Nodes[0].
	Sentinel *SentinelEnv
	// OnRenewal, when set, receives every renewal the lock makes on its own (Renewed); it may be
	// called from any goroutine.
	OnRenewal func(Renewal)
}

// Endpoints is what a client dials to reach the lock service: the service kind says it (package
// services), the worker puts it into the Env.
type Endpoints struct {
	Nodes    []string          `json:"nodes"`              // the lock nodes, through this client's own links
	Params   map[string]string `json:"params,omitempty"`   // see Env.Params
	Sentinel *SentinelEnv      `json:"sentinel,omitempty"` // see Env.Sentinel
}

// Now reads the client's clock (real time when the Env has none). Designs read time only here.
func (e Env) Now() time.Time {
	if e.Clock == nil {
		return time.Now()
	}
	return e.Clock.Now()
}

// Services a design's nodes run (names of package services' kinds).
const (
	Redis     = "redis"
	ZooKeeper = "zookeeper"
)

// Roles of a read/write lock's clients.
const (
	ReadRole  = "read"
	WriteRole = "write"
)

// Design describes a lock design: what it is, where it comes from, and how it fails.
type Design struct {
	Name      string
	Summary   string
	Source    string // the article, documentation page or library it follows (docs/CLAIMS.md describes the articles)
	Token     string // the fencing token it gives, or "none"
	Nodes     int    // independent lock-service nodes it runs on when a scenario names none (and the fewest it takes, unless Quorum or AnyNodes)
	Expires   bool   // whether the lock frees itself after TTL
	Reentrant bool   // whether the holder may acquire again (usage step reenter)
	// Usage lists the usage steps (usage.go) the design offers beyond those every design of its
	// kind does: reenter for a reentrant one, abandon for an external program that gives up an
	// attempt when asked.
	Usage        []string
	Service      string   // the kind of lock service its nodes run (package services): "redis" (the default), "zookeeper", ...
	ReadWrite    bool     // readers share the lock, a writer holds it alone (Env.Role says which a client is)
	Points       []string // program points inside its own code where a scenario may stop a client
	Protects     string   // what it protects against
	FailureModes []string // how it is known to fail
	Scenarios    []string // scenario files that show it
	New          func(Env) (Lock, error)

	// Queued: a waiter keeps a place in a queue that lives on its own session or lease (a
	// ZooKeeper sequential node, an etcd key, a fair lock's queue entry), so a waiter's session
	// running out changes the queue while another client holds. The matrix gives such designs a
	// waiter fault.
	Queued bool
	// Fair: the design promises first come, first served: a waiter is served before every client
	// that asked after it (its queue of waiters is kept in arrival order and only its head may
	// take the lock). The checker holds it to that: an unfair overtake makes a run damaged
	// (checker.Fairness.Unfair), and the matrix shows it in every column.
	Fair bool
	// Renews: a hold lasts as long as the holder's session or watchdog is alive, not one TTL, so a
	// hold longer than the TTL is legitimate and only a fault can end it early. The matrix's
	// long-hold columns apply to these and to designs that never expire.
	Renews bool

	// Blocking says how one acquire attempt waits for a held lock, when it does (a blocking
	// lock: a pub/sub message, a ZooKeeper watch); empty for a try-lock, whose attempt answers
	// at once and whose waiting is the worker's retries after a backoff.
	Blocking string
	// VariantOf names the design this one is a variant of, when it exists to call a library the
	// way a published bug's report did (an option, a misuse): lockcheck's track record runs it,
	// and the default matrix leaves it out (name it with --locks to include it).
	VariantOf string
	// External: the design runs as a program of its own through the lock-client protocol
	// (external.go), which does not follow Redis Sentinel.
	External bool
	// Program is set for an external design a scenario defines (inline or in a design file):
	// the worker, which cannot find such a design in its registry, gets it in its config and
	// builds the design with ExternalDesign.
	Program *Program
	// Prepare, when set, readies what the design needs on this machine (a library built at the
	// version its name gives, versioned.go). A run calls it before it starts any server, so a
	// version that cannot be had fails at once, in one line.
	Prepare func() error
	// Promise is what the design promises a holder, and for how long (promise.go).
	Promise Promise

	// Outside: a program outside lockcheck registered it (a Go test, through lockchecktest), so
	// no other lockcheck process knows it: a run folder records what judging needs of it
	// (package scenarios: the scenario's design: block), and lockcheck check judges it anywhere.
	Outside bool

	// Quorum: it holds the lock when a majority of its nodes said yes (Redlock), so it runs on
	// any odd number of nodes from 3 up; Nodes is only its default. AnyNodes: it needs every one
	// of its nodes (Redisson's MultiLock), so it runs on any number from 1 up. Neither: it runs on
	// Nodes nodes or more, using the first Nodes.
	Quorum, AnyNodes bool
}

// NodesProblem says why the design cannot run on n independent nodes, "" when it can.
func (d Design) NodesProblem(n int) string {
	switch {
	case d.Quorum && (n < 3 || n%2 == 0):
		// One or two nodes survive no failure; an even count survives no more failures than the
		// odd count below it, and a tie can leave nobody with a majority.
		return fmt.Sprintf("%s takes a majority of its nodes: it runs on an odd number of nodes, 3 or more (3, 5, 7, ...); got %d", d.Name, n)
	case d.AnyNodes && n < 1:
		return fmt.Sprintf("%s runs on 1 node or more; got %d", d.Name, n)
	case !d.Quorum && !d.AnyNodes && n < d.Nodes:
		return fmt.Sprintf("%s needs %d node(s), got %d", d.Name, d.Nodes, n)
	}
	return ""
}

// WaitsBy says in a few words how the workload waits for the lock with this design.
func (d Design) WaitsBy() string {
	if d.Blocking == "" {
		return "polls (try-lock, the worker retries after its backoff)"
	}
	return "blocks: " + d.Blocking
}

// HoldsUntilReleased reports whether a hold may last longer than the TTL without any fault: the
// design renews it, or it never expires.
func (d Design) HoldsUntilReleased() bool { return d.Renews || !d.Expires }

// HasToken reports whether the design hands out fencing tokens.
func (d Design) HasToken() bool { return d.Token != "none" }

// ServiceName is the kind of lock service the design runs on ("redis" when it names none).
func (d Design) ServiceName() string {
	if d.Service == "" {
		return Redis
	}
	return d.Service
}

var (
	registryMu sync.Mutex
	registry   = map[string]Design{}
)

// Register adds a design to the registry, so scenarios can name it. Designs outside this module
// (a project checking its own lock) call it from an init function or before running; the worker
// process must register it too (a test binary that doubles as the worker does, since it runs
// the same init). It panics on a repeated name, a missing constructor or a missing node count.
func Register(d Design) {
	if d.Name == "" || d.New == nil || d.Nodes < 1 {
		panic(fmt.Sprintf("lock design %q: needs a name, a constructor (New) and Nodes >= 1", d.Name))
	}
	if d.Token == "" {
		d.Token = "none"
	}
	if err := CheckUsage(d.Usage); err != nil {
		panic(fmt.Sprintf("lock design %q: %v", d.Name, err))
	}
	if slices.Contains(d.Usage, UsageReenter) {
		d.Reentrant = true
	}
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := registry[d.Name]; dup {
		panic("lock design registered twice: " + d.Name)
	}
	registry[d.Name] = d
}

// Get returns the named design, or an error that lists the valid names. A registered name comes
// first; another name LIB@VERSION is a Go library at that version (versioned.go). A design
// registered as NAME@VERSION (lockchecktest.Design.Version) also answers to NAME, when it is the
// only version of NAME registered.
func Get(name string) (Design, error) {
	if file, version, ok := DesignFileName(name); ok && DesignFile != nil {
		return DesignFile(file, version)
	}
	if strings.Contains(name, "@") {
		return versioned(name)
	}
	registryMu.Lock()
	d, ok := registry[name]
	registryMu.Unlock()
	if !ok {
		return releaseOf(name)
	}
	return d, nil
}

// registered returns the design registered under name exactly.
func registered(name string) (Design, bool) {
	registryMu.Lock()
	defer registryMu.Unlock()
	d, ok := registry[name]
	return d, ok
}

// releaseOf finds the one design registered as name@VERSION, or says why there is none.
func releaseOf(name string) (Design, error) {
	var versions []string
	for _, n := range Names() {
		if strings.HasPrefix(n, name+"@") {
			versions = append(versions, n)
		}
	}
	switch len(versions) {
	case 0:
		return Design{}, fmt.Errorf("unknown lock %q; valid locks: %s%s", name, strings.Join(Names(), ", "), quickstart.Missing())
	case 1:
		d, _ := registered(versions[0])
		return d, nil
	}
	return Design{}, fmt.Errorf("lock %q is registered at %d versions: name one of %s", name, len(versions), strings.Join(versions, ", "))
}

// Names lists registered designs in alphabetical order.
func Names() []string {
	registryMu.Lock()
	defer registryMu.Unlock()
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// All lists registered designs in alphabetical order.
func All() []Design {
	var out []Design
	for _, n := range Names() {
		d, _ := Get(n)
		out = append(out, d)
	}
	return out
}
