package nemesis

import (
	"time"

	"github.com/lockcheck/lockcheck/internal/yamltime"
)

// Fault is one planned fault: the fields every kind has, as a scenario's nemesis entry writes
// them, and the kind's own parameters.
type Fault struct {
	Kind       string            `yaml:"fault"`      // a registered kind: pause, kill, clock, crash, partition, delay, strobe
	Target     string            `yaml:"target"`     // a client, a server, or a role (leader, primary)
	At         yamltime.Duration `yaml:"at"`         // time from the start of the run...
	Point      string            `yaml:"point"`      // ...or a client's program point: the client stops itself there
	Occurrence int               `yaml:"occurrence"` // which pass of Point (1 = first)
	// By, with Point, is the client whose pass of Point starts a fault on another target: a
	// server's clock stepped as client-1 takes the lock, not at a time that may fall between two
	// holds. The client goes on at once.
	By  string            `yaml:"by"`
	For yamltime.Duration `yaml:"for"` // how long the fault lasts (0: until healed, where a kind allows)
	// Params are the kind's own parameters (ClockParams, DelayParams, ...; a pointer or a value),
	// written inline in the scenario's entry and decoded by the kind (DecodeParams), drawn by a
	// random package, or set by code building a schedule. nil: the kind's zero values.
	Params any `yaml:"-"`

	// As is the lock state (Holder, Waiter, Overtaken) Target was resolved from when the fault
	// started; set by the nemesis, never written in a scenario.
	As string `yaml:"-"`
}

// Passer is the client whose pass of Point starts f: By, else Target.
func (f Fault) Passer() string {
	if f.By != "" {
		return f.By
	}
	return f.Target
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
