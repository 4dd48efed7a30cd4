package nemesis

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/lockcheck/lockcheck/history"
)

// Kind is one kind of fault: its name (one name, used in scenarios, histories, reports and the
// matrix alike), the fields it takes, how it is checked against a scenario, drawn at random,
// carried out and healed, and how reports show it. Each kind is one file of this package and a
// line in kinds below.
type Kind struct {
	Name    string
	Summary string // one line, for docs and `lockcheck faults`
	// Takes lists the optional Fault fields (SetFields' names) it uses; any other is refused, with
	// the kind's word for why where Refuses has one.
	Takes   []string
	Refuses map[string]string
	// Colour draws it in reports (CSS colour).
	Colour string
	// Check checks a planned fault against the scenario, beyond what every fault is checked for
	// (its target exists, its point or time, its fields).
	Check func(f Fault, v View, bad Report)
	// Suits says whether a random package may draw this kind for target t; nil: never drawn at
	// random. SuitsWhom says which targets suit, for errors ("clients only").
	Suits     func(t TargetInfo) bool
	SuitsWhom string
	// Draw sets the parameters of a randomly drawn fault whose Kind, Target and For are drawn
	// already (keep the order of its rng calls: a seed must give the same faults); nil: none.
	Draw func(f *Fault, r Random, rng *rand.Rand)
	// Apply carries the fault out, keeps it in force for its length (or until the run heals),
	// heals it, and records all of it. stopped: the target already stopped itself at f.Point.
	Apply func(n *Nemesis, f Fault, stopped bool)
	// Label describes a recorded fault in a few words ("pause client-1").
	Label func(f history.Fault) string
	// Aliases are older names of the kind found in histories written before it was renamed.
	Aliases []string
	// ServerActs are what the kind asks of a server target, by the name of the Target,
	// Restarter, ClockSetter or Network method it calls ("pause", "resume", "kill", "restart",
	// "clock", "cut", "heal"): a provider that cannot do everything (an external cluster without
	// a hook for it) refuses a scenario before anything starts (Schedule.ServerUses).
	ServerActs []string
}

// kinds is the registry, in the order `lockcheck faults` and error messages list them.
var kinds = []*Kind{pauseKind, killKind, clockKind, crashKind, partitionKind, delayKind, strobeKind}

// Kinds lists every kind.
func Kinds() []*Kind { return append([]*Kind(nil), kinds...) }

// Names lists every kind's name.
func Names() []string {
	out := make([]string, len(kinds))
	for i, k := range kinds {
		out[i] = k.Name
	}
	return out
}

// RandomNames lists the kinds a random package may draw.
func RandomNames() []string {
	var out []string
	for _, k := range kinds {
		if k.Suits != nil {
			out = append(out, k.Name)
		}
	}
	return out
}

// Lookup returns the kind called name (or one of its aliases), or an error listing the valid
// names.
func Lookup(name string) (*Kind, error) {
	for _, k := range kinds {
		if k.Name == name {
			return k, nil
		}
		for _, a := range k.Aliases {
			if a == name {
				return k, nil
			}
		}
	}
	return nil, fmt.Errorf("unknown fault %q; valid faults: %s", name, strings.Join(Names(), ", "))
}

// Label describes a recorded fault with its kind's words, or generically for a kind this build
// does not know.
func Label(f history.Fault) string {
	if k, err := Lookup(f.Kind); err == nil && k.Label != nil {
		return k.Label(f)
	}
	return baseLabel(f)
}

// Colour is the colour reports draw a kind of fault in; grey for a kind this build does not know.
func Colour(kind string) string {
	if k, err := Lookup(kind); err == nil && k.Colour != "" {
		return k.Colour
	}
	return "#7f7f7f"
}

// baseLabel is "kind target", with the links it acted on.
func baseLabel(f history.Fault) string {
	return f.Kind + " " + f.Target + asLabel(f.As) + nodesLabel(f.Nodes)
}

// asLabel names the lock state a fault's target was chosen by: " (holder)".
func asLabel(as string) string {
	if as == "" {
		return ""
	}
	return " (" + as + ")"
}

// nodesLabel names the links a fault acted on: " ↔ n4,n5".
func nodesLabel(nodes []string) string {
	if len(nodes) == 0 {
		return ""
	}
	return " ↔ " + strings.Join(nodes, ",")
}

// Check checks a planned fault against a scenario: its kind, the fields it sets, and the kind's
// own rules. Fields are reported relative to the entry ("target", "for").
func Check(f Fault, v View, bad Report) {
	k, err := Lookup(f.Kind)
	if err != nil || k.Name != f.Kind {
		if err == nil {
			err = fmt.Errorf("%q is the old name of %s: write fault: %s", f.Kind, k.Name, k.Name)
		}
		bad("fault", "%v", err)
		return
	}
	for _, field := range f.SetFields() {
		if why, ok := k.Refuses[field]; ok {
			bad(field, "%s", why)
		} else if !slices.Contains(k.Takes, field) {
			takes := "no other fields"
			if len(k.Takes) > 0 {
				takes = strings.Join(k.Takes, ", ")
			}
			bad(field, "%s does not apply to a %s fault (it takes %s)", field, k.Name, takes)
		}
	}
	if k.Check != nil {
		k.Check(f, v, bad)
	}
}
