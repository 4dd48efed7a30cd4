package nemesis

// Delay: hold back every byte a client sends on some links by a latency (± jitter), for a while:
// a request sent in time arrives late (K4). At the heal, data held back is delivered. A delay may
// instead last until another client has read the resource (until: next-read): what it held back
// then lands inside that client's read-modify-write, the moment a late write does harm, rather
// than wherever a fixed latency happens to put it.

import (
	"math/rand/v2"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/internal/yamltime"
)

// DelayParams are a delay's own fields.
type DelayParams struct {
	Nodes   []string          `yaml:"nodes" json:"nodes,omitempty"`     // the links it acts on (empty: every one)
	Latency yamltime.Duration `yaml:"latency" json:"latency,omitempty"` // how long each byte is held back...
	Jitter  yamltime.Duration `yaml:"jitter" json:"jitter,omitempty"`   // ...give or take this much
	// Until ends the delay early at an event (UntilNextRead), delivering what it held back; its
	// latency is then the fault's whole length unless given.
	Until string `yaml:"until" json:"until,omitempty"`
	// OldLatency is where histories written before latency had a key of its own kept it.
	OldLatency yamltime.Duration `yaml:"-" json:"offset,omitempty"`
}

// UntilNextRead ends a delay once a client other than its target completes a read of the resource.
const UntilNextRead = "next-read"

var delayKind = define(spec[DelayParams]{
	ClientLinks: true,
	Silences:    true, // with every link held back for the whole fault
	LandsLate:   true,
	Name:        history.Delay,
	Summary:     "hold back what a client sends to some servers (or the resource) by latency ± jitter, for a while",
	Colour:      "#17becf",
	Check: func(f Fault, p DelayParams, v View, bad Report) {
		if t, ok := v.Target(f.Target); ok && !t.Client {
			bad("target", "a delay acts on a client's links: target a client and list the nodes (or resource)")
		}
		checkClientLinks(p.Nodes, v, bad)
		switch {
		case p.Until != "" && p.Until != UntilNextRead:
			bad("until", "a delay can last until %s (another client has read the resource), or for its latency", UntilNextRead)
		case p.Until != "" && f.For == 0:
			bad("for", "a delay until %s needs a for: to bound it when no other client reads", UntilNextRead)
		case p.Latency == 0 && p.Until == "":
			bad("latency", "a delay needs a latency (e.g. latency: 1s) or until: %s", UntilNextRead)
		}
	},
	Suits:     func(t TargetInfo) bool { return t.Client },
	SuitsWhom: "clients only: a client's traffic to some lock nodes is held back",
	Draw: func(r Random, rng *rand.Rand) DelayParams {
		nodes := subset(rng, r.Nodes)
		return DelayParams{Nodes: nodes, Latency: dur(between(rng, time.Millisecond, max(d(r.MaxLatency), time.Millisecond)+1))}
	},
	CheckRandom: func(r Random, listed bool, bad Report) {
		switch {
		case listed && r.MaxLatency == 0:
			bad("max_latency", "random delays hold traffic back by up to max_latency: give one (e.g. max_latency: 500ms)")
		case !listed && r.MaxLatency != 0:
			bad("max_latency", "max_latency belongs to packages with delay faults")
		}
	},
	Apply: func(n *Nemesis, f Fault, p DelayParams, _ bool) {
		latency := d(p.Latency)
		var ended func() bool // nil: the fault's length alone
		if p.Until == UntilNextRead {
			// Counted from the start: a read that completes after this lets the held-back bytes go.
			before := n.state.ReadsByOthers(f.Target)
			ended = func() bool { return n.state.ReadsByOthers(f.Target) > before }
			if latency == 0 {
				latency = d(f.For) // everything waits for the heal
			}
		}
		n.linkFault(f, p.Nodes, func(net Network) error {
			return net.Delay(f.Target, p.Nodes, latency, d(p.Jitter))
		}, ended)
	},
	Label: func(f history.Fault, p DelayParams) string {
		s := f.Kind + " " + f.Target
		latency := p.Latency
		if latency == 0 {
			latency = p.OldLatency
		}
		switch {
		case p.Until != "":
			s += " until " + p.Until
		case latency != 0:
			s += " +" + time.Duration(latency).String()
		}
		return s + nodesLabel(p.Nodes)
	},
})
