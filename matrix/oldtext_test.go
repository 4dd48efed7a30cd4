package matrix

// The matrix's columns as they were before cells were built as values: each cell's scenario
// written as YAML text. Kept only to show that the values build the same scenarios
// (TestValueBuiltCellsAreTheOldText).

import (
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/scenarios"
)

// Fault is one column of the matrix: a fault generic enough to apply to any lock design, written
// as a scenario nemesis entry. The same fault hits every lock the same way, so a row compares
// designs and a column compares faults. A column may apply only to designs with some property
// (a reentrant design, a queue, a fencing token, program points): it is n/a, with the reason, for
// the others.
type oldFault struct {
	Name    string
	Summary string
	Claims  []string // claims (docs/CLAIMS.md) the column speaks to
	// entry returns the cell for design d, or a reason the fault does not apply to it.
	entry func(c cellParams) (oldCellSpec, string)
}

// oldCellSpec is what one cell runs: its nemesis entries (YAML flow mappings) and the workload
// settings it changes from the matrix's usual ones (zero: unchanged).
type oldCellSpec struct {
	nemesis        []string
	hold           time.Duration // usual: 100ms
	stagger        time.Duration // usual: 50ms
	acquireTimeout time.Duration // usual: 3s
	duration       time.Duration // usual: cellParams.duration
	reentrant      bool
}

// faults is the usual cell with these nemesis entries.
func oldFaultsOf(entries ...string) oldCellSpec { return oldCellSpec{nemesis: entries} }

