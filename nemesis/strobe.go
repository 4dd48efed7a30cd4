package nemesis

// Clock strobe: a server's clock flips between true time and true time + Offset every Period,
// for For (or until healed), then is set back to true time. A lease's remaining time then jumps
// back and forth, and one that falls due while the clock is ahead expires early. The flips are
// noted in the history with the offset each one set.

import (
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// Strobe is the history's name for a clock strobe.
const Strobe = "strobe"

func (n *Nemesis) strobe(f Fault) {
	setter, _ := n.target(f.Target).(ClockSetter)
	op := n.nextOp()
	start := history.Event{Process: history.Nemesis, Type: history.Invoke, F: Strobe, Op: op,
		Target: f.Target, Point: f.Point, Offset: int64(f.Offset), Duration: int64(f.For)}
	fail := func(err string) {
		start.Type, start.Error = history.Fail, err
		n.stamp(start)
		n.resumeAtPoint(f)
	}
	if setter == nil {
		fail("target has no clock to set")
		return
	}
	if f.Period <= 0 {
		fail("a strobe needs a period")
		return
	}
	if err := setter.SetClock(f.Offset, 1); err != nil {
		fail(err.Error())
		return
	}
	n.mu.Lock()
	n.skewed[f.Target] = setter // whatever happens, Heal sets it back
	n.mu.Unlock()
	n.stamp(start)
	n.resumeAtPoint(f)

	var end <-chan time.Time
	if f.For > 0 {
		t := time.NewTimer(f.For)
		defer t.Stop()
		end = t.C
	}
	tick := time.NewTicker(f.Period)
	defer tick.Stop()
	ahead := true
	done := history.Event{Process: history.Nemesis, Type: history.OK, F: Strobe, Op: op, Target: f.Target, Rate: 1}
loop:
	for {
		select {
		case <-tick.C:
			ahead = !ahead
			offset := time.Duration(0)
			if ahead {
				offset = f.Offset
			}
			flip := history.Event{Process: history.Nemesis, Type: history.Note, F: Strobe, Op: op, Target: f.Target, Offset: int64(offset), Rate: 1}
			if err := setter.SetClock(offset, 1); err != nil {
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
