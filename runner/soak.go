package runner

import (
	"fmt"
	"regexp"
	"time"

	"github.com/lockcheck/lockcheck/scenarios"
)

// withDuration is sc run for d instead of its own duration (d = 0: sc unchanged), for soaks:
// `lockcheck run --duration 30m` of any scenario. The copy of the scenario kept in the run folder
// says what ran: its duration line is replaced, and says what it replaced.
func withDuration(sc *scenarios.Scenario, d time.Duration) *scenarios.Scenario {
	if d <= 0 || d == sc.Duration.D() {
		return sc
	}
	c := *sc
	c.Duration = scenarios.Duration(d)
	line := fmt.Sprintf("duration: %s  # lockcheck run --duration %s (the file says %s)", d, d, sc.Duration.D())
	src := durationLine.ReplaceAll(sc.Source, []byte(line))
	if string(src) == string(sc.Source) { // no such line (a scenario built in code): say it anyway
		src = append(append([]byte(nil), sc.Source...), []byte("\n"+line+"\n")...)
	}
	c.Source = src
	return &c
}

var durationLine = regexp.MustCompile(`(?m)^duration:.*$`)
