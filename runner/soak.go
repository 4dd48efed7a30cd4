package runner

import (
	"fmt"
	"time"

	"github.com/lockcheck/lockcheck/scenarios"
)

// withDuration is sc run for d instead of its own duration (d = 0: sc unchanged), for soaks:
// `lockcheck run --duration 30m` of any scenario. The copy of the scenario kept in the run folder
// says what ran, and what the file said.
func withDuration(sc *scenarios.Scenario, d time.Duration) (*scenarios.Scenario, error) {
	if d <= 0 || d == sc.Duration.D() {
		return sc, nil
	}
	c := *sc
	c.Duration = scenarios.Duration(d)
	c.Comment = fmt.Sprintf("%s, run by lockcheck run --duration %s (the file says %s)", sc.Path, d, sc.Duration.D())
	return scenarios.New(c)
}
