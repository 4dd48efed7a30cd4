package matrix

import (
	"fmt"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/scenarios"
	"github.com/lockcheck/lockcheck/services"
	"github.com/lockcheck/lockcheck/workloads"
)

// Fault is one column of the matrix: a fault generic enough to apply to any lock design, as a
// scenario's nemesis entries. The same fault hits every lock the same way, so a row compares
// designs and a column compares faults. A column may apply only to designs with some property
// (a reentrant design, a queue, a fencing token, program points): it is n/a, with the reason, for
// the others.
type Fault struct {
	Name    string
	Summary string
	Claims  []string // claims (docs/CLAIMS.md) the column speaks to
	// entry returns the cell for design d, or a reason the fault does not apply to it.
	entry func(c cellParams) (cellSpec, string)
}

// cellSpec is what one cell runs: its faults and the workload settings it changes from the
// matrix's usual ones (zero: unchanged).
type cellSpec struct {
	nemesis        []nemesis.Fault
	hold           time.Duration // usual: 100ms
	stagger        time.Duration // usual: 50ms
	acquireTimeout time.Duration // usual: 3s
	duration       time.Duration // usual: cellParams.duration
	ttl            time.Duration // usual: cellParams.ttl
	attempt        time.Duration // one acquire attempt's bound; usual: four command timeouts (1 s)
	reentrant      bool
}

// faults is the usual cell with these faults.
func faults(fs ...nemesis.Fault) cellSpec { return cellSpec{nemesis: fs} }

// The faults the columns are made of. client-1 is the first to hold (the clients are staggered).
const firstClient = "client-1"

// pauseAt freezes target at its occurrence-th pass through point, for d.
func pauseAt(target, point string, occurrence int, d time.Duration) nemesis.Fault {
	return nemesis.Fault{Kind: history.Pause, Target: target, Point: point, Occurrence: occurrence, For: scenarios.Duration(d)}
}

// cutAt cuts target from every lock node at its occurrence-th pass through point, for d.
func cutAt(target, point string, occurrence int, d time.Duration) nemesis.Fault {
	return nemesis.Fault{Kind: history.Partition, Target: target, Point: point, Occurrence: occurrence, For: scenarios.Duration(d)}
}

// crashAt kills node at a time and restarts it d later.
func crashAt(node string, at, d time.Duration) nemesis.Fault {
	return nemesis.Fault{Kind: history.Crash, Target: node, At: scenarios.Duration(at), For: scenarios.Duration(d)}
}

// cellParams are the lengths a cell is built with, scaled to the design's lease.
type cellParams struct {
	design    locks.Design
	ttl       time.Duration // lease or session timeout
	pause     time.Duration // long enough to outlive the lease with room to spare
	duration  time.Duration
	firstNode string             // the first lock node (n1, zk1, ...)
	first     nemesis.TargetInfo // what it can take
	nodes     []string           // every lock node
}

// longHold is the hold of the long-hold columns: three leases, so a fault that ends the holder's
// lease or session early does so while it still holds (a 100 ms hold is usually over before a
// partition or a crash has any effect on the lock). Only designs whose hold outlives the TTL
// without a fault take it (locks.Design.HoldsUntilReleased).
func (c cellParams) longHold() time.Duration { return 3 * c.ttl }

// Reasons a derived column does not apply, by the property the design lacks.
const (
	naNotReentrant = "not reentrant: the holder cannot take the lock again"
	naNoQueue      = "no queue of waiters with sessions or leases of their own: a waiter has no place that can run out"
	naNoToken      = "no fencing token: which hold is paused matters only through the token it carries"
	naNoPoints     = "no program points of its own"
	naNoWait       = "a try-lock: an attempt does not wait, so there is nothing to give up"
	naLeaseEnds    = "the lease is not renewed: a hold longer than the TTL ends without any fault"
	naOneNode      = "fewer than three lock nodes: no minority to lose"
)

