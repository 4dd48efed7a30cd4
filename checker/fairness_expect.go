package checker

import (
	"fmt"
	"strconv"

	"github.com/lockcheck/lockcheck/internal/yamltime"
)

// FairnessExpect is a scenario's expect.fairness: bounds on the overtakes (see Fairness).
type FairnessExpect struct {
	MaxOvertakes *int `yaml:"max_overtakes" json:"max_overtakes,omitempty"` // 0: first come, first served
	MinOvertakes *int `yaml:"min_overtakes" json:"min_overtakes,omitempty"` // shows a lock is not fair
	// MaxUnfair and MinUnfair bound the unfair overtakes (Fairness.Unfair): those a design that
	// promises first come, first served must answer for.
	MaxUnfair *int `yaml:"max_unfair_overtakes" json:"max_unfair_overtakes,omitempty"`
	MinUnfair *int `yaml:"min_unfair_overtakes" json:"min_unfair_overtakes,omitempty"`
}

// UnavailableExpect bounds the liveness figure "longest unavailable" (expect.liveness): how long
// someone waited at most while nobody held the lock. A waiter frozen at the head of a fair
// queue keeps everyone behind it waiting; a lock without a queue does not.
type UnavailableExpect struct {
	MinUnavailable *yamltime.Duration `yaml:"min_unavailable" json:"min_unavailable_ns,omitempty"`
	MaxUnavailable *yamltime.Duration `yaml:"max_unavailable" json:"max_unavailable_ns,omitempty"`
}

func (e Expect) validateFairness() []error {
	var errs []error
	if f := e.Fairness; f != nil {
		for field, n := range map[string]*int{"max_overtakes": f.MaxOvertakes, "min_overtakes": f.MinOvertakes,
			"max_unfair_overtakes": f.MaxUnfair, "min_unfair_overtakes": f.MinUnfair} {
			if n != nil && *n < 0 {
				errs = append(errs, fmt.Errorf("expect.fairness.%s: %d is negative", field, *n))
			}
		}
		if f.MaxOvertakes != nil && f.MinOvertakes != nil && *f.MinOvertakes > *f.MaxOvertakes {
			errs = append(errs, fmt.Errorf("expect.fairness.min_overtakes: %d is above max_overtakes %d", *f.MinOvertakes, *f.MaxOvertakes))
		}
		if f.MaxUnfair != nil && f.MinUnfair != nil && *f.MinUnfair > *f.MaxUnfair {
			errs = append(errs, fmt.Errorf("expect.fairness.min_unfair_overtakes: %d is above max_unfair_overtakes %d", *f.MinUnfair, *f.MaxUnfair))
		}
	}
	if l := e.Liveness; l != nil && l.MinUnavailable != nil && l.MaxUnavailable != nil && *l.MinUnavailable > *l.MaxUnavailable {
		errs = append(errs, fmt.Errorf("expect.liveness.min_unavailable: %s is above max_unavailable %s", l.MinUnavailable, l.MaxUnavailable))
	}
	return errs
}

func (e Expect) matchFairness(v Verdict) []Mismatch {
	var out []Mismatch
	if f := e.Fairness; f != nil {
		fv := v.Fairness
		unfairText := fmt.Sprintf("%d of %d overtakes", fv.Unfair, fv.Overtakes)
		if o := fv.FirstUnfair; o != nil {
			unfairText += fmt.Sprintf(
				" (the first: %s got the lock at %s before %s, which had asked at %s)",
				o.By,
				Seconds(o.Offset),
				o.Client,
				Seconds(o.Since),
			)
		}
		for _, b := range []struct {
			field     string
			bound     *int
			got       int
			text      string
			isMaximum bool
		}{
			{"max_overtakes", f.MaxOvertakes, fv.Overtakes, fmt.Sprintf("%d (%d of %d acquisitions overtook "+
				"someone)", fv.Overtakes, fv.Overtaking, fv.Acquisitions), true},
			{"min_overtakes", f.MinOvertakes, fv.Overtakes, fmt.Sprintf("%d (%d of %d acquisitions overtook "+
				"someone)", fv.Overtakes, fv.Overtaking, fv.Acquisitions), false},
			{"max_unfair_overtakes", f.MaxUnfair, fv.Unfair, unfairText, true},
			{"min_unfair_overtakes", f.MinUnfair, fv.Unfair, unfairText, false},
		} {
			switch {
			case b.bound == nil:
			case fv.Acquisitions == 0:
				// No acquisition, no evidence: a bound on overtakes must not pass on an empty run.
				out = append(out, Mismatch{"fairness." + b.field, strconv.Itoa(*b.bound), "no acquisition to judge"})
			case b.isMaximum && b.got > *b.bound, !b.isMaximum && b.got < *b.bound:
				out = append(out, Mismatch{"fairness." + b.field, strconv.Itoa(*b.bound), b.text})
			}
		}
	}
	if l := e.Liveness; l != nil {
		got := v.Liveness.LongestUnavailable
		gotText := Human(got)
		if got > 0 {
			gotText += " at " + Seconds(v.Liveness.LongestUnavailableOffset)
		}
		if l.MinUnavailable != nil && got < l.MinUnavailable.D() {
			out = append(out, Mismatch{"liveness.min_unavailable", l.MinUnavailable.String(), gotText})
		}
		if l.MaxUnavailable != nil && got > l.MaxUnavailable.D() {
			out = append(out, Mismatch{"liveness.max_unavailable", l.MaxUnavailable.String(), gotText})
		}
	}
	return out
}
