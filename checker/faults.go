package checker

import (
	"github.com/lockcheck/lockcheck/history"
)

// Fault is one nemesis action over time (history.Fault).
type Fault = history.Fault

// Faults pairs the nemesis's invokes with their completions (history.Faults).
func Faults(events []history.Event) []Fault { return history.Faults(events) }