// Faults are the matrix's columns, in display order: the generic faults first, then the columns
// derived from what designs claim (reentrancy, a queue, a token, program points, long holds).
var oldFaults = []oldFault{
	{Name: "none", Summary: "no fault: the control",
		entry: func(cellParams) (oldCellSpec, string) { return oldFaultsOf(), "" }},
	{Name: "pause-after-acquire", Summary: "the first holder is frozen right after acquiring, for longer than the lease (GC pause)",
		Claims: []string{"K2", "A1"},
		entry: func(c cellParams) (oldCellSpec, string) {
			return oldFaultsOf(fmt.Sprintf("{fault: pause, target: client-1, point: after-acquire, occurrence: 1, for: %s}", c.pause)), ""
		}},
	{Name: "pause-before-write", Summary: "the holder is frozen after its read and any validity check, just before its write",
		Claims: []string{"K3", "A9"},
		entry: func(c cellParams) (oldCellSpec, string) {
			return oldFaultsOf(fmt.Sprintf("{fault: pause, target: client-1, point: before-write, occurrence: 1, for: %s}", c.pause)), ""
		}},
	{Name: "delay-write", Summary: "the holder's write to the resource is held back in the network past the lease",
		Claims: []string{"K4"},
		entry: func(c cellParams) (oldCellSpec, string) {
			return oldFaultsOf(fmt.Sprintf("{fault: delay, target: client-1, nodes: [resource], latency: %s, point: before-write, occurrence: 1, for: %s}",
				c.pause*3/4, c.pause)), ""
		}},
	{Name: "partition-holder", Summary: "the holder is cut off from every lock node right after acquiring, for longer than the lease",
		Claims: []string{"K2", "K11"},
		entry: func(c cellParams) (oldCellSpec, string) {
			return oldFaultsOf(fmt.Sprintf("{fault: partition, target: client-1, point: after-acquire, occurrence: 1, for: %s}", c.pause)), ""
		}},
	{Name: "clock-jump-node", Summary: "a lock node's wall clock steps 10 leases forward (libfaketime)",
		Claims: []string{"K7", "A7"},
		entry: func(c cellParams) (oldCellSpec, string) {
			if c.first.NoClock != "" {
				return oldCellSpec{}, c.first.NoClock
			}
			return oldFaultsOf(fmt.Sprintf("{fault: clock, target: %s, at: 1s, offset: %s}", c.firstNode, 10*c.ttl)), ""
		}},
	{Name: "crash-restart-node", Summary: "a lock node is killed (SIGKILL) and restarted at once, without persistence",
		Claims: []string{"K9", "A10"},
		entry: func(c cellParams) (oldCellSpec, string) {
			return oldFaultsOf(fmt.Sprintf("{fault: crash, target: %s, at: 1100ms, for: 100ms}", c.firstNode)), ""
		}},
	{Name: "kill-holder", Summary: "the second holder dies (SIGKILL) right after acquiring and never releases",
		entry: func(cellParams) (oldCellSpec, string) {
			return oldFaultsOf("{fault: kill, target: client-1, point: after-acquire, occurrence: 2}"), ""
		}},
	{Name: "reentrant", Summary: "no fault; every holder takes the lock a second time and gives that inner level back before its work, as a caller of a locking helper carries on",
		entry: func(c cellParams) (oldCellSpec, string) {
			if !c.design.Reentrant {
				return oldCellSpec{}, naNotReentrant
			}
			return oldCellSpec{reentrant: true}, ""
		}},
	{Name: "waiter-expires", Summary: "a queued waiter (client-2, behind the holder client-1, ahead of client-3) is frozen until its session or lease runs out, while client-1 still holds",
		Claims: []string{"K11"},
		entry:  oldWaiterExpires},
	{Name: "pause-overtaken", Summary: "a client is frozen past the lease as it holds again after others held while it waited, so its token is not the lowest handed out",
		Claims: []string{"K2", "K5"},
		entry: func(c cellParams) (oldCellSpec, string) {
			if !c.design.HasToken() {
				return oldCellSpec{}, naNoToken
			}
			// overtaken: the first client to hold again after another took the lock since its
			// previous hold (nemesis.Overtaken), paused as that hold begins.
			return oldFaultsOf(fmt.Sprintf("{fault: pause, target: overtaken, point: after-acquire, occurrence: 1, for: %s}", c.pause)), ""
		}},
	oldPauseAtPoint(1),
	oldPauseAtPoint(2),
	{Name: "partition-long-hold", Summary: "holding for three leases, the holder is cut off from every lock node right after acquiring, for longer than its lease or session",
		Claims: []string{"K2", "K11"},
		entry: func(c cellParams) (oldCellSpec, string) {
			if !c.design.HoldsUntilReleased() {
				return oldCellSpec{}, naLeaseEnds
			}
			s := oldLongHoldCell(c)
			s.nemesis = []string{fmt.Sprintf("{fault: partition, target: client-1, point: after-acquire, occurrence: 1, for: %s}", c.pause)}
			return s, ""
		}},
	{Name: "crash-restart-long-hold", Summary: "a lock node is killed (SIGKILL) and restarted at once, without persistence, while the first holder holds for three leases",
		Claims: []string{"K9", "A10"},
		entry: func(c cellParams) (oldCellSpec, string) {
			if !c.design.HoldsUntilReleased() {
				return oldCellSpec{}, naLeaseEnds
			}
			s := oldLongHoldCell(c)
			// Half a lease into the first hold: client-1 starts first and holds at once.
			s.nemesis = []string{fmt.Sprintf("{fault: crash, target: %s, at: %s, for: 100ms}", c.firstNode, c.ttl/2+300*time.Millisecond)}
			return s, ""
		}},
	{Name: "crash-restart-minority", Summary: "the largest minority of the lock nodes are killed (SIGKILL) and restarted at once, without persistence, while a client holds",
		Claims: []string{"K9", "A10"},
		entry:  oldCrashMinority},
}

