// Package nemesis injects faults on a schedule and records each one in the history, with its
// start, end and target, so checkers and reports can line faults up with what clients saw.
//
// Each kind of fault is one value in a registry (kinds.go): its name, its own parameters (a type
// of its own, decoded from the scenario and recorded in the history as it wrote them), how a
// scenario's use of it is checked, how it is drawn at random, carried out and healed, and how
// reports show it; one file per kind. A schedule mixes faults at a client's program point
// (deterministic: "stop client-1 the 2nd time it passes after-acquire"), at a time from the start
// of the run, and a seeded random package in Jepsen's style, or one that hunts (hunt.go). A
// client fault may name a lock state instead of a client (holder, waiter, overtaken: lockstate.go),
// resolved from the history when the fault starts. Heal ends everything still in force.
package nemesis

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// Nemesis carries out a schedule against named targets.
type Nemesis struct {
	schedule Schedule
	targets  map[string]Target
	servers  map[string]bool // the targets that are lock servers (or roles of them), not clients
	record   func(history.Event)

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	op      int64
	points  map[pointKey]Fault
	skewed  map[string]ClockSetter // clocks set by a fault, reset by Heal
	network Network

	// state follows the lock through the history, for faults whose target is a lock state.
	state *LockState
	// rolePoints are the planned faults at a program point whose target is a lock state: the
	// first client to pass the point in that state (the occurrence-th such pass) takes it.
	rolePoints []*rolePoint
	// arm and disarm, if set, tell every client to stop at each pass of a point, and to stop
	// stopping there once no fault waits at it any more.
	arm, disarm func(point string)
}

// rolePoint is a planned fault at a program point whose target is a lock state.
type rolePoint struct {
	f      Fault
	passes int  // passes of the point by a client in the state so far
	fired  bool // it has been given a client (or called off)
	// taken and done, when set, are closed when a client takes the fault and when the fault is
	// over (a hunt waits for them).
	taken, done chan struct{}
}

type pointKey struct {
	target, point string
	occurrence    int
}

// Config is what a nemesis is made with, all at once.
type Config struct {
	// Schedule is what it carries out.
	Schedule Schedule
	// Targets are the servers and roles it may act on; clients join as their processes start
	// (AddTarget).
	Targets map[string]Target
	// Network is the links it may cut and delay (nil: none).
	Network Network
	// Record records its actions in the run's history.
	Record func(history.Event)
	// Arm and Disarm, if set, tell every client to stop at each pass of a program point (a
	// hunt's move), and to stop stopping there (also the points of Schedule.EveryPass) once no
	// fault waits there any more.
	Arm, Disarm func(point string)
}

// New makes a nemesis for c.Schedule. Its faults at program points are planned at once, so make
// it before any client can reach its point: a stop nobody planned is resumed straight away.
func New(c Config) *Nemesis {
	ctx, cancel := context.WithCancel(context.Background())
	n := &Nemesis{schedule: c.Schedule, targets: map[string]Target{}, record: c.Record, ctx: ctx, cancel: cancel,
		points: map[pointKey]Fault{}, skewed: map[string]ClockSetter{}, state: NewLockState(),
		network: c.Network, arm: c.Arm, disarm: c.Disarm}
	n.servers = map[string]bool{}
	for name, t := range c.Targets {
		n.targets[name], n.servers[name] = t, true
	}
	n.plan()
	return n
}

// AddTarget makes a target known, e.g. a client as soon as its process exists.
func (n *Nemesis) AddTarget(name string, t Target) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.targets[name] = t
}

// Observe takes an event of the run's history into account: the clients' events and the
// controller's notes must pass through here (the nemesis sees its own), so that a fault whose
// target is a lock state finds the client in it.
func (n *Nemesis) Observe(e history.Event) { n.state.Observe(e) }

// State is the lock's state as the nemesis follows it.
func (n *Nemesis) State() *LockState { return n.state }

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

