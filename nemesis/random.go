package nemesis

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/internal/yamltime"
)

// random runs a seeded random package until healed: faults one at a time, the gaps between them
// drawn uniformly from [Interval/2, 3*Interval/2] so they neither bunch up nor tick like a clock.
// Every draw comes from one seeded generator, so a seed gives the same sequence of faults.
func (n *Nemesis) random(r Random) {
	rng := rand.New(rand.NewPCG(uint64(r.Seed), 0x6e656d65))
	for {
		if !wait(n.ctx, between(rng, d(r.Interval)/2, d(r.Interval)*3/2)) {
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

// targetsOf lists the targets the package may aim kind at: its own list when it has one.
func (r Random) targetsOf(kind string) []string {
	if ts, ok := r.ByKind[kind]; ok {
		return ts
	}
	return r.Targets
}

// draw picks the next fault: its kind, a target suited to it, its length and its parameters.
func (r Random) draw(rng *rand.Rand) (Fault, bool) {
	if len(r.Faults) == 0 {
		return Fault{}, false
	}
	kind := r.Faults[rng.IntN(len(r.Faults))]
	targets := r.targetsOf(kind)
	k, err := Lookup(kind)
	if len(targets) == 0 || err != nil {
		return Fault{}, false
	}
	f := Fault{Kind: kind, Target: targets[rng.IntN(len(targets))], For: dur(between(rng, d(r.MinFor), d(r.MaxFor)))}
	k.drawParams(&f, r, rng)
	return f, true
}

// Suitable lists, for each kind r draws, the targets it may act on: the nemesis draws a kind,
// then a target from its list.
func (r Random) Suitable(v View) map[string][]string {
	out := map[string][]string{}
	for _, name := range r.Faults {
		k, err := Lookup(name)
		if err != nil || k.Suits == nil {
			continue
		}
		for _, t := range r.Targets {
			if info, ok := v.Target(t); ok && k.Suits(info) {
				out[name] = append(out[name], t)
			}
		}
	}
	return out
}

// CheckRandom checks a random package against the scenario; fields are relative to the package
// ("faults", "targets", "max_offset", ...). targets lists every target of the scenario.
func CheckRandom(r Random, v View, targets []string, bad Report) {
	if r.Mode != "" && !slices.Contains(Modes, r.Mode) {
		bad("mode", "unknown mode %q; valid modes: %s", r.Mode, strings.Join(Modes, ", "))
	}
	drawable := RandomNames()
	if len(r.Faults) == 0 {
		bad("faults", "list at least one fault (%s)", strings.Join(drawable, ", "))
	}
	byKind := r.Suitable(v)
	for _, name := range r.Faults {
		k, err := Lookup(name)
		switch {
		case err != nil || k.Suits == nil:
			bad("faults", "random packages draw from %s; got %q", strings.Join(drawable, ", "), name)
		case len(r.Targets) > 0 && len(byKind[name]) == 0:
			bad("targets", "none of the targets can take a %s (%s)", name, k.SuitsWhom)
		}
	}
	if len(r.Targets) == 0 {
		bad("targets", "list the targets to pick from: %s", strings.Join(targets, ", "))
	}
	for _, t := range r.Targets {
		info, ok := v.Target(t)
		if !ok {
			bad("targets", "no such target %q; this scenario has: %s", t, strings.Join(targets, ", "))
			continue
		}
		used := false
		for _, name := range r.Faults {
			if k, err := Lookup(name); err == nil && k.Suits != nil && k.Suits(info) {
				used = true
			}
		}
		if !used && len(r.Faults) > 0 {
			bad("targets", "%s takes none of the listed faults (%s)", t, strings.Join(r.Faults, ", "))
		}
	}
	if r.Interval == 0 {
		bad("interval", "missing: the mean time between faults")
	}
	if r.MaxFor < r.MinFor || r.MaxFor == 0 {
		bad("max_for", "need 0 < min_for <= max_for")
	}
	for _, k := range kinds { // the package's fields a kind's draw reads (max_offset, ...)
		k.funcs.checkRandom(r, slices.Contains(r.Faults, k.Name), bad)
	}
}

// drawParams sets the length and parameters of a fault of kind k a random package drew (its
// length drawn already): an instant kind has none, the kind draws its parameters.
func (k *Kind) drawParams(f *Fault, r Random, rng *rand.Rand) {
	if k.Instant != "" {
		f.For = 0
	}
	f.Params = k.funcs.draw(r, rng)
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

func dur(t time.Duration) yamltime.Duration  { return yamltime.Duration(t) }
func signed(t time.Duration) yamltime.Signed { return yamltime.Signed(t) }

func formatRate(r float64) string { return strconv.FormatFloat(r, 'f', -1, 64) }
