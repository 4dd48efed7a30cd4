package checker

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Expect is a scenario's `expect:` block: what the run must show for the scenario to pass (a CI
// gate). Unset fields are not checked.
type Expect struct {
	MutualExclusion string `yaml:"mutual_exclusion" json:"mutual_exclusion,omitempty"` // "holds", "violated" or ""
	// Promises: "kept" — no window of double ownership is a broken promise of the lock's
	// (promises.go), though a holder may have outlived its promise; "broken" — some window is.
	// A gate that allows the limit of every lease (K2) and fails any bug of the lock's own.
	Promises string `yaml:"promises" json:"promises,omitempty"`
	// DoubleOwnership is the most serious class the windows must show: "outlived", "explained"
	// or "broken" (mutual exclusion violated, and no window worse).
	DoubleOwnership string `yaml:"double_ownership" json:"double_ownership,omitempty"`
	// OverlapsOnlyWith: every window of double ownership must involve one of these clients
	// (the ones a fault froze or cut off). A lease cannot help overlapping with a frozen holder
	// (K2); an overlap between two clients no fault touched is the lock's own doing, e.g. a
	// release that deletes another client's lock.
	OverlapsOnlyWith []string                  `yaml:"overlaps_only_with" json:"overlaps_only_with,omitempty"`
	Registers        map[string]RegisterExpect `yaml:"registers" json:"registers,omitempty"`
	Liveness         *LivenessExpect           `yaml:"liveness" json:"liveness,omitempty"`
	Fairness         *FairnessExpect           `yaml:"fairness" json:"fairness,omitempty"` // fairness_expect.go
	// Collateral bounds the harm done to legitimate holders (collateral_expect.go).
	Collateral *CollateralExpect `yaml:"collateral" json:"collateral,omitempty"`
	// Exercised: true requires that the run's faults put the lock to the test (Verdict.Unexercised
	// empty); false, that they did not (a test of the judgement itself). A scenario without faults
	// cannot ask it.
	Exercised *bool `yaml:"exercised" json:"exercised,omitempty"`
}

// RegisterExpect is what one register must show.
type RegisterExpect struct {
	Linearizable *bool `yaml:"linearizable" json:"linearizable,omitempty"`
	LostUpdates  *bool `yaml:"lost_updates" json:"lost_updates,omitempty"`
	Applicable   *bool `yaml:"applicable" json:"applicable,omitempty"`
	// MaxStaleRejections bounds the accesses fencing refused to stale holders (clients the lock
	// had moved on from: RegisterVerdict.StaleRejected), not those of rightful or uncertain ones.
	MaxStaleRejections *int `yaml:"max_stale_rejections" json:"max_stale_rejections,omitempty"`
}

// LivenessExpect is what the lock's availability must show.
type LivenessExpect struct {
	Stuck           *bool `yaml:"stuck" json:"stuck,omitempty"`
	MinAcquisitions *int  `yaml:"min_acquisitions" json:"min_acquisitions,omitempty"`
	// UnknownAcquires: whether some acquire ended with its outcome unknown (history "info").
	UnknownAcquires *bool `yaml:"unknown_acquires" json:"unknown_acquires,omitempty"`

	// min_unavailable, max_unavailable (fairness_expect.go)
	UnavailableExpect `yaml:",inline"`
	// starved_after, max_starved_clients, min_starved_clients, max_passed_over, max_refused_share,
	// min_refused_share (liveness_expect.go)
	ClientsExpect `yaml:",inline"`
}

// Mismatch is one expectation the verdict did not meet.
type Mismatch struct {
	Field string `json:"field"` // as in the scenario: "registers.unfenced.lost_updates"
	Want  string `json:"want"`
	Got   string `json:"got"`
}

func (m Mismatch) String() string { return fmt.Sprintf("%s: want %s, got %s", m.Field, m.Want, m.Got) }

const (
	holds    = "holds"
	violated = "violated"
	kept     = "kept"
	broken   = "broken"
)

