package nemesis

// Abandon: a usage step, not a fault of the world — the client gives up its acquire attempt in
// flight (cancels the context it passed the lock), as a program whose caller went away does.
// Aimed like a fault: at a client or a lock state (a waiter), now or at the next pass of a
// program point during an attempt (a design's own point: "answered", an answer of the servers
// in the client's hands). The client takes the step itself, at the point, before the lock's code
// goes on: nothing stops or resumes it, so the moment is the same in every run. The lock's answer
// is recorded as any acquire's: a yes after the attempt was given up is a promise all the same
// (etcd #10111: Lock deleted its key and returned nil).

import (
	"slices"

	"github.com/lockcheck/lockcheck/history"
)

// Abandon is the step's name, the usage vocabulary's (Abandon: a test in package
// scenarios keeps the two the same; this package knows nothing of lock designs).
const Abandon = "abandon"

// Stepper is a client target that takes aimed usage steps: step at once, or at the occurrence-th
// pass of point during an acquire attempt from now on.
type Stepper interface {
	Step(step, point string, occurrence int) error
}

var abandonKind = define(spec[noParams]{
	Name:    Abandon,
	Summary: "a client gives up its acquire attempt (cancels its context) now, or as it passes a program point during the attempt (a usage step)",
	Instant: "abandoning an attempt is instant: the client takes the step and goes on with the lock's answer",
	Colour:  "#8c564b",
	Step:    true,
	Check: func(f Fault, _ noParams, v View, bad Report) {
		t, ok := v.Target(f.Target)
		switch {
		case ok && !t.Client:
			bad("target", "abandon is a client's step: name a client or a lock state (waiter)")
		case ok && !slices.Contains(t.Usage, Abandon):
			bad("target", "%s's lock does not give up an attempt when told (usage step abandon): its design does not offer it", f.Target)
		}
	},
	Suits:     func(t TargetInfo) bool { return t.Client && slices.Contains(t.Usage, Abandon) },
	SuitsWhom: "clients whose design offers usage step abandon",
	Apply:     (*Nemesis).abandon,
})

// abandon tells the client to give its attempt up; the client notes when it did (an Abandoned
// note), or that it found no attempt to give up.
func (n *Nemesis) abandon(f Fault, _ noParams, _ bool) {
	op := n.nextOp()
	start := n.begin(f, op)
	start.Duration = 0
	s, ok := n.target(f.Target).(Stepper)
	if !ok {
		n.failed(start, f, "this client takes no usage steps")
		return
	}
	n.stamp(start)
	end := n.end(f, op)
	end.Point = f.Point
	if err := s.Step(f.Kind, f.Point, f.Occurrence); err != nil {
		end.Type, end.Error = history.Fail, err.Error()
	}
	n.stamp(end)
}

// IsStep reports whether kind is a usage step the client takes itself (Kind.Step): it waits at
// no stop of the client, at a point or anywhere.
func IsStep(kind string) bool {
	k, err := Lookup(kind)
	return err == nil && k.Step
}
