package nemesis

// Crash-restart of a server: SIGKILL (no shutdown, no flush), down for a while, started again on
// the same address with the same data folder (K9, A10; a ZooKeeper leader change).

import (
	"context"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// Restarter is a target that can be started again after it was killed.
type Restarter interface {
	Restart(ctx context.Context) error
}

// restartBudget bounds a restart (a ZooKeeper node rejoining an ensemble takes about a second).
const restartBudget = 30 * time.Second

func (n *Nemesis) crash(f Fault) {
	t := n.target(f.Target)
	op := n.nextOp()
	start := history.Event{Process: history.Nemesis, Type: history.Invoke, F: history.CrashRestart, Op: op,
		Target: f.Target, Point: f.Point, Duration: int64(f.For)}
	r, ok := t.(Restarter)
	if !ok {
		start.Type, start.Error = history.Fail, "target cannot be restarted"
		n.stamp(start)
		return
	}
	if err := t.Kill(); err != nil {
		start.Type, start.Error = history.Fail, err.Error()
		n.stamp(start)
		return
	}
	n.stamp(start)
	healedEarly := !wait(n.ctx, f.For) // down for For; a heal restarts it at once
	ctx, cancel := context.WithTimeout(context.Background(), restartBudget)
	defer cancel()
	end := history.Event{Process: history.Nemesis, Type: history.OK, F: history.CrashRestart, Op: op, Target: f.Target}
	if err := r.Restart(ctx); err != nil {
		end.Type, end.Error = history.Info, "restart: "+err.Error()
	} else if healedEarly {
		end.Error = "restarted early: healed before the planned end"
	}
	n.stamp(end)
}
