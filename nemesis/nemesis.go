// Package nemesis injects faults on a schedule and records each one in the history, with its
// start, end and target, so checkers and reports can line faults up with what clients saw.
//
// Each kind of fault is one value in a registry (kinds.go): its name, the fields it takes, how a
// scenario's use of it is checked, how it is drawn at random, carried out and healed, and how
// reports show it; one file per kind. A schedule mixes faults at a client's program point
// (deterministic: "stop client-1 the 2nd time it passes after-acquire"), at a time from the start
// of the run, and a seeded random package in Jepsen's style. Heal ends everything still in force.
package nemesis

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

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

// SetNetwork gives the nemesis the links it may cut and delay.
func (n *Nemesis) SetNetwork(net Network) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.network = net
}

func (n *Nemesis) target(name string) Target {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.targets[name]
}

func (n *Nemesis) net() Network {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.network
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

// Start checks that every kind and target of s exists, plans its point faults (if Plan was not
// called) and begins its timed and random parts.
func (n *Nemesis) Start(s Schedule) error {
	for _, f := range s.Faults {
		if _, err := Lookup(f.Kind); err != nil {
			return fmt.Errorf("nemesis: %w", err)
		}
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
		for _, k := range s.Random.Faults {
			if _, err := Lookup(k); err != nil {
				return fmt.Errorf("nemesis: %w", err)
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
			if wait(n.ctx, d(f.At)) {
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
			_ = t.Resume()
		}
		return
	}
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		n.apply(f, true)
	}()
}

// Heal cancels what has not happened yet, ends every fault in force (resuming processes, healing
// links, restarting servers), resets every clock a fault set, and waits until all of that is
// recorded. Safe to call more than once.
func (n *Nemesis) Heal() {
	n.cancel()
	n.wg.Wait()
	n.resetClocks()
}

func (n *Nemesis) apply(f Fault, stopped bool) {
	k, err := Lookup(f.Kind)
	if err != nil {
		n.stamp(history.Event{Process: history.Nemesis, Type: history.Fail, F: f.Kind, Op: n.nextOp(), Target: f.Target, Error: err.Error()})
		n.resumeAtPoint(f)
		return
	}
	k.Apply(n, f, stopped)
}

func (n *Nemesis) nextOp() int64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.op++
	return n.op
}

// stamp records e now.
func (n *Nemesis) stamp(e history.Event) {
	e.Time = history.Now()
	n.record(e)
}

// begin is a fault's invoke event.
func (n *Nemesis) begin(f Fault, op int64) history.Event {
	return history.Event{Process: history.Nemesis, Type: history.Invoke, F: f.Kind, Op: op,
		Target: f.Target, Point: f.Point, Duration: int64(d(f.For))}
}

// end is a fault's completion event.
func (n *Nemesis) end(f Fault, op int64) history.Event {
	return history.Event{Process: history.Nemesis, Type: history.OK, F: f.Kind, Op: op, Target: f.Target}
}

// failed records that a fault could not start (its only record) and lets a client stopped at its
// point go on.
func (n *Nemesis) failed(start history.Event, f Fault, err string) {
	start.Type, start.Error = history.Fail, err
	n.stamp(start)
	n.resumeAtPoint(f)
}

// resumeAtPoint lets a client that stopped itself at a program point go on once a fault other
// than a pause or kill has taken effect there (a partition or clock step "right after acquire").
func (n *Nemesis) resumeAtPoint(f Fault) {
	if f.Point != "" {
		if t := n.target(f.Target); t != nil {
			_ = t.Resume()
		}
	}
}

// hold keeps a fault in force for its length, or until the run heals when it has none; it
// reports whether the full length passed.
func (n *Nemesis) hold(f Fault) bool {
	if f.For > 0 {
		return wait(n.ctx, d(f.For))
	}
	<-n.ctx.Done()
	return false
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
