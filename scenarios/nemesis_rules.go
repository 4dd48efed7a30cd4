package scenarios

// Rules for nemesis entries beyond validate's per-field checks: clock strobes, quorum cuts between
// ZooKeeper servers, random packages, and schedules that could not be carried out as written
// (they are refused before anything starts, naming the line).

import (
	"fmt"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/nemesis"
)

// minStrobePeriod: libfaketime re-reads a node's clock file at most once a second
// (cluster/faketime.go), so a faster strobe would skip flips.
const minStrobePeriod = time.Second

// randomKinds are the faults a random package may draw (a strobe is planned, not drawn).
var randomKinds = []string{nemesis.PauseFault, nemesis.KillFault, nemesis.ClockFault, nemesis.CrashFault,
	nemesis.PartitionFault, nemesis.DelayFault}

// randomSuits says which targets each random fault may act on, and why in an error.
var randomSuits = map[string]string{
	nemesis.PauseFault:     "any client or server",
	nemesis.KillFault:      "clients only",
	nemesis.ClockFault:     "clients and Redis lock nodes",
	nemesis.CrashFault:     "servers only",
	nemesis.PartitionFault: "clients only: a client is cut from some lock nodes",
	nemesis.DelayFault:     "clients only: a client's traffic to some lock nodes is held back",
}

func isClientName(name string) bool { return strings.HasPrefix(name, "client-") }

// isZKServer reports whether name is one of the scenario's ZooKeeper servers (zk1..).
func (s *Scenario) isZKServer(name string) bool {
	return s.Service() == locks.ZooKeeper && contains(s.NodeNames(), name)
}

// isRedisLockNode reports whether name is a Redis lock node, whose clock runs under libfaketime.
func (s *Scenario) isRedisLockNode(name string) bool {
	return s.Service() == locks.Redis && contains(s.NodeNames(), name)
}

// validateQuorumCut checks a partition of a ZooKeeper server from its peers (both directions of
// each quorum and election link); nodes empty means every peer.
func (s *Scenario) validateQuorumCut(p string, f Fault, bad func(string, string, ...any)) {
	var peers []string
	for _, n := range s.NodeNames() {
		if n != f.Target {
			peers = append(peers, n)
		}
	}
	if len(peers) == 0 {
		bad(p+".target", "%s has no peers to be cut from: a quorum cut needs an ensemble (nodes: 3)", f.Target)
		return
	}
	for _, n := range f.Nodes {
		switch {
		case n == f.Target:
			bad(p+".nodes", "%s cannot be cut from itself; its peers: %s", n, strings.Join(peers, ", "))
		case !contains(peers, n):
			bad(p+".nodes", "no such peer %q; %s's peers: %s", n, f.Target, strings.Join(peers, ", "))
		}
	}
}

// validateNemesisRules checks what validate's loop does not: strobes, periods, kills with a
// length, and two faults planned at the same pass of the same point.
func (s *Scenario) validateNemesisRules(bad func(string, string, ...any)) {
	atPass := map[string]int{}
	for i, f := range s.Nemesis {
		if f.Random != nil {
			continue
		}
		p := fmt.Sprintf("nemesis[%d]", i)
		if f.Fault == nemesis.StrobeFault {
			if !s.isRedisLockNode(f.Target) {
				bad(p+".target", "a strobe flips a Redis lock node's clock (libfaketime); %s is not one (lock nodes: %s)",
					f.Target, strings.Join(s.redisLockNodes(), ", "))
			}
			switch {
			case f.Period == 0:
				bad(p+".period", "a strobe needs a period (e.g. period: 1s)")
			case f.Period.D() < minStrobePeriod:
				bad(p+".period", "%s is below %s: libfaketime re-reads a node's clock at most once a second, so faster flips would be missed",
					f.Period.D(), minStrobePeriod)
			}
			if f.Offset == 0 {
				bad(p+".offset", "a strobe needs an offset to flip to (e.g. offset: 5s)")
			}
			if f.Rate != 0 {
				bad(p+".rate", "a strobe flips between true time and the offset; it has no rate")
			}
		} else if f.Period != 0 {
			bad(p+".period", "period belongs to strobe faults only")
		}
		if f.Fault == nemesis.KillFault && f.For != 0 {
			bad(p+".for", "a kill is instant and a client stays dead; to bring a server back use crash")
		}
		if f.Point != "" {
			if f.Occurrence < 1 {
				bad(p+".occurrence", "passes count from 1, got %d", f.Occurrence)
			}
			key := fmt.Sprintf("%s %s %d", f.Target, f.Point, f.Occurrence)
			if j, dup := atPass[key]; dup {
				bad(p+".occurrence", "nemesis[%d] already acts on %s at pass %d of %s: one fault per pass", j, f.Target, f.Occurrence, f.Point)
			} else {
				atPass[key] = i
			}
		}
	}
}

