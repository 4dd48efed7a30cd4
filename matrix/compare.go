package matrix

import (
	"fmt"
	"slices"
	"strings"

	"github.com/lockcheck/lockcheck/checker"
)

// rank orders a judged status: 0 is the worst (checker.Outcomes runs from worst to best); -1 for
// a cell that judged nothing (n/a, a harness error) or could not decide (inconclusive), which
// says nothing about the lock.
func rank(s Status) int {
	if s == Inconclusive {
		return -1
	}
	return slices.Index(checker.Outcomes, s)
}

// Worse says whether cell a shows the lock doing worse than cell b under the same fault, and how:
// a worse status (in checker.Outcomes' strict order), a register that lost data (or was not
// linearizable) in some run of a and in no run of b, or, with the same status, collateral damage
// of a kind b never showed (failed releases, rightful accesses refused, token anomalies), or
// fencing that kept fewer registers correct (a rescue by fenced-rw alone where b was rescued by
// fenced-write too). Cells that judged nothing (n/a, error, inconclusive) are never worse or
// better.
func Worse(a, b Cell) (string, bool) {
	ra, rb := rank(a.Status), rank(b.Status)
	if ra < 0 || rb < 0 {
		return "", false
	}
	if ra < rb {
		return fmt.Sprintf("%s, not %s", a.Label(), b.Label()), true
	}
	if lost := newlyFailed(a, b); len(lost) > 0 {
		// Whatever the labels say: an overlap that lost nothing is unsafe, one whose loss
		// fencing caught is rescued, yet losing data the original kept is the worse lock.
		return fmt.Sprintf("%s lost data the original kept (%s, not %s)", strings.Join(lost, ", "), a.Label(), b.Label()), true
	}
	if ra != rb {
		return "", false
	}
	if extra := newDamage(a, b); extra != "" {
		return fmt.Sprintf("%s, with %s", a.Label(), extra), true
	}
	if a.Status == Rescued {
		ka, kb := rescuers(a), rescuers(b)
		if len(ka) < len(kb) && subset(ka, kb) {
			return fmt.Sprintf("rescued by %s only, not by %s", strings.Join(ka, ", "), strings.Join(kb, ", ")), true
		}
	}
	return "", false
}

// newlyFailed lists the registers that failed in some run of a and in no run of b.
func newlyFailed(a, b Cell) []string {
	failed := func(c Cell) []string {
		var out []string
		for _, o := range c.Outcomes {
			for _, r := range o.Failed {
				if !slices.Contains(out, r) {
					out = append(out, r)
				}
			}
		}
		return out
	}
	fb := failed(b)
	return slices.DeleteFunc(failed(a), func(r string) bool { return slices.Contains(fb, r) })
}

// newDamage names the kinds of collateral damage some run of a shows and no run of b does.
func newDamage(a, b Cell) string {
	kinds := func(c Cell) (fr, lr, ta bool) {
		for _, o := range c.Outcomes {
			fr, lr, ta = fr || o.FailedReleases > 0, lr || o.LegitRejections > 0, ta || o.TokenAnomalies > 0
		}
		return
	}
	afr, alr, ata := kinds(a)
	bfr, blr, bta := kinds(b)
	var out []string
	if afr && !bfr {
		out = append(out, "failed releases")
	}
	if alr && !blr {
		out = append(out, "rightful accesses refused")
	}
	if ata && !bta {
		out = append(out, "token anomalies")
	}
	return strings.Join(out, ", ")
}

// rescuers are the fenced registers that rescued every rescued run of the cell.
func rescuers(c Cell) []string {
	var out []string
	first := true
	for _, o := range c.Outcomes {
		if o.Status != Rescued {
			continue
		}
		if first {
			out, first = slices.Clone(o.Rescuers), false
			continue
		}
		out = slices.DeleteFunc(out, func(r string) bool { return !slices.Contains(o.Rescuers, r) })
	}
	return out
}

func subset(a, b []string) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

// CellOf makes a cell from judged runs made outside the grid (a scenario file run with a design
// in place of another), so Worse can compare them.
func CellOf(lock, fault string, outs ...Outcome) Cell {
	c := Cell{Lock: lock, Fault: fault, Outcomes: outs}
	c.summarise()
	return c
}
