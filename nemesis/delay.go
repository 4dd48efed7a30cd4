package nemesis

// Delay: hold back every byte a client sends on some links by a latency (± jitter), for a while:
// a request sent in time arrives late (K4). At the heal, data held back is delivered.

import (
	"math/rand/v2"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

var delayKind = &Kind{
	Name:    history.Delay,
	Summary: "hold back what a client sends to some servers (or the resource) by latency ± jitter, for a while",
	Takes:   []string{"for", "nodes", "latency", "jitter"},
	Colour:  "#17becf",
	Check: func(f Fault, v View, bad Report) {
		if t, ok := v.Target(f.Target); ok && !t.Client {
			bad("target", "a delay acts on a client's links: target a client and list the nodes (or resource)")
		}
		checkClientLinks(f, v, bad)
		if f.Latency == 0 {
			bad("latency", "a delay needs a latency (e.g. latency: 1s)")
		}
	},
	Suits:     func(t TargetInfo) bool { return t.Client },
	SuitsWhom: "clients only: a client's traffic to some lock nodes is held back",
	Draw: func(f *Fault, r Random, rng *rand.Rand) {
		f.Nodes = subset(rng, r.Nodes)
		f.Latency = dur(between(rng, time.Millisecond, max(d(r.MaxLatency), time.Millisecond)+1))
	},
	Apply: func(n *Nemesis, f Fault, _ bool) {
		n.linkFault(f, func(e *history.Event) { e.Latency = int64(d(f.Latency)) }, func(net Network) error {
			return net.Delay(f.Target, f.Nodes, d(f.Latency), d(f.Jitter))
		})
	},
	Label: func(f history.Fault) string {
		s := f.Kind + " " + f.Target
		if f.Latency != 0 {
			s += " +" + time.Duration(f.Latency).String()
		}
		return s + nodesLabel(f.Nodes)
	},
}