// oldCrashMinority crash-restarts (N−1)/2 of N lock nodes at once, in the middle of a hold (holds of
// three quarters of a lease, or three leases where a hold may outlive the lease): the holder
// keeps a majority, and a waiter can take only what the restarted nodes forgot, which must not
// be enough. A design that counts a minority as a quorum lets it in.
func oldCrashMinority(c cellParams) (oldCellSpec, string) {
	if len(c.nodes) < 3 {
		return oldCellSpec{}, naOneNode
	}
	s := oldCellSpec{hold: c.ttl * 3 / 4}
	if c.design.HoldsUntilReleased() {
		s = oldLongHoldCell(c)
	}
	for _, n := range c.nodes[:(len(c.nodes)-1)/2] {
		s.nemesis = append(s.nemesis, fmt.Sprintf("{fault: crash, target: %s, at: 1100ms, for: 100ms}", n))
	}
	return s, ""
}

// oldLongHoldCell is the workload of the long-hold columns: the others wait out a whole hold, and
// the run lasts two of them after the fault.
func oldLongHoldCell(c cellParams) oldCellSpec {
	hold := c.longHold()
	return oldCellSpec{hold: hold, acquireTimeout: 3 * hold, duration: max(c.duration, 2*hold+c.pause)}
}

// oldWaiterExpires freezes client-2 while it waits in the queue behind client-1, until its session or
// lease is over (twice its length, plus half a second for the server to notice), and client-1
// holds for longer than that. Clients start 300 ms apart, so the queue is client-1 (holding),
// client-2, client-3. When client-2's place goes, client-3 must look at the queue again and see
// client-1 still ahead: a design that takes its predecessor's disappearance for the lock's lets
// client-3 in beside client-1.
func oldWaiterExpires(c cellParams) (oldCellSpec, string) {
	if !c.design.Queued {
		return oldCellSpec{}, naNoQueue
	}
	const stagger = 300 * time.Millisecond
	pauseAt := 2*stagger + 200*time.Millisecond
	pause := 2*c.ttl + 500*time.Millisecond
	hold := pauseAt + pause + c.ttl // client-1 still holds a lease after client-2's place went
	return oldCellSpec{
		nemesis:        []string{fmt.Sprintf("{fault: pause, target: client-2, at: %s, for: %s}", pauseAt, pause)},
		hold:           hold,
		stagger:        stagger,
		acquireTimeout: 3 * hold,
		duration:       hold + c.ttl + time.Second, // client-1 releases, the queue moves on
	}, ""
}

// oldPauseAtPoint is the column that pauses client-1, past the lease, at its first pass through the
// design's k-th own program point (shipped designs have at most two). One point per cell: two
// pauses in one run would land in one attempt, or in one that was failing anyway.
func oldPauseAtPoint(k int) oldFault {
	return oldFault{Name: fmt.Sprintf("pause-at-point-%d", k),
		Summary: fmt.Sprintf("client-1 is frozen past the lease at its first pass through the design's own program point number %d (lockcheck list -v names them)", k),
		entry: func(c cellParams) (oldCellSpec, string) {
			points := c.design.Points
			if len(points) < k {
				if len(points) == 0 {
					return oldCellSpec{}, naNoPoints
				}
				return oldCellSpec{}, fmt.Sprintf("only %d program point(s) of its own", len(points))
			}
			s := oldFaultsOf(fmt.Sprintf("{fault: pause, target: client-1, point: %s, occurrence: 1, for: %s}", points[k-1], c.pause))
			s.duration = c.duration + c.pause
			return s, ""
		}}
}

// oldScenarioYAML writes the scenario of one cell. It goes through the ordinary loader, so a cell is
// exactly as valid, and as reproducible, as a scenario file (its text is kept in the run folder).
func oldScenarioYAML(d locks.Design, f oldFault, seed int64) (string, string) {
	c, err := params(d)
	if err != nil {
		return "", err.Error()
	}
	cell, na := f.entry(c)
	if na != "" {
		return "", na
	}
	duration := or(cell.duration, c.duration)
	var b strings.Builder
	fmt.Fprintf(&b, "# lockcheck matrix cell: %s under %s\n", d.Name, f.Name)
	fmt.Fprintf(&b, "name: %s\n", cellName(d.Name, f.Name))
	fmt.Fprintf(&b, "description: %q\n", fmt.Sprintf("%s under %s: %s", d.Name, f.Name, f.Summary))
	if len(f.Claims) > 0 {
		fmt.Fprintf(&b, "claims: [%s]\n", strings.Join(f.Claims, ", "))
	}
	fmt.Fprintf(&b, "lock: %s\nnodes: %d\nclients: %d\nttl: %s\nduration: %s\nseed: %d\n", d.Name, d.Nodes, cellClients, c.ttl, duration, seed)
	fmt.Fprintf(&b, "workload:\n  hold: %s\n  think: 10ms\n  stagger: %s\n  acquire_timeout: %s\n",
		or(cell.hold, 100*time.Millisecond), or(cell.stagger, 50*time.Millisecond), or(cell.acquireTimeout, 3*time.Second))
	if cell.reentrant {
		b.WriteString("  reentrant: true\n")
	}
	if len(cell.nemesis) > 0 {
		b.WriteString("nemesis:\n")
		for _, e := range cell.nemesis {
			fmt.Fprintf(&b, "  - %s\n", e)
		}
	}
	return b.String(), ""
}

// Every cell built as a value is the scenario its old YAML text gave, after the loader's
// defaults: the same text when both are written as YAML, for every design × column.
func TestValueBuiltCellsAreTheOldText(t *testing.T) {
	if len(oldFaults) != len(Faults) {
		t.Fatalf("%d columns, the old text had %d", len(Faults), len(oldFaults))
	}
	cells := 0
	for _, d := range locks.All() {
		for i, f := range Faults {
			old := oldFaults[i]
			if old.Name != f.Name {
				t.Fatalf("column %d is %s, was %s", i, f.Name, old.Name)
			}
			src, oldNA := oldScenarioYAML(d, old, 7)
			sc, na, err := cellScenario(d, f, 7)
			if na != oldNA {
				t.Errorf("%s × %s: n/a %q, the old text said %q", d.Name, f.Name, na, oldNA)
				continue
			}
			if na != "" {
				continue
			}
			if err != nil {
				t.Fatalf("%s × %s: %v", d.Name, f.Name, err)
			}
			was, err := scenarios.Parse(cellName(d.Name, f.Name)+".yaml", []byte(src))
			if err != nil {
				t.Fatalf("%s × %s: the old text: %v", d.Name, f.Name, err)
			}
			was.Comment = sc.Comment
			a, _ := was.YAML()
			b, _ := sc.YAML()
			if string(a) != string(b) {
				t.Errorf("%s × %s: the old text gave\n%s\nthe value gives\n%s", d.Name, f.Name, a, b)
			}
			if !reflect.DeepEqual(was.Schedule(), sc.Schedule()) || !reflect.DeepEqual(was.Plan().Targets, sc.Plan().Targets) {
				t.Errorf("%s × %s: schedule or targets differ", d.Name, f.Name)
			}
			cells++
		}
	}
	t.Logf("%d cells identical", cells)
}

// TestWriteGridFromTheOldText writes testdata/grid.sha256 from the old text (with -update-grid).
func TestWriteGridFromTheOldText(t *testing.T) {
	if !*updateGrid {
		t.Skip("writes testdata/grid.sha256 with -update-grid")
	}
	var b strings.Builder
	for _, d := range locks.All() {
		for _, old := range oldFaults {
			src, na := oldScenarioYAML(d, old, 1)
			if na != "" {
				continue
			}
			was, err := scenarios.Parse(cellName(d.Name, old.Name)+".yaml", []byte(src))
			if err != nil {
				t.Fatal(err)
			}
			was.Comment = fmt.Sprintf("lockcheck matrix cell: %s under %s", d.Name, old.Name)
			text, _ := was.YAML()
			fmt.Fprintf(&b, "%s %s %s\n", d.Name, old.Name, cellDigest(text))
		}
	}
	if err := os.WriteFile(gridFile, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}
