package nemesis

// Process faults: pause (SIGSTOP, then SIGCONT after a while: a GC pause, a VM migration, a swap
// storm — K2, K3) and kill (SIGKILL: a crash with no chance to clean up).

import "github.com/lockcheck/lockcheck/history"

func (n *Nemesis) pause(f Fault, alreadyStopped bool) {
	t := n.target(f.Target)
	op := n.nextOp()
	start := history.Event{Process: history.Nemesis, Type: history.Invoke, F: history.Pause, Op: op,
		Target: f.Target, Point: f.Point, Duration: int64(f.For)}
	if !alreadyStopped {
		if err := t.Stop(); err != nil {
			start.Type, start.Error = history.Fail, err.Error()
			n.stamp(start)
			return
		}
	}
	n.stamp(start)
	healedEarly := !wait(n.ctx, f.For)
	end := history.Event{Process: history.Nemesis, Type: history.OK, F: history.Pause, Op: op, Target: f.Target, Point: f.Point}
	if err := t.Cont(); err != nil {
		end.Type, end.Error = history.Info, err.Error()
	} else if healedEarly {
		end.Error = "healed before the planned end"
	}
	n.stamp(end)
}

func (n *Nemesis) kill(f Fault) {
	op := n.nextOp()
	n.stamp(history.Event{Process: history.Nemesis, Type: history.Invoke, F: history.Kill, Op: op, Target: f.Target, Point: f.Point})
	end := history.Event{Process: history.Nemesis, Type: history.OK, F: history.Kill, Op: op, Target: f.Target, Point: f.Point}
	if err := n.target(f.Target).Kill(); err != nil {
		end.Type, end.Error = history.Fail, err.Error()
	}
	n.stamp(end)
}

// resumeAtPoint lets a client that stopped itself at a program point go on once a fault other
// than a pause or kill has taken effect there (a partition or clock step "right after acquire").
func (n *Nemesis) resumeAtPoint(f Fault) {
	if f.Point != "" {
		if t := n.target(f.Target); t != nil {
			_ = t.Cont()
		}
	}
}

func (n *Nemesis) stamp(e history.Event) {
	e.Time = history.Now()
	n.record(e)
}
