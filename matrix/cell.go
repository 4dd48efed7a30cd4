package matrix

import (
	"fmt"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/resource"
)

// Status is what a cell says about a lock under a fault: a verdict's outcome (checker.Outcome),
// or one of the matrix's own (n/a, error). Outcomes are strictly ordered (checker.Outcomes, the
// one list of them); n/a and error stand outside the order.
type Status = checker.Outcome

const (
	Safe                = checker.Safe
	Damaged             = checker.Damaged
	Starved             = checker.Starved
	Rescued             = checker.Rescued
	Unsafe              = checker.Unsafe
	Stuck               = checker.Stuck
	Inconclusive        = checker.Inconclusive
	Broken              = checker.Broken
	NA           Status = "n/a"   // the fault does not apply to the design
	Error        Status = "error" // the harness failed; nothing was judged
)

// Outcome is one judged run of a cell.
type Outcome struct {
	Status  Status `json:"status"`
	Windows int    `json:"double_ownership_windows"`
	// Class is the most serious class of its windows of double ownership (checker.WindowClass):
	// a holder outlived its promise, a fault on the servers explains it, or the lock broke its
	// promise; "" without windows, or in a history that records no promises.
	Class    checker.WindowClass `json:"class,omitempty"`
	Overlap  time.Duration       `json:"overlap_ns"`
	Lost     int                 `json:"unfenced_lost_updates"`
	Rescuers []string            `json:"rescued_by,omitempty"` // fenced registers that stayed linearizable with nothing lost
	Failed   []string            `json:"failed_registers,omitempty"`
	Stuck    bool                `json:"stuck"`
	// Collateral damage to legitimate holders (checker.Collateral).
	FailedReleases  int `json:"failed_releases,omitempty"`
	LegitRejections int `json:"legit_rejections,omitempty"`
	TokenAnomalies  int `json:"token_anomalies,omitempty"`
	// How much the lock served, for comparisons (compare.go): acquisitions (what the rates are
	// per), how long it was stuck at the end, clients starved, the share of the run askers were
	// refused, and the unfair overtakes of a design that promises first come, first served.
	Acquisitions int           `json:"acquisitions,omitempty"`
	StuckFor     time.Duration `json:"stuck_for_ns,omitempty"`
	Starved      int           `json:"starved_clients,omitempty"`
	RefusedShare float64       `json:"refused_share,omitempty"`
	BarelyServed bool          `json:"barely_served,omitempty"`
	Unfair       int           `json:"unfair_overtakes,omitempty"`
	FairPromised bool          `json:"fair_promised,omitempty"`
	Detail       string        `json:"detail"`
	Dir          string        `json:"run_folder,omitempty"`
	Err          string        `json:"error,omitempty"`
}

// Classify turns a verdict into a cell outcome with the checker's rule (checker.Judge).
func Classify(v checker.Verdict, hasToken bool) Outcome {
	j := checker.Judge(v)
	o := Outcome{Status: j.Outcome, Windows: len(v.MutualExclusion.Windows), Class: v.MutualExclusion.Worst(),
		Overlap: v.MutualExclusion.TotalOverlap,
		Lost:    v.Registers[resource.Unfenced].LostUpdates, Rescuers: j.Rescuers, Failed: j.Failed, Stuck: v.Liveness.Stuck,
		FailedReleases: v.Collateral.FailedReleases, LegitRejections: v.Collateral.LegitRejections, TokenAnomalies: v.Collateral.TokenAnomalies,
		Acquisitions: v.Liveness.Acquisitions, Starved: len(v.Liveness.StarvedClients()), RefusedShare: v.Liveness.RefusedShare,
		BarelyServed: v.Liveness.BarelyServed, Unfair: v.Fairness.Unfair, FairPromised: v.Fairness.Promised}
	if v.Liveness.Stuck {
		o.StuckFor = v.Liveness.StuckFor
	}
	o.Detail = checker.Short(v)
	switch {
	case o.Status == Unsafe && j.NoFault:
		o.Detail += "; with no fault"
	case o.Status == Unsafe && !hasToken:
		o.Detail += "; no token"
	}
	return o
}

