package nemesis

import (
	"math/rand/v2"
	"time"
)

// Draw exposes a random package's draw to the package's external tests.
func (r Random) Draw(rng *rand.Rand) (Fault, bool) { return r.draw(rng) }

// Between exposes the uniform draw random packages use.
func Between(rng *rand.Rand, lo, hi time.Duration) time.Duration { return between(rng, lo, hi) }

// Subset exposes the draw of a non-empty subset of nodes.
func Subset(rng *rand.Rand, nodes []string) []string { return subset(rng, nodes) }
