// Package scenarios loads and validates scenario files: which lock, how many nodes and clients,
// the workload, the nemesis schedule, and the verdict the run is expected to reach. The *.yaml
// files beside this code are the shipped scenarios. What a scenario may ask of its lock service
// and of each fault is the service kind's (package services) and the fault kind's (package
// nemesis) to say: the loader asks them.
package scenarios

import (
	"fmt"
	"slices"

	"go.yaml.in/yaml/v3"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/internal/yamltime"
	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/services"
	"github.com/lockcheck/lockcheck/workloads"
)

// Duration and Signed are the duration types scenario files are written with.
type (
	Duration = yamltime.Duration
	Signed   = yamltime.Signed
)

// TTLs is a length of n of the scenario's TTLs ("4ttl" in a file), resolved when the scenario is
// loaded or built (New).
func TTLs(n float64) Duration { return yamltime.TTLs(n) }

// Scenario is one scenario: a file as loaded (Load), or built in Go (New).
type Scenario struct {
	Name        string   `yaml:"name"`
	Description string   `yaml:"description"`
	Claims      []string `yaml:"claims"` // debate claim ids this scenario tests (K2, A8, ...; docs/CLAIMS.md)
	// Debate scenarios (scenarios/debate/) also say which side of the Kleppmann/antirez debate
	// the observed verdict supports and, in one sentence, what was observed.
	Supports string `yaml:"supports"` // kleppmann | antirez | both | neither
	Finding  string `yaml:"finding"`
	// LockSpec is `lock:` as written: a registered design's name, a design file, or an inline
	// external design; Lock is the design's name once resolved.
	LockSpec LockSpec                `yaml:"lock"`
	Lock     string                  `yaml:"-"`
	Nodes    int                     `yaml:"nodes"` // lock-service nodes; 0 = what the design needs
	Clients  int                     `yaml:"clients"`
	TTL      Duration                `yaml:"ttl"`
	Duration Duration                `yaml:"duration"`
	Seed     int64                   `yaml:"seed"`
	Workload Workload                `yaml:"workload"`
	Clocks   map[string]ClockSetting `yaml:"clocks"` // clients whose own clock starts skewed
	// ClientLocks gives some clients another design on the same lock (client_locks.go).
	ClientLocks map[string]string `yaml:"client_locks"`
	// Server is what the lock service is asked for beyond its nodes (tick_time, replicas, ...):
	// its kind decodes it and says what it takes (services.DecodeServer).
	Server yaml.Node `yaml:"server"`
	// Old holds Redis's settings as files wrote them at the top level before each kind owned
	// its settings; the loader moves them into Server (old.go).
	Old OldSettings `yaml:",inline"`
	// Provider says where the servers run (default: local processes); `lockcheck run
	// --provider` overrides it.
	Provider string         `yaml:"provider"`
	Nemesis  []Entry        `yaml:"nemesis"`
	Expect   checker.Expect `yaml:"expect"`
	// Sometimes states an outcome that shows in some runs only, and how often (sometimes.go).
	Sometimes *Sometimes `yaml:"sometimes"`
	// Recorded is what a run folder keeps of a lock a Go test registered, for judging it anywhere
	// (recorded.go); a registered design of that name wins over it.
	Recorded *Recorded `yaml:"design"`

	// Path is the file it was loaded from (for one built in Go: what its errors are placed in).
	Path string `yaml:"-"`
	// Comment heads the YAML text of a scenario built or changed in Go (Text): where it came
	// from, what was changed.
	Comment string `yaml:"-"`
	// Source is the file's text, kept so a run folder holds the exact scenario it ran.
	Source []byte `yaml:"-"`

	design locks.Design
	lockOK bool // the lock resolved to a design
	plan   *services.Plan

	clientDesigns map[string]locks.Design // client_locks, resolved
	moved         map[string]string       // "server.replicas" -> "replicas": settings moved from the top level
}

// Workload is how each client uses the lock: the worker's own type (workloads.Workload).
type Workload = workloads.Workload

// Entry is one entry of the nemesis list: a planned fault (its fields written inline) or a random
// package.
type Entry struct {
	nemesis.Fault `yaml:",inline"`
	Random        *nemesis.Random `yaml:"random"`
	// Own holds, while the file is decoded, the entry's other fields: its fault kind's own
	// parameters, which the kind decodes into Fault.Params (nemesis.DecodeParams).
	Own map[string]yaml.Node `yaml:",inline"`
}

// ClockSetting is a client clock's start: offset from real time and rate (1 = true speed).
type ClockSetting struct {
	Offset Signed  `yaml:"offset"`
	Rate   float64 `yaml:"rate"`
}

// Design is the scenario's lock design.
func (s *Scenario) Design() locks.Design { return s.design }

// Plan is the scenario's lock service, laid out: node names, targets, links.
func (s *Scenario) Plan() *services.Plan { return s.plan }

// Service is the kind of lock service the design runs on.
func (s *Scenario) Service() string { return s.design.ServiceName() }

// ClientNames lists the clients, client-1 first.
func (s *Scenario) ClientNames() []string {
	var out []string
	for i := 1; i <= s.Clients; i++ {
		out = append(out, fmt.Sprintf("client-%d", i))
	}
	return out
}

// NodeNames lists the lock nodes (n1.. for Redis, zk1.. for ZooKeeper, ...).
func (s *Scenario) NodeNames() []string {
	if s.plan == nil {
		return nil
	}
	return append([]string(nil), s.plan.Nodes...)
}

// Role is a client's side of a read/write lock ("" for plain mutexes).
func (s *Scenario) Role(client string) string {
	if !s.design.ReadWrite {
		return ""
	}
	for i, c := range s.ClientNames() {
		if c == client {
			if i < s.Workload.Readers {
				return locks.ReadRole
			}
			return locks.WriteRole
		}
	}
	return ""
}

// Schedule is what the scenario asks of the nemesis.
func (s *Scenario) Schedule() nemesis.Schedule {
	var sch nemesis.Schedule
	for _, e := range s.Nemesis {
		if r := e.Random; r != nil {
			rc := *r
			rc.Seed, rc.TTL = s.Seed, s.TTL.D()
			sch.Random = &rc
			continue
		}
		sch.Faults = append(sch.Faults, e.Fault)
	}
	return sch
}

// ServerFaults is what the scenario's faults may ask of the lock's servers themselves (a server
// or a server's role, not a client or a client's role): none means nothing acts on a server or
// between two, and the servers run undisturbed.
func (s *Scenario) ServerFaults() []nemesis.Use {
	clients := s.ClientNames()
	return s.Schedule().ServerUses(func(t string) bool { return slices.Contains(clients, t) || nemesis.IsClientRole(t) })
}

// Spec is what the scenario asks of its lock service.
func (s *Scenario) Spec() services.Spec {
	spec := services.Spec{Design: s.design, Nodes: s.Nodes, TTL: s.TTL.D(), Duration: s.Duration.D()}
	if s.Server.Kind != 0 {
		spec.Server = &s.Server
	}
	return spec
}
