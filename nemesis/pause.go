package nemesis

// Pause: SIGSTOP, then SIGCONT after a while — a GC pause, a VM migration, a swap storm (K2, K3).
// On a client it freezes everything at once: its workload, renewal timers, replies unread in
// socket buffers. On a server, every command sent meanwhile runs after the resume.

import (
	"time"

	"github.com/lockcheck/lockcheck/history"
)

var pauseKind = define(spec[noParams]{
	Silences: true,
	Name:     history.Pause,
	Summary:  "freeze a client or server (SIGSTOP, or the container's freezer) for a while, then let it go on",
	Colour:   "#f0a30a",
	Check: func(f Fault, _ noParams, _ View, bad Report) {
		if f.For == 0 {
			bad("for", "a pause needs a length (e.g. for: 1s)")
		}
	},
	Suits:      func(TargetInfo) bool { return true },
	SuitsWhom:  "any client or server",
	Apply:      (*Nemesis).pause,
	ServerActs: []string{"pause", "resume"},
})

func (n *Nemesis) pause(f Fault, _ noParams, alreadyStopped bool) {
	t := n.target(f.Target)
	op := n.nextOp()
	start := n.begin(f, op)
	if !alreadyStopped {
		if err := t.Pause(); err != nil {
			start.Type, start.Error = history.Fail, err.Error()
			n.stamp(start)
			return
		}
	}
	n.stamp(start)
	healedEarly := !wait(n.ctx, time.Duration(f.For))
	end := n.end(f, op)
	end.Point = f.Point
	if err := t.Resume(); err != nil {
		end.Type, end.Error = history.Info, err.Error()
	} else if healedEarly {
		end.Error = "healed before the planned end"
	}
	n.stamp(end)
}
