package nemesis

// Hunt: a random package that spends its budget where a fault can matter. Instead of a random
// client at a random moment, each fault goes to a client in a lock state at a moment it matters:
// the holder (now, or as it passes a program point of its hold), the holder's check landed just
// after its lease by a slow link, a waiter while another holds, a waiter silenced from the start
// of a hold until after its holder lets go, a client holding again after being overtaken, any
// client passing one of the design's own points (inside an acquire or a release), or a server
// while someone holds. Its lengths are drawn from min_for..max_for, which hunt packages give in
// TTLs (default 1.2ttl..3ttl): a pause shorter than the lease cannot break a lease.
//
// The schedule (gaps, kinds, moves, lengths, parameters) comes from one seeded generator, in the
// same order whatever happens; which client a move hits when several are in its state comes from
// a second one, so a seed makes the same decisions given the same history.

import (
	"math/rand/v2"
	"slices"
	"time"
)

// Modes of a random package.
const (
	ModeRandom = "random" // Jepsen's style: any listed target at any moment (the default)
	ModeHunt   = "hunt"   // follow the lock's state (above)
)

// Modes lists the modes, in the order errors list them.
var Modes = []string{ModeRandom, ModeHunt}

// holdPoints are the workload's program points, passed only while holding.
var holdPoints = []string{"after-acquire", "before-write", "after-validity-check"}

// passer is the internal state of a move at a design's own point: any client passing it (inside
// an acquire or a release), whatever the history shows of its state.
const passer = "passer"

// move is one way a hunt aims a fault.
type move struct {
	state  string // Holder, Waiter, Overtaken, passer; "" for a fixed target
	point  string // a program point, or "" for now
	target string // a fixed target (a server, or a client named in targets)
	// throughRelease: the longest waiter (the one a release serves next), silenced (frozen, or
	// cut from every server) as a holder passes a point, for 2.5–3.5 TTLs: as a hold begins
	// (after-acquire), so that its own lease ends before the holder lets go if the hold outlasts
	// a lease and the servers' slack (a hunt's holds do, for designs that renew); or as the hold
	// is about to end (before-write), so that the holder lets go while it is frozen and its lease
	// ends before it wakes. A lock that then tells the waiter it holds broke its promise (etcd
	// #11456; a ZooKeeper waiter whose session expired); one that checks says no. Silenced by a
	// delay, the waiter is held back rather than frozen: everything it sends (its keep-alives,
	// its session's pings) arrives at the heal, while what the servers send it comes on time.
	throughRelease bool
	// late: the holder's links to every lock node slowed, as it passes a point of its hold, by
	// 0.75–1 TTL: a check or renewal it sends some way into its hold lands after its lease, yet
	// its answer comes back before the client, counting the time its request took, thinks the
	// lease is over. A lock that then says yes broke its promise (redsync's Extend, PR #61); one
	// that checks whose the key is says no.
	late bool
}

// moves lists what a fault of kind k may do with the package's targets, in a fixed order.
func (r Random) moves(k *Kind) []move {
	targets := r.Targets
	if ts, ok := r.ByKind[k.Name]; ok {
		targets = ts
	}
	if k.Step {
		return r.stepMoves(targets)
	}
	var out []move
	for _, t := range targets {
		switch t {
		case Holder:
			out = append(out, move{state: Holder})
			for _, p := range holdPoints {
				out = append(out, move{state: Holder, point: p})
			}
			if k.LandsLate {
				for _, p := range holdPoints {
					out = append(out, move{state: Holder, point: p, late: true})
				}
			}
		case Waiter:
			out = append(out, move{state: Waiter})
			if k.Silences {
				out = append(out, move{state: Waiter, point: HoldBegins, throughRelease: true},
					move{state: Waiter, point: "before-write", throughRelease: true})
			}
		case Overtaken:
			out = append(out, move{state: Overtaken, point: "after-acquire"})
		default:
			out = append(out, move{target: t})
		}
	}
	if slices.Contains(targets, Holder) || slices.Contains(targets, Waiter) {
		for _, p := range r.Points {
			if !slices.Contains(holdPoints, p) {
				out = append(out, move{state: passer, point: p})
			}
		}
	}
	return out
}

// stepMoves are the moves of a usage step taken during an acquire (abandon): on a waiter (or a
// fixed client), at once or at the next pass of one of the design's own points — an answer of
// the servers in its hands, the moment a lock that acts on a context it finds ended goes wrong
// (etcd #10111). A holder has no attempt in flight.
func (r Random) stepMoves(targets []string) []move {
	var out []move
	for _, t := range targets {
		m := move{target: t}
		switch t {
		case Waiter:
			m = move{state: Waiter}
		case Holder, Overtaken:
			continue
		}
		out = append(out, m)
		for _, p := range r.Points {
			if !slices.Contains(holdPoints, p) {
				at := m
				at.point = p
				out = append(out, at)
			}
		}
	}
	return out
}

// LongestSilence is the longest a hunt silences a waiter through a release, for a lease of ttl
// (it draws 2.5 TTLs to this): a hunt's attempts outlast it.
func LongestSilence(ttl time.Duration) time.Duration { return 7 * ttl / 2 }

