package checker

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Outcome is a verdict in one word. It is the one rule every report of a run uses — the run
// output, report.html, the matrix and the debate.
type Outcome string

const (
	// Safe: mutual exclusion held and the unfenced register (what the lock alone gives) lost
	// nothing.
	Safe Outcome = "safe"
	// Rescued: the lock failed (two clients held it at once, or the unfenced register lost
	// data), but a register that checks fencing tokens or the lock's value kept its data correct.
	// Whether the unfenced register also lost an update in the run is left out: it hangs on
	// whether the stale holder's write came before or after its own check noticed, which the
	// same run decides differently from one time to the next.
	Rescued Outcome = "rescued"
	// Unsafe: the lock failed — two clients held it at once, or the unfenced register lost data —
	// and no register that checks fencing tokens or the lock's value applies to the design, or
	// every one that applies lost data too.
	Unsafe Outcome = "unsafe"
	// Stuck: safe, but the lock was never freed again while someone wanted it.
	Stuck Outcome = "stuck"
	// Starved: mutual exclusion held and nothing was lost, but the lock did not serve those who
	// asked: a client was passed over for longer than the scenario's bound while others got the
	// lock (Liveness.Clients), or askers were refused for more than half the run
	// (Liveness.BarelyServed).
	Starved Outcome = "starved"
	// Damaged: mutual exclusion held and nothing was lost, but the lock harmed its rightful users:
	// clients that held it rightfully (Collateral: a release failed, fencing refused them, tokens
	// came out of order), or waiters a first-come-first-served design let others overtake
	// (Fairness.BrokenPromise).
	Damaged Outcome = "damaged"
	// Inconclusive: the run proves nothing (Verdict.Inconclusive says why: no client ever held
	// the lock, the lock service never answered).
	Inconclusive Outcome = "inconclusive"
	// Broken: the lock broke its promise: it told two clients they held it at the same time, and
	// no fault on its servers explains it (MutualExclusion.Broken, promises.go) — the lock's own
	// bug, whatever fencing saved. Unsafe and rescued runs are those whose double ownership a
	// holder outlived its promise for (K2), or a fault on the servers explains.
	Broken Outcome = "broken"
)

// Outcomes lists the outcomes from worst to best, a strict order: the order a summary of several
// runs breaks ties in, and the order a gate (Meets) ranks them.
//
//	safe < damaged < starved < rescued < stuck < inconclusive < unsafe < broken
//
// Damaged is better than starved: the harmed clients still got the lock and could go on, where a
// starved client's work stopped, with no error it could act on. Starved is better than rescued:
// the lock kept mutual exclusion and the others went on, where a rescued lock let two clients in
// and only fencing kept the data. Stuck is worse than rescued: a lock nobody can ever take again
// stops the system, where fencing at least keeps a rescued one correct. Inconclusive sits just
// above unsafe: a run that proves nothing passes no gate that asks for anything better, and it is
// still not evidence of a failure. Broken is the worst: the lock itself told two clients they
// held it at once, where an unsafe run's holder outlived what it was told (a limit of every
// lease) or a documented weakness of the servers was hit; a gate that asks for unsafe or better
// passes those and fails any broken promise.
var Outcomes = []Outcome{Broken, Unsafe, Inconclusive, Stuck, Rescued, Starved, Damaged, Safe}

// Rank is o's place in the strict order: 0 for safe, one more for each worse outcome; -1 for a
// word that is not an outcome.
func Rank(o Outcome) int {
	for i, x := range Outcomes {
		if x == o {
			return len(Outcomes) - 1 - i
		}
	}
	return -1
}

// AtLeast reports whether o is got or better in the strict order (both must be outcomes).
func AtLeast(got, want Outcome) bool {
	g, w := Rank(got), Rank(want)
	return g >= 0 && w >= 0 && g <= w
}

// ParseOutcome checks a word against the outcomes; the error lists them, best first.
func ParseOutcome(s string) (Outcome, error) {
	if Rank(Outcome(s)) >= 0 {
		return Outcome(s), nil
	}
	return "", fmt.Errorf("%q is not an outcome; valid outcomes, best first: %s", s, OutcomeNames())
}

