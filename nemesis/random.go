package nemesis

import (
	"math/rand/v2"
	"time"
)

// random runs a seeded random package until healed: faults one at a time, the gaps between them
// drawn uniformly from [Interval/2, 3*Interval/2] so they neither bunch up nor tick like a clock.
func (n *Nemesis) random(r Random) {
	rng := rand.New(rand.NewPCG(uint64(r.Seed), 0x6e656d65))
	between := func(lo, hi time.Duration) time.Duration {
		if hi <= lo {
			return lo
		}
		return lo + time.Duration(rng.Int64N(int64(hi-lo)))
	}
	for {
		if !wait(n.ctx, between(r.Interval/2, r.Interval*3/2)) {
			return
		}
		f := Fault{
			Kind:   r.Kinds[rng.IntN(len(r.Kinds))],
			Target: r.Targets[rng.IntN(len(r.Targets))],
			For:    between(r.MinFor, r.MaxFor),
		}
		n.apply(f, false)
		if n.ctx.Err() != nil {
			return
		}
	}
}