// Validate rejects expectations that could never be met or make no sense, naming the field.
func (e Expect) Validate() error {
	var errs []error
	switch e.MutualExclusion {
	case "", holds, violated:
	default:
		errs = append(errs, fmt.Errorf("expect.mutual_exclusion: %q is not one of %q, %q", e.MutualExclusion, holds, violated))
	}
	for _, name := range sortedNames(e.Registers) {
		r := e.Registers[name]
		if name == "" {
			errs = append(errs, errors.New("expect.registers: a register has an empty name"))
		}
		if r.MaxStaleRejections != nil && *r.MaxStaleRejections < 0 {
			errs = append(errs, fmt.Errorf("expect.registers.%s.max_stale_rejections: %d is negative", name, *r.MaxStaleRejections))
		}
		if r.Applicable != nil && !*r.Applicable && (r.Linearizable != nil || r.LostUpdates != nil) {
			errs = append(errs, fmt.Errorf("expect.registers.%s: linearizable and lost_updates cannot be checked on a register expected not applicable", name))
		}
	}
	switch e.Promises {
	case "", kept, broken:
	default:
		errs = append(errs, fmt.Errorf("expect.promises: %q is not one of %q, %q", e.Promises, kept, broken))
	}
	if e.DoubleOwnership != "" && classRank(WindowClass(e.DoubleOwnership)) == 0 {
		errs = append(errs, fmt.Errorf("expect.double_ownership: %q is not one of %s", e.DoubleOwnership, classNames()))
	}
	if e.DoubleOwnership != "" && e.MutualExclusion == holds {
		errs = append(errs, errors.New("expect.double_ownership: mutual_exclusion holds leaves no window to class"))
	}
	if e.DoubleOwnership != "" && e.DoubleOwnership != broken && e.Promises == broken ||
		e.DoubleOwnership == broken && e.Promises == kept {
		errs = append(errs, fmt.Errorf("expect.promises: %s contradicts double_ownership: %s", e.Promises, e.DoubleOwnership))
	}
	if len(e.OverlapsOnlyWith) > 0 && e.MutualExclusion == holds {
		errs = append(errs, errors.New("expect.overlaps_only_with: mutual_exclusion holds leaves no overlap to restrict"))
	}
	if l := e.Liveness; l != nil && l.MinAcquisitions != nil && *l.MinAcquisitions < 0 {
		errs = append(errs, fmt.Errorf("expect.liveness.min_acquisitions: %d is negative", *l.MinAcquisitions))
	}
	errs = append(errs, e.validateFairness()...)
	errs = append(errs, e.validateClients()...)
	errs = append(errs, e.validateCollateral()...)
	return errors.Join(errs...)
}

// Match lists every expectation v does not meet; empty means the run passes. A register whose
// linearizability is unknown (checker timeout) or whose lost updates are unknown (no final value)
// never meets an expectation about it: a CI gate must not pass on a guess.
//
// An inconclusive run (see Inconclusive) never passes either, whatever else it shows: a gate
// must not pass on a run that proved nothing.
func (e Expect) Match(v Verdict) []Mismatch {
	var out []Mismatch
	miss := func(field, want, got string) { out = append(out, Mismatch{field, want, got}) }

	if reason := e.Inconclusive(v); reason != "" {
		miss("inconclusive", "a run that proves something", reason)
	}
	if e.MutualExclusion != "" {
		got := holds
		if !v.MutualExclusion.Holds {
			got = violated
		}
		if got != e.MutualExclusion {
			miss("mutual_exclusion", e.MutualExclusion, got)
		}
	}
	out = append(out, e.matchPromises(v)...)
	if e.Exercised != nil {
		switch got := v.Unexercised; {
		case v.FaultFree:
			miss("exercised", strconv.FormatBool(*e.Exercised), "the run had no fault")
		case *e.Exercised && got != "":
			miss("exercised", "true", "not exercised: "+got)
		case !*e.Exercised && got == "":
			miss("exercised", "false", "a fault was exercised")
		}
	}
	if len(e.OverlapsOnlyWith) > 0 {
		var others []Overlap
		for _, w := range v.MutualExclusion.Windows {
			if !slices.Contains(e.OverlapsOnlyWith, w.Clients[0]) && !slices.Contains(e.OverlapsOnlyWith, w.Clients[1]) {
				others = append(others, w)
			}
		}
		if len(others) > 0 {
			w := others[0]
			miss("overlaps_only_with", "every overlap to involve "+strings.Join(e.OverlapsOnlyWith, " or "),
				fmt.Sprintf("%d overlap(s) without them (first: %s and %s, %s at %s)", len(others),
					w.Clients[0], w.Clients[1], w.Length.Round(time.Millisecond), w.Offset.Round(time.Millisecond)))
		}
	}
	for _, name := range sortedNames(e.Registers) {
		want, field := e.Registers[name], "registers."+name+"."
		got, present := v.Registers[name]
		if !present {
			got = RegisterVerdict{Linearizable: NotApplicable} // never mentioned: never touched
		}
		if want.Applicable != nil && *want.Applicable != got.Applicable {
			miss(field+"applicable", strconv.FormatBool(*want.Applicable), strconv.FormatBool(got.Applicable))
		}
		if want.Linearizable != nil && got.Linearizable != yesNo(*want.Linearizable) {
			miss(field+"linearizable", yesNo(*want.Linearizable), got.Linearizable)
		}
		if n := want.MaxStaleRejections; n != nil && got.StaleRejected() > *n {
			miss(field+"max_stale_rejections", strconv.Itoa(*n), fmt.Sprintf("%d (of %d refused: %d rightful, %d uncertain)",
				got.StaleRejected(), got.Rejected(), got.LegitRejected, got.UncertainRejected))
		}
		if want.LostUpdates != nil {
			switch {
			case !got.LostUpdatesKnown && !got.Applicable:
				miss(field+"lost_updates", strconv.FormatBool(*want.LostUpdates), "n/a (register not applicable)")
			case !got.LostUpdatesKnown:
				miss(field+"lost_updates", strconv.FormatBool(*want.LostUpdates), "unknown (no final value)")
			case (got.LostUpdates > 0) != *want.LostUpdates:
				miss(field+"lost_updates", strconv.FormatBool(*want.LostUpdates), fmt.Sprintf("%t (%d lost)", got.LostUpdates > 0, got.LostUpdates))
			}
		}
	}
	if l := e.Liveness; l != nil {
		if l.Stuck != nil && *l.Stuck != v.Liveness.Stuck {
			miss("liveness.stuck", strconv.FormatBool(*l.Stuck), strconv.FormatBool(v.Liveness.Stuck))
		}
		if l.UnknownAcquires != nil && *l.UnknownAcquires != (v.Liveness.AcquireUnknown > 0) {
			miss("liveness.unknown_acquires", strconv.FormatBool(*l.UnknownAcquires),
				fmt.Sprintf("%t (%d)", v.Liveness.AcquireUnknown > 0, v.Liveness.AcquireUnknown))
		}
		if l.MinAcquisitions != nil && v.Liveness.Acquisitions < *l.MinAcquisitions {
			miss("liveness.min_acquisitions", strconv.Itoa(*l.MinAcquisitions), strconv.Itoa(v.Liveness.Acquisitions))
		}
	}
	out = append(out, e.matchClients(v)...)
	out = append(out, e.matchFairness(v)...)
	return append(out, e.matchCollateral(v)...)
}