// plan registers the schedule's faults that wait at program points.
func (n *Nemesis) plan() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.rolePoints = []*rolePoint{}
	for _, f := range n.schedule.Faults {
		switch {
		case f.Point == "", IsStep(f.Kind): // a step is told to its client when due (Start)
		case IsClientRole(f.Target):
			n.rolePoints = append(n.rolePoints, &rolePoint{f: f})
		default:
			n.points[pointKey{f.Passer(), f.Point, f.Occurrence}] = f
		}
	}
}

// EveryPass lists the program points every client must stop at on each pass (until disarmed),
// so the nemesis can see who passes them in which lock state.
func (s Schedule) EveryPass() []string {
	var out []string
	for _, f := range s.Faults {
		if f.Point != "" && IsClientRole(f.Target) && !IsStep(f.Kind) && !slices.Contains(out, f.Point) {
			out = append(out, f.Point)
		}
	}
	return out
}

// Start checks that every kind and target of the schedule exists (clients included: start once
// they have joined) and begins its timed and random parts.
func (n *Nemesis) Start() error {
	s := n.schedule
	for _, f := range s.Faults {
		if _, err := Lookup(f.Kind); err != nil {
			return fmt.Errorf("nemesis: %w", err)
		}
		if n.target(f.Target) == nil && !IsClientRole(f.Target) {
			return fmt.Errorf("nemesis: no target %q", f.Target)
		}
	}
	if s.Random != nil {
		names := append([]string(nil), s.Random.Targets...)
		for _, ts := range s.Random.ByKind {
			names = append(names, ts...)
		}
		for _, name := range names {
			if n.target(name) == nil && !IsClientRole(name) {
				return fmt.Errorf("nemesis: no target %q", name)
			}
		}
		for _, k := range s.Random.Faults {
			if _, err := Lookup(k); err != nil {
				return fmt.Errorf("nemesis: %w", err)
			}
		}
	}
	for _, f := range s.Faults {
		if f.Point != "" && !IsStep(f.Kind) {
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
			if s.Random.Mode == ModeHunt {
				n.hunt(*s.Random)
			} else {
				n.random(*s.Random)
			}
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
	var rp *rolePoint
	if !ok && n.ctx.Err() == nil {
		f, rp = n.rolePointFor(target, point)
		ok = rp != nil
	}
	passer := ok && f.Target != target // a waiter's fault, as the holder passed: the holder goes on
	if passer {
		if t := n.target(target); t != nil {
			_ = t.Resume()
		}
	}
	if !ok || n.ctx.Err() != nil {
		if rp != nil && rp.done != nil {
			close(rp.done) // taken just as the run healed: nothing to wait for
		}
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
		n.apply(f, !passer)
		if rp != nil && rp.done != nil {
			close(rp.done)
		}
	}()
}

// IsHoldPoint reports whether point is one of the workload's points that only a holder passes.
func IsHoldPoint(point string) bool { return slices.Contains(holdPoints, point) }

// HoldBegins is where a hold begins: the holder passes it right after it acquired.
const HoldBegins = "after-acquire"

// rolePointFor finds the fault, planned at point for a lock state, that client takes by passing
// point now, and marks it given; when no fault waits at point any more, the clients are told to
// stop stopping there.
func (n *Nemesis) rolePointFor(client, point string) (Fault, *rolePoint) {
	n.mu.Lock()
	defer n.mu.Unlock()
	var hit *rolePoint
	target := client
	// Every fault waiting at the point counts the pass; the first due takes it, and one due at
	// the same pass waits for the next (a pass gives one fault).
	for _, rp := range n.rolePoints {
		// A waiter's fault at a hold's point: when a holder passes it (as a hold begins, at
		// after-acquire; as it is about to end, at before-write), the client that has waited
		// longest then: the one a release serves next.
		waiterAtHold := rp.f.Target == Waiter && IsHoldPoint(point)
		state := rp.f.Target
		if waiterAtHold {
			state = Holder
		}
		if rp.fired || rp.f.Point != point || !n.state.AtPoint(client, state) {
			continue
		}
		who := client
		if waiterAtHold {
			waiters := slices.DeleteFunc(n.state.Candidates(Waiter), func(c string) bool { return c == client })
			if len(waiters) == 0 {
				continue // nobody waits behind this hold: the pass does not count
			}
			who = waiters[0]
		}
		rp.passes++
		switch {
		case rp.passes < rp.f.Occurrence:
		case hit == nil:
			hit, rp.fired, target = rp, true, who
		default:
			rp.passes-- // due now as well: the next pass
		}
	}
	if hit == nil {
		return Fault{}, nil
	}
	if hit.taken != nil {
		close(hit.taken)
	}
	if !n.waitingAt(point) && n.disarm != nil {
		go n.disarm(point)
	}
	f := hit.f
	f.As, f.Target = f.Target, target
	if f.As == passer {
		f.As = ""
	}
	return f, hit
}

// waitingAt reports whether a fault still waits for a pass of point. Call with n.mu held.
func (n *Nemesis) waitingAt(point string) bool {
	for _, rp := range n.rolePoints {
		if !rp.fired && rp.f.Point == point {
			return true
		}
	}
	return false
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
	if IsClientRole(f.Target) && !stopped {
		client, ok := n.await(f.Target, n.first)
		if !ok {
			n.stamp(history.Event{Process: history.Nemesis, Type: history.Fail, F: f.Kind, Op: n.nextOp(), Target: f.Target,
				As: f.Target, Error: fmt.Sprintf("no client was the %s before the run healed", f.Target)})
			return
		}
		f.As, f.Target = f.Target, client
	}
	k, err := Lookup(f.Kind)
	if err != nil {
		n.stamp(history.Event{Process: history.Nemesis, Type: history.Fail, F: f.Kind, Op: n.nextOp(), Target: f.Target, Error: err.Error()})
		n.resumeAtPoint(f)
		return
	}
	k.funcs.apply(n, f, stopped)
}

func (n *Nemesis) nextOp() int64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.op++
	return n.op
}

// await waits until some client is in role (bounded by the heal) and returns the one pick
// chooses among them.
func (n *Nemesis) await(role string, pick func([]string) string) (string, bool) {
	for {
		changed := n.state.Changed()
		if c := n.state.Candidates(role); len(c) > 0 {
			return pick(c), true
		}
		select {
		case <-changed:
		case <-n.ctx.Done():
			return "", false
		}
	}
}

// first picks the likeliest candidate (LockState.Candidates' order).
func (n *Nemesis) first(c []string) string { return c[0] }

// stamp records e, at the time it already carries (a fault's invoke: begin) or now.
func (n *Nemesis) stamp(e history.Event) {
	if e.Time == 0 {
		e.Time = history.Now()
	}
	n.record(e)
	n.state.Observe(e)
}

// begin is a fault's invoke event, with the kind's parameters, timed as the nemesis sets out to
// act: it is recorded once the act took (a fault that could not start leaves only a failure),
// but its effects may show first — a cut connection ends a database session, which hands its
// lock to a waiter, before the cut returns — and an invoke timed after them left a grant that
// the fault explains looking like a lock's own broken promise.
func (n *Nemesis) begin(f Fault, op int64) history.Event {
	e := history.Event{Time: history.Now(), Process: history.Nemesis, Type: history.Invoke, F: f.Kind, Op: op,
		Target: f.Target, As: f.As, Point: f.Point, Duration: int64(d(f.For)), Params: recorded(f.Params)}
	if n.servers[f.Target] {
		e.Weakness = weaknessOf[f.Kind]
	}
	return e
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
	if f.Point != "" && f.By == "" { // a passer other than the target went on when it passed
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

// holdUntil is hold, ended early once ended (nil: never) reports true; ended is asked again at
// each change of the lock's state (LockState.Changed), reads of the resource included.
func (n *Nemesis) holdUntil(f Fault, ended func() bool) {
	if ended == nil {
		n.hold(f)
		return
	}
	var limit <-chan time.Time
	if f.For > 0 {
		t := time.NewTimer(d(f.For))
		defer t.Stop()
		limit = t.C
	}
	for {
		changed := n.state.Changed()
		if ended() {
			return
		}
		select {
		case <-changed:
		case <-limit:
			return
		case <-n.ctx.Done():
			return
		}
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
