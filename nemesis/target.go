package nemesis

import (
	"context"
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
	Cut(target string, nodes []string) error
	Heal(target string, nodes []string) error
	// Delay holds every byte the client sends on those links for latency ± jitter: a request sent
	// in time arrives late (K4). Heal removes it; data held back is then delivered.
	Delay(client string, nodes []string, latency, jitter time.Duration) error
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