// matchPromises checks promises and double_ownership. A history that records no promises (one
// written before lockcheck recorded them) meets neither.
func (e Expect) matchPromises(v Verdict) []Mismatch {
	var out []Mismatch
	m := v.MutualExclusion
	unclassed := !m.Holds && !m.PromisesRecorded
	if e.Promises != "" {
		got, detail := kept, ""
		switch {
		case unclassed:
			got = "not classified (the history records no promises)"
		case m.Broken > 0:
			got, detail = broken, fmt.Sprintf(" (%d of %d windows; the first: %s)", m.Broken, len(m.Windows), firstWhy(m, ClassBroken))
		}
		if got != e.Promises {
			out = append(out, Mismatch{"promises", e.Promises, got + detail})
		}
	}
	if e.DoubleOwnership != "" {
		got := string(m.Worst())
		switch {
		case m.Holds:
			got = "none (mutual exclusion held)"
		case unclassed:
			got = "not classified (the history records no promises)"
		}
		if got != e.DoubleOwnership {
			if w := firstWhy(m, m.Worst()); w != "" {
				got += ": " + w
			}
			out = append(out, Mismatch{"double_ownership", e.DoubleOwnership, got})
		}
	}
	return out
}

// firstWhy is the evidence of the first window of class c, or "".
func firstWhy(m MutualExclusion, c WindowClass) string {
	for _, w := range m.Windows {
		if w.Class == c {
			return w.Why
		}
	}
	return ""
}

// Inconclusive says why v proves nothing under these expectations, or "": the checker's own
// reason (no acquisition at all, a lock service never reachable), or fewer acquisitions than
// liveness.min_acquisitions asks for (too little traffic to have shown anything).
func (e Expect) Inconclusive(v Verdict) string {
	if v.Inconclusive != "" {
		return v.Inconclusive
	}
	if l := e.Liveness; l != nil && l.MinAcquisitions != nil && v.Liveness.Acquisitions < *l.MinAcquisitions {
		return fmt.Sprintf("only %d acquisitions, fewer than the %d the scenario needs (liveness.min_acquisitions)",
			v.Liveness.Acquisitions, *l.MinAcquisitions)
	}
	return ""
}

func yesNo(b bool) string {
	if b {
		return Yes
	}
	return No
}