func (s *Scenario) redisLockNodes() []string {
	if s.Service() != locks.Redis {
		return nil
	}
	return s.NodeNames()
}

// RandomTargets lists, for each fault kind of r, the targets it may act on: the nemesis draws
// a kind, then a target from its list.
func (s *Scenario) RandomTargets(r Random) map[string][]string {
	out := map[string][]string{}
	for _, k := range r.Faults {
		for _, t := range r.Targets {
			if s.randomSuits(k, t) {
				out[k] = append(out[k], t)
			}
		}
	}
	return out
}

func (s *Scenario) randomSuits(kind, target string) bool {
	client := isClientName(target)
	switch kind {
	case nemesis.PauseFault:
		return true
	case nemesis.KillFault, nemesis.PartitionFault, nemesis.DelayFault:
		return client
	case nemesis.ClockFault:
		return client || s.isRedisLockNode(target)
	case nemesis.CrashFault:
		return !client
	}
	return false
}

func (s *Scenario) validateRandom(p string, r Random, targets []string, bad func(string, string, ...any)) {
	if len(r.Faults) == 0 {
		bad(p+".faults", "list at least one fault (%s)", strings.Join(randomKinds, ", "))
	}
	byKind := s.RandomTargets(r)
	for _, k := range r.Faults {
		switch {
		case !contains(randomKinds, k):
			bad(p+".faults", "random packages draw from %s; got %q", strings.Join(randomKinds, ", "), k)
		case len(r.Targets) > 0 && len(byKind[k]) == 0:
			bad(p+".targets", "none of the targets can take a %s (%s)", k, randomSuits[k])
		}
	}
	if len(r.Targets) == 0 {
		bad(p+".targets", "list the targets to pick from: %s", strings.Join(targets, ", "))
	}
	for _, t := range r.Targets {
		if !contains(targets, t) {
			bad(p+".targets", "no such target %q; this scenario has: %s", t, strings.Join(targets, ", "))
			continue
		}
		used := false
		for _, k := range r.Faults {
			used = used || s.randomSuits(k, t)
		}
		if !used && len(r.Faults) > 0 {
			bad(p+".targets", "%s takes none of the listed faults (%s)", t, strings.Join(r.Faults, ", "))
		}
	}
	if r.Interval == 0 {
		bad(p+".interval", "missing: the mean time between faults")
	}
	if r.MaxFor < r.MinFor || r.MaxFor == 0 {
		bad(p+".max_for", "need 0 < min_for <= max_for")
	}
	clock, delay := contains(r.Faults, nemesis.ClockFault), contains(r.Faults, nemesis.DelayFault)
	switch {
	case clock && r.MaxOffset == 0:
		bad(p+".max_offset", "random clock faults step a clock by up to ±max_offset: give one (e.g. max_offset: 2s)")
	case !clock && r.MaxOffset != 0:
		bad(p+".max_offset", "max_offset belongs to packages with clock faults")
	}
	switch {
	case delay && r.MaxLatency == 0:
		bad(p+".max_latency", "random delays hold traffic back by up to max_latency: give one (e.g. max_latency: 500ms)")
	case !delay && r.MaxLatency != 0:
		bad(p+".max_latency", "max_latency belongs to packages with delay faults")
	}
}
