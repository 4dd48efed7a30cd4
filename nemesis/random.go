package nemesis

import (
	"math/rand/v2"
	"time"
)

// random runs a seeded random package until healed: faults one at a time, the gaps between them
// drawn uniformly from [Interval/2, 3*Interval/2] so they neither bunch up nor tick like a clock.
// Every draw comes from one seeded generator, so a seed gives the same sequence of faults.
func (n *Nemesis) random(r Random) {
	rng := rand.New(rand.NewPCG(uint64(r.Seed), 0x6e656d65))
	for {
		if !wait(n.ctx, between(rng, r.Interval/2, r.Interval*3/2)) {
			return
		}
		f, ok := r.draw(rng)
		if !ok {
			return
		}
		n.apply(f, false)
		if n.ctx.Err() != nil {
			return
		}
	}
}

// draw picks the next fault: its kind, a target suited to it, and its parameters.
func (r Random) draw(rng *rand.Rand) (Fault, bool) {
	if len(r.Kinds) == 0 {
		return Fault{}, false
	}
	kind := r.Kinds[rng.IntN(len(r.Kinds))]
	targets := r.Targets
	if ts, ok := r.ByKind[kind]; ok {
		targets = ts
	}
	if len(targets) == 0 {
		return Fault{}, false
	}
	f := Fault{Kind: kind, Target: targets[rng.IntN(len(targets))], For: between(rng, r.MinFor, r.MaxFor)}
	switch kind {
	case KillFault:
		f.For = 0
	case ClockFault:
		// A step of at least 1 ms, forward or back: a zero step would be no fault at all.
		f.Offset = between(rng, time.Millisecond, max(r.MaxOffset, time.Millisecond)+1)
		if rng.IntN(2) == 0 {
			f.Offset = -f.Offset
		}
	case PartitionFault, DelayFault:
		f.Nodes = subset(rng, r.Nodes)
		if kind == DelayFault {
			f.Latency = between(rng, time.Millisecond, max(r.MaxLatency, time.Millisecond)+1)
		}
	}
	return f, true
}

// between draws uniformly from [lo, hi) (lo when the range is empty).
func between(rng *rand.Rand, lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(rng.Int64N(int64(hi-lo)))
}

// subset draws a non-empty subset of nodes, kept in their order (nil when there are none: every
// lock node).
func subset(rng *rand.Rand, nodes []string) []string {
	if len(nodes) == 0 {
		return nil
	}
	mask := 1 + rng.IntN(1<<len(nodes)-1) // 1 .. 2^n-1: never empty
	var out []string
	for i, node := range nodes {
		if mask&(1<<i) != 0 {
			out = append(out, node)
		}
	}
	return out
}
