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
		for field, n := range map[string]*int{"max_overtakes": f.MaxOvertakes, "min_overtakes": f.MinOvertakes} {
			if n != nil && *n < 0 {
				errs = append(errs, fmt.Errorf("expect.fairness.%s: %d is negative", field, *n))
			}
		}
		if f.MaxOvertakes != nil && f.MinOvertakes != nil && *f.MinOvertakes > *f.MaxOvertakes {
			errs = append(errs, fmt.Errorf("expect.fairness.min_overtakes: %d is above max_overtakes %d", *f.MinOvertakes, *f.MaxOvertakes))
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
		got := v.Fairness.Overtakes
		gotText := fmt.Sprintf("%d (%d of %d acquisitions overtook someone)", got, v.Fairness.Overtaking, v.Fairness.Acquisitions)
		if v.Fairness.Acquisitions == 0 {
			// No acquisition, no evidence: a bound on overtakes must not pass on an empty run.
			if f.MaxOvertakes != nil {
				out = append(out, Mismatch{"fairness.max_overtakes", strconv.Itoa(*f.MaxOvertakes), "no acquisition to judge"})
			}
			if f.MinOvertakes != nil {
				out = append(out, Mismatch{"fairness.min_overtakes", strconv.Itoa(*f.MinOvertakes), "no acquisition to judge"})
			}
		} else {
			if f.MaxOvertakes != nil && got > *f.MaxOvertakes {
				out = append(out, Mismatch{"fairness.max_overtakes", strconv.Itoa(*f.MaxOvertakes), gotText})
			}
			if f.MinOvertakes != nil && got < *f.MinOvertakes {
				out = append(out, Mismatch{"fairness.min_overtakes", strconv.Itoa(*f.MinOvertakes), gotText})
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
