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

var partitionKind = &Kind{
	Name:    history.Partition,
	Summary: "cut a client's links to some servers, or a server off from its peers, for a while",
	Takes:   []string{"for", "nodes"},
	Colour:  "#8c564b",
	Check: func(f Fault, v View, bad Report) {
		t, ok := v.Target(f.Target)
		if !ok {
			return
		}
		if t.Client {
			checkClientLinks(f, v, bad)
			return
		}
		if len(t.Peers) == 0 {
			bad("target", "%s has no links to other servers to cut; to cut clients off from it, target a client and list %s in nodes", f.Target, f.Target)
			return
		}
		for _, n := range f.Nodes {
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
	Draw:      func(f *Fault, r Random, rng *rand.Rand) { f.Nodes = subset(rng, r.Nodes) },
	Apply: func(n *Nemesis, f Fault, _ bool) {
		n.linkFault(f, nil, func(net Network) error { return net.Cut(f.Target, f.Nodes) })
	},
	Label:      baseLabel,
	ServerActs: []string{"cut", "heal"},
}

// checkClientLinks checks the links a client's partition or delay names.
func checkClientLinks(f Fault, v View, bad Report) {
	links := v.ClientLinks()
	for _, node := range f.Nodes {
		if !slices.Contains(links, node) {
			bad("nodes", "no such link %q; this scenario has: %s", node, strings.Join(links, ", "))
		}
	}
}

// linkFault applies a fault to links, keeps it for For (or until the run heals) and heals the
// links. more adds the kind's own fields to the invoke event.
func (n *Nemesis) linkFault(f Fault, more func(*history.Event), apply func(Network) error) {
	net := n.net()
	op := n.nextOp()
	start := n.begin(f, op)
	start.Nodes = f.Nodes
	if more != nil {
		more(&start)
	}
	if net == nil {
		n.failed(start, f, "no network to cut")
		return
	}
	if err := apply(net); err != nil {
		_ = net.Heal(f.Target, f.Nodes)
		n.failed(start, f, err.Error())
		return
	}
	n.stamp(start)
	n.resumeAtPoint(f)
	n.hold(f)
	end := n.end(f, op)
	end.Nodes = f.Nodes
	if err := net.Heal(f.Target, f.Nodes); err != nil {
		end.Type, end.Error = history.Info, "heal: "+err.Error()
	}
	n.stamp(end)
}