// Faults are the matrix's columns, in display order: the generic faults first, then the columns
// derived from what designs claim (reentrancy, a queue, a token, program points, long holds).
var Faults = []Fault{
	{Name: "none", Summary: "no fault: the control",
		entry: func(cellParams) (cellSpec, string) { return faults(), "" }},
	{Name: "pause-after-acquire", Summary: "the first holder is frozen right after acquiring, for longer than the lease (GC pause)",
		Claims: []string{"K2", "A1"},
		entry: func(c cellParams) (cellSpec, string) {
			return faults(pauseAt(firstClient, workloads.AfterAcquire, 1, c.pause)), ""
		}},
	{Name: "pause-before-write", Summary: "the holder is frozen after its read and any validity check, just before its write",
		Claims: []string{"K3", "A9"},
		entry: func(c cellParams) (cellSpec, string) {
			return faults(pauseAt(firstClient, workloads.BeforeWrite, 1, c.pause)), ""
		}},
	{Name: "delay-write", Summary: "the holder's write to the resource is held back in the network until another client has read the " +
		"resource (the lock having moved on: a lease that ran out, or a holder that gave up on its write and let go)",
		Claims: []string{"K4"},
		// Until the next read, not for a fixed latency: where a fixed delay landed against the next
		// holders' read-modify-writes decided whether the unfenced register lost the write, and
		// the column varied between identical runs. Bounded, in case no one else reads.
		entry: func(c cellParams) (cellSpec, string) {
			return faults(nemesis.Fault{Kind: history.Delay, Target: firstClient,
				Params: nemesis.DelayParams{Nodes: []string{"resource"}, Until: nemesis.UntilNextRead},
				Point:  workloads.BeforeWrite, Occurrence: 1, For: scenarios.Duration(2 * c.pause)}), ""
		}},
	{Name: "partition-holder", Summary: "the holder is cut off from every lock node right after acquiring, for longer than the lease",
		Claims: []string{"K2", "K11"},
		entry: func(c cellParams) (cellSpec, string) {
			return faults(cutAt(firstClient, workloads.AfterAcquire, 1, c.pause)), ""
		}},
	{Name: "clock-jump-node", Summary: "a lock node's wall clock steps 10 leases forward (libfaketime) as the first holder starts a long hold, before the others ask",
		Claims: []string{"K7", "A7"},
		entry: func(c cellParams) (cellSpec, string) {
			if c.first.NoClock != "" {
				return cellSpec{}, c.first.NoClock
			}
			// The step is written as client-1 takes the lock, and libfaketime shows it 0-1 s later
			// (it reads its file at most once a second). client-1 holds two thirds of a 3 s lease,
			// and the others first ask 1.3 s in, when the step is surely in force and client-1
			// still holds: a step at 1 s into 100 ms holds fell between two holds in some runs, and
			// a waiter that asked before the step showed waited out the lease (Redisson).
			ttl := 6 * c.ttl
			return cellSpec{nemesis: []nemesis.Fault{{Kind: history.Clock, Target: c.firstNode, By: firstClient, Point: workloads.AfterAcquire,
				Occurrence: 1, Params: nemesis.ClockParams{Offset: scenarios.Signed(10 * ttl)}}},
				ttl: ttl, hold: 2 * ttl / 3, stagger: 1300 * time.Millisecond, acquireTimeout: ttl, duration: 6 * time.Second}, ""
		}},
	{Name: "crash-restart-node", Summary: "a lock node is killed (SIGKILL) and restarted at once, without persistence",
		Claims: []string{"K9", "A10"},
		entry: func(c cellParams) (cellSpec, string) {
			return faults(crashAt(c.firstNode, 1100*time.Millisecond, 100*time.Millisecond)), ""
		}},
	{Name: "kill-holder", Summary: "the second holder dies (SIGKILL) right after acquiring and never releases",
		entry: func(cellParams) (cellSpec, string) {
			return faults(nemesis.Fault{Kind: history.Kill, Target: firstClient, Point: workloads.AfterAcquire, Occurrence: 2}), ""
		}},
	{Name: "reentrant", Summary: "no fault; every holder takes the lock a second time and gives that inner level back before its work, as a " +
		"caller of a locking helper carries on",
		entry: func(c cellParams) (cellSpec, string) {
			if !c.design.Reentrant {
				return cellSpec{}, naNotReentrant
			}
			return cellSpec{reentrant: true}, ""
		}},
	{Name: "reenter-after-pause", Summary: "the first holder is frozen right after acquiring, for longer than the lease, then takes the lock " +
		"again as its work begins (a re-entry after the lease ran out) and gives that level back",
		Claims: []string{"K2"},
		entry: func(c cellParams) (cellSpec, string) {
			if !c.design.Reentrant {
				return cellSpec{}, naNotReentrant
			}
			s := faults(pauseAt(firstClient, workloads.AfterAcquire, 1, c.pause))
			s.reentrant = true
			return s, ""
		}},
	{Name: "abandon-waiter", Summary: "client-2, waiting behind the holder client-1, gives its acquire attempt up (cancels its context) " +
		"halfway through client-1's hold, as a caller that went away; client-3 waits behind it",
		entry: abandonWaiter},
	{Name: "waiter-expires", Summary: "a queued waiter (client-2, behind the holder client-1, ahead of client-3) is frozen until its session " +
		"or lease runs out, while client-1 still holds",
		Claims: []string{"K11"},
		entry:  waiterExpires},
	{Name: "pause-overtaken", Summary: "a client is frozen past the lease as it holds again after others held while it waited, so its token is " +
		"not the lowest handed out",
		Claims: []string{"K2", "K5"},
		entry: func(c cellParams) (cellSpec, string) {
			if !c.design.HasToken() {
				return cellSpec{}, naNoToken
			}
			// overtaken: the first client to hold again after another took the lock since its
			// previous hold (nemesis.Overtaken), paused as that hold begins.
			return faults(pauseAt(nemesis.Overtaken, workloads.AfterAcquire, 1, c.pause)), ""
		}},
	pauseAtPoint(1),
	pauseAtPoint(2),
	{Name: "partition-long-hold", Summary: "holding for three leases, the holder is cut off from every lock node half a lease into its hold, " +
		"for longer than its lease or session",
		Claims: []string{"K2", "K11"},
		// Half a lease in, whoever holds: the holder has made its first check, and asks again only
		// at the end of its hold. Cut right after acquiring, it checked a millisecond after the
		// cut, and whether its library had yet seen the connection reset (kazoo) decided the
		// cell; and client-1 was not always the first to hold (a JVM client's first acquire can
		// take longer than the 50 ms its start is ahead by).
		entry: func(c cellParams) (cellSpec, string) {
			if !c.design.HoldsUntilReleased() {
				return cellSpec{}, naLeaseEnds
			}
			s := longHoldCell(c)
			s.nemesis = []nemesis.Fault{{Kind: history.Partition, Target: nemesis.Holder, At: scenarios.Duration(c.ttl / 2),
				For: scenarios.Duration(c.pause)}}
			return s, ""
		}},
	{Name: "crash-restart-long-hold", Summary: "a lock node is killed (SIGKILL) and restarted at once, without persistence, while the first " +
		"holder holds for three leases",
		Claims: []string{"K9", "A10"},
		entry: func(c cellParams) (cellSpec, string) {
			if !c.design.HoldsUntilReleased() {
				return cellSpec{}, naLeaseEnds
			}
			s := longHoldCell(c)
			// Half a lease into the first hold: client-1 starts first and holds at once.
			s.nemesis = []nemesis.Fault{crashAt(c.firstNode, c.ttl/2+300*time.Millisecond, 100*time.Millisecond)}
			return s, ""
		}},
	{Name: "crash-restart-minority", Summary: "the largest minority of the lock nodes are killed (SIGKILL) and restarted at once, without " +
		"persistence, while a client holds",
		Claims: []string{"K9", "A10"},
		entry:  crashMinority},
}

