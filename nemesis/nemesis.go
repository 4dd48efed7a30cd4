// Package nemesis injects faults on a schedule and records each one in the history, with its
// start, end and target, so checkers and reports can line faults up with what clients saw.
//
// A schedule mixes three kinds of fault: at a client's program point (deterministic: "stop
// client-1 the 2nd time it passes after-acquire"), at a time from the start of the run, and a
// seeded random package in Jepsen's style. Heal ends everything that is still in force.
package nemesis

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// Target is anything a fault can act on: a worker process, a server process.
type Target interface {
	Stop() error // SIGSTOP
	Cont() error // SIGCONT
	Kill() error // SIGKILL
}

// Fault kinds.
const (
	PauseFault     = "pause"
	KillFault      = "kill"
	ClockFault     = "clock"
	CrashFault     = "crash"     // kill a server, restart it after For
	PartitionFault = "partition" // cut a client's links to Nodes for For
	DelayFault     = "delay"     // hold a client's traffic to Nodes back by Latency ± Jitter for For
	StrobeFault    = "strobe"    // flip a server's clock between true time and Offset every Period, for For
)

// Kinds lists the fault kinds a schedule may name.
var Kinds = []string{PauseFault, KillFault, ClockFault, CrashFault, PartitionFault, DelayFault, StrobeFault}

// Fault is one planned fault.
type Fault struct {
	Kind       string
	Target     string
	At         time.Duration // time from the start of the run; used when Point is empty
	Point      string        // a client's program point: the client stops itself there
	Occurrence int           // which pass of Point (1 = first)
	For        time.Duration // how long a pause lasts; how long a clock stays set (0: until healed)
	Offset     time.Duration // clock faults: the target's clock becomes real time + Offset...
	Rate       float64       // ...running at Rate (0 or 1: true speed)
	Nodes      []string      // partitions and delays: the Target client's links they act on (empty: every lock node)
	Latency    time.Duration // delays: how long each byte is held back...
	Jitter     time.Duration // ...give or take this much
	Period     time.Duration // strobes: how long the clock stays at each of its two settings
}

// Random is a Jepsen-style random package: every Interval on average, one fault of a kind drawn
// from Kinds on a target drawn from the targets that suit that kind, lasting between MinFor and
// MaxFor. Clock faults step the target's clock by an offset drawn from ±MaxOffset; partitions and
// delays act on a client's links to a random non-empty subset of Nodes, delays by a latency drawn
// from (0, MaxLatency].
type Random struct {
	Kinds   []string
	Targets []string
	// ByKind narrows the targets per kind (a crash only on servers, a kill only on clients); a
	// kind missing here draws from Targets.
	ByKind     map[string][]string
	Interval   time.Duration
	MinFor     time.Duration
	MaxFor     time.Duration
	MaxOffset  time.Duration
	MaxLatency time.Duration
	Nodes      []string // the lock nodes a partition or delay may cut a client from
	Seed       int64
}

// Schedule is what a scenario asks of the nemesis.
type Schedule struct {
	Faults []Fault
	Random *Random
}

// Nemesis carries out a schedule against named targets.
type Nemesis struct {
	targets map[string]Target
	record  func(history.Event)

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	op      int64
	points  map[pointKey]Fault
	skewed  map[string]ClockSetter // clocks set by a fault, reset by Heal
	network Network
}

type pointKey struct {
	target, point string
	occurrence    int
}

// New makes a nemesis over targets (more can be added) that records its actions with record.
func New(targets map[string]Target, record func(history.Event)) *Nemesis {
	ctx, cancel := context.WithCancel(context.Background())
	n := &Nemesis{targets: map[string]Target{}, record: record, ctx: ctx, cancel: cancel,
		points: map[pointKey]Fault{}, skewed: map[string]ClockSetter{}}
	for name, t := range targets {
		n.targets[name] = t
	}
	return n
}

// AddTarget makes a target known, e.g. a client as soon as its process exists.
func (n *Nemesis) AddTarget(name string, t Target) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.targets[name] = t
}

func (n *Nemesis) target(name string) Target {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.targets[name]
}

// Plan registers the faults of s that wait at program points. Call it before the clients start:
// a client may reach its point at once, and an unplanned stop is resumed straight away.
func (n *Nemesis) Plan(s Schedule) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, f := range s.Faults {
		if f.Point != "" {
			n.points[pointKey{f.Target, f.Point, f.Occurrence}] = f
		}
	}
}

// Start checks that every target of s exists, plans its point faults (if Plan was not called)
// and begins its timed and random parts.
func (n *Nemesis) Start(s Schedule) error {
	for _, f := range s.Faults {
		if n.target(f.Target) == nil {
			return fmt.Errorf("nemesis: no target %q", f.Target)
		}
	}
	if s.Random != nil {
		names := append([]string(nil), s.Random.Targets...)
		for _, ts := range s.Random.ByKind {
			names = append(names, ts...)
		}
		for _, name := range names {
			if n.target(name) == nil {
				return fmt.Errorf("nemesis: no target %q", name)
			}
		}
	}
	n.Plan(s)
	for _, f := range s.Faults {
		if f.Point != "" {
			continue
		}
		n.wg.Add(1)
		go func(f Fault) {
			defer n.wg.Done()
			if wait(n.ctx, f.At) {
				n.apply(f, false)
			}
		}(f)
	}
	if s.Random != nil {
		n.wg.Add(1)
		go func() {
			defer n.wg.Done()
			n.random(*s.Random)
		}()
	}
	return nil
}

// Stopped is called when a client has stopped itself at a program point; it carries out the fault
// planned there.
func (n *Nemesis) Stopped(target, point string, occurrence int) {
	n.mu.Lock()
	f, ok := n.points[pointKey{target, point, occurrence}]
	n.mu.Unlock()
	if !ok || n.ctx.Err() != nil {
		// A stop nobody planned, or one reached after healing, would leave the client frozen:
		// resume it at once.
		if t := n.target(target); t != nil {
			_ = t.Cont()
		}
		return
	}
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		n.apply(f, true)
	}()
}

// Heal cancels what has not happened yet, ends every pause in force (resuming the process),
// resets every clock a fault set, and waits until all of that is recorded. Safe to call more
// than once.
func (n *Nemesis) Heal() {
	n.cancel()
	n.wg.Wait()
	n.resetClocks()
}

func (n *Nemesis) nextOp() int64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.op++
	return n.op
}

func (n *Nemesis) apply(f Fault, alreadyStopped bool) {
	switch f.Kind {
	case PauseFault:
		n.pause(f, alreadyStopped)
	case KillFault:
		n.kill(f)
	case ClockFault:
		n.clock(f)
	case CrashFault:
		n.crash(f)
	case PartitionFault:
		n.partition(f)
	case DelayFault:
		n.delay(f)
	case StrobeFault:
		n.strobe(f)
	}
}

func wait(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
