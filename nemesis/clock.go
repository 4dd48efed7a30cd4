package nemesis

// Clock: set a target's wall clock to real time + Offset, running at Rate (K7, K8, A7). Clients'
// locks read their own clock (package clock); servers' clocks go through libfaketime. With a
// length the clock is set back after it; Heal resets every clock a fault touched.

import (
	"math/rand/v2"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

var clockKind = &Kind{
	Name:    history.Clock,
	Summary: "step a client's or server's wall clock by offset, or make it run at rate, for a while or until the end",
	Takes:   []string{"for", "offset", "rate"},
	Colour:  "#9467bd",
	Check: func(f Fault, v View, bad Report) {
		if t, ok := v.Target(f.Target); ok && !t.Client && t.NoClock != "" {
			bad("target", "%s", t.NoClock)
		}
		if f.Offset == 0 && f.Rate == 0 {
			bad("offset", "a clock fault needs an offset (e.g. offset: 2s) or a rate (e.g. rate: 1.1)")
		}
		if f.Rate < 0 {
			bad("rate", "a clock rate must be positive, got %v", f.Rate)
		}
	},
	Suits:     func(t TargetInfo) bool { return t.Client || (t.NoClock == "" && t.Role == "") },
	SuitsWhom: "clients and servers whose clock can be set",
	Draw: func(f *Fault, r Random, rng *rand.Rand) {
		// A step of at least 1 ms, forward or back: a zero step would be no fault at all.
		f.Offset = signed(between(rng, time.Millisecond, max(d(r.MaxOffset), time.Millisecond)+1))
		if rng.IntN(2) == 0 {
			f.Offset = -f.Offset
		}
	},
	Apply:      (*Nemesis).clock,
	ServerActs: []string{"clock"},
	Label: func(f history.Fault) string {
		s := f.Kind + " " + f.Target
		switch {
		case f.Offset > 0:
			s += " +" + time.Duration(f.Offset).String()
		case f.Offset < 0:
			s += " " + time.Duration(f.Offset).String()
		}
		if f.Rate != 0 && f.Rate != 1 {
			s += " ×" + formatRate(f.Rate)
		}
		return s
	},
}

func (n *Nemesis) clock(f Fault, _ bool) {
	setter, _ := n.target(f.Target).(ClockSetter)
	op := n.nextOp()
	start := n.begin(f, op)
	start.Offset, start.Rate = int64(f.Offset.D()), f.Rate
	if setter == nil {
		n.failed(start, f, "target has no clock to set")
		return
	}
	if err := setter.SetClock(f.Offset.D(), f.Rate); err != nil {
		n.failed(start, f, err.Error())
		return
	}
	n.remember(f.Target, setter)
	n.stamp(start)
	n.resumeAtPoint(f)
	end := n.end(f, op)
	if f.For > 0 {
		wait(n.ctx, d(f.For))
		if err := setter.SetClock(0, 1); err != nil {
			end.Type, end.Error = history.Info, err.Error()
		}
		end.Rate = 1 // reset to real time
	} else {
		end.Offset, end.Rate = int64(f.Offset.D()), f.Rate // the clock stays set until healed
	}
	n.stamp(end)
}

// remember notes a clock a fault set, for Heal to reset.
func (n *Nemesis) remember(target string, s ClockSetter) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.skewed[target] = s
}

// resetClocks sets every clock a fault touched back to real time.
func (n *Nemesis) resetClocks() {
	n.mu.Lock()
	skewed := n.skewed
	n.skewed = map[string]ClockSetter{}
	n.mu.Unlock()
	for name, s := range skewed {
		e := history.Event{Process: history.Nemesis, Type: history.Note, F: history.Clock, Target: name, Rate: 1, Error: "reset at heal"}
		if err := s.SetClock(0, 1); err != nil {
			e.Error = "reset at heal failed: " + err.Error()
		}
		n.stamp(e)
	}
}