// crashMinority crash-restarts (N−1)/2 of N lock nodes at once, in the middle of a hold (holds of
// three quarters of a lease, or three leases where a hold may outlive the lease): the holder
// keeps a majority, and a waiter can take only what the restarted nodes forgot, which must not
// be enough. A design that counts a minority as a quorum lets it in.
func crashMinority(c cellParams) (cellSpec, string) {
	if len(c.nodes) < 3 {
		return cellSpec{}, naOneNode
	}
	s := cellSpec{hold: c.ttl * 3 / 4}
	if c.design.HoldsUntilReleased() {
		s = longHoldCell(c)
	}
	for _, n := range c.nodes[:(len(c.nodes)-1)/2] {
		s.nemesis = append(s.nemesis, crashAt(n, 1100*time.Millisecond, 100*time.Millisecond))
	}
	return s, ""
}

// longHoldCell is the workload of the long-hold columns: the others wait out a whole hold, and
// the run lasts two of them after the fault.
func longHoldCell(c cellParams) cellSpec {
	hold := c.longHold()
	return cellSpec{hold: hold, acquireTimeout: 3 * hold, duration: max(c.duration, 2*hold+c.pause)}
}

// waiterExpires freezes client-2 while it waits in the queue behind client-1, until its session or
// lease is over (twice its length, plus half a second for the server to notice), and client-1
// holds for longer than that. Clients start 300 ms apart, so the queue is client-1 (holding),
// client-2, client-3. When client-2's place goes, client-3 must look at the queue again and see
// client-1 still ahead: a design that takes its predecessor's disappearance for the lock's lets
// client-3 in beside client-1.
func waiterExpires(c cellParams) (cellSpec, string) {
	if !c.design.Queued {
		return cellSpec{}, naNoQueue
	}
	const stagger = 300 * time.Millisecond
	pausedAt := 2*stagger + 200*time.Millisecond
	pause := 2*c.ttl + 500*time.Millisecond
	hold := pausedAt + pause + c.ttl // client-1 still holds a lease after client-2's place went
	return cellSpec{
		nemesis:        []nemesis.Fault{{Kind: history.Pause, Target: "client-2", At: scenarios.Duration(pausedAt), For: scenarios.Duration(pause)}},
		hold:           hold,
		stagger:        stagger,
		acquireTimeout: 3 * hold,
		// client-2's one attempt outlasts its whole wait: it is still waiting when it wakes, and
		// what the lock tells it when client-1 lets go is heard (a yes after its lease went is
		// etcd #11456's broken promise). A shorter attempt ends during the pause, and the client
		// gives up on waking before the lock can answer.
		attempt:  hold + c.ttl,
		duration: hold + c.ttl + time.Second, // client-1 releases, the queue moves on
	}, ""
}

