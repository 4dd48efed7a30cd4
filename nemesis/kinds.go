package nemesis

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/lockcheck/lockcheck/history"
)

// Kind is one kind of fault as the registry holds it: its name (one name, used in scenarios,
// histories, reports and the matrix alike), the fields it takes, and what `lockcheck faults` and
// reports say of it. Each kind is one file of this package that defines it (define, from a spec
// with its own parameter type) and a line in kinds below.
type Kind struct {
	Name    string
	Summary string // one line, for docs and `lockcheck faults`
	// Takes lists the optional fields of its nemesis entries by their scenario names: "for"
	// (unless Instant), then its own parameters, read from their yaml tags.
	Takes []string
	// Instant says why the common field "for" does not apply to it ("" when it does).
	Instant string
	// Colour draws it in reports (CSS colour).
	Colour string
	// Suits says whether a random package may draw this kind for target t; nil: never drawn at
	// random. SuitsWhom says which targets suit, for errors ("clients only").
	Suits     func(t TargetInfo) bool
	SuitsWhom string
	// Aliases are older names of the kind found in histories written before it was renamed.
	Aliases []string
	// ServerActs are what the kind asks of a server target, by the name of the Target,
	// Restarter, ClockSetter or Network method it calls ("pause", "resume", "kill", "restart",
	// "clock", "cut", "drop", "heal"), or of its own Needs (a fault's own may depend on its
	// parameters: spec.ActsOf): a provider that cannot do everything (an
	// external cluster without a hook for it) refuses a scenario before anything starts
	// (Schedule.ServerUses).
	ServerActs []string
	// Needs is a server action of the kind's own, beyond those of Target, Restarter, ClockSetter
	// and Network (target.go: Capability); nil for none.
	Needs *Capability
	// Silences: the kind can keep every server from hearing a client while in force (a pause, a
	// cut of every link, everything it sends held back until the heal): a hunt can silence a
	// waiter through its holder's release with it.
	Silences bool
	// LandsLate: the kind can make what a client sends arrive late while what it is sent comes on
	// time (a delay): a hunt lands a holder's check or renewal just after its lease with it, when
	// the client, counting the time its request took, still believes some of the lease is left.
	LandsLate bool
	// Weakness names the documented weakness of lock services that the kind exercises when it
	// acts on a lock server ("clock": leases end early; "crash": what was not persisted or
	// replicated is lost), recorded with each such fault (history.Event.Weakness) so that the
	// checker can tell a lock that broke its promise from one whose servers were broken; "" for
	// none.
	Weakness string
	// ClientLinks: the kind acts on a client's links to the servers (cut, drop, delay). A run that
	// plans or draws none on a client lets its clients dial the servers directly, without a proxy
	// in between that nothing would use (Schedule.UsesClientLinks).
	ClientLinks bool
	// Step: a usage step the client takes itself (abandon.go), aimed like a fault: the client is
	// told the step and the point, and takes it there without stopping.
	Step bool

	funcs kindFuncs
}

// spec is how a kind of fault is written, P being its own parameters: a struct whose fields carry
// yaml tags (how a scenario writes them) and json tags (how the history keeps them, in an
// event's params), noParams for none. define makes the registry's Kind of it.
type spec[P any] struct {
	Name, Summary, Colour string
	Instant               string
	// Check checks a planned fault against the scenario, beyond what every fault is checked for
	// (its target exists, its point or time, its fields and their types).
	Check func(f Fault, p P, v View, bad Report)
	// Suits, SuitsWhom: Kind's.
	Suits     func(t TargetInfo) bool
	SuitsWhom string
	// Draw draws the parameters of a fault a random package drew, whose kind, target and length
	// are drawn already (keep the order of its rng calls: a seed must give the same faults);
	// nil: the zero parameters.
	Draw func(r Random, rng *rand.Rand) P
	// CheckRandom checks the fields of a random package that Draw reads (max_offset); listed says
	// whether the package draws this kind. Fields are relative to the package.
	CheckRandom func(r Random, listed bool, bad Report)
	// Apply carries the fault out, keeps it in force for its length (or until the run heals),
	// heals it, and records all of it (begin records p). stopped: the target already stopped
	// itself at f.Point.
	Apply func(n *Nemesis, f Fault, p P, stopped bool)
	// Label describes a recorded fault in a few words ("clock n1 +2s"), from the parameters its
	// invoke recorded (zero where it recorded none, or none this build can read); nil: baseLabel.
	Label func(f history.Fault, p P) string
	// ActsOf, when set, lists the server actions of one fault, by its parameters (a partition's
	// mode); nil: ServerActs.
	ActsOf func(p P) []string
	// Aliases, ServerActs, Needs, Silences, LandsLate, Weakness, ClientLinks: Kind's.
	Aliases     []string
	ServerActs  []string
	Needs       *Capability
	Silences    bool
	LandsLate   bool
	Weakness    string
	ClientLinks bool
	Step        bool
}

// noParams are the parameters of a kind that takes none of its own.
type noParams struct{}

