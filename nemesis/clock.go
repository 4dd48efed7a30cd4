package nemesis

// Clock: set a target's wall clock to real time + Offset, running at Rate (K7, K8, A7). Clients'
// locks read their own clock (package clock); servers' clocks go through libfaketime. With a
// length the clock is set back after it; Heal resets every clock a fault touched.

import (
	"math/rand/v2"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/internal/yamltime"
)

// ClockParams are a clock fault's own fields. A clock's setting is recorded with these names and
// units wherever the history notes one (history.Faults reads them: a clock left set).
type ClockParams struct {
	Offset yamltime.Signed `yaml:"offset" json:"offset,omitempty"` // the target's clock becomes real time + Offset...
	Rate   float64         `yaml:"rate" json:"rate,omitempty"`     // ...running at Rate (0 or 1: true speed)
}

// trueClock is the setting of a clock given back its true time.
var trueClock = ClockParams{Rate: 1}

var clockKind = define(spec[ClockParams]{
	Weakness: "clock",
	Name:     history.Clock,
	Summary:  "step a client's or server's wall clock by offset, or make it run at rate, for a while or until the end",
	Colour:   "#9467bd",
	Check: func(f Fault, p ClockParams, v View, bad Report) {
		if t, ok := v.Target(f.Target); ok && !t.Client && t.NoClock != "" {
			bad("target", "%s", t.NoClock)
		}
		if p.Offset == 0 && p.Rate == 0 {
			bad("offset", "a clock fault needs an offset (e.g. offset: 2s) or a rate (e.g. rate: 1.1)")
		}
		if p.Rate < 0 {
			bad("rate", "a clock rate must be positive, got %v", p.Rate)
		}
	},
	Suits:     func(t TargetInfo) bool { return t.Client || (t.NoClock == "" && t.Role == "") },
	SuitsWhom: "clients and servers whose clock can be set",
	Draw: func(r Random, rng *rand.Rand) ClockParams {
		// A step of at least 1 ms, forward or back: a zero step would be no fault at all.
		offset := signed(between(rng, time.Millisecond, max(d(r.MaxOffset), time.Millisecond)+1))
		if rng.IntN(2) == 0 {
			offset = -offset
		}
		return ClockParams{Offset: offset}
	},
	CheckRandom: func(r Random, listed bool, bad Report) {
		switch {
		case listed && r.MaxOffset == 0:
			bad("max_offset", "random clock faults step a clock by up to ±max_offset: give one (e.g. max_offset: 2s)")
		case !listed && r.MaxOffset != 0:
			bad("max_offset", "max_offset belongs to packages with clock faults")
		}
	},
	Apply:      (*Nemesis).clock,
	ServerActs: []string{"clock"},
	Label: func(f history.Fault, p ClockParams) string {
		s := f.Kind + " " + f.Target
		switch {
		case p.Offset > 0:
			s += " +" + p.Offset.String()
		case p.Offset < 0:
			s += " " + p.Offset.String()
		}
		if p.Rate != 0 && p.Rate != 1 {
			s += " ×" + formatRate(p.Rate)
		}
		return s
	},
})

func (n *Nemesis) clock(f Fault, p ClockParams, _ bool) {
	setter, _ := n.target(f.Target).(ClockSetter)
	op := n.nextOp()
	start := n.begin(f, op)
	if setter == nil {
		n.failed(start, f, "target has no clock to set")
		return
	}
	if err := setter.SetClock(p.Offset.D(), p.Rate); err != nil {
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
		end.Params = recorded(trueClock) // set back to real time
	} else {
		end.Params = recorded(p) // the clock stays set until healed
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
		e := history.Event{Process: history.Nemesis, Type: history.Note, F: history.Clock, Target: name, Params: recorded(trueClock),
			Error: "reset at heal"}
		if err := s.SetClock(0, 1); err != nil {
			e.Error = "reset at heal failed: " + err.Error()
		}
		n.stamp(e)
	}
}