// abandonWaiter is the usage column: a waiter's attempt given up while it waits. A lock must not
// hand the lock later to a client that gave up (it would hold with nobody knowing) nor lose its
// queue: the next waiter gets the lock when the holder lets go.
func abandonWaiter(c cellParams) (cellSpec, string) {
	if c.design.Blocking == "" {
		return cellSpec{}, naNoWait
	}
	if why := c.design.NotOffered(locks.UsageAbandon); why != "" {
		return cellSpec{}, why
	}
	const stagger = 300 * time.Millisecond
	hold := 4 * stagger
	return cellSpec{
		nemesis:        []nemesis.Fault{{Kind: nemesis.Abandon, Target: "client-2", At: scenarios.Duration(2*stagger + hold/4)}},
		hold:           hold,
		stagger:        stagger,
		acquireTimeout: 3 * hold,
	}, ""
}

// pauseAtPoint is the column that pauses client-1, past the lease, at its first pass through the
// design's k-th own program point (shipped designs have at most two). One point per cell: two
// pauses in one run would land in one attempt, or in one that was failing anyway.
func pauseAtPoint(k int) Fault {
	return Fault{Name: fmt.Sprintf("pause-at-point-%d", k),
		Summary: fmt.Sprintf("client-1 is frozen past the lease at its first pass through the design's own program point number %d (lockcheck "+
			"list -v names them)", k),
		entry: func(c cellParams) (cellSpec, string) {
			points := c.design.Points
			if len(points) < k {
				if len(points) == 0 {
					return cellSpec{}, naNoPoints
				}
				return cellSpec{}, fmt.Sprintf("only %d program point(s) of its own", len(points))
			}
			s := faults(pauseAt(firstClient, points[k-1], 1, c.pause))
			s.duration = c.duration + c.pause
			return s, ""
		}}
}

// FaultNames lists the columns.
func FaultNames() []string {
	var out []string
	for _, f := range Faults {
		out = append(out, f.Name)
	}
	return out
}

// faultNamed returns the named column, or an error that lists the valid ones.
func faultNamed(name string) (Fault, error) {
	for _, f := range Faults {
		if f.Name == name {
			return f, nil
		}
	}
	return Fault{}, fmt.Errorf("unknown fault %q; valid faults: %s", name, strings.Join(FaultNames(), ", "))
}

// params scales a cell to its design's lock service: a lease of 500 ms, or the service's shortest
// (ZooKeeper's sessions last at least two ticks, 1 s), so a run stays short.
func params(d locks.Design) (cellParams, error) {
	plan, err := services.MustPlan(services.Spec{Design: d})
	if err != nil {
		return cellParams{}, err
	}
	c := cellParams{design: d, ttl: max(500*time.Millisecond, plan.MinTTL), firstNode: plan.Nodes[0], nodes: plan.Nodes}
	c.first, _ = plan.Target(c.firstNode)
	c.pause = 4 * c.ttl
	c.duration = max(5*time.Second, 6*c.ttl)
	return c, nil
}

