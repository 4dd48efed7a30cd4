package nemesis

// Partition: cut links for a while, or until the run heals. On a client, its links to some servers
// (every one by default; "resource" names the protected resource's): other clients' links to the
// same servers are untouched, so partitions can be asymmetric (K8). On a server, its links to its
// peers (a ZooKeeper server from the ensemble, a replica from its primary), both ways.

import (
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/lockcheck/lockcheck/history"
)

// PartitionParams are a partition's own fields.
type PartitionParams struct {
	Nodes []string `yaml:"nodes" json:"nodes,omitempty"` // the links it cuts (empty: every one)
}

var partitionKind = define(spec[PartitionParams]{
	Silences: true,
	Name:     history.Partition,
	Summary:  "cut a client's links to some servers, or a server off from its peers, for a while",
	Colour:   "#8c564b",
	Check: func(f Fault, p PartitionParams, v View, bad Report) {
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
	Draw:      func(r Random, rng *rand.Rand) PartitionParams { return PartitionParams{Nodes: subset(rng, r.Nodes)} },
	Apply: func(n *Nemesis, f Fault, p PartitionParams, _ bool) {
		n.linkFault(f, p.Nodes, func(net Network) error { return net.Cut(f.Target, p.Nodes) })
	},
	Label:      func(f history.Fault, p PartitionParams) string { return baseLabel(f) + nodesLabel(p.Nodes) },
	ServerActs: []string{"cut", "heal"},
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
// heals) and heals the links. Its invoke and completion record the fault's parameters.
func (n *Nemesis) linkFault(f Fault, nodes []string, apply func(Network) error) {
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
	n.hold(f)
	end := n.end(f, op)
	end.Params = start.Params
	if err := net.Heal(f.Target, nodes); err != nil {
		end.Type, end.Error = history.Info, "heal: "+err.Error()
	}
	n.stamp(end)
}