// moveClasses groups moves by the way they aim: at the holder (now or at any point of its hold),
// at a waiter, at a waiter through its holder's release, at the overtaken, at a fixed target, at
// a client passing one of the design's points. A hunt draws a class, then a move in it: every way
// of aiming gets the same share of the budget, however many points or servers it has.
func moveClasses(moves []move) [][]move {
	var keys []string
	by := map[string][]move{}
	for _, m := range moves {
		key := m.state
		switch {
		case m.throughRelease:
			key += " through release"
		case m.late:
			key += " late"
		case m.state == "":
			key = "fixed"
		}
		if _, ok := by[key]; !ok {
			keys = append(keys, key)
		}
		by[key] = append(by[key], m)
	}
	out := make([][]move, len(keys))
	for i, key := range keys {
		out[i] = by[key]
	}
	return out
}

// hunt runs a hunt package until healed.
func (n *Nemesis) hunt(r Random) {
	rng := rand.New(rand.NewPCG(uint64(r.Seed), 0x68756e74))
	picks := rand.New(rand.NewPCG(uint64(r.Seed), 0x7069636b))
	pick := func(c []string) string { return c[picks.IntN(len(c))] }
	// How long a move waits for its moment before the hunt moves on.
	patience := max(2*d(r.Interval), 4*r.TTL, time.Second)
	for {
		if !wait(n.ctx, between(rng, d(r.Interval)/2, d(r.Interval)*3/2)) {
			return
		}
		f, m, ok := r.drawMove(rng)
		if !ok {
			return
		}
		switch {
		case m.point != "" && !IsStep(f.Kind): // a step is told its point and takes it itself
			n.atNextPass(f, m, patience)
		case m.state != "":
			client, ok := n.awaitFor(m.state, pick, patience)
			if !ok {
				continue
			}
			f.As, f.Target = m.state, client
			n.apply(f, false)
		default: // a fixed target, once someone holds: a server fault matters to a holder
			if _, ok := n.awaitFor(Holder, pick, patience); ok {
				n.apply(f, false)
			}
		}
		if n.ctx.Err() != nil {
			return
		}
	}
}

// drawMove draws the next fault of a hunt: its kind, its move, its length and its parameters.
func (r Random) drawMove(rng *rand.Rand) (Fault, move, bool) {
	if len(r.Faults) == 0 {
		return Fault{}, move{}, false
	}
	k, err := Lookup(r.Faults[rng.IntN(len(r.Faults))])
	if err != nil {
		return Fault{}, move{}, false
	}
	classes := moveClasses(r.moves(k))
	if len(classes) == 0 {
		return Fault{}, move{}, false
	}
	class := classes[rng.IntN(len(classes))]
	m := class[rng.IntN(len(class))]
	f := Fault{Kind: k.Name, Target: m.target, Point: m.point, For: dur(between(rng, d(r.MinFor), d(r.MaxFor)))}
	if m.state != "" {
		f.Target = m.state
	}
	if m.point != "" {
		f.Occurrence = 1
	}
	switch {
	case m.throughRelease:
		f.For = dur(between(rng, 5*r.TTL/2, LongestSilence(r.TTL)))
	case m.late:
		f.For = dur(between(rng, r.TTL, 2*r.TTL))
	}
	k.drawParams(&f, r, rng)
	switch p := f.Params.(type) {
	case *PartitionParams:
		if m.throughRelease {
			// Silenced through a release: cut from every lock node (a waiter that still reaches
			// one node of a quorum keeps its lease); the mode stays as drawn.
			p.Nodes = nil
		}
	case *DelayParams:
		switch {
		case m.throughRelease: // every lock node hears what it sent only at the heal
			p.Nodes, p.Latency = nil, f.For
		case m.late:
			p.Nodes, p.Latency = nil, dur(between(rng, 3*r.TTL/4, r.TTL).Round(time.Millisecond))
		}
	}
	return f, m, true
}

// awaitFor is await bounded by patience as well as by the heal.
func (n *Nemesis) awaitFor(state string, pick func([]string) string, patience time.Duration) (string, bool) {
	deadline := time.NewTimer(patience)
	defer deadline.Stop()
	for {
		changed := n.state.Changed()
		if c := n.state.Candidates(state); len(c) > 0 {
			return pick(c), true
		}
		select {
		case <-changed:
		case <-deadline.C:
			return "", false
		case <-n.ctx.Done():
			return "", false
		}
	}
}

// atNextPass arms m's point and gives f to the next client to pass it in m's state; it returns
// once that fault is over, or after patience if nobody came.
func (n *Nemesis) atNextPass(f Fault, m move, patience time.Duration) {
	rp := &rolePoint{f: f, taken: make(chan struct{}), done: make(chan struct{})}
	n.mu.Lock()
	n.rolePoints = append(n.rolePoints, rp)
	arm := n.arm
	n.mu.Unlock()
	if arm != nil {
		arm(m.point)
	}
	timer := time.NewTimer(patience)
	defer timer.Stop()
	select {
	case <-rp.taken:
	case <-timer.C:
	case <-n.ctx.Done():
	}
	n.mu.Lock()
	taken := rp.fired
	rp.fired = true // if nobody came, nobody will: call it off
	disarm := n.disarm
	if taken || n.waitingAt(m.point) {
		disarm = nil
	}
	n.mu.Unlock()
	if disarm != nil {
		disarm(m.point)
	}
	if taken {
		<-rp.done
	}
	n.mu.Lock()
	n.rolePoints = slices.DeleteFunc(n.rolePoints, func(x *rolePoint) bool { return x == rp })
	n.mu.Unlock()
}
