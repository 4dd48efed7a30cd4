// Package scenarios loads and validates scenario files: which lock, how many nodes and clients,
// the workload, the nemesis schedule, and the verdict the run is expected to reach. The *.yaml
// files beside this code are the shipped scenarios.
package scenarios

import (
	"fmt"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/lockcheck/lockcheck/checker"
)

// Scenario is one scenario file.
type Scenario struct {
	Name        string   `yaml:"name"`
	Description string   `yaml:"description"`
	Claims      []string `yaml:"claims"` // REFERENCE.md claim ids this scenario tests (K2, A8, ...)
	// Debate scenarios (scenarios/debate/) also say which side of the Kleppmann/antirez debate
	// the observed verdict supports and, in one sentence, what was observed.
	Supports    string                  `yaml:"supports"` // kleppmann | antirez | both | neither
	Finding     string                  `yaml:"finding"`
	Lock        string                  `yaml:"lock"`
	Nodes       int                     `yaml:"nodes"` // lock-service nodes; 0 = what the design needs
	Clients     int                     `yaml:"clients"`
	TTL         Duration                `yaml:"ttl"`
	Duration    Duration                `yaml:"duration"`
	Seed        int64                   `yaml:"seed"`
	Workload    Workload                `yaml:"workload"`
	Clocks      map[string]ClockSetting `yaml:"clocks"`      // clients whose own clock starts skewed
	Persistence string                  `yaml:"persistence"` // Redis lock nodes: none (default), aof-everysec, aof-always
	// Failover (failover.go): the one Redis primary gets replicas, replicating through proxies, and
	// Redis Sentinels that promote a replica when it dies; clients follow Sentinel.
	Replicas  int            `yaml:"replicas"`  // data nodes n2..n(1+replicas); 0: no failover
	Sentinels int            `yaml:"sentinels"` // sentinels s1..; default 3 when there are replicas
	Nemesis   []Fault        `yaml:"nemesis"`
	Expect    checker.Expect `yaml:"expect"`

	// Path is the file it was loaded from.
	Path string `yaml:"-"`
	// Source is the file's text, kept so a run folder holds the exact scenario it ran.
	Source []byte `yaml:"-"`
}

// Workload is how each client uses the lock (see workloads.Workload).
type Workload struct {
	Hold           Duration `yaml:"hold"`
	Think          Duration `yaml:"think"`
	Stagger        Duration `yaml:"stagger"` // client-N starts (N-1)*stagger after client-1: who goes first is then deterministic
	Start          Duration `yaml:"start"`   // every client waits this long before its first acquire, so faults planned at 0s are in force first
	AcquireTimeout Duration `yaml:"acquire_timeout"`
	BackoffMin     Duration `yaml:"backoff_min"`
	BackoffMax     Duration `yaml:"backoff_max"`
	Timeout        Duration `yaml:"timeout"`
	Reentrant      bool     `yaml:"reentrant"` // nest one acquire/release inside each hold (reentrant designs only)
	Readers        int      `yaml:"readers"`   // read/write designs: client-1..client-N read, the others write
}

// Fault is one entry of the nemesis list: either a planned fault (Fault set) or a random package
// (Random set).
type Fault struct {
	Fault      string   `yaml:"fault"`      // pause | kill
	Target     string   `yaml:"target"`     // client-N or nN
	At         Duration `yaml:"at"`         // time from the start of the run...
	Point      string   `yaml:"point"`      // ...or a client program point
	Occurrence int      `yaml:"occurrence"` // which pass of the point (default 1)
	For        Duration `yaml:"for"`        // pause length; how long a clock stays set (0: until the end)
	Offset     Signed   `yaml:"offset"`     // clock: the target's clock becomes real time + offset...
	Rate       float64  `yaml:"rate"`       // ...running at rate (1 = true speed)
	Nodes      []string `yaml:"nodes"`      // partition, delay: the target client's links to these (lock nodes or "resource"; default: every lock node)
	Latency    Duration `yaml:"latency"`    // delay: each byte the client sends is held back this long...
	Jitter     Duration `yaml:"jitter"`     // ...give or take this much
	Period     Duration `yaml:"period"`     // strobe: the server's clock flips between true time and offset this often
	Random     *Random  `yaml:"random"`
}

// Random is a seeded random fault package.
type Random struct {
	Faults   []string `yaml:"faults"`
	Targets  []string `yaml:"targets"`
	Interval Duration `yaml:"interval"`
	MinFor   Duration `yaml:"min_for"`
	MaxFor   Duration `yaml:"max_for"`
	// MaxOffset bounds random clock steps (drawn from ±max_offset); MaxLatency random delays.
	MaxOffset  Duration `yaml:"max_offset"`
	MaxLatency Duration `yaml:"max_latency"`
}

// ClockSetting is a client clock's start: offset from real time and rate (1 = true speed).
type ClockSetting struct {
	Offset Signed  `yaml:"offset"`
	Rate   float64 `yaml:"rate"`
}

// Signed is a duration that may be negative ("-2s"), for clock offsets.
type Signed time.Duration

// D returns the time.Duration.
func (d Signed) D() time.Duration { return time.Duration(d) }

// UnmarshalYAML parses "-500ms"-style text.
func (d *Signed) UnmarshalYAML(n *yaml.Node) error {
	v, err := parseDuration(n)
	*d = Signed(v)
	return err
}

func parseDuration(n *yaml.Node) (time.Duration, error) {
	if n.Kind != yaml.ScalarNode {
		return 0, fmt.Errorf("line %d: want a duration such as 500ms or 2s", n.Line)
	}
	v, err := time.ParseDuration(strings.TrimSpace(n.Value))
	if err != nil {
		return 0, fmt.Errorf("line %d: %q is not a duration (write it like 500ms or 2s)", n.Line, n.Value)
	}
	return v, nil
}

// Duration is a time.Duration written as in Go ("500ms", "2s").
type Duration time.Duration

// D returns the time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// UnmarshalYAML parses "500ms"-style text; a bare number is refused because its unit is a guess.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := parseDuration(n)
	if err != nil {
		return err
	}
	if v < 0 {
		return fmt.Errorf("line %d: duration %s is negative", n.Line, n.Value)
	}
	*d = Duration(v)
	return nil
}

// MarshalYAML writes the duration back as text.
func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }
