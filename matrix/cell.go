package matrix

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/resource"
)

// Status is what a cell says about a lock under a fault.
type Status string

const (
	Safe    Status = "safe"    // mutual exclusion held and no register lost anything
	Rescued Status = "rescued" // the lock failed, but a fencing register kept the data correct
	Unsafe  Status = "unsafe"  // the lock failed and nothing the design offers kept the data correct
	Stuck   Status = "stuck"   // liveness lost: the lock was never freed again
	NA      Status = "n/a"     // the fault does not apply to the design
	Error   Status = "error"   // the harness failed; nothing was judged
)

// Outcome is one judged run of a cell.
type Outcome struct {
	Status   Status        `json:"status"`
	Windows  int           `json:"double_ownership_windows"`
	Overlap  time.Duration `json:"overlap_ns"`
	Lost     int           `json:"unfenced_lost_updates"`
	Rescuers []string      `json:"rescued_by,omitempty"` // fenced registers that stayed linearizable with nothing lost
	Failed   []string      `json:"failed_registers,omitempty"`
	Stuck    bool          `json:"stuck"`
	Detail   string        `json:"detail"`
	Dir      string        `json:"run_folder,omitempty"`
	Err      string        `json:"error,omitempty"`
}

// Classify turns a verdict into a cell outcome. A lock "failed" when two clients believed they
// held it at once or the unfenced register (the lock's protection alone) lost data; it was
// rescued when a register that checks tokens (or the lock value) kept the data correct.
func Classify(v checker.Verdict, hasToken bool) Outcome {
	o := Outcome{Windows: len(v.MutualExclusion.Windows), Overlap: v.MutualExclusion.TotalOverlap, Stuck: v.Liveness.Stuck}
	intact := func(r checker.RegisterVerdict) bool {
		return r.Linearizable != checker.No && !(r.LostUpdatesKnown && r.LostUpdates > 0)
	}
	unfenced := v.Registers[resource.Unfenced]
	o.Lost = unfenced.LostUpdates
	dataLost := !intact(unfenced)
	for _, name := range resource.Registers {
		r, ok := v.Registers[name]
		if !ok || !r.Applicable {
			continue
		}
		switch {
		case !intact(r):
			o.Failed = append(o.Failed, name)
		case name != resource.Unfenced && dataLost:
			o.Rescuers = append(o.Rescuers, name)
		}
	}
	sort.Strings(o.Failed)
	failed := !v.MutualExclusion.Holds || dataLost
	switch {
	case !failed && o.Stuck:
		o.Status = Stuck
	case !failed:
		o.Status = Safe
	case len(o.Rescuers) > 0:
		o.Status = Rescued
	default:
		o.Status = Unsafe
	}
	o.Detail = detail(o, dataLost, hasToken)
	return o
}

func detail(o Outcome, dataLost, hasToken bool) string {
	var parts []string
	if o.Windows > 0 {
		parts = append(parts, fmt.Sprintf("%d double-ownership window(s), %s", o.Windows, o.Overlap.Round(time.Millisecond)))
	}
	if dataLost {
		if o.Lost > 0 {
			parts = append(parts, fmt.Sprintf("unfenced lost %d update(s)", o.Lost))
		} else {
			parts = append(parts, "unfenced not linearizable")
		}
	} else if o.Windows > 0 {
		parts = append(parts, "no update lost in this run")
	}
	if len(o.Rescuers) > 0 {
		parts = append(parts, "rescued by "+strings.Join(o.Rescuers, ", "))
	}
	if o.Status == Unsafe && !hasToken {
		parts = append(parts, "no token")
	}
	if o.Stuck {
		parts = append(parts, "lock stuck")
	}
	if len(parts) == 0 {
		return "mutual exclusion held, nothing lost"
	}
	return strings.Join(parts, "; ")
}

// Cell is one lock under one fault, over one or more runs.
type Cell struct {
	Lock     string        `json:"lock"`
	Fault    string        `json:"fault"`
	Status   Status        `json:"status"` // the most frequent run status
	Agree    int           `json:"agree"`  // runs that reached Status
	Runs     int           `json:"runs"`
	Detail   string        `json:"detail"` // of the first run that reached Status
	Outcomes []Outcome     `json:"outcomes,omitempty"`
	Wall     time.Duration `json:"wall_ns"`
}

// summarise sets the cell's status from its runs: the most frequent one, ties going to the worse.
func (c *Cell) summarise() {
	counts := map[Status]int{}
	for _, o := range c.Outcomes {
		counts[o.Status]++
	}
	best := Status("")
	for _, s := range []Status{Error, Unsafe, Stuck, Rescued, Safe} { // worst first wins ties
		if counts[s] > counts[best] {
			best = s
		}
	}
	c.Status, c.Agree, c.Runs = best, counts[best], len(c.Outcomes)
	for _, o := range c.Outcomes {
		if o.Status == best {
			c.Detail = o.Detail
			if o.Err != "" {
				c.Detail = o.Err
			}
			break
		}
	}
}

// Label is the cell's text in a table.
func (c Cell) Label() string {
	if c.Status == NA {
		return "n/a"
	}
	s := string(c.Status)
	if c.Status == Rescued && len(c.Outcomes) > 0 {
		for _, o := range c.Outcomes {
			if o.Status == Rescued {
				s += " (" + strings.Join(o.Rescuers, ", ") + ")"
				break
			}
		}
	}
	if c.Runs > 1 {
		s += fmt.Sprintf(" %d/%d", c.Agree, c.Runs)
	}
	return s
}

// Meets reports whether the cell satisfies a gate: Safe accepts only safe cells; Rescued accepts
// safe and rescued ones. n/a cells always pass; errors never do.
func (c Cell) Meets(require Status) bool {
	switch {
	case c.Status == NA:
		return true
	case require == "":
		return c.Status != Error
	case require == Rescued:
		return c.Status == Safe || c.Status == Rescued
	default:
		return c.Status == Safe
	}
}
