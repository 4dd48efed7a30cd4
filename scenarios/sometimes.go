package scenarios

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/lockcheck/lockcheck/checker"
)

// Sometimes is an outcome a scenario shows in some runs and not in others, because it hangs on
// real timing no program point can pin down (a check racing a client library's own timer, say).
// The scenario's `expect:` block then asserts only what holds in every run, and `sometimes:`
// states how often this outcome was measured: the rate is the finding. A run shows it when its
// verdict meets Expect; over several runs (`lockcheck run --count N`, `lockcheck debate`) the
// count is judged against Rate ± Tolerance (Consistent).
type Sometimes struct {
	What   string         `yaml:"what"`   // the outcome in words: "the unfenced register lost an update"
	Expect checker.Expect `yaml:"expect"` // what a run that shows it meets
	// Rate is the measured rate, as runs of runs ("3/20") or a fraction ("0.15").
	Rate string `yaml:"rate"`
	// Tolerance widens Rate to the range the scenario accepts: [rate − tolerance, rate + tolerance].
	Tolerance float64 `yaml:"tolerance"`

	rate float64 // Rate parsed
}

// Range is the accepted range of the rate.
func (s *Sometimes) Range() (lo, hi float64) {
	return math.Max(0, s.rate-s.Tolerance), math.Min(1, s.rate+s.Tolerance)
}

// Shows reports whether a run's verdict shows the outcome.
func (s *Sometimes) Shows(v checker.Verdict) bool { return len(s.Expect.Match(v)) == 0 }

// Significance is how unlikely a count must be, under every rate of the accepted range, for
// Consistent to reject it: one in a hundred. With few runs almost any count is consistent (one
// run can show a 10% outcome); the test bites as runs accumulate.
const Significance = 0.01

// Consistent reports whether seen of runs is a plausible count for a rate within the accepted
// range: it is rejected only when even the nearest rate of the range makes a count that far out
// less likely than Significance (a one-sided binomial test on the side the count lies).
func (s *Sometimes) Consistent(seen, runs int) bool {
	if runs == 0 {
		return true
	}
	lo, hi := s.Range()
	if float64(seen) > hi*float64(runs) { // too often: P(X >= seen | hi)
		return binomialTail(runs, hi, seen) >= Significance
	}
	if float64(seen) < lo*float64(runs) { // too rarely: P(X <= seen | lo)
		return 1-binomialTail(runs, lo, seen+1) >= Significance
	}
	return true
}

// ConsistentWithRate is Consistent for an outcome measured at rate (a fraction), accepted within
// rate ± tolerance: how a matrix cell that varies is judged against its recorded rate.
func ConsistentWithRate(seen, runs int, rate, tolerance float64) bool {
	s := Sometimes{rate: rate, Tolerance: tolerance}
	return s.Consistent(seen, runs)
}

// binomialTail is P(X >= k) for X ~ Binomial(n, p).
func binomialTail(n int, p float64, k int) float64 {
	if k <= 0 {
		return 1
	}
	if k > n {
		return 0
	}
	sum := 0.0
	for i := k; i <= n; i++ {
		sum += binomialPMF(n, p, i)
	}
	return math.Min(1, sum)
}

func binomialPMF(n int, p float64, k int) float64 {
	switch {
	case p <= 0:
		if k == 0 {
			return 1
		}
		return 0
	case p >= 1:
		if k == n {
			return 1
		}
		return 0
	}
	lg := func(x int) float64 { v, _ := math.Lgamma(float64(x) + 1); return v }
	return math.Exp(lg(n) - lg(k) - lg(n-k) + float64(k)*math.Log(p) + float64(n-k)*math.Log(1-p))
}

// Describe says the rate and its range in words: "3/20 (accepted 0–35%)".
func (s *Sometimes) Describe() string {
	lo, hi := s.Range()
	return fmt.Sprintf("%s (accepted %.0f–%.0f%%)", s.Rate, lo*100, hi*100)
}

// parseRate reads "k/n" or a fraction in [0, 1].
func parseRate(s string) (float64, error) {
	if a, b, ok := strings.Cut(s, "/"); ok {
		k, err1 := strconv.Atoi(strings.TrimSpace(a))
		n, err2 := strconv.Atoi(strings.TrimSpace(b))
		if err1 != nil || err2 != nil || n <= 0 || k < 0 || k > n {
			return 0, fmt.Errorf("%q is not a rate: write runs that showed it of runs measured, e.g. 3/20", s)
		}
		return float64(k) / float64(n), nil
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || f < 0 || f > 1 {
		return 0, fmt.Errorf("%q is not a rate: write k/n (e.g. 3/20) or a fraction between 0 and 1", s)
	}
	return f, nil
}

// validate checks the block, reporting each problem under "sometimes.<field>".
func (s *Sometimes) validate(bad func(field, format string, a ...any)) {
	if strings.TrimSpace(s.What) == "" {
		bad("sometimes.what", "missing: the outcome in words, as the debate's report will state its rate")
	}
	if s.Rate == "" {
		bad("sometimes.rate", "missing: how often it was measured, e.g. 3/20")
	} else if r, err := parseRate(s.Rate); err != nil {
		bad("sometimes.rate", "%v", err)
	} else {
		s.rate = r
	}
	if s.Tolerance < 0 || s.Tolerance > 1 {
		bad("sometimes.tolerance", "%v is not between 0 and 1", s.Tolerance)
	}
	if err := s.Expect.Validate(); err != nil {
		for _, line := range strings.Split(err.Error(), "\n") {
			field, msg, ok := strings.Cut(line, ": ")
			if !ok {
				field, msg = "expect", line
			}
			bad("sometimes."+field, "%s", msg)
		}
	}
	if empty(s.Expect) {
		bad("sometimes.expect", "missing: what a run that shows the outcome meets (the same fields as expect:)")
	}
}

func empty(e checker.Expect) bool {
	return e.MutualExclusion == "" && len(e.OverlapsOnlyWith) == 0 && len(e.Registers) == 0 && e.Liveness == nil &&
		e.Fairness == nil && e.Collateral == nil
}
