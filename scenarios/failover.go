package scenarios

// Failover scenarios: `replicas: R` gives the single Redis primary n1 replicas n2..n(1+R), each
// replicating through its own proxy, and `sentinels: S` (default 3) Redis Sentinels that promote
// a replica when the primary dies. Clients follow Sentinel. Extra nemesis targets:
//   - primary: whichever node is primary when the fault starts (crash it to force a failover);
//   - n2..: the replicas, for pause, crash and clock like any node, and `partition` with no
//     nodes, which cuts that replica's replication link (so writes miss it);
//   - s1..: the sentinels, for pause and crash.

import (
	"fmt"
	"strings"

	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/nemesis"
)

// Primary names whichever Redis node is primary (per Sentinel) when a fault strikes.
const Primary = "primary"

func (s *Scenario) failoverDefaults() {
	if s.Replicas > 0 && s.Sentinels == 0 {
		s.Sentinels = 3
	}
}

// ReplicaNames lists the replicas' node names (none without failover).
func (s *Scenario) ReplicaNames() []string {
	var out []string
	for i := 1; i <= s.Replicas; i++ {
		out = append(out, fmt.Sprintf("n%d", s.Nodes+i))
	}
	return out
}

// SentinelNames lists the sentinels (none without failover).
func (s *Scenario) SentinelNames() []string {
	if s.Replicas == 0 {
		return nil
	}
	var out []string
	for i := 1; i <= s.Sentinels; i++ {
		out = append(out, fmt.Sprintf("s%d", i))
	}
	return out
}

// failoverNodeNames are the replicas and sentinels: servers a client has links to, besides
// NodeNames.
func (s *Scenario) failoverNodeNames() []string {
	return append(s.ReplicaNames(), s.SentinelNames()...)
}

func (s *Scenario) failoverTargets() []string {
	if s.Replicas == 0 {
		return nil
	}
	return append(s.failoverNodeNames(), Primary)
}

func (s *Scenario) isReplica(name string) bool { return contains(s.ReplicaNames(), name) }

// failoverTargetNeedsReplicas reports (and explains) a failover target named without replicas.
func (s *Scenario) failoverTargetNeedsReplicas(p, target string, bad func(string, string, ...any)) bool {
	if target != Primary || s.Replicas > 0 {
		return false
	}
	bad(p+".target", "target %q is the primary of a failover: give the lock replicas (e.g. replicas: 1)", target)
	return true
}

// validateReplicationCut checks a partition of a replica: it cuts its replication link, nothing
// else.
func (s *Scenario) validateReplicationCut(p string, f Fault, bad func(string, string, ...any)) {
	if len(f.Nodes) > 0 {
		bad(p+".nodes", "a partition of replica %s cuts its replication link; leave nodes out", f.Target)
	}
}

func (s *Scenario) validateFailover(bad func(string, string, ...any)) {
	if s.Replicas < 0 {
		bad("replicas", "cannot be negative, got %d", s.Replicas)
	}
	if s.Replicas == 0 {
		if s.Sentinels != 0 {
			bad("sentinels", "sentinels watch a primary with replicas: add replicas (e.g. replicas: 1)")
		}
		return
	}
	if s.Replicas > 4 {
		bad("replicas", "at most 4, got %d", s.Replicas)
	}
	if s.Sentinels < 1 || s.Sentinels > 7 {
		bad("sentinels", "between 1 and 7, got %d", s.Sentinels)
	}
	d, err := locks.Get(s.Lock)
	switch {
	case err != nil:
	case s.Service() != locks.Redis:
		bad("replicas", "failover is for Redis locks; %s runs on %s", s.Lock, s.Service())
	case d.Nodes != 1 || s.Nodes != 1:
		bad("replicas", "failover gives one Redis primary replicas; %s uses %d node(s): use a single-node design (e.g. set-nx-px)", s.Lock, s.Nodes)
	}
	for i, f := range s.Nemesis {
		p := fmt.Sprintf("nemesis[%d]", i)
		if f.Fault == nemesis.ClockFault && strings.HasPrefix(f.Target, "s") && contains(s.SentinelNames(), f.Target) {
			bad(p+".target", "sentinels do not run under libfaketime; set a data node's clock (n1.., primary)")
		}
	}
}
