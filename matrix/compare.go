package matrix

import (
	"fmt"
	"slices"
	"strings"
	"time"

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

// Worse says whether cell a shows the lock doing worse than cell b under the same fault, and how
// (every way, joined): see Regressions.
func Worse(a, b Cell) (string, bool) {
	how := Regressions(a, b)
	return strings.Join(how, "; "), len(how) > 0
}

// Regressions lists every way cell a shows the lock doing worse than cell b (its baseline: the
// original of a mutant, the last release, the previous version of a library) under the same fault:
//   - a worse status (in checker.Outcomes' strict order) than the worst run of b;
//   - a register that lost data (or was not linearizable) in some run of a and in no run of b;
//   - with the same status, a more serious class of double ownership than any run of b showed
//     (checker.WindowClass: a server fault's where b's holders only outlived their promises),
//     harm of a kind b never showed (failed releases, rightful accesses refused, token
//     anomalies, unfair overtakes), or fencing that kept fewer registers correct;
//   - whatever the statuses, more of something bad than run-to-run noise explains (magnitudes):
//     double-ownership windows and overlap per 1,000 acquisitions, unfenced updates lost per 1,000
//     acquisitions, stuck time, starved clients, the share of the run askers were refused, unfair
//     overtakes of a design that promises first come, first served, and each kind of collateral
//     damage per 1,000 acquisitions. A status hides how much: a broken copy that double-owns a
//     hundred times more often than its original can have the same status, or a better one
//     (rescued by fencing where the original was unsafe).
//
// Cells that judged nothing (n/a, error, inconclusive) are never worse or better.
func Regressions(a, b Cell) []string {
	ra, rb := rank(a.Status), rank(b.Status)
	if ra < 0 || rb < 0 {
		return nil
	}
	var out []string
	if worst := worstStatus(b); ra < rank(worst) && ra < rb {
		s := fmt.Sprintf("%s, not %s", a.Label(), b.Label())
		if worst != b.Status {
			s += " (its worst run: " + string(worst) + ")"
		}
		out = append(out, s)
	}
	if lost := newlyFailed(a, b); len(lost) > 0 {
		// Whatever the labels say: an overlap that lost nothing is unsafe, one whose loss
		// fencing caught is rescued, yet losing data the original kept is the worse lock.
		out = append(out, fmt.Sprintf("%s lost data the baseline kept (%s, not %s)", strings.Join(lost, ", "), a.Label(), b.Label()))
	}
	if ra == rb {
		if ca, cb := worstClass(a), worstClass(b); ca.Worse(cb) {
			out = append(out, fmt.Sprintf("%s, a class of double ownership its baseline never showed (%s, not %s)", a.Label(), ca, orNone(cb)))
		}
		if extra := newDamage(a, b); extra != "" {
			out = append(out, fmt.Sprintf("%s, with %s", a.Label(), extra))
		}
		if a.Status == Rescued {
			ka, kb := rescuers(a), rescuers(b)
			if len(ka) < len(kb) && subset(ka, kb) {
				out = append(out, fmt.Sprintf("rescued by %s only, not by %s", strings.Join(ka, ", "), strings.Join(kb, ", ")))
			}
		}
	}
	return append(out, magnitudes(a, b)...)
}

// worstClass is the most serious class of double ownership among the runs of c.
func worstClass(c Cell) checker.WindowClass {
	var worst checker.WindowClass
	for _, o := range c.Outcomes {
		if o.Class.Worse(worst) {
			worst = o.Class
		}
	}
	return worst
}

func orNone(c checker.WindowClass) string {
	if c == "" {
		return "none"
	}
	return string(c)
}

// worstStatus is the worst status among the judged runs of c (its own status without runs).
func worstStatus(c Cell) Status {
	worst := c.Status
	for _, o := range c.Outcomes {
		if r := rank(o.Status); r >= 0 && r < rank(worst) {
			worst = o.Status
		}
	}
	return worst
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

// newDamage names the kinds of harm some run of a shows and no run of b does.
func newDamage(a, b Cell) string {
	kinds := func(c Cell) []string {
		var out []string
		for _, o := range c.Outcomes {
			for _, k := range strings.Split(o.damageKinds(), ", ") {
				if k != "" && !slices.Contains(out, k) {
					out = append(out, k)
				}
			}
		}
		return out
	}
	kb := kinds(b)
	return strings.Join(slices.DeleteFunc(kinds(a), func(k string) bool { return slices.Contains(kb, k) }), ", ")
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

// A magnitude is one figure of a run where more is worse, with the margin run-to-run noise needs.
//
// The rule (noise): a cell's figure got worse only when every run of it is above the baseline's
// worst run, by half as much again (rel) plus a floor: figure(run) > rel·max(baseline) + floor.
// That is complete separation of the two sets of runs. With three runs a side it is the one-sided
// exact Mann-Whitney U test at p = 1/20 = 0.05 (of the 20 ways to rank six runs, one puts the
// three of the new cell above the three of the baseline), made stricter by the margin; with one
// run a side the margin is all that stands between a gate and noise, so single-run gates should
// be read as a hint and confirmed with --count 3. The floor is two events (a window, an update,
// an overtake) at the run's own rate, or 500 ms of time, so that 0 against 1 is never a
// regression; the factor, because counts of events in runs of a few seconds vary by about that
// much between runs of the same scenario (make repeat).
type magnitude struct {
	name string
	// value is the figure of one run, and whether the run has it (a rate needs acquisitions).
	value func(Outcome) (float64, bool)
	// floor is the absolute part of the margin for a run of a.
	floor func(Outcome) float64
	rel   float64
	unit  func(float64) string
}

// perThousand makes a count a rate per 1,000 acquisitions of the run.
func perThousand(n func(Outcome) float64) func(Outcome) (float64, bool) {
	return func(o Outcome) (float64, bool) {
		if o.Acquisitions == 0 {
			return 0, false
		}
		return 1000 * n(o) / float64(o.Acquisitions), true
	}
}

// events is the floor of a rate: that many events at the run's own rate.
func events(n float64) func(Outcome) float64 {
	return func(o Outcome) float64 { return 1000 * n / float64(max(o.Acquisitions, 1)) }
}

func fixed(f float64) func(Outcome) float64 { return func(Outcome) float64 { return f } }

func rate(v float64) string    { return fmt.Sprintf("%.1f", v) }
func seconds(v float64) string { return checker.Human(time.Duration(v * float64(time.Second))) }
func count(v float64) string   { return fmt.Sprintf("%.0f", v) }
func share(v float64) string   { return fmt.Sprintf("%.0f%%", 100*v) }

var magnitudes_ = []magnitude{
	{"double-ownership windows per 1,000 acquisitions", perThousand(func(o Outcome) float64 { return float64(o.Windows) }), events(2), 1.5, rate},
	{"overlap per 1,000 acquisitions", perThousand(func(o Outcome) float64 { return o.Overlap.Seconds() }),
		func(o Outcome) float64 { return 1000 * 0.5 / float64(max(o.Acquisitions, 1)) }, 1.5, seconds},
	{"unfenced updates lost per 1,000 acquisitions", perThousand(func(o Outcome) float64 { return float64(o.Lost) }), events(2), 1.5, rate},
	{"stuck time", func(o Outcome) (float64, bool) { return o.StuckFor.Seconds(), true }, fixed(0.5), 1.5, seconds},
	{"starved clients", func(o Outcome) (float64, bool) { return float64(o.Starved), true }, fixed(0.5), 1, count},
	{"share of the run askers were refused", func(o Outcome) (float64, bool) { return o.RefusedShare, true }, fixed(0.1), 1.5, share},
	{"unfair overtakes per 1,000 acquisitions (first come, first served promised)", func(o Outcome) (float64, bool) {
		if !o.FairPromised || o.Acquisitions == 0 {
			return 0, false
		}
		return 1000 * float64(o.Unfair) / float64(o.Acquisitions), true
	}, events(2), 1.5, rate},
	{"failed releases per 1,000 acquisitions", perThousand(func(o Outcome) float64 { return float64(o.FailedReleases) }), events(2), 1.5, rate},
	{
		"rightful accesses refused per 1,000 acquisitions",
		perThousand(func(o Outcome) float64 { return float64(o.LegitRejections) }),
		events(2),
		1.5,
		rate,
	},
	{"token anomalies per 1,000 acquisitions", perThousand(func(o Outcome) float64 { return float64(o.TokenAnomalies) }), events(2), 1.5, rate},
}

// magnitudes lists the figures of a that got worse than b's beyond noise (see magnitude).
func magnitudes(a, b Cell) []string {
	judged := func(c Cell) []Outcome {
		return slices.DeleteFunc(slices.Clone(c.Outcomes), func(o Outcome) bool { return rank(o.Status) < 0 })
	}
	ra, rb := judged(a), judged(b)
	if len(ra) == 0 || len(rb) == 0 {
		return nil
	}
	var out []string
	for _, m := range magnitudes_ {
		worstB, haveB := 0.0, false
		for _, o := range rb {
			if v, ok := m.value(o); ok {
				worstB, haveB = max(worstB, v), true
			}
		}
		if !haveB {
			continue // the baseline does not have this figure (a matrix.json written before it was)
		}
		worse, lowest := true, 0.0
		for i, o := range ra {
			v, ok := m.value(o)
			if !ok || v <= m.rel*worstB+m.floor(o) {
				worse = false
				break
			}
			if i == 0 || v < lowest {
				lowest = v
			}
		}
		if !worse {
			continue
		}
		s := fmt.Sprintf("%s: %s", m.name, m.unit(lowest))
		if len(ra) > 1 {
			s = fmt.Sprintf("%s: at least %s in each of %d runs", m.name, m.unit(lowest), len(ra))
		}
		out = append(out, s+fmt.Sprintf(", against at most %s in the baseline's %s", m.unit(worstB), plural(len(rb), "run")))
	}
	return out
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// CellOf makes a cell from judged runs made outside the grid (a scenario file run with a design
// in place of another), so Worse can compare them.
func CellOf(lock, fault string, outs ...Outcome) Cell {
	c := Cell{Lock: lock, Fault: fault, Outcomes: outs}
	c.summarise()
	return c
}

// Regression is one cell that got worse than its baseline cell.
type Regression struct {
	Lock     string   `json:"lock"`
	Fault    string   `json:"fault"`
	Baseline string   `json:"baseline"` // the baseline cell's lock: the same, or --baseline-lock's
	How      []string `json:"how"`
}

// Compare lists the cells of m that got worse than the same lock's cell under the same fault in
// base (a matrix of an earlier release, or of the lock's previous version). Cells missing from
// either are skipped.
func Compare(m, base *Matrix) []Regression {
	var out []Regression
	for _, c := range m.Cells {
		if b, ok := base.Cell(c.Lock, c.Fault); ok {
			if how := Regressions(c, b); len(how) > 0 {
				out = append(out, Regression{Lock: c.Lock, Fault: c.Fault, Baseline: b.Lock, How: how})
			}
		}
	}
	return out
}

// CompareLocks lists the cells of m's other rows that got worse than baseLock's cell under the same
// fault in m itself: a changed design against its original in one run.
func CompareLocks(m *Matrix, baseLock string) []Regression {
	var out []Regression
	for _, c := range m.Cells {
		if c.Lock == baseLock {
			continue
		}
		if b, ok := m.Cell(baseLock, c.Fault); ok {
			if how := Regressions(c, b); len(how) > 0 {
				out = append(out, Regression{Lock: c.Lock, Fault: c.Fault, Baseline: baseLock, How: how})
			}
		}
	}
	return out
}

// limitFigures are the magnitudes a holder outliving its promise drives by itself: how often a
// frozen holder's lease runs out, and what it then costs. A release whose lease is shorter (a
// library that rounds the TTL another way) shows the same limit more often, with no bug of its own.
var limitFigures = []string{magnitudes_[0].name, magnitudes_[1].name, magnitudes_[2].name}

// SetLimitsAside is an upgrade gate's reading of regs, the regressions of m's cells: in a cell
// whose every window is a holder outliving its promise (or that has none), more double
// ownership, overlap or lost updates than the baseline is the limit of every lease showing more
// often — not a bug of the release — and goes into notes, not regressions, unless limits asks to
// gate it too. A new broken promise, a new class, a worse status or a new loss stays a regression.
func SetLimitsAside(m *Matrix, regs []Regression, limits bool) (kept, notes []Regression) {
	for _, r := range regs {
		c, ok := m.Cell(r.Lock, r.Fault)
		if limits || !ok || worstClass(c).Worse(checker.ClassOutlived) {
			kept = append(kept, r)
			continue
		}
		var how, note []string
		for _, h := range r.How {
			if slices.ContainsFunc(limitFigures, func(f string) bool { return strings.HasPrefix(h, f+":") }) {
				note = append(note, h)
			} else {
				how = append(how, h)
			}
		}
		if len(how) > 0 {
			kept = append(kept, Regression{Lock: r.Lock, Fault: r.Fault, Baseline: r.Baseline, How: how})
		}
		if len(note) > 0 {
			notes = append(notes, Regression{Lock: r.Lock, Fault: r.Fault, Baseline: r.Baseline, How: note})
		}
	}
	return kept, notes
}
