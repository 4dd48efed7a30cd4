package matrix

import (
	"fmt"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/resource"
)

// Status is what a cell says about a lock under a fault: a verdict's outcome (checker.Outcome:
// safe, rescued, unsafe, stuck, inconclusive), or one of the matrix's own.
type Status = checker.Outcome

const (
	Safe                = checker.Safe
	Rescued             = checker.Rescued
	Unsafe              = checker.Unsafe
	Stuck               = checker.Stuck
	Inconclusive        = checker.Inconclusive
	NA           Status = "n/a"   // the fault does not apply to the design
	Error        Status = "error" // the harness failed; nothing was judged
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

// Classify turns a verdict into a cell outcome with the checker's rule (checker.Judge).
func Classify(v checker.Verdict, hasToken bool) Outcome {
	j := checker.Judge(v)
	o := Outcome{Status: j.Outcome, Windows: len(v.MutualExclusion.Windows), Overlap: v.MutualExclusion.TotalOverlap,
		Lost: v.Registers[resource.Unfenced].LostUpdates, Rescuers: j.Rescuers, Failed: j.Failed, Stuck: v.Liveness.Stuck}
	o.Detail = checker.Short(v)
	if o.Status == Unsafe && !hasToken {
		o.Detail += "; no token"
	}
	return o
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
	for _, s := range append([]Status{Error}, checker.Outcomes...) { // worst first wins ties
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