// cellScenario builds the scenario of one cell, or says why the fault does not apply to d. It is
// checked by the rules a scenario file is (scenarios.New), and a run folder keeps it as YAML.
func cellScenario(d locks.Design, f Fault, seed int64) (*scenarios.Scenario, string, error) {
	c, err := params(d)
	if err != nil {
		return nil, "", err
	}
	cell, na := f.entry(c)
	if na != "" {
		return nil, na, nil
	}
	s := scenarios.Scenario{
		Name:        cellName(d.Name, f.Name),
		Description: fmt.Sprintf("%s under %s: %s", d.Name, f.Name, f.Summary),
		Claims:      f.Claims,
		LockSpec:    lockSpec(d),
		Nodes:       d.Nodes,
		Clients:     cellClients,
		TTL:         scenarios.Duration(or(cell.ttl, c.ttl)),
		Duration:    scenarios.Duration(or(cell.duration, c.duration)),
		Seed:        seed,
		Workload: scenarios.Workload{
			Hold:           scenarios.Duration(or(cell.hold, 100*time.Millisecond)),
			Think:          scenarios.Duration(10 * time.Millisecond),
			Stagger:        scenarios.Duration(or(cell.stagger, 50*time.Millisecond)),
			AcquireTimeout: scenarios.Duration(or(cell.acquireTimeout, 3*time.Second)),
			Attempt:        scenarios.Duration(cell.attempt),
			Reentrant:      cell.reentrant,
		},
		Path:    cellName(d.Name, f.Name) + ".yaml",
		Comment: fmt.Sprintf("lockcheck matrix cell: %s under %s", d.Name, f.Name),
	}
	for _, fault := range cell.nemesis {
		s.Nemesis = append(s.Nemesis, scenarios.Entry{Fault: fault})
	}
	// Failover timers scaled to the lease only where a fault acts on a server: elsewhere no
	// server fails over, and a short election timeout would only cost CPU (etcd's heartbeats
	// four times as often) and risk an election on a busy machine.
	if len(s.ServerFaults()) > 0 {
		if s.Server, err = scaledServer(d, or(cell.ttl, c.ttl)); err != nil {
			return nil, "", err
		}
	}
	sc, err := scenarios.New(s)
	return sc, "", err
}

// scaledServer is the server block of d's service for a lease of ttl: the kind's failover timers
// scaled to the lease (services.LeaseScaled), or none.
func scaledServer(d locks.Design, ttl time.Duration) (yaml.Node, error) {
	k, err := services.Lookup(d.ServiceName())
	if err != nil {
		return yaml.Node{}, err
	}
	scaled, ok := k.(services.LeaseScaled)
	if !ok {
		return yaml.Node{}, nil
	}
	var block yaml.Node
	err = block.Encode(scaled.ScaledServer(ttl))
	return block, err
}

// cellClients is the number of clients of every cell.
const cellClients = 3

// or is d, or def when d is zero.
func or(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

func cellName(lock, fault string) string { return "matrix-" + lock + "-" + fault }

// Scenario is the matrix's scenario for design d under the named fault (a column): how a
// project's own test checks its lock against one of the generic faults (package lockchecktest).
// It fails with the valid names for an unknown fault, or says why the fault does not apply.
func Scenario(d locks.Design, fault string, seed int64) (*scenarios.Scenario, error) {
	f, err := faultNamed(fault)
	if err != nil {
		return nil, err
	}
	sc, na, err := cellScenario(d, f, seed)
	if na != "" {
		return nil, fmt.Errorf("%s does not apply to %s: %s", fault, d.Name, na)
	}
	return sc, err
}

// Applies says why the named column does not apply to design d, or "" when it does, without
// building the cell's scenario.
func Applies(d locks.Design, fault string) (notApplicable string, err error) {
	f, err := faultNamed(fault)
	if err != nil {
		return "", err
	}
	c, err := params(d)
	if err != nil {
		return "", err
	}
	_, na := f.entry(c)
	return na, nil
}

// NotApplicable lists the columns that do not apply to design d, each with its reason.
func NotApplicable(d locks.Design) []string {
	var out []string
	for _, f := range Faults {
		if na, _ := Applies(d, f.Name); na != "" {
			out = append(out, f.Name+" ("+na+")")
		}
	}
	return out
}

// lockSpec names the cell's design: by its registered name, or, for a design a program defines
// (a design file, lockcheck init's template), by the program itself, so the cell's scenario
// stands without a registry entry.
func lockSpec(d locks.Design) scenarios.LockSpec {
	if d.Program != nil {
		p := *d.Program
		return scenarios.LockSpec{Inline: &p}
	}
	return scenarios.LockSpec{Name: d.Name}
}
