package nemesis

// Crash: SIGKILL a server (no shutdown, no flush), keep it down for a while, and start it again on
// the same address with the same data (K9, A10; a ZooKeeper leader change). What survives is what
// the server had persisted.

import (
	"context"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// restartBudget bounds a restart (a ZooKeeper node rejoining an ensemble takes about a second).
const restartBudget = 30 * time.Second

var crashKind = define(spec[noParams]{
	Weakness: "crash",
	Name:     history.Crash,
	Summary:  "kill a server (SIGKILL) and restart it after for, with whatever it had persisted",
	Colour:   "#e377c2",
	Check: func(f Fault, _ noParams, v View, bad Report) {
		t, ok := v.Target(f.Target)
		switch {
		case !ok:
		case t.Client:
			bad("target", "crash restarts a server; to end a client use kill")
		case !t.Restart:
			bad("target", "%s cannot be restarted", f.Target)
		}
	},
	Suits:     func(t TargetInfo) bool { return !t.Client && t.Restart },
	SuitsWhom: "servers only",
	Apply:     (*Nemesis).crash,
	// Histories written before the fault registry named the server's side of a crash so.
	Aliases:    []string{"crash-restart"},
	ServerActs: []string{"kill", "restart"},
})

func (n *Nemesis) crash(f Fault, _ noParams, _ bool) {
	t := n.target(f.Target)
	op := n.nextOp()
	start := n.begin(f, op)
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
	healedEarly := !wait(n.ctx, d(f.For)) // down for For; a heal restarts it at once
	ctx, cancel := context.WithTimeout(context.Background(), restartBudget)
	defer cancel()
	end := n.end(f, op)
	if err := r.Restart(ctx); err != nil {
		end.Type, end.Error = history.Info, "restart: "+err.Error()
	} else if healedEarly {
		end.Error = "restarted early: healed before the planned end"
	}
	n.stamp(end)
}