// OutcomeNames lists the outcomes best first, comma-separated.
func OutcomeNames() string {
	names := make([]string, len(Outcomes))
	for i, o := range Outcomes {
		names[len(Outcomes)-1-i] = string(o)
	}
	return strings.Join(names, ", ")
}

// BestFirst lists the outcomes best first: Outcomes reversed, the order the help, the matrix's
// legend and the docs write them in.
func BestFirst() []Outcome {
	out := make([]Outcome, len(Outcomes))
	for i, o := range Outcomes {
		out[len(Outcomes)-1-i] = o
	}
	return out
}

// OrderLine is the strict order in one line, "safe < damaged < ... < broken", built from Outcomes
// so that no list written by hand can drift from it.
func OrderLine() string {
	words := make([]string, len(Outcomes))
	for i, o := range BestFirst() {
		words[i] = string(o)
	}
	return strings.Join(words, " < ")
}

// meanings say each outcome in a line, for the CLI's help and the matrix's legend; the full rule
// is Judge's, and docs/VERDICTS.md's Outcomes table explains it.
var meanings = map[Outcome]string{
	Safe:         "mutual exclusion held, nothing was lost, no collateral damage",
	Damaged:      "mutual exclusion held and nothing was lost, but the lock harmed its rightful users (a failed release, fencing refusing a rightful holder, tokens out of order, or a design that promises first come, first served letting a client overtake a waiter)",
	Starved:      "mutual exclusion held and nothing was lost, but the lock did not serve: a client asked in vain while others got it for longer than the scenario's bound, or askers were refused most of the run",
	Rescued:      "the lock failed under a fault (double ownership, or the unfenced register lost data), but a register that checks fencing kept the data correct",
	Stuck:        "the lock was never freed again while someone wanted it",
	Inconclusive: "the run proves nothing (no client ever held the lock, or the lock service never answered)",
	Unsafe:       "the lock failed and nothing the design offers kept the data correct; a failure with no fault at all is unsafe, fencing or not",
	Broken:       "the lock told two clients they held it at the same time, and no fault on its servers explains it: a bug of its own",
}

// Meaning is the outcome in a line; "" for a word that is not an outcome.
func Meaning(o Outcome) string { return meanings[o] }

// Judgement is a verdict's outcome and what decided it.
type Judgement struct {
	Outcome Outcome
	// LockFailed: two clients believed they held the lock at once, or the unfenced register lost
	// data (DataLost).
	LockFailed bool
	DataLost   bool
	// Rescuers are the registers that check tokens (or the lock's value) and stayed correct where
	// the unfenced register lost data; Failed are the registers that lost data or were not
	// linearizable.
	Rescuers []string
	Failed   []string
	// NoFault: the lock failed in a run without any fault (Verdict.FaultFree), which fencing
	// cannot turn into a rescue.
	NoFault bool
}

// unfencedRegister is the register that checks nothing: what the lock alone gives.
const unfencedRegister = "unfenced"

// Intact reports whether a register kept its data correct: not found non-linearizable, and no
// acknowledged update missing from its final value.
func (r RegisterVerdict) Intact() bool {
	return r.Linearizable != No && !(r.LostUpdatesKnown && r.LostUpdates > 0)
}

// Judge gives the verdict's outcome.
func Judge(v Verdict) Judgement {
	var j Judgement
	u, ok := v.Registers[unfencedRegister]
	j.DataLost = ok && !u.Intact()
	j.LockFailed = !v.MutualExclusion.Holds || j.DataLost
	for _, name := range sortedNames(v.Registers) {
		r := v.Registers[name]
		if !r.Applicable {
			continue
		}
		switch {
		case !r.Intact():
			j.Failed = append(j.Failed, name)
		case name != unfencedRegister && j.LockFailed:
			// A fenced register that stayed correct while the lock failed: the resource a design
			// fences is safe, whether or not the unfenced one happened to lose an update this run.
			j.Rescuers = append(j.Rescuers, name)
		}
	}
	j.NoFault = j.LockFailed && v.FaultFree
	switch {
	case v.Inconclusive != "" && !j.LockFailed:
		j.Outcome = Inconclusive
	case !j.LockFailed && v.Liveness.Stuck:
		j.Outcome = Stuck
	case !j.LockFailed && v.Liveness.Starving():
		j.Outcome = Starved
	case !j.LockFailed && harmed(v):
		j.Outcome = Damaged
	case !j.LockFailed:
		j.Outcome = Safe
	case v.MutualExclusion.Broken > 0:
		j.Outcome = Broken
	case len(j.Rescuers) > 0 && !j.NoFault:
		// Fencing rescues a lock from faults. A lock that let two clients in, or lost data,
		// with no fault at all is unsafe however well the registers did.
		j.Outcome = Rescued
	default:
		j.Outcome = Unsafe
	}
	return j
}

