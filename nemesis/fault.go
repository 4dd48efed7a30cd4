package nemesis

import (
	"time"

	"github.com/lockcheck/lockcheck/internal/yamltime"
)

// Fault is one planned fault, exactly as a scenario's nemesis entry writes it.
type Fault struct {
	Kind       string            `yaml:"fault"`      // a registered kind: pause, kill, clock, crash, partition, delay, strobe
	Target     string            `yaml:"target"`     // a client, a server, or a role (leader, primary)
	At         yamltime.Duration `yaml:"at"`         // time from the start of the run...
	Point      string            `yaml:"point"`      // ...or a client's program point: the client stops itself there
	Occurrence int               `yaml:"occurrence"` // which pass of Point (1 = first)
	// The fields below belong to some kinds only (Kind.Takes).
	For     yamltime.Duration `yaml:"for"`     // how long the fault lasts (0: until healed, where a kind allows)
	Offset  yamltime.Signed   `yaml:"offset"`  // clock, strobe: the target's clock becomes real time + Offset...
	Rate    float64           `yaml:"rate"`    // ...running at Rate (0 or 1: true speed)
	Nodes   []string          `yaml:"nodes"`   // partition, delay: the links it acts on (empty: every one)
	Latency yamltime.Duration `yaml:"latency"` // delay: how long each byte is held back...
	Jitter  yamltime.Duration `yaml:"jitter"`  // ...give or take this much
	Period  yamltime.Duration `yaml:"period"`  // strobe: how long the clock stays at each of its two settings

	// As is the lock state (Holder, Waiter, Overtaken) Target was resolved from when the fault
	// started; set by the nemesis, never written in a scenario.
	As string `yaml:"-"`
}

// Optional fields by their scenario names: the loader refuses one a kind does not take.
var optionalFields = []struct {
	name string
	set  func(Fault) bool
}{
	{"for", func(f Fault) bool { return f.For != 0 }},
	{"offset", func(f Fault) bool { return f.Offset != 0 }},
	{"rate", func(f Fault) bool { return f.Rate != 0 }},
	{"nodes", func(f Fault) bool { return len(f.Nodes) > 0 }},
	{"latency", func(f Fault) bool { return f.Latency != 0 }},
	{"jitter", func(f Fault) bool { return f.Jitter != 0 }},
	{"period", func(f Fault) bool { return f.Period != 0 }},
}

// SetFields lists the optional fields f sets, by their scenario names.
func (f Fault) SetFields() []string {
	var out []string
	for _, o := range optionalFields {
		if o.set(f) {
			out = append(out, o.name)
		}
	}
	return out
}

// Random is a seeded random package in Jepsen's style, as a scenario writes it: every Interval on
// average, one fault of a kind drawn from Faults on a target drawn from the Targets that suit that
// kind, lasting between MinFor and MaxFor. Clock faults step the target's clock by an offset drawn
// from ±MaxOffset; partitions and delays act on a client's links to a random non-empty subset of
// the lock nodes, delays by a latency drawn from (0, MaxLatency].
type Random struct {
	// Mode is random (the default: Jepsen's style) or hunt (hunt.go: faults aimed at clients in
	// the lock states where they can matter).
	Mode       string            `yaml:"mode"`
	Faults     []string          `yaml:"faults"`
	Targets    []string          `yaml:"targets"`
	Interval   yamltime.Duration `yaml:"interval"`
	MinFor     yamltime.Duration `yaml:"min_for"`
	MaxFor     yamltime.Duration `yaml:"max_for"`
	MaxOffset  yamltime.Duration `yaml:"max_offset"`
	MaxLatency yamltime.Duration `yaml:"max_latency"`

	// Filled in from the scenario, not written in it:
	// ByKind narrows the targets per kind (Suitable); a kind missing here draws from Targets.
	ByKind map[string][]string `yaml:"-"`
	Nodes  []string            `yaml:"-"` // the lock nodes a partition or delay may cut a client from
	Seed   int64               `yaml:"-"`
	TTL    time.Duration       `yaml:"-"` // the lock's TTL (hunt: how long a move waits for its moment)
	Points []string            `yaml:"-"` // the design's own program points (hunt: moves at them)
}

// Schedule is what a scenario asks of the nemesis.
type Schedule struct {
	Faults []Fault
	Random *Random
}

// d is a shorthand for a yamltime.Duration's time.Duration.
func d(v yamltime.Duration) time.Duration { return v.D() }
