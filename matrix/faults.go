package matrix

import (
	"fmt"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/scenarios"
	"github.com/lockcheck/lockcheck/services"
)

// Fault is one column of the matrix: a fault generic enough to apply to any lock design, written
// as a scenario nemesis entry. The same fault hits every lock the same way, so a row compares
// designs and a column compares faults.
type Fault struct {
	Name    string
	Summary string
	Claims  []string // claims (docs/CLAIMS.md) the column speaks to
	// entry returns the nemesis entries (YAML flow mappings, one per line) for design d, or a
	// reason the fault does not apply to it.
	entry func(c cellParams) (yaml []string, notApplicable string)
}

// cellParams are the lengths a cell is built with, scaled to the design's lease.
type cellParams struct {
	design    locks.Design
	ttl       time.Duration // lease or session timeout
	pause     time.Duration // long enough to outlive the lease with room to spare
	duration  time.Duration
	firstNode string             // the first lock node (n1, zk1, ...)
	first     nemesis.TargetInfo // what it can take
}

// Faults are the matrix's columns, in display order.
var Faults = []Fault{
	{Name: "none", Summary: "no fault: the control",
		entry: func(cellParams) ([]string, string) { return nil, "" }},
	{Name: "pause-after-acquire", Summary: "the first holder is frozen right after acquiring, for longer than the lease (GC pause)",
		Claims: []string{"K2", "A1"},
		entry: func(c cellParams) ([]string, string) {
			return []string{fmt.Sprintf("{fault: pause, target: client-1, point: after-acquire, occurrence: 1, for: %s}", c.pause)}, ""
		}},
	{Name: "pause-before-write", Summary: "the holder is frozen after its read and any validity check, just before its write",
		Claims: []string{"K3", "A9"},
		entry: func(c cellParams) ([]string, string) {
			return []string{fmt.Sprintf("{fault: pause, target: client-1, point: before-write, occurrence: 1, for: %s}", c.pause)}, ""
		}},
	{Name: "delay-write", Summary: "the holder's write to the resource is held back in the network past the lease",
		Claims: []string{"K4"},
		entry: func(c cellParams) ([]string, string) {
			return []string{fmt.Sprintf("{fault: delay, target: client-1, nodes: [resource], latency: %s, point: before-write, occurrence: 1, for: %s}",
				c.pause*3/4, c.pause)}, ""
		}},
	{Name: "partition-holder", Summary: "the holder is cut off from every lock node right after acquiring, for longer than the lease",
		Claims: []string{"K2", "K11"},
		entry: func(c cellParams) ([]string, string) {
			return []string{fmt.Sprintf("{fault: partition, target: client-1, point: after-acquire, occurrence: 1, for: %s}", c.pause)}, ""
		}},
	{Name: "clock-jump-node", Summary: "a lock node's wall clock steps 10 leases forward (libfaketime)",
		Claims: []string{"K7", "A7"},
		entry: func(c cellParams) ([]string, string) {
			if c.first.NoClock != "" {
				return nil, c.first.NoClock
			}
			return []string{fmt.Sprintf("{fault: clock, target: %s, at: 1s, offset: %s}", c.firstNode, 10*c.ttl)}, ""
		}},
	{Name: "crash-restart-node", Summary: "a lock node is killed (SIGKILL) and restarted at once, without persistence",
		Claims: []string{"K9", "A10"},
		entry: func(c cellParams) ([]string, string) {
			return []string{fmt.Sprintf("{fault: crash, target: %s, at: 1100ms, for: 100ms}", c.firstNode)}, ""
		}},
	{Name: "kill-holder", Summary: "the second holder dies (SIGKILL) right after acquiring and never releases",
		entry: func(cellParams) ([]string, string) {
			return []string{"{fault: kill, target: client-1, point: after-acquire, occurrence: 2}"}, ""
		}},
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
	c := cellParams{design: d, ttl: max(500*time.Millisecond, plan.MinTTL), firstNode: plan.Nodes[0]}
	c.first, _ = plan.Target(c.firstNode)
	c.pause = 4 * c.ttl
	c.duration = max(5*time.Second, 6*c.ttl)
	return c, nil
}

// scenarioYAML writes the scenario of one cell. It goes through the ordinary loader, so a cell is
// exactly as valid, and as reproducible, as a scenario file (its text is kept in the run folder).
func scenarioYAML(d locks.Design, f Fault, seed int64) (string, string) {
	c, err := params(d)
	if err != nil {
		return "", err.Error()
	}
	entries, na := f.entry(c)
	if na != "" {
		return "", na
	}
	duration := c.duration
	var b strings.Builder
	fmt.Fprintf(&b, "# lockcheck matrix cell: %s under %s\n", d.Name, f.Name)
	fmt.Fprintf(&b, "name: %s\n", cellName(d.Name, f.Name))
	fmt.Fprintf(&b, "description: %q\n", fmt.Sprintf("%s under %s: %s", d.Name, f.Name, f.Summary))
	if len(f.Claims) > 0 {
		fmt.Fprintf(&b, "claims: [%s]\n", strings.Join(f.Claims, ", "))
	}
	fmt.Fprintf(&b, "lock: %s\nnodes: %d\nclients: 3\nttl: %s\nduration: %s\nseed: %d\n", d.Name, d.Nodes, c.ttl, duration, seed)
	b.WriteString("workload:\n  hold: 100ms\n  think: 10ms\n  stagger: 50ms\n  acquire_timeout: 3s\n")
	if len(entries) > 0 {
		b.WriteString("nemesis:\n")
		for _, e := range entries {
			fmt.Fprintf(&b, "  - %s\n", e)
		}
	}
	return b.String(), ""
}

func cellName(lock, fault string) string { return "matrix-" + lock + "-" + fault }

// Scenario is the matrix's scenario for design d under the named fault (a column), loaded: how a
// project's own test checks its lock against one of the generic faults (package lockchecktest).
// It fails with the valid names for an unknown fault, or says why the fault does not apply.
func Scenario(d locks.Design, fault string, seed int64) (*scenarios.Scenario, error) {
	f, err := faultNamed(fault)
	if err != nil {
		return nil, err
	}
	src, na := scenarioYAML(d, f, seed)
	if na != "" {
		return nil, fmt.Errorf("%s does not apply to %s: %s", fault, d.Name, na)
	}
	return scenarios.Parse(cellName(d.Name, f.Name)+".yaml", []byte(src))
}