// harmed reports whether the lock harmed its rightful users short of starving them: collateral
// damage, or a broken promise of first come, first served.
func harmed(v Verdict) bool { return v.Collateral.Damaged() || v.Fairness.BrokenPromise() }

// harmWords says that harm in a few words: "2 failed releases, 3 unfair overtakes".
func harmWords(v Verdict) string {
	var parts []string
	if v.Collateral.Damaged() {
		parts = append(parts, damageWords(v.Collateral))
	}
	if v.Fairness.BrokenPromise() {
		parts = append(parts, plural(v.Fairness.Unfair, "unfair overtake")+" (the design promises first come, first served)")
	}
	return strings.Join(parts, ", ")
}

// Headline is the verdict in a few words.
func Headline(v Verdict) string {
	j := Judge(v)
	switch j.Outcome {
	case Inconclusive:
		return "Inconclusive: " + v.Inconclusive + ", so the run shows nothing"
	case Stuck:
		return "Safe, but the lock got stuck"
	case Safe:
		return "Safe: mutual exclusion held and no update was lost"
	case Starved:
		s := "Starved: mutual exclusion held and no update was lost, but the lock did not serve those who asked (" + starvedWords(v.Liveness) + ")"
		if harmed(v) {
			s += "; also " + harmWords(v)
		}
		return s
	case Damaged:
		return "Damaged: mutual exclusion held and no update was lost, but the lock harmed its rightful users (" + harmWords(v) + ")"
	}
	s := "Unsafe: the protected data lost updates"
	if j.Outcome == Rescued {
		s = "Rescued: the protected data lost updates"
	}
	switch {
	case j.Outcome == Broken:
		s = "Broken: the lock told two clients they held it at the same time, with no fault on its servers to explain it (" +
			classWords(v.MutualExclusion) + ")"
	case !v.MutualExclusion.Holds:
		s = "Unsafe: two clients believed they held the lock at the same time"
		if j.Outcome == Rescued {
			s = "Rescued: two clients believed they held the lock at the same time"
		}
		if c := classWords(v.MutualExclusion); c != "" {
			s += " (" + c + ")"
		}
	}
	switch {
	case j.Outcome == Rescued && j.DataLost:
		s += "; fencing kept the data correct (" + strings.Join(j.Rescuers, ", ") + ")"
	case j.Outcome == Rescued:
		s += "; the registers that check fencing stayed correct (" + strings.Join(j.Rescuers, ", ") +
			"), and the unfenced one lost nothing this time"
	case j.NoFault && len(j.Rescuers) > 0:
		s += ", with no fault at all; fencing kept the data correct (" + strings.Join(j.Rescuers, ", ") + "), but that is no rescue"
	case j.NoFault:
		s += ", with no fault at all"
	}
	if v.Liveness.Starving() {
		s += "; also " + starvedWords(v.Liveness)
	}
	if harmed(v) {
		s += "; also " + harmWords(v)
	}
	return s
}

