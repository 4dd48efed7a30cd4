package nemesis

// Strobe: a server's clock flips between true time and true time + Offset every Period, for For
// (or until healed), then is set back to true time. A lease's remaining time jumps back and forth,
// and one that falls due while the clock is ahead expires early. Each flip is a note in the
// history with the offset it set.

import (
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/internal/yamltime"
)

// minStrobePeriod: libfaketime re-reads a node's clock file at most once a second (package
// providers/faketime), so a faster strobe would skip flips.
const minStrobePeriod = time.Second

// flipAt is when to write a flip due at due: the first half past a wall-clock second at or after
// it. libfaketime re-reads its file at the first time call of each second, so a flip written near
// that boundary is read in the second it was due or the next, at random; with a 1 s period two
// reads in a row could then see the same side, and the clock stood still for seconds (1 run in
// 10 of nemesis's strobe test). Half a second from both reads, every flip is seen once, at most
// 0.6 s late. The period is kept on average; a whole-second period exactly. A period under the
// minimum (a unit test's clock of its own; Check refuses it otherwise) is kept as it is.
func flipAt(due time.Time, period time.Duration) time.Time {
	if period < minStrobePeriod {
		return due
	}
	half := due.Truncate(time.Second).Add(time.Second / 2)
	if half.Before(due) {
		half = half.Add(time.Second)
	}
	return half
}

// StrobeParams are a strobe's own fields.
type StrobeParams struct {
	Offset yamltime.Signed   `yaml:"offset" json:"offset,omitempty"` // the clock flips between true time and true time + Offset...
	Period yamltime.Duration `yaml:"period" json:"period,omitempty"` // ...staying this long at each
}

var strobeKind = define(spec[StrobeParams]{
	Weakness: "clock",
	Name:     history.Strobe,
	Summary:  "flip a server's clock between true time and offset every period, for a while",
	Colour:   "#bcbd22",
	Check: func(f Fault, p StrobeParams, v View, bad Report) {
		if t, ok := v.Target(f.Target); ok {
			switch {
			case t.Client:
				bad("target", "a strobe flips a server's clock (libfaketime); %s is a client: use clock faults on clients", f.Target)
			case t.Role != "":
				bad("target", "a strobe flips one server's clock; %s stands for %s: name the server", f.Target, t.Role)
			case t.NoClock != "":
				bad("target", "%s", t.NoClock)
			}
		}
		switch {
		case p.Period == 0:
			bad("period", "a strobe needs a period (e.g. period: 1s)")
		case d(p.Period) < minStrobePeriod:
			bad("period", "%s is below %s: libfaketime re-reads a node's clock at most once a second, so faster flips would be missed",
				d(p.Period), minStrobePeriod)
		}
		if p.Offset == 0 {
			bad("offset", "a strobe needs an offset to flip to (e.g. offset: 5s)")
		}
	},
	Apply:      (*Nemesis).strobe,
	ServerActs: []string{"clock"},
	Label: func(f history.Fault, p StrobeParams) string {
		return f.Kind + " " + f.Target + " ±" + p.Offset.String()
	},
})

func (n *Nemesis) strobe(f Fault, p StrobeParams, _ bool) {
	setter, _ := n.target(f.Target).(ClockSetter)
	op := n.nextOp()
	start := n.begin(f, op)
	if setter == nil {
		n.failed(start, f, "target has no clock to set")
		return
	}
	if p.Period <= 0 {
		n.failed(start, f, "a strobe needs a period")
		return
	}
	if err := setter.SetClock(p.Offset.D(), 1); err != nil {
		n.failed(start, f, err.Error())
		return
	}
	n.remember(f.Target, setter) // whatever happens, Heal sets it back
	n.stamp(start)
	n.resumeAtPoint(f)

	var end <-chan time.Time
	if f.For > 0 {
		t := time.NewTimer(d(f.For))
		defer t.Stop()
		end = t.C
	}
	due := time.Now().Add(d(p.Period)) // the next flip's, before flipAt places it
	tick := time.NewTimer(time.Until(flipAt(due, d(p.Period))))
	defer tick.Stop()
	ahead := true
	done := n.end(f, op)
	done.Params = recorded(trueClock)
loop:
	for {
		select {
		case <-tick.C:
			due = due.Add(d(p.Period))
			tick.Reset(time.Until(flipAt(due, d(p.Period))))
			ahead = !ahead
			set := trueClock
			if ahead {
				set.Offset = p.Offset
			}
			flip := history.Event{Process: history.Nemesis, Type: history.Note, F: f.Kind, Op: op, Target: f.Target, Params: recorded(set)}
			if err := setter.SetClock(set.Offset.D(), 1); err != nil {
				flip.Error = err.Error()
			}
			n.stamp(flip)
		case <-end:
			break loop
		case <-n.ctx.Done():
			done.Error = "healed before the planned end"
			break loop
		}
	}
	if err := setter.SetClock(0, 1); err != nil {
		done.Type, done.Error = history.Info, "reset: "+err.Error()
	}
	n.stamp(done)
}
