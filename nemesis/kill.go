package nemesis

// Kill: SIGKILL of a client — a crash with no chance to clean up or release. The client stays
// dead; servers are killed and brought back by crash.

import "github.com/lockcheck/lockcheck/history"

var killKind = define(spec[noParams]{
	Name:    history.Kill,
	Summary: "end a client at once (SIGKILL): it never releases what it holds",
	Instant: "a kill is instant and a client stays dead; to bring a server back use crash",
	Colour:  "#d62728",
	Check: func(f Fault, _ noParams, v View, bad Report) {
		if t, ok := v.Target(f.Target); ok && !t.Client {
			bad("target", "kill ends a client; to kill and restart a server use crash")
		}
	},
	Suits:     func(t TargetInfo) bool { return t.Client },
	SuitsWhom: "clients only",
	Apply:     (*Nemesis).kill,
})

func (n *Nemesis) kill(f Fault, _ noParams, _ bool) {
	op := n.nextOp()
	start := n.begin(f, op)
	start.Duration = 0
	n.stamp(start)
	end := n.end(f, op)
	end.Point = f.Point
	if err := n.target(f.Target).Kill(); err != nil {
		end.Type, end.Error = history.Fail, err.Error()
	}
	n.stamp(end)
}
