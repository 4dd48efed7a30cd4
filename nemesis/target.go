package nemesis

import (
	"context"
	"fmt"
	"time"
)

// Target is anything a fault can act on: a client's worker process, a server (a provider's node),
// or a role resolved when the fault starts (the leader, the primary).
type Target interface {
	Pause() error  // freeze it (SIGSTOP, cgroup freezer)
	Resume() error // let it go on
	Kill() error   // SIGKILL
}

// Restarter is a target that can be started again after it was killed (a server).
type Restarter interface {
	Restart(ctx context.Context) error
}

// ClockSetter is a target whose wall clock a fault can set.
type ClockSetter interface {
	SetClock(offset time.Duration, rate float64) error
}

// Network cuts, delays and heals links. A client target's links go to servers (nodes names them;
// empty means every server it has a link to; "resource" is the protected resource); a server
// target's links go to its peers (empty: every peer).
type Network interface {
	// Cut makes the links fail: connections refused or reset (a partition's reset mode).
	Cut(target string, nodes []string) error
	// Drop makes the links drop everything, connections kept open (a partition's drop mode).
	Drop(target string, nodes []string) error
	// Heal undoes Cut, Drop and Delay.
	Heal(target string, nodes []string) error
	// Delay holds every byte the client sends on those links for latency ± jitter: a request sent
	// in time arrives late (K4). Heal removes it; data held back is then delivered.
	Delay(client string, nodes []string, latency, jitter time.Duration) error
}

// Capability is a server action of a fault kind's own, beyond the methods of Target, Restarter,
// ClockSetter and Network: an optional interface the kind's file declares (say Terminate() error)
// and a provider's nodes implement where they can. Name is the action's name, as ServerActs and
// an external cluster's hooks call it. A provider whose nodes lack it is refused before anything
// starts (Has, on a sample of its nodes); the kind carries it out with act. A kind makes its own
// with CapabilityOf.
type Capability struct {
	Name string
	has  func(server any) bool
}

// CapabilityOf is the Capability of a kind's own interface C, called name.
func CapabilityOf[C any](name string) *Capability {
	return &Capability{Name: name, has: func(server any) bool { _, ok := server.(C); return ok }}
}

// Has says whether a server (a provider's node, or a node of its type never started) can carry
// out the action: it implements the kind's interface, or does actions by name (Actor).
func (c *Capability) Has(server any) bool {
	if _, ok := server.(Actor); ok {
		return true
	}
	return c.has(server)
}

// Actor is a server that carries out any action by its name: an external cluster, through the
// hook command of that name. A kind's own action (Capability) is done so on one.
type Actor interface {
	Act(action string) error
}

// StandsFor is implemented by a server target that stands for another: a role, for the node that
// holds it when the fault starts (the rest of the fault goes to that node); a node wrapped to be
// restarted its service's way. A kind's own action is looked for on what it stands for.
type StandsFor interface {
	StandsFor() (any, error)
}

// act carries out a kind's own server action on t: through the kind's interface C, with do,
// found on t or on what t stands for; or by name, on a server that does actions by name.
func act[C any](t Target, name string, do func(C) error) error {
	var server any = t
	for range 4 { // a role stands for a node, which may be wrapped: never deeper
		if c, ok := server.(C); ok {
			return do(c)
		}
		if a, ok := server.(Actor); ok {
			return a.Act(name)
		}
		s, ok := server.(StandsFor)
		if !ok {
			break
		}
		var err error
		if server, err = s.StandsFor(); err != nil {
			return err
		}
	}
	return fmt.Errorf("this server cannot %s: its provider's nodes have no such action", name)
}

// TargetInfo says what a target is and which faults it can take. The scenario loader checks every
// fault against it before anything starts; services describe their servers and roles with it.
type TargetInfo struct {
	Name   string
	Client bool
	// Role, for a target resolved when a fault starts, says what it stands for ("whichever server
	// leads"); empty for a fixed process.
	Role string
	// Restart: it can be crash-restarted (servers).
	Restart bool
	// NoClock says why its wall clock cannot be set; empty when it can.
	NoClock string
	// Peers are the servers a partition of this server may cut it from; none: it cannot be
	// partitioned on its own (cut a client's links to it instead).
	Peers []string
	// Usage, for a client, lists the usage steps its design offers (locks.Design.Offered).
	Usage []string
}

// View is what a fault is checked against: the scenario's targets and links.
type View interface {
	Target(name string) (TargetInfo, bool)
	// ClientLinks lists what a client's partition or delay may name: every server it has a link
	// to, and "resource".
	ClientLinks() []string
}

// Report records a problem with a field of a nemesis entry ("target", "for", ...).
type Report func(field, format string, a ...any)