// damageKinds names the kinds of harm a run showed its rightful users: "failed releases, token
// anomalies", "unfair overtakes" (a design that promises first come, first served).
func (o Outcome) damageKinds() string {
	var kinds []string
	unfair := 0
	if o.FairPromised && checker.PromiseBroken(o.Unfair, o.Acquisitions) {
		unfair = o.Unfair
	}
	for _, k := range []struct {
		n    int
		name string
	}{{o.FailedReleases, "failed releases"}, {o.LegitRejections, "rightful accesses refused"}, {o.TokenAnomalies, "token anomalies"},
		{unfair, "unfair overtakes"}} {
		if k.n > 0 {
			kinds = append(kinds, k.name)
		}
	}
	return strings.Join(kinds, ", ")
}

// starvedKinds says how a run failed to serve: "1 starved client", "askers refused 83%".
func (o Outcome) starvedKinds() string {
	var kinds []string
	switch {
	case o.Starved == 1:
		kinds = append(kinds, "1 starved client")
	case o.Starved > 1:
		kinds = append(kinds, fmt.Sprintf("%d starved clients", o.Starved))
	}
	if o.BarelyServed {
		kinds = append(kinds, fmt.Sprintf("askers refused %.0f%%", 100*o.RefusedShare))
	}
	return strings.Join(kinds, ", ")
}

// Cell is one lock under one fault, over one or more runs.
type Cell struct {
	Lock     string        `json:"lock"`
	Fault    string        `json:"fault"`
	Status   Status        `json:"status"` // the worst run status
	Agree    int           `json:"agree"`  // runs that reached Status
	Runs     int           `json:"runs"`
	Detail   string        `json:"detail"` // of the first run that reached Status
	Outcomes []Outcome     `json:"outcomes,omitempty"`
	Wall     time.Duration `json:"wall_ns"`
	// Recorded is what the grid's record says of the cell (record.go): how often it showed each
	// status when measured; nil when the record does not have it.
	Recorded *RecordedCell `json:"recorded,omitempty"`
}

// summarise sets the cell's status from its runs: the worst one, with how many runs reached it
// (a cell that varies shows what it can come to, and how often).
func (c *Cell) summarise() {
	counts := map[Status]int{}
	for _, o := range c.Outcomes {
		counts[o.Status]++
	}
	worst := Status("")
	for _, s := range append([]Status{Error}, checker.Outcomes...) { // worst first
		if counts[s] > 0 {
			worst = s
			break
		}
	}
	if worst == "" && len(c.Outcomes) > 0 { // n/a
		worst = c.Outcomes[0].Status
	}
	c.Status, c.Agree, c.Runs = worst, counts[worst], len(c.Outcomes)
	for _, o := range c.Outcomes {
		if o.Status == worst {
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
	for _, o := range c.Outcomes {
		if o.Status != c.Status {
			continue
		}
		switch c.Status {
		case Damaged:
			s += " (" + o.damageKinds() + ")"
		case Starved:
			s += " (" + o.starvedKinds() + ")"
		case Unsafe, Rescued:
			if o.Class != "" { // why it is unsafe: a holder outlived its promise, or a server fault
				s += ", " + string(o.Class)
			}
		}
		break
	}
	if c.Runs > 1 {
		s += fmt.Sprintf(" %d/%d", c.Agree, c.Runs)
	}
	if c.Recorded.Varies() {
		s += " (varies: " + c.Recorded.Rates() + ")"
	}
	return s
}

// Meets reports whether the cell satisfies a gate: its status is require or better in the strict
// order of checker.Outcomes (checker.OrderLine): --require unsafe passes a holder outliving its
// lease and fails a broken promise. n/a cells always pass; errors never do; without a gate
// (require "") every other cell passes.
//
// A cell the record says varies (Recorded) passes when its runs worse than require are no more
// than its recorded rate of such runs explains (a one-sided binomial test, as for a scenario's
// sometimes: block): chance alone does not fail a gate, a cell that got worse does.
func (c Cell) Meets(require Status) bool {
	return statusMeets(c.Status, require) || c.Status != Error && c.withinRate(require)
}

// statusMeets reports whether status s meets a gate of require.
func statusMeets(s, require Status) bool {
	switch {
	case s == NA:
		return true
	case s == Error:
		return false
	case require == "":
		return true
	}
	return checker.AtLeast(s, require)
}

// ParseRequire checks a --require value: an outcome (checker.Outcomes), or "" for no gate. The
// error lists the valid values, best first.
func ParseRequire(require string) (Status, error) {
	if require == "" {
		return "", nil
	}
	s, err := checker.ParseOutcome(require)
	if err != nil {
		return "", fmt.Errorf("--require %q: want one of %s (a cell passes with that status or a better one)", require, checker.OutcomeNames())
	}
	return s, nil
}