// Short is the verdict in one line, register by register: "double ownership (2 window(s), 1.1s);
// unfenced lost 1 update(s); fenced-rw ok (1 stale rejected)". The matrix's cells and the
// debate's rows show it.
func Short(v Verdict) string {
	var parts []string
	if m := v.MutualExclusion; m.Holds {
		parts = append(parts, "mutual exclusion held")
	} else {
		s := fmt.Sprintf("double ownership (%d window(s), %s", len(m.Windows), m.TotalOverlap.Round(time.Millisecond))
		if c := classCounts(m); c != "" {
			s += ": " + c
		}
		parts = append(parts, s+")")
	}
	names := sortedNames(v.Registers)
	sort.SliceStable(names, func(i, j int) bool { return registerOrder(names[i]) < registerOrder(names[j]) })
	for _, name := range names {
		r := v.Registers[name]
		if !r.Applicable {
			continue
		}
		s := name + " "
		switch {
		case r.LostUpdates > 0: // linearizable too when the lost write was one its client never heard back about
			s += fmt.Sprintf("lost %d update(s)", r.LostUpdates)
		case r.Linearizable == No:
			s += "not linearizable"
		case r.Linearizable == Unknown:
			s += "undecided"
		default:
			s += "ok"
		}
		var rejected []string
		for _, k := range []struct {
			n    int
			word string
		}{{r.StaleRejected(), "stale"}, {r.LegitRejected, "legitimate"}, {r.UncertainRejected, "uncertain"}} {
			if k.n > 0 {
				rejected = append(rejected, fmt.Sprintf("%d %s rejected", k.n, k.word))
			}
		}
		if len(rejected) > 0 {
			s += " (" + strings.Join(rejected, ", ") + ")"
		}
		parts = append(parts, s)
	}
	if c := v.Collateral; c.FailedReleases > 0 || c.TokenAnomalies > 0 {
		parts = append(parts, damageWords(Collateral{FailedReleases: c.FailedReleases, TokenAnomalies: c.TokenAnomalies,
			SameToken: c.SameToken, LowerToken: c.LowerToken}))
	}
	if v.Liveness.Stuck {
		parts = append(parts, fmt.Sprintf("lock stuck for %s", v.Liveness.StuckFor.Round(100*time.Millisecond)))
	}
	if v.Liveness.Starving() {
		parts = append(parts, starvedWords(v.Liveness))
	}
	if v.Fairness.Promised && v.Fairness.Unfair > 0 {
		parts = append(parts, plural(v.Fairness.Unfair, "unfair overtake"))
	}
	if v.Inconclusive != "" {
		parts = append(parts, "inconclusive: "+v.Inconclusive)
	}
	return strings.Join(parts, "; ")
}

// registerOrder lists the shipped registers in the order they protect more (unfenced first);
// others after them, alphabetically.
func registerOrder(name string) string {
	for i, n := range []string{unfencedRegister, "fenced-write", "fenced-rw", "cas-random"} {
		if n == name {
			return fmt.Sprint(i)
		}
	}
	return "9" + name
}

// classCounts counts the windows by class, most serious first: "1 broken, 2 outlived"; "" when
// none is classified.
func classCounts(m MutualExclusion) string {
	var parts []string
	for _, c := range []struct {
		n    int
		word string
	}{{m.Broken, "broken"}, {m.Explained, "explained"}, {m.Outlived, "outlived"}} {
		if c.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c.n, c.word))
		}
	}
	return strings.Join(parts, ", ")
}

// classWords says in a few words why the windows happened: "every window: a holder outlived its
// promise (K2)", "1 of 3 windows a broken promise; 2 a holder outlived its promise (K2)"; "" when
// none is classified.
func classWords(m MutualExclusion) string {
	n := len(m.Windows)
	var parts []string
	for _, c := range []struct {
		n     int
		class WindowClass
	}{{m.Broken, ClassBroken}, {m.Explained, ClassExplained}, {m.Outlived, ClassOutlived}} {
		switch {
		case c.n == 0:
		case c.n == n:
			parts = append(parts, "every window: "+classPhrase[c.class])
		case len(parts) == 0:
			parts = append(parts, fmt.Sprintf("%d of %d windows %s", c.n, n, classPhrase[c.class]))
		default:
			parts = append(parts, fmt.Sprintf("%d %s", c.n, classPhrase[c.class]))
		}
	}
	return strings.Join(parts, "; ")
}

// classPhrase is a class in a few words.
var classPhrase = map[WindowClass]string{
	ClassBroken:    "a broken promise",
	ClassExplained: "explained by a fault on the lock's servers",
	ClassOutlived:  "a holder outlived its promise (K2)",
}