// kindFuncs are a spec's functions with its parameter type hidden, for the registry.
type kindFuncs interface {
	check(f Fault, v View, bad Report)
	draw(r Random, rng *rand.Rand) any
	checkRandom(r Random, listed bool, bad Report)
	apply(n *Nemesis, f Fault, stopped bool)
	label(f history.Fault) string
	decode(own map[string]yaml.Node, bad Report) (params any, unknown []string)
	replayed(raw json.RawMessage) (any, error)
	acts(f Fault) []string
}

// define makes a registry entry of a spec.
func define[P any](s spec[P]) *Kind {
	k := &Kind{Name: s.Name, Summary: s.Summary, Instant: s.Instant, Colour: s.Colour, Suits: s.Suits, SuitsWhom: s.SuitsWhom,
		Aliases: s.Aliases, ServerActs: s.ServerActs, Needs: s.Needs, Silences: s.Silences, LandsLate: s.LandsLate, Weakness: s.Weakness, ClientLinks: s.ClientLinks, Step: s.Step, funcs: &s}
	if s.Instant == "" {
		k.Takes = []string{"for"}
	}
	_, names := paramFields(new(P))
	k.Takes = append(k.Takes, names...)
	return k
}

// kinds is the registry, in the order `lockcheck faults` and error messages list them.
var kinds = []*Kind{pauseKind, killKind, clockKind, crashKind, partitionKind, delayKind, strobeKind, abandonKind}

// weaknessOf is each kind's Weakness by name, for the events the kinds' own functions record
// (which cannot refer to the registry: it refers to them).
var weaknessOf = map[string]string{}

func init() {
	for _, k := range kinds {
		weaknessOf[k.Name] = k.Weakness
	}
}

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
		if k.Name == name || slices.Contains(k.Aliases, name) {
			return k, nil
		}
	}
	return nil, fmt.Errorf("unknown fault %q; valid faults: %s", name, strings.Join(Names(), ", "))
}

// Label describes a recorded fault with its kind's words, or generically for a kind this build
// does not know.
func Label(f history.Fault) string {
	if k, err := Lookup(f.Kind); err == nil {
		return k.funcs.label(f)
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

// baseLabel is "kind target", with the lock state the target was chosen by.
func baseLabel(f history.Fault) string {
	return f.Kind + " " + f.Target + asLabel(f.As)
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

// Replayed is the parameters a recorded fault's invoke kept (history.Fault.Params) as a planned
// fault of this kind takes them (Fault.Params): how a schedule that replays a run is built.
func (k *Kind) Replayed(raw json.RawMessage) (any, error) { return k.funcs.replayed(raw) }

// Check checks a planned fault against a scenario: its kind, its length, and the kind's own
// rules. Fields are reported relative to the entry ("target", "for").
func Check(f Fault, v View, bad Report) {
	k, err := Lookup(f.Kind)
	if err != nil || k.Name != f.Kind {
		if err == nil {
			err = fmt.Errorf("%q is the old name of %s: write fault: %s", f.Kind, k.Name, k.Name)
		}
		bad("fault", "%v", err)
		return
	}
	if k.Instant != "" && f.For != 0 {
		bad("for", "%s", k.Instant)
	}
	k.funcs.check(f, v, bad)
}

func (s *spec[P]) check(f Fault, v View, bad Report) {
	p, err := paramsOf[P](f)
	if err != nil {
		bad("fault", "%v", err)
		return
	}
	if s.Check != nil {
		s.Check(f, p, v, bad)
	}
}

func (s *spec[P]) draw(r Random, rng *rand.Rand) any {
	if s.Draw == nil {
		return nil
	}
	p := s.Draw(r, rng)
	return &p
}

func (s *spec[P]) checkRandom(r Random, listed bool, bad Report) {
	if s.CheckRandom != nil {
		s.CheckRandom(r, listed, bad)
	}
}

func (s *spec[P]) apply(n *Nemesis, f Fault, stopped bool) {
	p, err := paramsOf[P](f)
	if err != nil {
		n.stamp(history.Event{Process: history.Nemesis, Type: history.Fail, F: f.Kind, Op: n.nextOp(), Target: f.Target, As: f.As, Error: err.Error()})
		n.resumeAtPoint(f)
		return
	}
	s.Apply(n, f, p, stopped)
}

func (s *spec[P]) label(f history.Fault) string {
	if s.Label == nil {
		return baseLabel(f)
	}
	var p P
	if len(f.Params) > 0 && json.Unmarshal(f.Params, &p) != nil {
		p = *new(P) // parameters this build cannot read: describe the fault without them
	}
	return s.Label(f, p)
}

func (s *spec[P]) acts(f Fault) []string {
	if s.ActsOf == nil {
		return s.ServerActs
	}
	p, err := paramsOf[P](f)
	if err != nil {
		return s.ServerActs
	}
	return s.ActsOf(p)
}

func (s *spec[P]) replayed(raw json.RawMessage) (any, error) {
	p := new(P)
	if len(raw) == 0 {
		return p, nil
	}
	if err := json.Unmarshal(raw, p); err != nil {
		return nil, fmt.Errorf("%s parameters %s: %w", s.Name, raw, err)
	}
	return p, nil
}
