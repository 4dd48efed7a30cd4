package nemesis

// Partitions: cut a client's links to some lock nodes (all of them by default) for a while, or
// until the run heals. The links are toxiproxy proxies, so a cut is a real refused/reset TCP
// connection, and other clients' links to the same nodes are untouched (asymmetric partitions,
// K8).

import (
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// Network cuts, delays and heals a client's links to nodes; nodes empty means every lock node
// ("resource" names the protected resource's link).
type Network interface {
	Cut(client string, nodes []string) error
	Heal(client string, nodes []string) error
	// Delay holds every byte the client sends on those links for latency ± jitter: a request sent
	// in time arrives late (K4). Heal removes it; data held back is then delivered.
	Delay(client string, nodes []string, latency, jitter time.Duration) error
}

// SetNetwork gives the nemesis the links it may cut.
func (n *Nemesis) SetNetwork(net Network) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.network = net
}

func (n *Nemesis) partition(f Fault) {
	n.linkFault(f, history.Partition, func(net Network) error { return net.Cut(f.Target, f.Nodes) })
}

func (n *Nemesis) delay(f Fault) {
	n.linkFault(f, history.Delay, func(net Network) error { return net.Delay(f.Target, f.Nodes, f.Latency, f.Jitter) })
}

// linkFault applies a fault to a client's links, keeps it for For (or until the run heals) and
// heals the links.
func (n *Nemesis) linkFault(f Fault, name string, apply func(Network) error) {
	n.mu.Lock()
	net := n.network
	n.mu.Unlock()
	op := n.nextOp()
	start := history.Event{Process: history.Nemesis, Type: history.Invoke, F: name, Op: op,
		Target: f.Target, Nodes: f.Nodes, Point: f.Point, Duration: int64(f.For), Offset: int64(f.Latency)}
	if net == nil {
		start.Type, start.Error = history.Fail, "no network to cut"
		n.stamp(start)
		n.resumeAtPoint(f)
		return
	}
	if err := apply(net); err != nil {
		start.Type, start.Error = history.Fail, err.Error()
		_ = net.Heal(f.Target, f.Nodes)
		n.stamp(start)
		n.resumeAtPoint(f)
		return
	}
	n.stamp(start)
	n.resumeAtPoint(f)
	if f.For > 0 {
		wait(n.ctx, f.For)
	} else {
		<-n.ctx.Done() // cut until the run heals
	}
	end := history.Event{Process: history.Nemesis, Type: history.OK, F: name, Op: op, Target: f.Target, Nodes: f.Nodes}
	if err := net.Heal(f.Target, f.Nodes); err != nil {
		end.Type, end.Error = history.Info, "heal: "+err.Error()
	}
	n.stamp(end)
}
