package nemesis

// Clock faults: set a target's clock to real time + Offset, running at Rate (K7, K8, A7). Now for
// clients, whose locks read their own clock (package clock); servers' clocks go through
// libfaketime. With a length the clock is set back after it; Heal resets every clock it touched.

import (
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// ClockSetter is a target whose clock a fault can set.
type ClockSetter interface {
	SetClock(offset time.Duration, rate float64) error
}

func (n *Nemesis) clock(f Fault) {
	setter, _ := n.target(f.Target).(ClockSetter)
	op := n.nextOp()
	start := history.Event{Process: history.Nemesis, Type: history.Invoke, F: history.Clock, Op: op,
		Target: f.Target, Point: f.Point, Offset: int64(f.Offset), Rate: f.Rate, Duration: int64(f.For)}
	if setter == nil {
		start.Type, start.Error = history.Fail, "target has no clock to set"
		n.stamp(start)
		n.resumeAtPoint(f)
		return
	}
	if err := setter.SetClock(f.Offset, f.Rate); err != nil {
		start.Type, start.Error = history.Fail, err.Error()
		n.stamp(start)
		n.resumeAtPoint(f)
		return
	}
	n.mu.Lock()
	n.skewed[f.Target] = setter
	n.mu.Unlock()
	n.stamp(start)
	n.resumeAtPoint(f)
	end := history.Event{Process: history.Nemesis, Type: history.OK, F: history.Clock, Op: op, Target: f.Target}
	if f.For > 0 {
		wait(n.ctx, f.For)
		if err := setter.SetClock(0, 1); err != nil {
			end.Type, end.Error = history.Info, err.Error()
		}
		end.Rate = 1 // reset to real time
	} else {
		end.Offset, end.Rate = int64(f.Offset), f.Rate // the clock stays set until healed
	}
	n.stamp(end)
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
