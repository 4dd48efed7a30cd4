package nemesis

// Partition: cut links for a while, or until the run heals. On a client, its links to some servers
// (every one by default; "resource" names the protected resource's): other clients' links to the
// same servers are untouched, so partitions can be asymmetric (K8). On a server, its links to its
// peers (a ZooKeeper server from the ensemble, a replica from its primary), both ways.
//
// Its mode says how the links fail. reset (the default): connections are refused or reset, so
// both ends learn of the partition at once. drop: packets vanish, as with Jepsen's iptables DROP;
// connections stay open, reads and heartbeats go unanswered, and each end learns of the partition
// only from its own timeouts. What is sent during a drop is held and delivered at the heal, as TCP
// retransmits it once the path is back (a connection given up meanwhile is closed at the heal).

import (
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/lockcheck/lockcheck/history"
)

// PartitionParams are a partition's own fields.
type PartitionParams struct {
	Nodes []string `yaml:"nodes" json:"nodes,omitempty"` // the links it cuts (empty: every one)
	Mode  string   `yaml:"mode" json:"mode,omitempty"`   // PartitionModes; "" is reset
}

// Partition modes: how a partition's links fail.
const (
	Reset = "reset" // connections refused or reset
	Drop  = "drop"  // packets vanish: connections hang
)

// PartitionModes lists the modes, the default first.
var PartitionModes = []string{Reset, Drop}

// mode is the partition's mode, the default filled in.
func (p PartitionParams) mode() string {
	if p.Mode == "" {
		return Reset
	}
	return p.Mode
}

// partitionActs are the server actions of a partition in each mode (the names of an external
// cluster's hooks): a drop needs a hook of its own.
var partitionActs = map[string][]string{Reset: {"cut", "heal"}, Drop: {"drop", "heal"}}

var partitionKind = define(spec[PartitionParams]{
	Silences:    true,
	ClientLinks: true,
	Name:        history.Partition,
	Summary:     "cut a client's links to some servers, or a server off from its peers, for a while: connections reset (mode: reset) or packets dropped (mode: drop)",
	Colour:      "#8c564b",
	Check: func(f Fault, p PartitionParams, v View, bad Report) {
		if !slices.Contains(PartitionModes, p.mode()) {
			bad("mode", "unknown mode %q; valid modes: %s (reset: connections fail at once; drop: packets vanish, "+
				"connections hang)", p.Mode, strings.Join(PartitionModes, ", "))
		}
		t, ok := v.Target(f.Target)
		if !ok {
			return
		}
		if t.Client {
			checkClientLinks(p.Nodes, v, bad)
			return
		}
		if len(t.Peers) == 0 {
			bad("target", "%s has no links to other servers to cut; to cut clients off from it, target a client and list %s in nodes", f.Target, f.Target)
			return
		}
		for _, n := range p.Nodes {
			switch {
			case n == f.Target:
				bad("nodes", "%s cannot be cut from itself; its peers: %s", n, strings.Join(t.Peers, ", "))
			case !slices.Contains(t.Peers, n):
				bad("nodes", "no such peer %q; %s's peers: %s", n, f.Target, strings.Join(t.Peers, ", "))
			}
		}
	},
	Suits:     func(t TargetInfo) bool { return t.Client },
	SuitsWhom: "clients only: a client is cut from some lock nodes",
	// Draw draws the nodes, then the mode (the mode's draw came later: a seed draws the same
	// nodes as before it).
	Draw: func(r Random, rng *rand.Rand) PartitionParams {
		nodes := subset(rng, r.Nodes)
		return PartitionParams{Nodes: nodes, Mode: PartitionModes[rng.IntN(len(PartitionModes))]}
	},
	Apply: func(n *Nemesis, f Fault, p PartitionParams, _ bool) {
		p.Mode = p.mode() // the history records the mode, the default too
		f.Params = p
		n.linkFault(f, p.Nodes, func(net Network) error {
			if p.Mode == Drop {
				return net.Drop(f.Target, p.Nodes)
			}
			return net.Cut(f.Target, p.Nodes)
		}, nil)
	},
	// Label names the mode a history recorded ("partition client-1 drop ↔ n1"); histories
	// written before modes existed recorded none, and were resets.
	Label: func(f history.Fault, p PartitionParams) string {
		s := baseLabel(f)
		if p.Mode != "" {
			s += " " + p.Mode
		}
		return s + nodesLabel(p.Nodes)
	},
	// ServerActs are the default mode's; ActsOf gives each fault's.
	ServerActs: partitionActs[Reset],
	ActsOf: func(p PartitionParams) []string {
		if acts, ok := partitionActs[p.mode()]; ok {
			return acts
		}
		return partitionActs[Reset]
	},
})

// checkClientLinks checks the links a client's partition or delay names.
func checkClientLinks(nodes []string, v View, bad Report) {
	links := v.ClientLinks()
	for _, node := range nodes {
		if !slices.Contains(links, node) {
			bad("nodes", "no such link %q; this scenario has: %s", node, strings.Join(links, ", "))
		}
	}
}

// linkFault applies a fault to a target's links to nodes, keeps it for For (or until the run
// heals; or until ended reports true, when given, whichever comes first) and heals the links.
// Its invoke and completion record the fault's parameters.
func (n *Nemesis) linkFault(f Fault, nodes []string, apply func(Network) error, ended func() bool) {
	net := n.net()
	op := n.nextOp()
	start := n.begin(f, op)
	if net == nil {
		n.failed(start, f, "no network to cut")
		return
	}
	if err := apply(net); err != nil {
		_ = net.Heal(f.Target, nodes)
		n.failed(start, f, err.Error())
		return
	}
	n.stamp(start)
	n.resumeAtPoint(f)
	n.holdUntil(f, ended)
	end := n.end(f, op)
	end.Params = start.Params
	if err := net.Heal(f.Target, nodes); err != nil {
		end.Type, end.Error = history.Info, "heal: "+err.Error()
	}
	n.stamp(end)
}
